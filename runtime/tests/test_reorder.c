/* runtime/tests/test_reorder.c — locality reordering of a local problem (runtime/reorder.c)
 * is invisible to the user:
 *  - the reordered local problem is the same problem under other local ids: every inner
 *    row keeps its vertex (gid), its features, label and split, and its operator row
 *    the same (vertex, value) entries, with the factors; halo rows do not move
 *    (checked on a hand-made two-rank split too);
 *  - training (rt_run) with --reorder rcm, cluster, metis and auto gives the losses of
 *    the run without, to rounding (1e-5 relative per epoch), and the same accuracies
 *    within one vertex per split, on Cora (when present) and on a shuffled synthetic
 *    graph (synth:small:shuffle=1), GCN and GraphSAGE;
 *  - `capgnn predict`'s function (rt_predict) writes, with --reorder rcm and cluster,
 *    the logits and embeddings of the run without, row for row in the graph's vertex
 *    order (1e-4 + 1e-4 |ref|): a row written in the reordered order would differ by far
 *    more;
 *  - auto keeps the order of a graph that is already local (the generated clustered
 *    synth graph) and reorders the shuffled one.
 * CPU backend, 1 thread. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/status.h"
#include "runtime/runtime.h"

#define OK(x)                                        \
  do {                                               \
    int st_ = (x);                                   \
    if (st_ != CG_OK) cg_err_report("test_reorder"); \
    assert_int_equal(st_, CG_OK);                    \
  } while (0)

static char tmpdir[256];

/* The datasets folder the build names (CAPGNN_TEST_DATASETS), not $CAPGNN_DATA: ctest sets
 * no CAPGNN_DATA, and looking the name up there skipped the Cora cases in every suite run. */
static char cora_path[4096];

static int have_cora(void) {
  snprintf(cora_path, sizeof cora_path, "%s/cora.cgr", CAPGNN_TEST_DATASETS);
  struct graph g;
  memset(&g, 0, sizeof g);
  const int ok = graph_open(cora_path, &g) == CG_OK;
  graph_free(&g);
  cg_err_clear();
  return ok;
}

/* Row of local id i as (gid of column, value) pairs sorted by gid. */
struct ent {
  int32_t g;
  float v;
};
static int cmp_ent(const void *a, const void *b) {
  const int32_t x = ((const struct ent *)a)->g, y = ((const struct ent *)b)->g;
  return x < y ? -1 : x > y;
}
static int64_t row_of(const struct rt_local *l, int64_t i, struct ent *e) {
  int64_t d = 0;
  for (int64_t k = l->agg.rowptr[i]; k < l->agg.rowptr[i + 1]; k++, d++) {
    e[d].g = l->gid[l->agg.colidx[k]];
    e[d].v = l->agg.vals[k];
  }
  qsort(e, (size_t)d, sizeof *e, cmp_ent);
  return d;
}

/* r is a reordered copy of o: the same problem under other inner local ids. */
static void same_problem(const struct rt_local *o, const struct rt_local *r) {
  assert_int_equal(r->n_inner, o->n_inner);
  assert_int_equal(r->n_halo, o->n_halo);
  assert_int_equal(r->agg.nnz, o->agg.nnz);
  OK(rt_local_check(r, "reordered"));
  const int64_t ni = o->n_inner, nt = ni + o->n_halo;
  int32_t *where = malloc((size_t)o->n_global * sizeof *where); /* gid -> local id in o */
  for (int64_t g = 0; g < o->n_global; g++) where[g] = -1;
  for (int64_t i = 0; i < nt; i++) where[o->gid[i]] = (int32_t)i;
  for (int64_t i = ni; i < nt; i++) assert_int_equal(r->gid[i], o->gid[i]); /* halo in place */
  int64_t maxd = 0;
  for (int64_t i = 0; i < ni; i++)
    if (o->agg.rowptr[i + 1] - o->agg.rowptr[i] > maxd) maxd = o->agg.rowptr[i + 1] - o->agg.rowptr[i];
  struct ent *a = malloc((size_t)(maxd + 1) * sizeof *a), *b = malloc((size_t)(maxd + 1) * sizeof *b);
  int64_t moved = 0;
  for (int64_t i = 0; i < ni; i++) {
    const int32_t j = where[r->gid[i]];
    assert_true(j >= 0 && j < ni);
    moved += j != i;
    assert_memory_equal(r->feat + i * r->feat_dim, o->feat + j * o->feat_dim, (size_t)o->feat_dim * sizeof(float));
    assert_int_equal(r->split[i], o->split[j]);
    if (o->labels) assert_int_equal(r->labels[i], o->labels[j]);
    const int64_t da = row_of(r, i, a), db = row_of(o, j, b);
    assert_int_equal(da, db);
    assert_memory_equal(a, b, (size_t)da * sizeof *a); /* same vertices, same bits */
    for (int64_t k = r->agg.rowptr[i] + 1; k < r->agg.rowptr[i + 1]; k++)
      assert_true(r->agg.colidx[k] > r->agg.colidx[k - 1]); /* sorted again */
    if (o->agg.row_scale) {
      assert_true(r->agg.row_scale[i] == o->agg.row_scale[j]);
      for (int64_t k = r->agg.rowptr[i]; k < r->agg.rowptr[i + 1]; k++)
        assert_true(r->agg.col_scale[r->agg.colidx[k]] == o->agg.col_scale[where[r->gid[r->agg.colidx[k]]]]);
    }
  }
  assert_true(moved > 0);
  free(where);
  free(a);
  free(b);
}

