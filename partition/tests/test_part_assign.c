/* test_part_assign — METIS and random partitioners (validity, determinism, balance,
 * target weights, vertex weights, argument errors, the METIS status boundary) and
 * the on-disk partition cache (reuse, corruption, key mismatch). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <metis.h>
#include <sys/stat.h>
#include <unistd.h>

#include "partition/part_internal.h"
#include "partition/partition.h"
#include "part_test_util.h"

static void counts_of(const int32_t *owner, int64_t n, int P, int64_t *count) {
  memset(count, 0, (size_t)P * sizeof *count);
  for (int64_t v = 0; v < n; v++) {
    assert_true(owner[v] >= 0 && owner[v] < P);
    count[owner[v]]++;
  }
}

static int run_assign(const struct graph *g, enum part_method m, int P, uint64_t seed, int32_t *owner) {
  struct part_options o = {.method = m, .nparts = P, .seed = seed};
  int st = part_assign(g, &o, owner);
  if (st != CG_OK) fprintf(stderr, "part_assign: %s\n", cg_err_msg());
  return st;
}

static void test_random_balanced_deterministic(void **state) {
  (void)state;
  struct graph g;
  test_graph_grid(&g, 25, 41); /* n = 1025 */
  int64_t n = g.n;
  int32_t *a = malloc((size_t)n * 4), *b = malloc((size_t)n * 4);
  for (int P = 1; P <= 7; P++) {
    assert_int_equal(run_assign(&g, PART_RANDOM, P, 42, a), CG_OK);
    assert_int_equal(run_assign(&g, PART_RANDOM, P, 42, b), CG_OK);
    assert_memory_equal(a, b, (size_t)n * 4);
    int64_t count[8];
    counts_of(a, n, P, count);
    /* n/P each, the first n % P parts one more. */
    for (int p = 0; p < P; p++) assert_int_equal(count[p], n / P + (p < n % P ? 1 : 0));
  }
  /* A different seed gives a different split (of 1025 vertices, surely). */
  assert_int_equal(run_assign(&g, PART_RANDOM, 4, 42, a), CG_OK);
  assert_int_equal(run_assign(&g, PART_RANDOM, 4, 43, b), CG_OK);
  int64_t differ = 0;
  for (int64_t v = 0; v < n; v++) differ += a[v] != b[v];
  printf("  seeds 42 vs 43: %lld of %lld owners differ\n", (long long)differ, (long long)n);
  assert_true(differ > n / 2);
  /* Seeds that differ only in the high 32 bits also differ. */
  assert_int_equal(run_assign(&g, PART_RANDOM, 4, 42 + (1ull << 40), b), CG_OK);
  differ = 0;
  for (int64_t v = 0; v < n; v++) differ += a[v] != b[v];
  assert_true(differ > n / 2);
  free(a);
  free(b);
  graph_free(&g);
}

static void test_random_target_weights(void **state) {
  (void)state;
  struct graph g;
  test_graph_grid(&g, 20, 50); /* n = 1000 */
  int32_t *owner = malloc((size_t)g.n * 4);
  int64_t count[3];
  const float t1[3] = {0.5f, 0.25f, 0.25f};
  struct part_options o = {.method = PART_RANDOM, .nparts = 3, .seed = 7, .tpwgts = t1};
  assert_int_equal(part_assign(&g, &o, owner), CG_OK);
  counts_of(owner, g.n, 3, count);
  assert_int_equal(count[0], 500);
  assert_int_equal(count[1], 250);
  assert_int_equal(count[2], 250);
  /* Largest remainder: 0.2*1000=200, 0.3337*1000=333.7, 0.4663*1000=466.3 -> 200 334 466. */
  const float t2[3] = {0.2f, 0.3337f, 0.4663f};
  o.tpwgts = t2;
  assert_int_equal(part_assign(&g, &o, owner), CG_OK);
  counts_of(owner, g.n, 3, count);
  assert_int_equal(count[0], 200);
  assert_int_equal(count[1], 334);
  assert_int_equal(count[2], 466);
  free(owner);
  graph_free(&g);
}

