/* runtime/dist.c — partition-parallel set-up: the local problem of each rank, its
 * exchange (mpi/'s, behind the seam of core/exchange.h) and the whole multi-rank run
 * (the flow and the contract are in runtime/dist.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "core/log.h"
#include "core/ops_emulate.h"
#include "core/ops_profile.h"
#include "core/timer.h"
#include "core/status.h"
#include "core/watchdog.h"
#include "runtime/dist.h"
#include "runtime/runtime_internal.h"

#ifdef CAPGNN_HAVE_CUDA
#include "cuda/cuda_backend.h" /* cg_cuda_device_count */
#endif
#ifdef CAPGNN_HAVE_RAPA
#include "rapa/balance.h"
#include "rapa/rapa.h"
#endif

struct rt_dist {
  struct comm *c;
  struct rt_local loc;
  struct part_local pl;   /* plan arrays and gid; agg freed (the local problem has its copy) */
  struct cg_exchange *ex; /* rt_dist_bind's; NULL before */
  int64_t max_cols;
  struct jaca_options halo_cache; /* rt_dist_options' */
  enum rt_fault fail;     /* testing only (CAPGNN_TEST_FAIL_RANK / _AT) */
  struct rt_prediction pred; /* --partition rapa's; loc.pred points here when set */
  struct rt_job job;         /* loc.job points here */
  int per_rank;              /* the graph was loaded (or generated) per rank */
  uint64_t bytes_read, structure_bytes; /* per-rank loading: of the file, of them the structure */
  int l0x;                /* --layer0-halo chose exchange (rt_layer0_exchange_choose): the
                             model fetches and keeps no halo feature row */
};

void rt_dist_options_defaults(struct rt_dist_options *o) {
  memset(o, 0, sizeof *o);
  o->method = PART_METIS;
  o->part_seed = 1;
  o->use_cache = 1;
  o->cache_dir = NULL;
  jaca_options_defaults(&o->halo_cache);
  o->load = RT_LOAD_AUTO;
}

const char *rt_load_name(enum rt_load l) {
  switch (l) {
    case RT_LOAD_AUTO: return "auto";
    case RT_LOAD_WHOLE: return "whole";
    case RT_LOAD_PER_RANK: return "per-rank";
  }
  return "?";
}

int rt_load_parse(const char *name, enum rt_load *out) {
  for (int l = RT_LOAD_AUTO; l <= RT_LOAD_PER_RANK; l++)
    if (name && strcmp(name, rt_load_name((enum rt_load)l)) == 0) {
      *out = (enum rt_load)l;
      return CG_OK;
    }
  return cg_err_set(CG_ERR_ARG, "--load '%s': expected auto, whole or per-rank", name ? name : "");
}

/* ---- set-up ---------------------------------------------------------------------- */

/* Same graph on every rank: a rank that opened another file (or another version of
 * it) would partition a different graph and train garbage. The message names the first
 * rank whose graph differs from rank 0's and both graphs, so that the machine with the
 * other copy can be found among many. */
static int check_same_graph(struct comm *c, const struct graph *g) {
  int64_t v[6] = {(int64_t)g->checksum, -(int64_t)g->checksum, g->n, -g->n, g->m, -g->m};
  TRY(comm_allreduce_i64(c, v, 6, COMM_MAX));
  if (v[0] == -v[1] && v[2] == -v[3] && v[4] == -v[5]) return CG_OK;
  const int size = comm_size(c);
  int64_t *sums = cg_calloc((size_t)size, sizeof *sums, "graph checksum of every rank");
  int64_t *ns = cg_calloc((size_t)size, sizeof *ns, "graph size of every rank");
  int64_t *ms = cg_calloc((size_t)size, sizeof *ms, "graph edges of every rank");
  int st = sums && ns && ms ? CG_OK : CG_ERR_NOMEM;
  if ((st = comm_agree(c, st, "comparing the ranks' graphs")) == CG_OK &&
      (st = comm_allgather_i64(c, (int64_t)g->checksum, sums)) == CG_OK &&
      (st = comm_allgather_i64(c, g->n, ns)) == CG_OK && (st = comm_allgather_i64(c, g->m, ms)) == CG_OK) {
    int first = 1, differ = 0;
    for (int r = size - 1; r > 0; r--)
      if (sums[r] != sums[0] || ns[r] != ns[0] || ms[r] != ms[0]) differ++, first = r;
    st = cg_err_set(CG_ERR_ARG,
                    "the ranks opened different graphs: rank %d's has checksum %08llx and %lld vertices, rank 0's "
                    "%08llx and %lld (%d of %d ranks differ from rank 0; all: checksums %08llx..%08llx, %lld..%lld "
                    "vertices): every rank must read the same file or synthetic spec",
                    first, (unsigned long long)sums[first], (long long)ns[first], (unsigned long long)sums[0],
                    (long long)ns[0], differ, size, (unsigned long long)-v[1], (unsigned long long)v[0],
                    (long long)-v[3], (long long)v[2]);
  }
  cg_free(sums);
  cg_free(ns);
  cg_free(ms);
  return st;
}

/* Whether a rank's local problem holds its halo rows' sparse features: only when layer
 * 0 is local. Exchanged (the default for sparse features), the owners send transformed
 * rows and the halo rows' features are never used, so they are neither built nor read. */
static int dist_halo_features(const struct rt_config *cfg, const struct graph *info, int sparse,
                              const struct part_local *pl) {
  return sparse && !rt_layer0_exchange_choose(cfg, info->feat_dim, info->num_classes, sparse,
                                              pl->n_halo > 0 || pl->nparts > 1, NULL);
}

/* Where the partition cache keeps this partition ("; cache file PATH"), for the
 * partition log line: a run names the file it reused or saved, as `capgnn partition`
 * does, so that a user can find (or remove) what appeared in the cache folder. */
static const char *part_cache_said(const struct graph *g, const struct part_options *po,
                                   const struct rt_dist_options *o, char *buf, size_t n) {
  char path[4096];
  buf[0] = '\0';
  if (o->use_cache && part_cache_path(g, po, o->cache_dir, path, sizeof path) == CG_OK)
    snprintf(buf, n, "; cache file %s", path);
  return buf;
}

/* --reorder: each rank reorders its inner rows locally, once its local problem exists
 * (runtime/reorder.c: owners, halo blocks and the rows read per rank stay those of the
 * file's order); the plan's copy of the ids and its send lists (inner local ids) follow.
 * The halo cache builds its plan from inner rows in increasing global id (jaca/node.c),
 * so it is not combined with a reordering. Collective (agreed). */
static int dist_reorder(struct comm *c, const struct rt_config *cfg, struct rt_dist *d) {
  int st = CG_OK;
  if (cfg->reorder == GRAPH_REORDER_NONE) return CG_OK;
  if (d->halo_cache.policy != JACA_POLICY_NONE) {
    if (cfg->reorder == GRAPH_REORDER_AUTO) {
      LOG_INFO("reorder", "--reorder auto: not with a halo cache (--cache-policy), which needs the inner rows in "
               "global order; the input order is kept");
      return CG_OK;
    }
    st = cg_err_set(CG_ERR_UNSUPPORTED, "--reorder %s with --cache-policy %s: the halo cache needs each rank's inner "
                    "rows in global order (use --reorder none or auto, or no halo cache)", graph_reorder_name(cfg->reorder),
                    jaca_policy_name(d->halo_cache.policy));
    return comm_agree(c, st, "reordering the inner rows");
  }
  int32_t *pos = NULL;
  st = rt_local_reorder(&d->loc, cfg->reorder, &pos);
  if (st == CG_OK && pos) {
    struct part_local *pl = &d->pl;
    memcpy(pl->gid, d->loc.gid, (size_t)pl->n_inner * sizeof *pl->gid);
    int64_t ns = 0;
    for (int i = 0; i < pl->npeers; i++) ns += pl->send_count[i];
    for (int64_t k = 0; k < ns; k++) pl->send_idx[k] = pos[pl->send_idx[k]];
  }
  cg_free(pos);
  TRY(comm_agree(c, st, "reordering the inner rows"));
  /* each rank decided for its own rows (auto): say how many reordered, on rank 0 too */
  const int P = comm_size(c);
  int64_t *applied = cg_malloc((size_t)P * sizeof *applied, "reorder: the ranks' choices");
  if (!applied) st = CG_ERR_NOMEM;
  st = comm_agree(c, st, "gathering the ranks' reordering");
  if (st == CG_OK) st = comm_allgather_i64(c, (int64_t)d->loc.reorder_applied, applied);
  if (st == CG_OK) {
    int k = 0;
    for (int r = 0; r < P; r++)
      if (applied[r] != GRAPH_REORDER_NONE) {
        k++;
        d->loc.reorder_applied = (enum graph_reorder)applied[r];
      }
    d->loc.reorder_ranks = k;
    if (comm_rank(c) == 0 && k == 0)
      LOG_INFO("reorder", "--reorder %s: all %d ranks keep their input order (each rank orders its own inner rows)",
               graph_reorder_name(cfg->reorder), P);
    else if (comm_rank(c) == 0)
      LOG_INFO("reorder", "--reorder %s: %s order on %d of %d ranks (each rank orders its own inner rows)",
               graph_reorder_name(cfg->reorder), graph_reorder_name(d->loc.reorder_applied), k, P);
  }
  cg_free(applied);
  return st;
}