static void test_local_problem(void **state) {
  (void)state;
  struct graph g;
  OK(graph_open("synth:small:shuffle=1", &g));
  struct rt_local o, r;
  OK(rt_local_from_graph(&g, RT_MODEL_GCN, &o));
  const enum graph_reorder ms[] = {GRAPH_REORDER_RCM, GRAPH_REORDER_CLUSTER, GRAPH_REORDER_METIS};
  for (int k = 0; k < 3; k++) {
    OK(rt_local_from_graph(&g, RT_MODEL_GCN, &r));
    int32_t *pos = NULL;
    OK(rt_local_reorder(&r, ms[k], &pos));
    assert_non_null(pos);
    for (int64_t i = 0; i < o.n_inner; i++) assert_int_equal(r.gid[pos[i]], o.gid[i]);
    same_problem(&o, &r);
    printf("  %s: every inner row kept its vertex, features, label, split and operator row\n",
           graph_reorder_name(ms[k]));
    cg_free(pos);
    rt_local_free(&r);
  }
  /* a problem with halo rows: the first half of the vertices inner, a few others halo,
   * built by hand from the whole graph's operator (columns of inner rows < n_inner) */
  struct rt_local h;
  memset(&h, 0, sizeof h);
  const int64_t ni = g.n / 2;
  snprintf(h.name, sizeof h.name, "halo");
  h.rank = 0;
  h.nranks = 2;
  h.n_global = g.n;
  h.m_global = g.m;
  h.norm = o.norm;
  h.feat_dim = o.feat_dim;
  h.num_classes = o.num_classes;
  h.n_train_global = o.n_train_global;
  h.n_val_global = o.n_val_global;
  h.n_test_global = o.n_test_global;
  int32_t *lid = malloc((size_t)g.n * sizeof *lid);
  for (int64_t v = 0; v < g.n; v++) lid[v] = v < ni ? (int32_t)v : -1;
  int64_t nh = 0, nnz = 0;
  for (int64_t i = 0; i < ni; i++)
    for (int64_t k = o.agg.rowptr[i]; k < o.agg.rowptr[i + 1]; k++) {
      const int32_t c = o.agg.colidx[k];
      if (lid[c] < 0) lid[c] = (int32_t)(ni + nh++);
      nnz++;
    }
  h.n_inner = ni;
  h.n_halo = nh;
  h.gid = cg_malloc((size_t)(ni + nh) * sizeof *h.gid, "gid");
  for (int64_t v = 0; v < g.n; v++)
    if (lid[v] >= 0) h.gid[lid[v]] = (int32_t)v;
  OK(cg_csr_alloc(&h.agg, ni, ni + nh, nnz, 1));
  OK(cg_csr_alloc_scales(&h.agg));
  for (int64_t i = 0, e = 0; i < ni; i++) {
    /* halo ids are in first-use order, so sort each row's entries by local id */
    const int64_t k0 = o.agg.rowptr[i], d = o.agg.rowptr[i + 1] - k0;
    for (int64_t k = 0; k < d; k++) {
      int64_t best = -1;
      for (int64_t q = 0; q < d; q++) {
        const int32_t c = lid[o.agg.colidx[k0 + q]];
        if ((k == 0 || c > h.agg.colidx[e - 1]) && (best < 0 || c < lid[o.agg.colidx[k0 + best]])) best = q;
      }
      h.agg.colidx[e] = lid[o.agg.colidx[k0 + best]];
      h.agg.vals[e++] = o.agg.vals[k0 + best];
    }
    h.agg.rowptr[i + 1] = e;
    h.agg.row_scale[i] = o.agg.row_scale[i];
  }
  for (int64_t j = 0; j < ni + nh; j++) h.agg.col_scale[j] = o.agg.col_scale[h.gid[j]];
  h.feat_rows = ni + nh; /* halo feature rows given: they must stay in place */
  h.feat = cg_malloc((size_t)((ni + nh) * h.feat_dim) * sizeof(float), "feat");
  for (int64_t j = 0; j < ni + nh; j++)
    memcpy(h.feat + j * h.feat_dim, o.feat + (int64_t)h.gid[j] * h.feat_dim, (size_t)h.feat_dim * sizeof(float));
  h.labels = cg_malloc((size_t)ni * sizeof *h.labels, "labels");
  h.split = cg_malloc((size_t)ni, "split");
  memcpy(h.labels, o.labels, (size_t)ni * sizeof *h.labels);
  memcpy(h.split, o.split, (size_t)ni);
  OK(rt_local_check(&h, "hand-made halo problem"));
  struct rt_local hr = h; /* a deep copy to reorder */
  hr.gid = cg_malloc((size_t)(ni + nh) * sizeof *hr.gid, "gid");
  memcpy(hr.gid, h.gid, (size_t)(ni + nh) * sizeof *hr.gid);
  OK(cg_csr_copy(&h.agg, &hr.agg));
  hr.feat = cg_malloc((size_t)((ni + nh) * h.feat_dim) * sizeof(float), "feat");
  memcpy(hr.feat, h.feat, (size_t)((ni + nh) * h.feat_dim) * sizeof(float));
  hr.labels = cg_malloc((size_t)ni * sizeof *hr.labels, "labels");
  memcpy(hr.labels, h.labels, (size_t)ni * sizeof *hr.labels);
  hr.split = cg_malloc((size_t)ni, "split");
  memcpy(hr.split, h.split, (size_t)ni);
  OK(rt_local_reorder(&hr, GRAPH_REORDER_CLUSTER, NULL));
  same_problem(&h, &hr);
  for (int64_t j = ni; j < ni + nh; j++) /* halo feature rows in place */
    assert_memory_equal(hr.feat + j * h.feat_dim, h.feat + j * h.feat_dim, (size_t)h.feat_dim * sizeof(float));
  printf("  %lld inner + %lld halo rows: inner rows reordered, halo rows and their features in place\n",
         (long long)ni, (long long)nh);
  free(lid);
  rt_local_free(&h);
  rt_local_free(&hr);
  rt_local_free(&o);
  graph_free(&g);
}