static void test_metis_valid_deterministic(void **state) {
  (void)state;
  struct graph g;
  test_graph_grid(&g, 30, 30);
  int64_t n = g.n;
  int32_t *a = malloc((size_t)n * 4), *b = malloc((size_t)n * 4), *r = malloc((size_t)n * 4);
  for (int P = 1; P <= 8; P++) {
    assert_int_equal(run_assign(&g, PART_METIS, P, 1, a), CG_OK);
    assert_int_equal(run_assign(&g, PART_METIS, P, 1, b), CG_OK);
    assert_memory_equal(a, b, (size_t)n * 4);
    int64_t count[8], maxc = 0;
    counts_of(a, n, P, count);
    for (int p = 0; p < P; p++) {
      assert_true(count[p] > 0);
      if (count[p] > maxc) maxc = count[p];
    }
    assert_int_equal(run_assign(&g, PART_RANDOM, P, 1, r), CG_OK);
    int64_t cut = test_edge_cut(&g, a), rcut = test_edge_cut(&g, r);
    printf("  grid 30x30, P=%d: METIS cut %lld (largest part %lld), random cut %lld\n", P,
           (long long)cut, (long long)maxc, (long long)rcut);
    /* METIS' default imbalance tolerance is 3 %. */
    assert_true((double)maxc <= 1.03 * (double)n / P + 1.0);
    if (P > 1) assert_true(cut * 4 < rcut); /* a grid has cuts far below random's */
    else assert_int_equal(cut, 0);
  }
  free(a);
  free(b);
  free(r);
  graph_free(&g);
}

static void test_metis_target_and_vertex_weights(void **state) {
  (void)state;
  struct graph g;
  test_graph_grid(&g, 40, 40);
  int64_t n = g.n, count[3];
  int32_t *owner = malloc((size_t)n * 4);
  const float t[3] = {0.6f, 0.3f, 0.1f};
  struct part_options o = {.method = PART_METIS, .nparts = 3, .seed = 3, .tpwgts = t};
  assert_int_equal(part_assign(&g, &o, owner), CG_OK);
  counts_of(owner, n, 3, count);
  printf("  targets 0.6/0.3/0.1 of %lld: %lld %lld %lld\n", (long long)n, (long long)count[0],
         (long long)count[1], (long long)count[2]);
  for (int p = 0; p < 3; p++) assert_true(fabs((double)count[p] - t[p] * (double)n) <= 0.04 * n);
  /* A target weight too small for one vertex (RAPA's for a rank measured 10^4 x slower):
   * METIS leaves the part empty, and the error says it was asked to (the weight and the
   * vertices it asks for), not only "run fewer ranks or --partition random", which reads
   * as if METIS had failed on the graph. */
  const float tiny[2] = {0.9999f, 0.0001f};
  struct part_options ot = {.method = PART_METIS, .nparts = 2, .seed = 3, .tpwgts = tiny, .parts_are_ranks = 1};
  assert_int_equal(part_assign(&g, &ot, owner), CG_ERR_METIS);
  printf("  targets 0.9999/0.0001: %s\n", cg_err_msg());
  assert_non_null(strstr(cg_err_msg(), "target weight 0.0001 asks for 0.16 of its 1600 vertices"));
  assert_non_null(strstr(cg_err_msg(), "run fewer ranks (mpirun -np)"));

  /* Vertex weights: vertices of part 0 of the unweighted 2-way split weigh 3, the
   * others 1. That split is then 3:1 in weight; with the weights, METIS must reach
   * weight balance, which it can only do by using them. */
  int64_t *w = malloc((size_t)n * sizeof *w), wsum[2] = {0, 0}, total = 0;
  struct part_options ou = {.method = PART_METIS, .nparts = 2, .seed = 3};
  assert_int_equal(part_assign(&g, &ou, owner), CG_OK);
  for (int64_t v = 0; v < n; v++) total += w[v] = owner[v] == 0 ? 3 : 1;
  for (int64_t v = 0; v < n; v++) wsum[owner[v]] += w[v];
  printf("  unweighted split: weights %lld and %lld of %lld\n", (long long)wsum[0],
         (long long)wsum[1], (long long)total);
  assert_true((double)wsum[0] > 1.4 * (double)total / 2);
  struct part_options ow = {.method = PART_METIS, .nparts = 2, .seed = 3, .vwgt = w};
  assert_int_equal(part_assign(&g, &ow, owner), CG_OK);
  counts_of(owner, n, 2, count);
  wsum[0] = wsum[1] = 0;
  for (int64_t v = 0; v < n; v++) wsum[owner[v]] += w[v];
  printf("  weighted split: weights %lld and %lld of %lld (%lld and %lld vertices)\n",
         (long long)wsum[0], (long long)wsum[1], (long long)total, (long long)count[0],
         (long long)count[1]);
  for (int p = 0; p < 2; p++) assert_true((double)wsum[p] <= 1.04 * (double)total / 2);
  free(w);
  free(owner);
  graph_free(&g);
}