/* Every rank needs at least one vertex of its own. */
static int enough_vertices(const char *name, int64_t n, int P) {
  if (n >= P) return CG_OK;
  return cg_err_set(CG_ERR_ARG, "graph %s has %lld %s, fewer than the %d ranks", name, (long long)n,
                    n == 1 ? "vertex" : "vertices", P);
}

static int dist_build(struct comm *c, const struct graph *g, const struct rt_config *cfg,
                      const struct rt_dist_options *o, const int32_t *owner_in, struct rt_dist *d) {
  int st = CG_OK;
  const int rank = comm_rank(c), P = comm_size(c);
  int32_t *owner = NULL;

  TRY(comm_agree(c, check_same_graph(c, g), "checking that every rank opened the same graph"));
  st = enough_vertices(g->name, g->n, P);
  TRY(comm_agree(c, st, "checking the graph size"));

  /* Owners: rank 0 computes (or reads the cache), everyone receives the same array. */
  owner = cg_malloc((size_t)g->n * sizeof(int32_t), "owner of every vertex");
  st = owner ? CG_OK : CG_ERR_NOMEM;
  if (st == CG_OK && owner_in) {
    memcpy(owner, owner_in, (size_t)g->n * sizeof(int32_t));
  } else if (st == CG_OK && rank == 0) {
    struct part_options po;
    memset(&po, 0, sizeof po);
    po.method = o->method;
    po.nparts = P;
    po.seed = o->part_seed;
    po.parts_are_ranks = 1;
    int reused = 0;
    st = o->use_cache ? part_assign_cached(g, &po, o->cache_dir, owner, &reused)
                      : part_assign(g, &po, owner);
    char said[4200];
    if (st == CG_OK)
      LOG_INFO("dist", "partition: %s, %d parts, seed %llu (%s%s)", part_method_name(o->method), P,
               (unsigned long long)o->part_seed, reused ? "reused from the cache" : "computed",
               part_cache_said(g, &po, o, said, sizeof said));
  }
  TRY_GOTO(comm_agree(c, st, "partitioning the graph"), done);
  if (!owner_in) TRY_GOTO(comm_bcast(c, owner, (size_t)g->n * sizeof(int32_t), 0), done);

  int self_loops = 0, sparse = 0;
  enum graph_norm norm = rt_model_norm(cfg->model, &self_loops);
  st = rt_features_choose(g, cfg, rank == 0, &sparse);
  if (st == CG_OK) st = part_local_build(g, owner, P, rank, norm, self_loops, &d->pl);
  if (st == CG_OK) st = part_local_check(g, owner, &d->pl);
  if (st == CG_OK) st = rt_local_from_part(g, &d->pl, sparse, dist_halo_features(cfg, g, sparse, &d->pl), &d->loc);
  TRY_GOTO(comm_agree(c, st, "building the local graph"), done);
  TRY_GOTO(dist_reorder(c, cfg, d), done);

done:
  cg_free(owner);
  return st;
}

static void dist_log_memory(struct rt_dist *d, const struct rt_config *cfg) {
  const struct rt_local *l = &d->loc;
  const char *why = NULL;
  d->l0x = rt_layer0_exchange_choose(cfg, l->feat_dim, l->num_classes, l->feat_sparse, rt_local_exchanges(l), &why);
  if (l->rank == 0)
    LOG_INFO("dist", "layer 0: %s (%s)", d->l0x ? "exchange: the owners transform their inner rows and send the "
             "transformed rows, no halo feature row is fetched" : "local: every rank transforms its inner and halo "
             "feature rows", why);
  if (l->feat_sparse)
    LOG_DEBUG("dist", "rank %d: %lld inner + %lld halo rows of %lld, %d peers; sparse feature bytes %lld "
              "(%lld stored values of the inner and halo rows; dense they would be %lld)",
              l->rank, (long long)l->n_inner, (long long)l->n_halo, (long long)l->n_global, d->pl.npeers,
              (long long)rt_dist_feature_bytes(d), (long long)l->feat_csr.nnz,
              (long long)(l->feat_rows * l->feat_dim * 4));
  else
    LOG_DEBUG("dist", "rank %d: %lld inner + %lld halo rows of %lld, %d peers; feature bytes %lld "
              "(inner %lld on the host + halo %lld in the model; the whole matrix would be %lld)",
              l->rank, (long long)l->n_inner, (long long)l->n_halo, (long long)l->n_global,
              d->pl.npeers, (long long)rt_dist_feature_bytes(d),
              (long long)(l->feat_rows * l->feat_dim * 4), (long long)(l->n_halo * l->feat_dim * 4),
              (long long)(l->n_global * l->feat_dim * 4));
}

int rt_dist_create_from_graph(struct comm *c, const struct graph *g, const struct rt_config *cfg,
                              const struct rt_dist_options *o, const int32_t *owner,
                              struct rt_dist **out) {
  int st = CG_OK;
  *out = NULL;
  struct rt_dist_options def;
  if (!o) {
    rt_dist_options_defaults(&def);
    o = &def;
  }
  struct rt_dist *d = cg_calloc(1, sizeof *d, "distributed training state");
  if (!d) st = CG_ERR_NOMEM;
  /* when another rank failed, this one's d exists: fail frees it (and takes NULL) */
  TRY_GOTO(comm_agree(c, st, "allocating the distributed state"), fail);
  d->c = c;
  d->halo_cache = o->halo_cache;
  d->fail = rt_fault_from_env(comm_rank(c));
  TRY_GOTO(dist_build(c, g, cfg, o, owner, d), fail);
  dist_log_memory(d, cfg);
  *out = d;
  return CG_OK;
fail:
  rt_dist_destroy(&d);
  return st;
}

#ifdef CAPGNN_HAVE_RAPA
/* --partition rapa: the rates (a profile, or measured on every rank), the weighted split
 * on rank 0, the owners and the prediction to every rank. Collective. */