static void base_config(struct rt_config *c, const char *graph, enum rt_model_kind model) {
  rt_config_defaults(c);
  c->graph = graph;
  c->model = model;
  c->epochs = 12;
  c->device = "cpu";
  c->threads = 1;
  c->quiet = 1;
  c->seed = 3;
  c->hidden = 16;
}

static void compare_runs(const char *what, const struct rt_result *a, const struct rt_result *b, const char *graph) {
  struct graph g;
  OK(graph_open(graph, &g));
  double worst = 0;
  for (int e = 0; e < a->epochs; e++) {
    const double d = fabs(a->loss[e] - b->loss[e]) / fabs(a->loss[e]);
    if (d > worst) worst = d;
  }
  const double one_val = 1.0 / (double)graph_split_count(&g, GRAPH_SPLIT_VAL),
               one_test = 1.0 / (double)graph_split_count(&g, GRAPH_SPLIT_TEST),
               one_train = 1.0 / (double)graph_split_count(&g, GRAPH_SPLIT_TRAIN);
  printf("  %-40s worst loss difference %.2e relative over %d epochs; acc train %.4f/%.4f val %.4f/%.4f test "
         "%.4f/%.4f\n", what, worst, a->epochs, a->final_train_acc, b->final_train_acc, a->final_val_acc,
         b->final_val_acc, a->final_test_acc, b->final_test_acc);
  assert_int_equal(a->epochs, b->epochs);
  assert_true(worst <= 1e-5);
  /* rounding may move a vertex whose two best logits tie within ~1e-7 */
  assert_true(fabs(a->final_train_acc - b->final_train_acc) <= one_train + 1e-12);
  assert_true(fabs(a->final_val_acc - b->final_val_acc) <= one_val + 1e-12);
  assert_true(fabs(a->final_test_acc - b->final_test_acc) <= one_test + 1e-12);
  graph_free(&g);
}