/* METIS must only ever see a symmetric graph: a directed path is symmetrised. */
static void test_metis_directed_and_edgeless(void **state) {
  (void)state;
  int32_t e[99][2];
  for (int i = 0; i < 99; i++) {
    e[i][0] = i + 1;
    e[i][1] = i;
  }
  struct graph g;
  test_graph_from_edges(&g, "dpath", 100, (const int32_t(*)[2])e, 99, 1);
  int32_t owner[100];
  int64_t count[4], count8[8];
  assert_int_equal(run_assign(&g, PART_METIS, 4, 5, owner), CG_OK);
  counts_of(owner, 100, 4, count);
  for (int p = 0; p < 4; p++) assert_true(count[p] > 0);
  /* A path split into 4 pieces: few cut edges. */
  assert_true(test_edge_cut(&g, owner) <= 6);
  graph_free(&g);

  /* No edges at all: METIS still returns a valid balanced assignment (or a clear
   * METIS error); it must not crash. */
  test_graph_from_edges(&g, "empty", 20, NULL, 0, 0);
  int st = run_assign(&g, PART_METIS, 2, 1, owner);
  if (st == CG_OK) {
    counts_of(owner, 20, 2, count);
    assert_true(count[0] > 0 && count[1] > 0);
  } else {
    assert_int_equal(st, CG_ERR_METIS);
  }
  graph_free(&g);

  /* As many parts as vertices: METIS 5.1 leaves parts empty here; that must be a
   * clear METIS error, never an owner array with an empty part. */
  test_graph_hand8(&g);
  st = run_assign(&g, PART_METIS, 8, 1, owner);
  if (st == CG_OK) {
    counts_of(owner, 8, 8, count8);
    for (int p = 0; p < 8; p++) assert_int_equal(count8[p], 1);
  } else {
    assert_int_equal(st, CG_ERR_METIS);
    assert_non_null(strstr(cg_err_msg(), "empty"));
    assert_non_null(strstr(cg_err_msg(), "use fewer parts"));
    struct part_options ranks = {.method = PART_METIS, .nparts = 8, .seed = 1, .parts_are_ranks = 1};
    assert_int_equal(part_assign(&g, &ranks, owner), CG_ERR_METIS);
    assert_non_null(strstr(cg_err_msg(), "run fewer ranks (mpirun -np)"));
  }
  /* The random method always fills every part. */
  assert_int_equal(run_assign(&g, PART_RANDOM, 8, 1, owner), CG_OK);
  counts_of(owner, 8, 8, count8);
  for (int p = 0; p < 8; p++) assert_int_equal(count8[p], 1);
  graph_free(&g);
}