/* --prune-halo: rank 0 prunes (the owners stay), every rank takes the pruned CSR. */
static int dist_rapa_prune(struct comm *c, struct graph *g, const struct rapa_shape *shape,
                           const struct rapa_rates *rates, const struct rapa_links *links,
                           const struct rt_dist_options *o, const int32_t *owner, struct rt_prediction *pred) {
  const int rank = comm_rank(c), P = comm_size(c);
  int st = CG_OK;
  struct graph pr;
  struct rapa_prune_result res;
  memset(&pr, 0, sizeof pr);
  memset(&res, 0, sizeof res);
  int64_t m = 0;
  /* the original degrees, before the structure changes (every rank has the whole graph) */
  if (g->norm_deg)
    st = cg_err_set(CG_ERR_ARG, "--prune-halo on a graph normalised by another graph's degrees (--norm-degrees): "
                    "not supported (--prune-norm original keeps the original graph's degrees)");
  else if (o->prune_keep_degrees) st = graph_set_norm_degrees(g, g, "--prune-norm original");
  TRY(comm_agree(c, st, "keeping the original degrees"));
  if (rank == 0) {
    st = rapa_prune_halo(g, owner, P, shape, rates, links, o->prune_eps, &pr, &res);
    if (st == CG_OK && o->prune_write) st = graph_save_cgr(o->prune_write, &pr);
    if (st == CG_OK) {
      m = pr.m;
      pred->prune_eps = o->prune_eps;
      pred->prune_keep_degrees = o->prune_keep_degrees;
      pred->cut_edges = res.cut_edges;
      pred->pruned_edges = res.removed_edges;
      pred->pruned_vertices = res.nlog;
      for (int p = 0; p < P; p++) {
        pred->compute_s[p] = res.after[p].comp_s;
        pred->comm_s[p] = res.after[p].comm_s;
        pred->memory_bytes[p] = res.after[p].memory_bytes;
      }
      if (res.removed_edges == 0) /* nothing pruned: the graph itself (the summary's rapa.exact) */
        LOG_INFO("dist", "halo pruning (--prune-halo %g) removed none of %lld cut edges (%d round%s): training runs "
                 "on the graph itself%s%s", o->prune_eps, (long long)res.cut_edges, res.rounds,
                 res.rounds == 1 ? "" : "s", o->prune_write ? "; the graph written to " : "",
                 o->prune_write ? o->prune_write : "");
      else
        LOG_WARN("dist", "APPROXIMATE: halo pruning (--prune-halo %g) removed %lld of %lld cut edges (%.2f %%; %lld "
                 "halo vertices of their parts, %d round%s): training runs on the pruned graph, normalised with %s "
                 "degrees%s%s", o->prune_eps,
                 (long long)res.removed_edges, (long long)res.cut_edges,
                 res.cut_edges > 0 ? 100.0 * (double)res.removed_edges / (double)res.cut_edges : 0.0,
                 (long long)res.nlog, res.rounds, res.rounds == 1 ? "" : "s",
                 o->prune_keep_degrees ? "the original graph's" : "its own", o->prune_write ? ", written to " : "",
                 o->prune_write ? o->prune_write : "");
      for (int p = 0; p < P; p++)
        LOG_INFO("dist", "pruned: rank %d predicted compute %.4g ms + communication %.4g ms (before: %.4g + %.4g)", p,
                 res.after[p].comp_s * 1e3, res.after[p].comm_s * 1e3, res.before[p].comp_s * 1e3,
                 res.before[p].comm_s * 1e3);
    }
  }
  TRY_GOTO(comm_agree(c, st, "pruning halo vertices"), done);
  int64_t mm[1] = {m};
  TRY_GOTO(comm_allreduce_i64(c, mm, 1, COMM_SUM), done);
  if (rank != 0) {
    pr.n = g->n;
    pr.m = mm[0];
    pr.rowptr = cg_malloc((size_t)(g->n + 1) * sizeof *pr.rowptr, "pruned graph offsets");
    pr.colidx = cg_malloc((size_t)(mm[0] > 0 ? mm[0] : 1) * sizeof *pr.colidx, "pruned graph columns");
    st = pr.rowptr && pr.colidx ? CG_OK : CG_ERR_NOMEM;
  }
  TRY_GOTO(comm_agree(c, st, "allocating the pruned graph"), done);
  TRY_GOTO(comm_bcast(c, pr.rowptr, (size_t)(g->n + 1) * sizeof *pr.rowptr, 0), done);
  TRY_GOTO(comm_bcast(c, pr.colidx, (size_t)mm[0] * sizeof *pr.colidx, 0), done);
  { /* the pruned structure replaces the graph's (features, labels, split unchanged) */
    int64_t *rp = g->rowptr;
    int32_t *ci = g->colidx;
    g->rowptr = pr.rowptr;
    g->colidx = pr.colidx;
    g->m = mm[0];
    pr.rowptr = rp;
    pr.colidx = ci;
    graph_checksum_update(g);
  }
done:
  graph_free(&pr);
  rapa_prune_result_free(&res);
  return st;
}

static int dist_rapa_owner(struct comm *c, struct graph *g, const struct rt_config *cfg,
                           const struct rt_dist_options *o, int32_t *owner, struct rt_prediction *pred) {
  const int rank = comm_rank(c), P = comm_size(c);
  int st = CG_OK;
  struct rapa_rates rates[RAPA_MAX_RANKS];
  struct rapa_links links;
  struct rapa_profile *prof = NULL;
  memset(&links, 0, sizeof links);
  memset(pred, 0, sizeof *pred);
  if (P > RAPA_MAX_RANKS || P > RT_PRED_MAX_RANKS)
    st = cg_err_set(CG_ERR_ARG, "--partition rapa supports at most %d ranks", RAPA_MAX_RANKS);
  TRY(comm_agree(c, st, "checking the rank count"));
  int sparse = 0; /* (layer 0's schedule depends on it) */
  if (st == CG_OK) st = rt_features_choose(g, cfg, 0, &sparse);
  TRY(comm_agree(c, st, "choosing the features' layout"));
  const struct rapa_shape shape = {cfg->layers, g->feat_dim, cfg->hidden, g->num_classes, cfg->model == RT_MODEL_SAGE,
                                   rt_config_layer_dropout(cfg, 1), rt_config_layer_dropout(cfg, 0),
                                   rt_layer0_exchange_choose(cfg, g->feat_dim, g->num_classes, sparse, P > 1, NULL),
                                   rt_features_density(g, sparse)};
  if (cfg->model != RT_MODEL_GCN && cfg->model != RT_MODEL_SAGE)
    LOG_WARN_COMMON("dist", "--partition rapa: the cost model prices GCN and SAGE layers; the %s model's attention "
                    "is not modelled, so its parts are sized as for a GCN of the same widths (still exact)",
                    rt_model_kind_str(cfg->model));
  const struct rapa_links *use_links = P > 1 ? &links : NULL;
  if (o->rapa_rates) { /* given by the caller */
    memcpy(rates, o->rapa_rates, (size_t)P * sizeof *rates);
    use_links = P > 1 ? o->rapa_links : NULL;
    snprintf(pred->rates, sizeof pred->rates, "given by the caller");
  } else if (o->rapa_profile) { /* rank 0 reads it: the rates of every rank, the links */
    if (rank == 0) {
      st = rapa_profile_load(o->rapa_profile, &prof);
      if (st == CG_OK) st = rapa_profile_check_ranks(prof, o->rapa_profile, P);
    }
    TRY_GOTO(comm_agree(c, st, "reading the profile"), done);
    /* each rank's own device's entry (by host and device key, as --profile's log line), not
     * the entry of its rank number: a job run with --threads 1,2 on a profile of 2,1 */
    int match[RAPA_MAX_RANKS];
    TRY_GOTO(rapa_profile_match_ranks(c, prof, o->rapa_profile, cfg->device, cfg->threads, match), done);
    if (rank == 0) {
      /* under CAPGNN_EMULATE_SPEED each rank's device runs at its speed: the profile
       * measured it as it is (never emulated: rapa/run.c) */
      const char *speed = getenv("CAPGNN_EMULATE_SPEED");
      for (int p = 0; p < P && st == CG_OK; p++)
        st = rapa_rates_from_profile(prof, match[p], o->rapa_be && o->rapa_be->kind == CG_DEVICE_CUDA, &rates[p]);
      if (st == CG_OK) st = rapa_rates_emulate(rates, P);
      struct rapa_links pl;
      memset(&pl, 0, sizeof pl);
      if (st == CG_OK && P > 1) st = rapa_links_from_profile(prof, &pl);
      if (st == CG_OK && P > 1) st = rapa_links_alloc(&links, P);
      for (int i = 0; i < P && st == CG_OK && P > 1; i++)
        for (int j = 0; j < P; j++) { /* two ranks on one entry (the same device): their rank numbers' link */
          const int k = match[i] != match[j] ? match[i] * P + match[j] : i * P + j;
          links.bw_bps[i * P + j] = pl.bw_bps[k];
          links.lat_s[i * P + j] = pl.lat_s[k];
        }
      rapa_links_free(&pl);
      snprintf(pred->rates, sizeof pred->rates, "profile %s%s", o->rapa_profile,
               speed && speed[0] ? " at the emulated speeds (CAPGNN_EMULATE_SPEED)" : "");
    }
    TRY_GOTO(comm_agree(c, st, "reading the rates from the profile"), done);
  } else {
    if (!o->rapa_be) st = cg_err_set(CG_ERR_ARG, "--partition rapa: no backend to measure the rates on");
    TRY_GOTO(comm_agree(c, st, "checking the options"), done);
    TRY_GOTO(rapa_rates_measure(c, o->rapa_be, g, &shape, rates, &links), done);
    snprintf(pred->rates, sizeof pred->rates, "measured at start-up on every rank at the model's shapes");
  }
  if (!o->rapa_rates && o->rapa_be && o->rapa_be->kind != CG_DEVICE_CUDA) {
    /* CPU ranks of one host share its free memory (a profile's and a measurement's figure
     * is the host's): each may count on its share, so that P ranks on a host that fit
     * one by one but not together are said not to fit (a GPU's memory is its rank's) */
    int64_t host_ranks[RAPA_MAX_RANKS] = {0};
    host_ranks[rank] = comm_host_local_size(c);
    TRY_GOTO(comm_allreduce_i64(c, host_ranks, P, COMM_SUM), done);
    for (int p = 0; p < P; p++)
      if (host_ranks[p] > 1) rates[p].free_bytes /= (double)host_ranks[p];
  }
  if (rank == 0) {
    struct rapa_split sp;
    st = rapa_partition_weighted(g, &shape, rates, use_links, P, o->part_seed, 0.05, 1, owner, &sp);
    if (st == CG_OK) {
      pred->nranks = P;
      pred->passes = sp.passes;
      pred->corrected = sp.corrected;
      for (int p = 0; p < P; p++) {
        pred->compute_s[p] = sp.cost[p].comp_s;
        pred->comm_s[p] = sp.cost[p].comm_s;
        pred->memory_bytes[p] = sp.cost[p].memory_bytes;
        pred->target[p] = sp.target[p];
        LOG_INFO("dist", "rapa: rank %d capability %.4f, target share %.4f, got %.4f; predicted compute %.2f ms + "
                 "communication %.2f ms, memory %.1f MiB of %.1f MiB free%s", p, sp.capability[p], sp.target[p],
                 sp.share[p], sp.cost[p].comp_s * 1e3, sp.cost[p].comm_s * 1e3, sp.cost[p].memory_bytes / 1048576.0,
                 rates[p].free_bytes / 1048576.0, sp.cost[p].fits ? "" : " (does NOT fit)");
      }
      LOG_INFO("dist", "partition: rapa (capability-weighted METIS, exact), %d parts, seed %llu, %d METIS run%s%s; "
               "rates %s; computed for this run (the partition cache keeps no rapa split: it follows the rates)",
               P, (unsigned long long)o->part_seed, sp.passes, sp.passes == 1 ? "" : "s",
               sp.corrected ? " (the correction pass's split kept)" : "", pred->rates);
    }
  }
  TRY_GOTO(comm_agree(c, st, "partitioning the graph (rapa)"), done);
  if (o->prune_eps > 0) TRY_GOTO(dist_rapa_prune(c, g, &shape, rates, use_links, o, owner, pred), done);
  TRY_GOTO(comm_bcast(c, owner, (size_t)g->n * sizeof(int32_t), 0), done);
  TRY_GOTO(comm_bcast(c, pred, sizeof *pred, 0), done);
done:
  rapa_profile_destroy(&prof);
  rapa_links_free(&links);
  return st;
}
#endif