static void test_training_equal(void **state) {
  (void)state;
  const char *graphs[] = {"synth:small:shuffle=1", cora_path};
  const enum rt_model_kind models[] = {RT_MODEL_GCN, RT_MODEL_SAGE};
  const enum graph_reorder ms[] = {GRAPH_REORDER_RCM, GRAPH_REORDER_CLUSTER, GRAPH_REORDER_METIS,
                                   GRAPH_REORDER_AUTO};
  for (int gi = 0; gi < 2; gi++) {
    if (gi == 1 && !have_cora()) {
      printf("  %s not found: skipped\n", cora_path);
      continue;
    }
    for (int mi = 0; mi < 2; mi++) {
      struct rt_config c;
      base_config(&c, graphs[gi], models[mi]);
      struct rt_result ref, got;
      memset(&ref, 0, sizeof ref);
      OK(rt_run(&c, &ref));
      for (int k = 0; k < 4; k++) {
        if (mi == 1 && k != 1) continue; /* SAGE: the cluster order (the normalisation differs, not the path) */
        c.reorder = ms[k];
        memset(&got, 0, sizeof got);
        OK(rt_run(&c, &got));
        char what[96];
        snprintf(what, sizeof what, "%s %s --reorder %s:", graphs[gi], rt_model_kind_str(models[mi]),
                 graph_reorder_name(ms[k]));
        compare_runs(what, &ref, &got, graphs[gi]);
        rt_result_free(&got);
      }
      rt_result_free(&ref);
    }
  }
}

/* auto: the generated graph is already clustered (kept), the shuffled one is not
 * (reordered): told apart by the result's rounding (a reordered run differs from the
 * plain run in the last bits, a kept one is bit-identical). */
static void test_auto_decides(void **state) {
  (void)state;
  const char *spec = "synth:small:nodes=16384,degree=40";
  char shuffled[96];
  snprintf(shuffled, sizeof shuffled, "%s,shuffle=1", spec);
  struct graph g;
  OK(graph_open(spec, &g));
  struct rt_local l;
  OK(rt_local_from_graph(&g, RT_MODEL_GCN, &l));
  int32_t *pos = NULL;
  OK(rt_local_reorder(&l, GRAPH_REORDER_AUTO, &pos));
  assert_null(pos); /* kept */
  for (int64_t i = 0; i < l.n_inner; i++) assert_int_equal(l.gid[i], i);
  rt_local_free(&l);
  graph_free(&g);
  OK(graph_open(shuffled, &g));
  OK(rt_local_from_graph(&g, RT_MODEL_GCN, &l));
  OK(rt_local_reorder(&l, GRAPH_REORDER_AUTO, &pos));
  assert_non_null(pos); /* reordered */
  struct graph_locality after;
  graph_locality_measure(l.n_inner, l.agg.rowptr, l.agg.colidx, NULL, &after);
  printf("  auto: %s kept; %s reordered, tile reuse now %.2f (%.2fx a random order's)\n", spec, shuffled, after.reuse,
         after.concentration);
  assert_true(after.concentration > GRAPH_REORDER_AUTO_BELOW);
  cg_free(pos);
  rt_local_free(&l);
  graph_free(&g);
}