static void test_bad_options(void **state) {
  (void)state;
  struct graph g;
  test_graph_hand8(&g);
  int32_t owner[8];
  struct part_options o = {.method = PART_METIS, .nparts = 0};
  assert_int_equal(part_assign(&g, &o, owner), CG_ERR_ARG);
  o.nparts = 9;
  assert_int_equal(part_assign(&g, &o, owner), CG_ERR_ARG);
  assert_non_null(strstr(cg_err_msg(), "9 parts"));
  o.nparts = 2;
  assert_int_equal(part_assign(&g, &o, NULL), CG_ERR_ARG);
  const float half[2] = {0.25f, 0.25f};
  o.tpwgts = half;
  assert_int_equal(part_assign(&g, &o, owner), CG_ERR_ARG);
  assert_non_null(strstr(cg_err_msg(), "sum to 0.5"));
  const float neg[2] = {1.5f, -0.5f};
  o.tpwgts = neg;
  assert_int_equal(part_assign(&g, &o, owner), CG_ERR_ARG);
  o.tpwgts = NULL;
  int64_t w[8] = {1, 1, 1, -1, 1, 1, 1, 1};
  o.vwgt = w;
  assert_int_equal(part_assign(&g, &o, owner), CG_ERR_ARG);
  /* The idx_t boundary: a weight (or total) beyond 32 bits is refused, not truncated. */
  w[3] = 1ll << 40;
  assert_int_equal(part_assign(&g, &o, owner), CG_ERR_ARG);
  printf("  %s\n", cg_err_msg());
  assert_non_null(strstr(cg_err_msg(), "idx_t"));
  w[3] = INT32_MAX - 2;
  assert_int_equal(part_assign(&g, &o, owner), CG_ERR_ARG); /* the total overflows */
  w[3] = 1;
  o.method = PART_RANDOM; /* vertex weights are METIS-only */
  assert_int_equal(part_assign(&g, &o, owner), CG_ERR_ARG);
  o.vwgt = NULL;
  o.method = (enum part_method)7;
  assert_int_equal(part_assign(&g, &o, owner), CG_ERR_ARG);
  /* Random with target weights that leave a part without any vertex. */
  const float tiny[2] = {0.99f, 0.01f};
  o.method = PART_RANDOM;
  o.tpwgts = tiny;
  assert_int_equal(part_assign(&g, &o, owner), CG_ERR_ARG);
  assert_non_null(strstr(cg_err_msg(), "use fewer parts"));
  o.parts_are_ranks = 1; /* training: the parts are the job's ranks, so is the advice */
  assert_int_equal(part_assign(&g, &o, owner), CG_ERR_ARG);
  assert_non_null(strstr(cg_err_msg(), "use fewer ranks (mpirun -np)"));
  o.parts_are_ranks = 0;
  /* Unsorted row: METIS input is validated, not trusted. */
  int32_t t = g.colidx[0];
  g.colidx[0] = g.colidx[1];
  g.colidx[1] = t;
  o.method = PART_METIS;
  o.tpwgts = NULL;
  assert_int_equal(part_assign(&g, &o, owner), CG_ERR_ARG);
  assert_non_null(strstr(cg_err_msg(), "not strictly sorted"));
  graph_free(&g);

  enum part_method m;
  assert_int_equal(part_method_parse("metis", &m), CG_OK);
  assert_int_equal(m, PART_METIS);
  assert_int_equal(part_method_parse("random", &m), CG_OK);
  assert_int_equal(m, PART_RANDOM);
  assert_int_equal(part_method_parse("kahip", &m), CG_ERR_ARG);
  assert_string_equal(part_method_name(PART_RANDOM), "random");
}

/* METIS_OK is 1: 0 must not be taken for success, every error status maps to
 * CG_ERR_METIS with the METIS name in the message. */