/* Every rank opens the graph itself, then the set-up above; from then on this rank
 * holds its partition (plus halos) only. */
/* The bytes of this rank's partition plus halo, for the set-up log: the features of
 * its inner rows (and of its halo rows with a local layer 0), its operator (column + value per entry, row pointers), its
 * labels and split, and its ids and send lists. */
static int64_t dist_part_bytes(const struct rt_dist *d, const struct rt_config *cfg) {
  const struct rt_local *l = &d->loc;
  const struct part_local *p = &d->pl;
  int64_t ns = 0;
  for (int i = 0; i < p->npeers; i++) ns += p->send_count[i];
  const int64_t nt = l->n_inner + l->n_halo;
  /* dense features: the halo rows' too when layer 0 is local (the model fetches them);
   * exchanged, a rank never holds them */
  const int l0x = rt_layer0_exchange_choose(cfg, l->feat_dim, l->num_classes, l->feat_sparse,
                                            rt_local_exchanges(l), NULL); /* (d->l0x: not set yet here) */
  const int64_t feat = l->feat_sparse ? l->feat_csr.nnz * 8 + (l->feat_csr.nrows + 1) * 8
                                      : (l0x ? l->n_inner : nt) * l->feat_dim * 4;
  return feat + l->agg.rowptr[l->agg.nrows] * 8 + (l->n_inner + 1) * 8 +
         l->n_inner * (l->multilabel ? l->num_classes : 4) + l->n_inner + nt * 4 + ns * 4;
}