/* rt_predict (capgnn predict) with and without --reorder: the same rows, in the graph's order. */
static float *read_npy(const char *path, int64_t *rows, int64_t *cols) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  unsigned char pre[10];
  assert_int_equal(fread(pre, 1, 10, f), 10);
  const int hl = pre[8] | (pre[9] << 8);
  char h[512];
  assert_true(hl < (int)sizeof h);
  assert_int_equal(fread(h, 1, (size_t)hl, f), (size_t)hl);
  h[hl] = '\0';
  long long r = 0, c = 0;
  const char *sh = strstr(h, "'shape': (");
  assert_non_null(sh);
  assert_int_equal(sscanf(sh, "'shape': (%lld, %lld)", &r, &c), 2);
  float *v = malloc((size_t)(r * c) * sizeof(float));
  assert_int_equal(fread(v, sizeof(float), (size_t)(r * c), f), (size_t)(r * c));
  fclose(f);
  *rows = r;
  *cols = c;
  return v;
}

static void test_predict_order(void **state) {
  (void)state;
  const char *graph = have_cora() ? cora_path : "synth:small:shuffle=1";
  char ck[300], l0[300], e0[300], l1[300], e1[300];
  snprintf(ck, sizeof ck, "%s/m.ckpt", tmpdir);
  struct rt_config c;
  base_config(&c, graph, RT_MODEL_GCN);
  c.epochs = 30;
  c.checkpoint_path = ck;
  c.force = 1;
  OK(rt_run(&c, NULL));
  struct rt_predict_options o;
  memset(&o, 0, sizeof o);
  o.checkpoint = ck;
  o.graph = graph;
  o.device = "cpu";
  o.threads = 1;
  o.force = 1;
  snprintf(l0, sizeof l0, "%s/l0.npy", tmpdir);
  snprintf(e0, sizeof e0, "%s/e0.npy", tmpdir);
  o.logits_path = l0;
  o.embeddings_path = e0;
  struct rt_predict_result r0, r1;
  OK(rt_predict(&o, &r0));
  int64_t n, C, H, n1, C1, H1;
  float *a = read_npy(l0, &n, &C), *ea = read_npy(e0, &n1, &H);
  const enum graph_reorder ms[] = {GRAPH_REORDER_RCM, GRAPH_REORDER_CLUSTER};
  for (int k = 0; k < 2; k++) {
    snprintf(l1, sizeof l1, "%s/l1.npy", tmpdir);
    snprintf(e1, sizeof e1, "%s/e1.npy", tmpdir);
    o.logits_path = l1;
    o.embeddings_path = e1;
    o.reorder = ms[k];
    OK(rt_predict(&o, &r1));
    float *b = read_npy(l1, &n1, &C1), *eb = read_npy(e1, &n1, &H1);
    assert_int_equal(n1, n);
    assert_int_equal(C1, C);
    assert_int_equal(H1, H);
    double worst = 0, worst_e = 0;
    int64_t bad = 0;
    for (int64_t i = 0; i < n * C; i++) {
      const double d = fabs((double)a[i] - b[i]);
      if (d > worst) worst = d;
      bad += d > 1e-4 + 1e-4 * fabs((double)a[i]);
    }
    for (int64_t i = 0; i < n * H; i++) {
      const double d = fabs((double)ea[i] - eb[i]);
      if (d > worst_e) worst_e = d;
      bad += d > 1e-4 + 1e-4 * fabs((double)ea[i]);
    }
    printf("  predict on %s --reorder %s: %lld x %lld logits, %lld x %lld embeddings, worst differences %.2e / "
           "%.2e; accuracies %.4f/%.4f/%.4f vs %.4f/%.4f/%.4f\n", graph, graph_reorder_name(ms[k]), (long long)n,
           (long long)C, (long long)n, (long long)H, worst, worst_e, r0.ev.train_acc, r0.ev.val_acc, r0.ev.test_acc,
           r1.ev.train_acc, r1.ev.val_acc, r1.ev.test_acc);
    assert_int_equal(bad, 0);
    free(b);
    free(eb);
  }
  free(a);
  free(ea);
  unlink(ck);
  unlink(l0);
  unlink(e0);
  unlink(l1);
  unlink(e1);
}

int main(void) {
  const char *base = getenv("TMPDIR");
  snprintf(tmpdir, sizeof tmpdir, "%s/capgnn_reorder_XXXXXX", base && *base ? base : "/tmp");
  if (!mkdtemp(tmpdir)) return 1;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_local_problem),
      cmocka_unit_test(test_auto_decides),
      cmocka_unit_test(test_training_equal),
      cmocka_unit_test(test_predict_order),
  };
  const int rc = cmocka_run_group_tests(tests, NULL, NULL);
  rmdir(tmpdir);
  return rc;
}