static void test_metis_status(void **state) {
  (void)state;
  assert_int_equal(METIS_OK, 1);
  assert_int_equal(part_metis_status(METIS_OK, "X"), CG_OK);
  assert_int_equal(part_metis_status(0, "X"), CG_ERR_METIS);
  assert_int_equal(part_metis_status(METIS_ERROR_INPUT, "METIS_PartGraphKway"), CG_ERR_METIS);
  assert_non_null(strstr(cg_err_msg(), "METIS_ERROR_INPUT"));
  assert_int_equal(part_metis_status(METIS_ERROR_MEMORY, "METIS_PartGraphKway"), CG_ERR_METIS);
  assert_non_null(strstr(cg_err_msg(), "METIS_ERROR_MEMORY"));
  assert_int_equal(part_metis_status(METIS_ERROR, "METIS_PartGraphKway"), CG_ERR_METIS);
  assert_non_null(strstr(cg_err_msg(), "METIS_ERROR"));
}

/* ---- cache ------------------------------------------------------------------ */

static char tmpdir[64];

static int cache_setup(void **state) {
  (void)state;
  snprintf(tmpdir, sizeof tmpdir, "/tmp/capgnn-part-test-XXXXXX");
  return mkdtemp(tmpdir) ? 0 : -1;
}

static int cache_teardown(void **state) {
  (void)state;
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  return system(cmd) == 0 ? 0 : -1;
}

static void flip_byte(const char *path, long offset) {
  FILE *f = fopen(path, "r+b");
  assert_non_null(f);
  assert_int_equal(fseek(f, offset, SEEK_SET), 0);
  int c = fgetc(f);
  assert_int_equal(fseek(f, offset, SEEK_SET), 0);
  fputc(c ^ 0x5a, f);
  fclose(f);
}