static int cmp_gid(const void *a, const void *b) {
  const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

/* Per-rank loading, the part after the rows: the local graph (global degrees from
 * rowptr), the split counts summed over the ranks, with sparse features and a local
 * layer 0 the halo rows' features read from the file f (never exchanged; f NULL: none
 * to read), the local problem, then its reordering. Collective. */
static int dist_local_from_rows(struct comm *c, const struct rt_config *cfg, const struct graph *info,
                                const int64_t *rowptr, struct graph_rows *rows, const int32_t *owner,
                                struct graph_cgr *f, int sparse, unsigned feat_how, struct rt_dist *d) {
  const int rank = comm_rank(c), P = comm_size(c);
  int self_loops = 0;
  enum graph_norm norm = rt_model_norm(cfg->model, &self_loops);
  int st = part_local_build_rows(info->n, rowptr, rows, owner, P, rank, norm, self_loops, &d->pl);
  TRY(comm_agree(c, st, "building the local graph"));
  /* The rows' adjacency (global ids) served the local graph: freed before a file's
   * feature rows are read (they were not read with it), so that the two are never held
   * together at the set-up's peak. The inner rows are the rows read, in the same order. */
  cg_free(rows->rowptr);
  cg_free(rows->colidx);
  rows->rowptr = NULL;
  rows->colidx = NULL;
  if (f && !rows->feat && !rows->feat_csr.rowptr) {
    st = rows->nrows == d->pl.n_inner ? graph_cgr_read_rows_feat(f, d->pl.gid, rows->nrows, feat_how, rows)
                                      : cg_err_set(CG_ERR_INTERNAL, "rank %d: %lld rows read, %lld inner rows", rank,
                                                   (long long)rows->nrows, (long long)d->pl.n_inner);
    TRY(comm_agree(c, st, "reading this rank's feature rows"));
  }
  int64_t split[3] = {0, 0, 0};
  for (int64_t i = 0; i < rows->nrows; i++)
    if (rows->split[i] >= GRAPH_SPLIT_TRAIN && rows->split[i] <= GRAPH_SPLIT_TEST) split[rows->split[i] - 1]++;
  TRY(comm_allreduce_i64(c, split, 3, COMM_SUM));
  struct graph_rows hrows;
  memset(&hrows, 0, sizeof hrows);
  int32_t *hgid = NULL;
  /* layer 0 exchanged (the default for sparse features): the owners send transformed
   * rows, so the halo rows' features are never used and not read */
  const int halo_feat = dist_halo_features(cfg, info, sparse, &d->pl);
  if (halo_feat) { /* the halo rows' features too, sparse, from the file (never exchanged) */
    const int64_t nh = d->pl.n_halo;
    hgid = cg_malloc((size_t)(nh ? nh : 1) * sizeof *hgid, "halo vertices, sorted");
    st = hgid ? CG_OK : CG_ERR_NOMEM;
    if (st == CG_OK && !f) st = cg_err_set(CG_ERR_INTERNAL, "sparse features without a file to read halo rows from");
    if (st == CG_OK) {
      memcpy(hgid, d->pl.gid + d->pl.n_inner, (size_t)nh * sizeof *hgid);
      qsort(hgid, (size_t)nh, sizeof *hgid, cmp_gid);
      st = graph_cgr_read_rows(f, rowptr, hgid, nh, feat_how, &hrows);
    }
    TRY_GOTO(comm_agree(c, st, "reading the halo rows' sparse features"), done);
  }
  st = rt_local_from_rows(info, &d->pl, rows, halo_feat ? &hrows : NULL, hgid, split, &d->loc);
  TRY_GOTO(comm_agree(c, st, "building the local problem"), done);
  TRY_GOTO(dist_reorder(c, cfg, d), done);
done:
  graph_rows_free(&hrows);
  cg_free(hgid);
  return st;
}

/* Per-rank loading (dist.h, RT_LOAD_PER_RANK): the structure on rank 0 for the
 * partitioner, then every rank its own rows. */
static int dist_build_per_rank(struct comm *c, struct graph_cgr *f, const struct rt_config *cfg,
                               const struct rt_dist_options *o, struct rt_dist *d) {
  int st = CG_OK;
  const int rank = comm_rank(c), P = comm_size(c);
  struct graph info, s;
  memset(&s, 0, sizeof s);
  graph_cgr_info(f, &info);
  int32_t *owner = NULL, *mine = NULL;
  int64_t *rowptr = NULL, structure_peak = 0;
  struct graph_rows rows;
  memset(&rows, 0, sizeof rows);

  TRY(comm_agree(c, check_same_graph(c, &info), "checking that every rank opened the same graph"));
  st = enough_vertices(info.name, info.n, P);
  TRY(comm_agree(c, st, "checking the graph size"));

  owner = cg_malloc((size_t)info.n * sizeof(int32_t), "owner of every vertex");
  st = owner ? CG_OK : CG_ERR_NOMEM;
  if (st == CG_OK && rank == 0) {
    struct part_options po;
    memset(&po, 0, sizeof po);
    po.method = o->method;
    po.nparts = P;
    po.seed = o->part_seed;
    po.parts_are_ranks = 1;
    /* The cache's key needs the header only (name, checksum, n: part_cache_lookup), so a
     * hit reads no structure; otherwise the structure alone, for METIS, freed before the
     * rows. */
    int reused = 0;
    if (o->use_cache) st = part_cache_lookup(&info, &po, o->cache_dir, owner, &reused);
    if (st == CG_OK && !reused) {
      const uint64_t before = graph_cgr_bytes_read(f);
      st = graph_cgr_read_structure(f, &s);
      d->structure_bytes = graph_cgr_bytes_read(f) - before;
      if (st == CG_OK) st = part_assign(&s, &po, owner);
      if (st == CG_OK && o->use_cache) st = part_cache_store(&s, &po, o->cache_dir, owner);
    }
    char said[4200];
    if (st == CG_OK && reused)
      LOG_INFO("dist", "partition: %s, %d parts, seed %llu (reused from the cache: no structure read%s)",
               part_method_name(o->method), P, (unsigned long long)o->part_seed,
               part_cache_said(&info, &po, o, said, sizeof said));
    else if (st == CG_OK)
      LOG_INFO("dist", "partition: %s, %d parts, seed %llu (structure read on rank 0 only: %llu bytes%s)",
               part_method_name(o->method), P, (unsigned long long)o->part_seed,
               (unsigned long long)d->structure_bytes, part_cache_said(&info, &po, o, said, sizeof said));
    graph_free(&s);
    structure_peak = cg_peak_rss_bytes();
  }
  TRY_GOTO(comm_agree(c, st, "partitioning the graph"), done);
  TRY_GOTO(comm_bcast(c, owner, (size_t)info.n * sizeof(int32_t), 0), done);

  /* every rank: the global degrees and its own rows */
  rowptr = cg_malloc((size_t)(info.n + 1) * sizeof(int64_t), "global row pointers (degrees)");
  mine = cg_malloc((size_t)info.n * sizeof(int32_t), "this rank's vertices");
  st = rowptr && mine ? CG_OK : CG_ERR_NOMEM;
  int64_t k = 0;
  int sparse = 0;
  const unsigned rownorm = cfg->feat_norm_row ? GRAPH_ROWS_FEAT_ROWNORM : 0;
  if (st == CG_OK) st = rt_features_choose(&info, cfg, rank == 0, &sparse);
  const unsigned feat_how = rownorm | (sparse ? GRAPH_ROWS_FEAT_SPARSE : 0u);
  if (st == CG_OK) st = graph_cgr_read_rowptr(f, rowptr);
  if (st == CG_OK) {
    for (int64_t v = 0; v < info.n; v++)
      if (owner[v] == rank) mine[k++] = (int32_t)v;
    st = graph_cgr_read_rows(f, rowptr, mine, k, GRAPH_ROWS_ADJ | GRAPH_ROWS_NO_FEAT | feat_how, &rows);
  }
  cg_free(mine);
  mine = NULL;
  TRY_GOTO(comm_agree(c, st, "reading this rank's rows"), done);

  TRY_GOTO(dist_local_from_rows(c, cfg, &info, rowptr, &rows, owner, f, sparse, feat_how, d), done);
  d->bytes_read = graph_cgr_bytes_read(f);
  /* what this rank read and its set-up peak, against the partition it holds */
  const int64_t part_bytes = dist_part_bytes(d, cfg);
  LOG_INFO("dist", "rank %d: per-rank loading read %llu bytes of %s (%lld rows of %lld); set-up peak RSS "
                  "%lld bytes%s; partition + halo %lld bytes",
                  rank, (unsigned long long)graph_cgr_bytes_read(f), info.name, (long long)rows.nrows,
                  (long long)info.n, (long long)cg_peak_rss_bytes(),
                  d->structure_bytes ? " (includes the structure read to partition)" : "", (long long)part_bytes);
  if (d->structure_bytes)
    LOG_INFO("dist", "rank 0: peak RSS %lld bytes once the structure was read and freed", (long long)structure_peak);

done:
  graph_rows_free(&rows);
  cg_free(rowptr);
  cg_free(mine);
  cg_free(owner);
  return st;
}

/* FNV-1a of a string: the ranks check that they were given the same spec. */
static int64_t spec_hash(const char *s) { return (int64_t)(cg_fnv1a_str(s) >> 1); }

/* Per-rank generation of a synthetic spec (dist.h, RT_LOAD_PER_RANK): rank 0 generates
 * the whole graph once (the partitioner needs the structure; the checksum and the
 * generator's re-draw factor are the whole graph's), partitions it (or takes the cached
 * partition), broadcasts the header values, the factor, the owners and the row
 * pointers, and frees it; then every rank generates only its own rows
 * (graph_synth_rows: bit for bit the whole graph's). */
static int dist_build_synth_per_rank(struct comm *c, const struct rt_config *cfg, const struct rt_dist_options *o,
                                     struct rt_dist *d) {
  int st = CG_OK;
  const int rank = comm_rank(c), P = comm_size(c);
  struct graph g, info;
  memset(&g, 0, sizeof g);
  memset(&info, 0, sizeof info);
  struct graph_rows rows;
  memset(&rows, 0, sizeof rows);
  int32_t *owner = NULL, *mine = NULL;
  int64_t *rowptr = NULL;
  struct {
    int64_t n, m, f, c, multilabel, checksum;
    double factor;
    char name[sizeof g.name];
  } h;
  memset(&h, 0, sizeof h);
  int64_t same[2] = {spec_hash(cfg->graph), -spec_hash(cfg->graph)};
  TRY(comm_allreduce_i64(c, same, 2, COMM_MAX));
  if (same[0] != -same[1])
    st = cg_err_set(CG_ERR_ARG, "the ranks were given different synthetic specs ('%s' on rank %d)", cfg->graph, rank);
  TRY(comm_agree(c, st, "checking that every rank has the same spec"));
  if (rank == 0) {
    st = graph_synth_ex(cfg->graph, &g, &h.factor);
    if (st == CG_OK) st = enough_vertices(g.name, g.n, P);
    if (st == CG_OK) {
      h.n = g.n;
      h.m = g.m;
      h.f = g.feat_dim;
      h.c = g.num_classes;
      h.multilabel = g.multilabel;
      h.checksum = g.checksum;
      memcpy(h.name, g.name, sizeof h.name);
    }
  }
  TRY_GOTO(comm_agree(c, st, "generating the graph on rank 0"), done);
  TRY_GOTO(comm_bcast(c, &h, sizeof h, 0), done);
  owner = cg_malloc((size_t)h.n * sizeof *owner, "owner of every vertex");
  rowptr = cg_malloc((size_t)(h.n + 1) * sizeof *rowptr, "global row pointers (degrees)");
  st = owner && rowptr ? CG_OK : CG_ERR_NOMEM;
  if (st == CG_OK && rank == 0) {
    struct part_options po;
    memset(&po, 0, sizeof po);
    po.method = o->method;
    po.nparts = P;
    po.seed = o->part_seed;
    po.parts_are_ranks = 1;
    int reused = 0;
    st = o->use_cache ? part_assign_cached(&g, &po, o->cache_dir, owner, &reused) : part_assign(&g, &po, owner);
    if (st == CG_OK) {
      memcpy(rowptr, g.rowptr, (size_t)(h.n + 1) * sizeof *rowptr);
      char said[4200];
      LOG_INFO("dist", "partition: %s, %d parts, seed %llu (%s%s; the synthetic graph generated whole on rank 0 "
               "only)", part_method_name(o->method), P, (unsigned long long)o->part_seed,
               reused ? "reused from the cache" : "computed", part_cache_said(&g, &po, o, said, sizeof said));
    }
  }
  graph_free(&g);
  TRY_GOTO(comm_agree(c, st, "partitioning the graph"), done);
  TRY_GOTO(comm_bcast(c, owner, (size_t)h.n * sizeof *owner, 0), done);
  TRY_GOTO(comm_bcast(c, rowptr, (size_t)(h.n + 1) * sizeof *rowptr, 0), done);

  memcpy(info.name, h.name, sizeof info.name);
  info.n = h.n;
  info.m = h.m;
  info.feat_dim = h.f;
  info.feat_nnz = h.n * h.f;
  info.num_classes = h.c;
  info.multilabel = (int)h.multilabel;
  info.checksum = (uint32_t)h.checksum;
  mine = cg_malloc((size_t)h.n * sizeof *mine, "this rank's vertices");
  st = mine ? CG_OK : CG_ERR_NOMEM;
  int sparse = 0;
  if (st == CG_OK) st = rt_features_choose(&info, cfg, rank == 0, &sparse);
  if (st == CG_OK && sparse)
    st = cg_err_set(CG_ERR_ARG, "%s: a rank's rows generated alone (--load per-rank) have dense features; "
                    "--sparse-features on needs --load whole", cfg->graph);
  int64_t k = 0;
  if (st == CG_OK) {
    for (int64_t v = 0; v < h.n; v++)
      if (owner[v] == rank) mine[k++] = (int32_t)v;
    st = graph_synth_rows(cfg->graph, h.factor, mine, k,
                          GRAPH_ROWS_ADJ | (cfg->feat_norm_row ? GRAPH_ROWS_FEAT_ROWNORM : 0), &rows);
  }
  cg_free(mine);
  mine = NULL;
  TRY_GOTO(comm_agree(c, st, "generating this rank's rows"), done);
  TRY_GOTO(dist_local_from_rows(c, cfg, &info, rowptr, &rows, owner, NULL, 0, 0, d), done);
  LOG_INFO("dist", "rank %d: per-rank generation of %s (%lld rows of %lld); set-up peak RSS %lld bytes%s; "
           "partition + halo %lld bytes", rank, cfg->graph, (long long)rows.nrows, (long long)h.n,
           (long long)cg_peak_rss_bytes(), rank == 0 ? " (includes the whole graph, generated to partition)" : "",
           (long long)dist_part_bytes(d, cfg));
done:
  graph_rows_free(&rows);
  cg_free(rowptr);
  cg_free(mine);
  cg_free(owner);
  return st;
}

static int dist_create_per_rank(struct comm *c, const char *path, const struct rt_config *cfg,
                                const struct rt_dist_options *o, struct rt_dist **out) {
  int st = CG_OK;
  struct graph_cgr *f = NULL;
  struct rt_dist *d = NULL;
  if (rt_fault_from_env(comm_rank(c)) == RT_FAULT_SETUP)
    st = cg_err_set(CG_ERR_IO, "cannot open graph '%s' (simulated failure: "
                    "CAPGNN_TEST_FAIL_RANK names this rank)", cfg->graph);
  else if (path)
    st = graph_cgr_open(path, &f);
  TRY_GOTO(comm_agree(c, st, "opening the graph"), fail);
  d = cg_calloc(1, sizeof *d, "distributed training state");
  st = d ? CG_OK : CG_ERR_NOMEM;
  TRY_GOTO(comm_agree(c, st, "allocating the distributed state"), fail);
  d->c = c;
  d->halo_cache = o->halo_cache;
  d->fail = rt_fault_from_env(comm_rank(c));
  d->per_rank = 1;
  if (f) TRY_GOTO(dist_build_per_rank(c, f, cfg, o, d), fail);
  else TRY_GOTO(dist_build_synth_per_rank(c, cfg, o, d), fail);
  graph_cgr_close(&f);
  dist_log_memory(d, cfg);
  *out = d;
  return CG_OK;
fail:
  graph_cgr_close(&f);
  rt_dist_destroy(&d);
  return st;
}

/* Every rank opens the graph itself (WHOLE), or reads its own rows (PER_RANK), then the
 * set-up above; from then on this rank holds its partition (plus halos) only. */
int rt_dist_create(struct comm *c, const struct rt_config *cfg, const struct rt_dist_options *o,
                   struct rt_dist **out) {
  int st = CG_OK;
  *out = NULL;
  struct rt_dist_options def;
  if (!o) {
    rt_dist_options_defaults(&def);
    o = &def;
  }
  struct graph g;
  memset(&g, 0, sizeof g);
  char pathbuf[4096];
  const char *path = graph_path(cfg->graph, pathbuf, sizeof pathbuf);
  const int synth = strncmp(cfg->graph, "synth:", 6) == 0;
  if (o->load == RT_LOAD_PER_RANK && !path && !synth)
    st = cg_err_set(CG_ERR_ARG, "--load per-rank reads a .cgr file or generates a synth: spec; '%s' is neither "
                    "(use --load whole or auto)", cfg->graph);
  else if (o->load == RT_LOAD_PER_RANK && o->rapa)
    st = cg_err_set(CG_ERR_UNSUPPORTED, "--load per-rank with --partition rapa: the resource-aware partitioner "
                    "(and halo pruning) read the whole graph on every rank (use --load whole or auto)");
  else if (o->load == RT_LOAD_PER_RANK && cfg->norm_graph)
    st = cg_err_set(CG_ERR_UNSUPPORTED, "--load per-rank with --norm-degrees: the degrees are read from the whole "
                    "graph on every rank (use --load whole or auto)");
  TRY(comm_agree(c, st, "choosing how to load the graph"));
  /* auto: per-rank for a file, unless the resource-aware partitioner or another graph's
   * degrees need the whole graph */
  const int whole = o->rapa || cfg->norm_graph;
  if (path && o->load != RT_LOAD_WHOLE && !whole) return dist_create_per_rank(c, path, cfg, o, out);
  if (synth && o->load == RT_LOAD_PER_RANK && !whole) return dist_create_per_rank(c, NULL, cfg, o, out);
  if (rt_fault_from_env(comm_rank(c)) == RT_FAULT_SETUP)
    st = cg_err_set(CG_ERR_IO, "cannot open graph '%s' (simulated failure: "
                    "CAPGNN_TEST_FAIL_RANK names this rank)", cfg->graph);
  else
    st = graph_open(cfg->graph, &g);
  if (st == CG_OK) st = rt_graph_norm_apply(&g, cfg);
  TRY_GOTO(comm_agree(c, st, "opening the graph"), done);
  /* (--feat-norm row applies after the partitioning: a --prune-write file holds the graph's
   * own features, which a run with --feat-norm row normalises as this one does) */
  if (o && o->rapa) {
#ifdef CAPGNN_HAVE_RAPA
    struct rt_prediction pred;
    int32_t *owner = cg_malloc((size_t)g.n * sizeof *owner, "owner of every vertex");
    st = owner ? CG_OK : CG_ERR_NOMEM;
    int ok = comm_agree(c, st, "allocating the owners") == CG_OK && dist_rapa_owner(c, &g, cfg, o, owner, &pred) == CG_OK;
    if (ok && cfg->feat_norm_row) graph_feat_rownorm(&g);
    ok = ok && rt_dist_create_from_graph(c, &g, cfg, o, owner, out) == CG_OK;
    if (ok) {
      (*out)->pred = pred;
      (*out)->loc.pred = &(*out)->pred;
    } else {
      st = cg_err_status() < 0 ? cg_err_status() : CG_ERR_INTERNAL;
    }
    cg_free(owner);
    goto done;
#else
    st = cg_err_set(CG_ERR_UNSUPPORTED, "--partition rapa: this build has no rapa/ module");
    TRY_GOTO(comm_agree(c, st, "choosing the partitioner"), done);
#endif
  }
  if (cfg->feat_norm_row) graph_feat_rownorm(&g);
  TRY_GOTO(rt_dist_create_from_graph(c, &g, cfg, o, NULL, out), done);
  LOG_INFO("dist", "rank %d: whole-graph loading; set-up peak RSS %lld bytes (the whole graph: %lld bytes); "
           "partition + halo %lld bytes", comm_rank(c), (long long)cg_peak_rss_bytes(),
           (long long)graph_cgr_data_bytes(&g), (long long)dist_part_bytes(*out, cfg));
done:
  graph_free(&g);
  return st;
}

void rt_dist_unbind(struct rt_dist *d) {
  if (d) cg_exchange_destroy(&d->ex);
}

void rt_dist_destroy(struct rt_dist **pd) {
  if (!pd || !*pd) return;
  struct rt_dist *d = *pd;
  cg_exchange_destroy(&d->ex);
  part_local_free(&d->pl);
  rt_local_free(&d->loc);
  cg_free(d);
  *pd = NULL;
}

const struct rt_local *rt_dist_local(const struct rt_dist *d) { return &d->loc; }
const struct part_local *rt_dist_part(const struct rt_dist *d) { return &d->pl; }
int64_t rt_dist_max_cols(const struct rt_dist *d) { return d->max_cols; }
void rt_dist_bytes_read(const struct rt_dist *d, uint64_t *total, uint64_t *structure) {
  *total = d->bytes_read;
  *structure = d->structure_bytes;
}

int64_t rt_dist_feature_bytes(const struct rt_dist *d) {
  const struct rt_local *l = &d->loc;
  if (l->feat_sparse) /* row pointers, columns and values of the rows held (inner, and halo for a local layer 0) */
    return (l->feat_csr.nrows + 1) * 8 + l->feat_csr.nnz * 8;
  if (d->l0x) return l->feat_rows * l->feat_dim * (int64_t)sizeof(float); /* no halo row, ever */
  return (l->feat_rows + (l->feat_rows < l->n_inner + l->n_halo ? l->n_halo : 0)) * l->feat_dim *
         (int64_t)sizeof(float);
}

/* ---- the exchange ------------------------------------------------------------------ */

int rt_dist_bind(struct rt_dist *d, struct cg_backend *be, const struct rt_config *cfg,
                 struct cg_exchange **ex) {
  int st = CG_OK;
  *ex = NULL;
  if (d->ex) st = cg_err_set(CG_ERR_ARG, "rt_dist_bind: already bound to a backend");
  TRY(comm_agree(d->c, st, "binding the exchange"));
  const struct part_local *pl = &d->pl;
  /* Layer 0's features once, in slices; layers l > 0 exchange at most rt_config_halo_cols columns
   * (GCN and SAGE: their input or the narrower transformed rows; GAT: the transformed
   * rows and their attention terms). */
  const int64_t halo_cols = rt_config_halo_cols(cfg, d->loc.num_classes);
  /* (the features move in slices of rt_config_feature_cols: model_build.c; sparse
   * features: no feature row is exchanged, so layer 0 moves nothing) */
  d->max_cols = d->loc.feat_sparse ? 1 : rt_config_feature_cols(cfg, d->loc.feat_dim, d->loc.num_classes);
  if (cfg->layers > 1 && halo_cols > d->max_cols) d->max_cols = halo_cols;
  /* layer 0 exchanged: its transformed rows, fout wide (the hidden width, or the classes
   * of a one-layer model) */
  const int64_t l0_cols = cfg->layers > 1 ? cfg->hidden : d->loc.num_classes;
  if (rt_layer0_exchange_choose(cfg, d->loc.feat_dim, d->loc.num_classes, d->loc.feat_sparse,
                                rt_local_exchanges(&d->loc), NULL) &&
      l0_cols > d->max_cols)
    d->max_cols = l0_cols;
  struct comm_halo_plan plan;
  memset(&plan, 0, sizeof plan);
  plan.npeers = pl->npeers;
  plan.peer = pl->peer;
  plan.send_offset = pl->send_offset;
  plan.send_count = pl->send_count;
  plan.send_idx = pl->send_idx;
  plan.recv_offset = pl->recv_offset;
  plan.recv_count = pl->recv_count;
  plan.n_inner = pl->n_inner;
  plan.n_halo = pl->n_halo;
  if (d->halo_cache.policy == JACA_POLICY_NONE) {
    TRY(comm_exchange_create(d->c, be, &plan, d->max_cols, &d->ex)); /* collective, agreed inside */
  } else {
    /* hidden layers exchange at most rt_config_halo_cols values per row (runtime/model.c,
     * runtime/model_gat.c) */
    const struct jaca_layers layers = {cfg->layers, halo_cols};
    /* a node-tier row never written leaves its readers waiting: the stall watchdog would
     * end the job after --stall-timeout, naming only the exchange; the cache's own
     * timeout, a little shorter, names the row, its writer and the generation */
    struct jaca_options o = d->halo_cache;
    if (o.read_timeout_s == 0.0 && cfg->stall_timeout_s > 0.0) o.read_timeout_s = 0.9 * cfg->stall_timeout_s;
    TRY(jaca_exchange_create(d->c, be, pl, &d->loc.agg, d->max_cols, &layers, &o, &d->ex));
  }
  /* testing only: the rank CAPGNN_TEST_FAIL_RANK names fails inside training */
  st = rt_fault_exchange_wrap(&d->ex, comm_rank(d->c), d->fail);
  TRY(comm_agree(d->c, st, "installing the test fault injection"));
  *ex = d->ex;
  return CG_OK;
}

/* ---- the whole run ------------------------------------------------------------------ */

/* Every rank on a GPU of its own choosing (comm_gpu_bind), or every rank on the CPU:
 * "auto" falls back to the CPU on all ranks unless every rank sees a GPU. */
static int dist_backend_open(struct comm *c, const struct rt_config *cfg, struct cg_backend **be) {
  int st = CG_OK;
  const char *dev = cfg->device ? cfg->device : "auto";
  int64_t want_gpu = 0;
#ifdef CAPGNN_HAVE_CUDA
  if (strcmp(dev, "cuda") == 0) want_gpu = 1;
  else if (strcmp(dev, "auto") == 0) want_gpu = cg_cuda_device_count() > 0;
#endif
  int64_t all_gpu = want_gpu;
  TRY(comm_allreduce_i64(c, &all_gpu, 1, COMM_MIN));
  int ordinal = 0;
  if (all_gpu) {
    TRY(comm_gpu_bind(c, &ordinal)); /* collective: fails on every rank together */
  } else if (strcmp(dev, "auto") == 0) {
    if (want_gpu)
      LOG_WARN("dist", "device auto: this rank sees a GPU but another rank does not; every rank "
               "uses the CPU backend (pass --device cuda to require GPUs)");
    dev = "cpu";
  }
  st = rt_backend_open_ordinal("train", dev, cfg->threads, cfg->tf32, ordinal, be);
  if (st < 0) cg_err_trail(__FILE__, __LINE__, "rt_backend_open_ordinal");
  if (st == CG_OK) st = rt_backend_emulate(be, comm_rank(c), comm_size(c));
  TRY(comm_agree(c, st, "opening the compute backend"));
  return CG_OK;
}

/* Rank 0 checks the run's files (it alone writes them); the others take its answer,
 * message included, so that the job reports the one error a single process would
 * (rank 0's, not "rank 0 failed during ..." from every other rank). */
/* Every rank reads the checkpoint it resumes from at the same path; on machines that do
 * not share that folder each reads its own copy, and a stale copy (an earlier checkpoint
 * left on one machine) made the ranks start from different epochs and weights: ranks
 * that train different epoch counts wait for each other until the stall watchdog ends
 * the job. The ranks compare what they read (epoch, steps, parameters, optimizer moments)
 * and refuse, all alike, naming the first rank whose copy differs. */
static int dist_check_resume_same(struct comm *c, const struct rt_config *cfg, const struct rt_checkpoint *ck) {
  if (!cfg->resume_path || comm_size(c) == 1) return CG_OK;
  const int size = comm_size(c);
  /* FNV-1a over what the run continues from */
  const int64_t head[3] = {ck->epoch, ck->steps, ck->num_params};
  const float *arrays[3] = {ck->params, ck->adam_m, ck->adam_v};
  uint64_t h = cg_fnv1a(CG_FNV1A_INIT, head, sizeof head);
  for (int a = 0; a < 3; a++)
    if (arrays[a]) h = cg_fnv1a(h, arrays[a], (size_t)ck->num_params * sizeof(float));
  int64_t *hashes = cg_calloc((size_t)size, sizeof *hashes, "checkpoint hash of every rank");
  int64_t *epochs = cg_calloc((size_t)size, sizeof *epochs, "checkpoint epoch of every rank");
  int st = hashes && epochs ? CG_OK : CG_ERR_NOMEM;
  if ((st = comm_agree(c, st, "comparing the checkpoints the ranks read")) == CG_OK &&
      (st = comm_allgather_i64(c, (int64_t)(h >> 1), hashes)) == CG_OK &&
      (st = comm_allgather_i64(c, ck->epoch, epochs)) == CG_OK) {
    int first = 0, differ = 0;
    for (int r = size - 1; r > 0; r--)
      if (hashes[r] != hashes[0]) differ++, first = r;
    if (differ > 0) {
      char at[96];
      if (epochs[first] != epochs[0])
        snprintf(at, sizeof at, "epoch %lld, where rank 0's is at epoch %lld", (long long)epochs[first],
                 (long long)epochs[0]);
      else
        snprintf(at, sizeof at, "epoch %lld as rank 0's, with other weights", (long long)epochs[0]);
      st = cg_err_set(CG_ERR_ARG, "--resume %s: the ranks read different checkpoints (%d of %d differ from rank "
                      "0's; rank %d's is at %s): every rank reads the file at that path, so it must be the same "
                      "file on every machine (a shared folder, or rank 0's file copied to the others)",
                      cfg->resume_path, differ, size, first, at);
    }
  }
  cg_free(hashes);
  cg_free(epochs);
  return st;
}

static int dist_check_files(struct comm *c, const struct rt_config *cfg) {
  struct {
    int status;
    char msg[1024];
  } r;
  memset(&r, 0, sizeof r);
  if (comm_rank(c) == 0) {
    r.status = rt_run_check_files(cfg);
    if (r.status < 0) snprintf(r.msg, sizeof r.msg, "%s", cg_err_msg());
  }
  TRY(comm_bcast(c, &r, sizeof r, 0));
  if (r.status >= 0) return CG_OK;
  if (comm_rank(c) != 0) cg_err_set(r.status, "%s", r.msg);
  return r.status;
}

int rt_run_dist(struct comm *c, const struct rt_config *cfg, const struct rt_dist_options *o,
                enum comm_path path, struct rt_result *res, int *fatal) {
  int st = CG_OK;
  *fatal = 0;
  if (res) memset(res, 0, sizeof *res);
  st = rt_config_check(cfg);
  /* the thread count used (runtime.h, "threads of a rank"), before any OpenMP region:
   * the backend, the summary and the checkpoints see it */
  struct rt_config resolved;
  const int requested_threads = cfg->threads;
  if (st == CG_OK) {
    resolved = *cfg;
    resolved.threads = rt_threads_setup("train", cfg->threads, comm_host_local_size(c), comm_host_local_rank(c),
                                        cfg->device);
    cfg = &resolved;
  }
  if (comm_host_local_size(c) > 1) { /* the ranks' counts may differ (--threads 2,1): sum them */
    int64_t host_threads = st == CG_OK ? resolved.threads : 0;
    const int sum_st = comm_host_sum_i64(c, &host_threads);
    if (sum_st < 0) {
      if (st == CG_OK) st = sum_st;
    } else if (st == CG_OK) {
      rt_threads_warn_host("train", host_threads, comm_host_local_size(c), resolved.threads, requested_threads,
                           comm_host_local_rank(c), cfg->device);
    }
  }
  if (comm_size(c) == 1) { /* the single-process path, unchanged */
    if (st < 0) return st;
    /* one rank has no halo: nothing to balance or prune, so no pruned graph to write */
    if (o && o->prune_write)
      return cg_err_set(CG_ERR_ARG, "--prune-write %s: one rank has no halo to prune, so there is no pruned graph "
                        "to write (run on several ranks, or train the graph itself)", o->prune_write);
    if (o && (o->prune_eps > 0 || o->rapa))
      LOG_WARN_COMMON("dist", "one rank: %s nothing to do (the whole graph is this rank's, with no halo); the "
                      "run is the exact one-rank training", o->prune_eps > 0 ? "--prune-halo has" : "--partition "
                      "rapa has");
    /* a GPU path asked for, and device auto found no GPU: said once, as several ranks say
     * it (mpi/path.c), not left silent */
#ifdef CAPGNN_HAVE_CUDA
    const int no_gpu = cg_cuda_device_count() <= 0;
#else
    const int no_gpu = 1;
#endif
    if (path != COMM_PATH_AUTO && no_gpu && (!cfg->device || !strcmp(cfg->device, "auto")))
      LOG_WARN_COMMON("dist", "--comm %s applies to GPU ranks; device auto found no GPU, so the run is on the CPU "
                      "backend (host memory)", comm_path_name(path));
    return rt_run_checked(cfg, res);
  }
  struct cg_backend *be = NULL, *inner = NULL; /* inner: under the CAPGNN_PROFILE_OPS wrapper */
  struct rt_dist *d = NULL;
  struct cg_exchange *ex = NULL;
  struct rt_checkpoint resume;
  memset(&resume, 0, sizeof resume);
  if (st == CG_OK && path != COMM_PATH_AUTO) st = comm_set_path(c, path);
  if (st == CG_OK) st = comm_set_allreduce(c, o->allreduce);
  if (st == CG_OK) st = comm_set_halo_bits(c, cfg->halo_bits);
  TRY_GOTO(comm_agree(c, st, "checking the options"), done);
  if (o->allreduce == COMM_ALLREDUCE_HIER) { /* uneven nodes: refused now, not at the first step */
    enum comm_allreduce chosen;
    TRY_GOTO(comm_allreduce_resolve(c, &chosen), done);
  }
  if (cfg->halo_bits < 32 && comm_rank(c) == 0)
    LOG_INFO("dist", "APPROXIMATE: training steps send halo rows and gradients through MPI as %d-bit codes "
             "(--halo-bits %d: a range per row, stochastic rounding; evaluation exact)",
             cfg->halo_bits, cfg->halo_bits);
  /* the stall watchdog's slots in memory the ranks of a host share, so that a rank that
   * notices a stall can name the one that stalled (core/watchdog.h); without them each
   * rank still watches itself */
  void *slots = NULL;
  if (cfg->stall_timeout_s > 0 && comm_host_shared(c, cg_watch_slot_bytes(), &slots) != CG_OK) {
    LOG_WARN_COMMON("dist", "no memory shared by the ranks of a host (%s): a stalled rank is reported "
                    "without naming its peers", cg_err_msg());
    cg_err_clear();
    slots = NULL;
  }
  cg_watchdog_set_slots(slots, comm_host_local_size(c), comm_host_local_rank(c), comm_rank(c));
  /* before the graph is loaded (rt_run's checks, runtime/run.c) */
  TRY_GOTO(dist_check_files(c, cfg), done);
  /* every rank reads the checkpoint it resumes from: usually all fail alike (one line) */
  st = rt_checkpoint_read_resume(cfg, &resume);
  TRY_GOTO(comm_agree(c, st, "reading the checkpoint to resume from"), done);
  TRY_GOTO(dist_check_resume_same(c, cfg, &resume), done);
  TRY_GOTO(dist_backend_open(c, cfg, &be), done);
  /* what --layer0-halo auto weighs (rt_layer0_exchange_choose), the same on every rank: a
   * halo cache in the options, and GPUs only where every rank computes on one (a rank
   * may open another backend than its peers: --device per rank, or auto falling back
   * to the CPU where the CUDA backend fails to start) */
  {
    int64_t gpu = strcmp(be->name, "cuda") == 0;
    TRY_GOTO(comm_allreduce_i64(c, &gpu, 1, COMM_MIN), done);
    resolved.on_gpu = (int)gpu;
    resolved.halo_cache = o->halo_cache.policy != JACA_POLICY_NONE;
  }
  if (getenv("CAPGNN_PROFILE_OPS") && getenv("CAPGNN_PROFILE_OPS")[0] == '1') {
    /* a diagnostic: every op timed alone (core/ops_profile.h), totals per rank at the end */
    inner = be;
    be = NULL;
    st = cg_backend_profile_wrap(inner, &be);
    TRY_GOTO(comm_agree(c, st, "wrapping the backend (CAPGNN_PROFILE_OPS)"), done);
    LOG_WARN("train", "PROFILING (CAPGNN_PROFILE_OPS=1): every op of rank %d is timed alone; totals by op "
             "category at the end", comm_rank(c));
  }
  struct rt_dist_options with_be = *o; /* --partition rapa measures on the training backend */
  with_be.rapa_be = be;
  TRY_GOTO(rt_dist_create(c, cfg, &with_be, &d), done);
  { /* how the job was set up, for the summary (resolving the all-reduce is collective) */
    enum comm_allreduce chosen = COMM_ALLREDUCE_MPI;
    TRY_GOTO(comm_allreduce_resolve(c, &chosen), done);
    snprintf(d->job.partition, sizeof d->job.partition, "%s", o->rapa ? "rapa" : part_method_name(o->method));
    d->job.part_seed = o->part_seed;
    snprintf(d->job.load, sizeof d->job.load, "%s", d->per_rank ? "per-rank" : "whole");
    snprintf(d->job.allreduce, sizeof d->job.allreduce, "%s", comm_allreduce_name(chosen));
    d->job.nodes = comm_nnodes(c);
    const char *em = getenv("CAPGNN_EMULATE_NODES");
    d->job.emulated_nodes = em && atoi(em) > 1;
    d->loc.job = &d->job;
  }
  /* the checkpoint against the graph, before training: a wrong --graph is a set-up
   * error (one line), not a failure inside rt_train that aborts the job */
  st = cfg->resume_path ? rt_checkpoint_fits_problem(&resume, cfg->resume_path, rt_dist_local(d), cfg)
                        : CG_OK;
  TRY_GOTO(comm_agree(c, st, "checking the checkpoint against the graph"), done);
  /* the exchange moves rows on the device itself (an emulated slow device computes
   * slowly; its links are the links); under CAPGNN_PROFILE_OPS alone its ops (halo_rows,
   * memory) are profiled with the rest */
  TRY_GOTO(rt_dist_bind(d, cg_backend_emulate_strip(be), cfg, &ex), done);
  /* From here on the ranks no longer agree on each status: a rank that fails may leave
   * its peers inside a collective, so the caller must end the job (comm_abort). */
  *fatal = 1;
  const int64_t part_bytes = dist_part_bytes(d, cfg); /* (training frees the operator's host copy) */
  st = rt_train_owned(be, &d->loc, ex, cfg, cfg->resume_path ? &resume : NULL, res);
  /* a stop on request is agreed (every rank stopped after the same epoch), and so is a
   * final checkpoint that could not be written: clean up (an abort could end the job
   * while rank 0 still writes the metrics' summary) */
  if (st == CG_OK || st == CG_ERR_INTERRUPTED || (res && res->ended_together)) {
    *fatal = 0;
    /* the process's peak so far: set-up and training (the model's buffers, the exchange,
     * the operators) against what the rank holds of the graph (README, per-rank loading) */
    LOG_INFO("dist", "rank %d: training peak RSS %lld bytes (set-up included); partition + halo %lld bytes",
             comm_rank(c), (long long)cg_peak_rss_bytes(), (long long)part_bytes);
  }
  if (inner) { /* set-up, every epoch and the evaluations: two runs of E1 and E2 epochs give a step's */
    struct cg_prof_counters pc;
    cg_profile_get(be, &pc);
    for (int k = 0; k < CG_PROF_NOPS; k++)
      if (pc.calls[k])
        LOG_WARN("train", "PROFILING rank %d: %s %.6f s in %lld calls", comm_rank(c),
                 cg_prof_op_name((enum cg_prof_op)k), pc.seconds[k], (long long)pc.calls[k]);
  }
done:
  if (!*fatal) cg_watchdog_set_slots(NULL, 0, 0, comm_rank(c)); /* the block goes with comm_finalize */
  rt_checkpoint_free(&resume);
  if (!*fatal) {
    rt_dist_destroy(&d);
    cg_backend_destroy(&be);
    cg_backend_destroy(&inner); /* (the wrapper leaves it) */
  }
  return st;
}