static void test_cache_reuse_and_corruption(void **state) {
  (void)state;
  struct graph g;
  test_graph_grid(&g, 30, 30);
  int64_t n = g.n;
  char dir[128], path[512], path2[512];
  snprintf(dir, sizeof dir, "%s/nested/cache", tmpdir); /* created on demand */
  int32_t *ref = malloc((size_t)n * 4), *got = malloc((size_t)n * 4);
  struct part_options o = {.method = PART_METIS, .nparts = 4, .seed = 11};
  assert_int_equal(part_assign(&g, &o, ref), CG_OK);
  int reused = -1;
  assert_int_equal(part_assign_cached(&g, &o, dir, got, &reused), CG_OK);
  assert_int_equal(reused, 0);
  assert_memory_equal(ref, got, (size_t)n * 4);
  assert_int_equal(part_cache_path(&g, &o, dir, path, sizeof path), CG_OK);
  printf("  cache file %s\n", path);
  assert_non_null(strstr(path, "/grid30x30-"));
  assert_non_null(strstr(path, "-metis-p4-s11.part"));
  struct stat sb;
  assert_int_equal(stat(path, &sb), 0);
  assert_int_equal(sb.st_size, 64 + 4 * n + 4);

  memset(got, 0xff, (size_t)n * 4);
  assert_int_equal(part_assign_cached(&g, &o, dir, got, &reused), CG_OK);
  assert_int_equal(reused, 1);
  assert_memory_equal(ref, got, (size_t)n * 4);

  /* A flipped owner byte: CRC mismatch -> recomputed (and the file rewritten). */
  flip_byte(path, 64 + 4 * 100);
  assert_int_equal(part_assign_cached(&g, &o, dir, got, &reused), CG_OK);
  assert_int_equal(reused, 0);
  assert_memory_equal(ref, got, (size_t)n * 4);
  assert_int_equal(part_assign_cached(&g, &o, dir, got, &reused), CG_OK);
  assert_int_equal(reused, 1);

  /* Truncated file. */
  assert_int_equal(truncate(path, 64 + 4 * n), 0);
  assert_int_equal(part_assign_cached(&g, &o, dir, got, &reused), CG_OK);
  assert_int_equal(reused, 0);
  assert_memory_equal(ref, got, (size_t)n * 4);

  /* A valid file under the wrong name (seed 11's file copied to seed 12's name):
   * its CRC is fine but the key fields do not match. */
  struct part_options o2 = o;
  o2.seed = 12;
  assert_int_equal(part_cache_path(&g, &o2, dir, path2, sizeof path2), CG_OK);
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "cp '%s' '%s'", path, path2);
  assert_int_equal(system(cmd), 0);
  int32_t *ref2 = malloc((size_t)n * 4);
  assert_int_equal(part_assign(&g, &o2, ref2), CG_OK);
  assert_int_equal(part_assign_cached(&g, &o2, dir, got, &reused), CG_OK);
  assert_int_equal(reused, 0);
  assert_memory_equal(ref2, got, (size_t)n * 4);

  /* Another graph checksum -> another file. */
  uint32_t keep = g.checksum;
  g.checksum ^= 1;
  assert_int_equal(part_assign_cached(&g, &o, dir, got, &reused), CG_OK);
  assert_int_equal(reused, 0);
  g.checksum = keep;

  /* Target weights give their own file (suffix -w<hash>), and different weights
   * another one. */
  const float t[4] = {0.4f, 0.2f, 0.2f, 0.2f}, t2[4] = {0.1f, 0.3f, 0.3f, 0.3f};
  struct part_options ot = o;
  ot.tpwgts = t;
  assert_int_equal(part_cache_path(&g, &ot, dir, path2, sizeof path2), CG_OK);
  assert_non_null(strstr(path2, "-s11-w"));
  assert_int_equal(part_assign_cached(&g, &ot, dir, got, &reused), CG_OK);
  assert_int_equal(reused, 0);
  assert_int_equal(part_assign_cached(&g, &ot, dir, got, &reused), CG_OK);
  assert_int_equal(reused, 1);
  ot.tpwgts = t2;
  assert_int_equal(part_assign_cached(&g, &ot, dir, got, &reused), CG_OK);
  assert_int_equal(reused, 0);

  /* cache_dir NULL -> $CAPGNN_CACHE. */
  char envdir[128];
  snprintf(envdir, sizeof envdir, "%s/env", tmpdir);
  setenv("CAPGNN_CACHE", envdir, 1);
  assert_int_equal(part_assign_cached(&g, &o, NULL, got, &reused), CG_OK);
  assert_int_equal(reused, 0);
  assert_int_equal(part_cache_path(&g, &o, NULL, path2, sizeof path2), CG_OK);
  assert_int_equal(strncmp(path2, envdir, strlen(envdir)), 0);
  assert_int_equal(stat(path2, &sb), 0);
  assert_int_equal(part_assign_cached(&g, &o, NULL, got, &reused), CG_OK);
  assert_int_equal(reused, 1);
  unsetenv("CAPGNN_CACHE");

  /* An unwritable cache location is a warning, not an error. */
  char fileasdir[160];
  snprintf(fileasdir, sizeof fileasdir, "%s/plainfile", tmpdir);
  FILE *f = fopen(fileasdir, "w");
  assert_non_null(f);
  fclose(f);
  assert_int_equal(part_assign_cached(&g, &o, fileasdir, got, &reused), CG_OK);
  assert_int_equal(reused, 0);
  assert_memory_equal(ref, got, (size_t)n * 4);

  free(ref);
  free(ref2);
  free(got);
  graph_free(&g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_random_balanced_deterministic),
      cmocka_unit_test(test_random_target_weights),
      cmocka_unit_test(test_metis_valid_deterministic),
      cmocka_unit_test(test_metis_target_and_vertex_weights),
      cmocka_unit_test(test_metis_directed_and_edgeless),
      cmocka_unit_test(test_bad_options),
      cmocka_unit_test(test_metis_status),
      cmocka_unit_test_setup_teardown(test_cache_reuse_and_corruption, cache_setup, cache_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
