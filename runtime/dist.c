/* runtime/dist.c — partition-parallel set-up: the local problem of each rank, its
 * exchange (mpi/'s, behind the seam of core/exchange.h) and the whole multi-rank run
 * (the flow and the contract are in runtime/dist.h). */
#include <stdio.h>
#include <string.h>

#include "core/log.h"
#include "core/status.h"
#include "core/watchdog.h"
#include "runtime/dist.h"
#include "runtime/runtime_internal.h"

#ifdef CAPGNN_HAVE_CUDA
#include "cuda/cuda_backend.h" /* cg_cuda_device_count */
#endif

struct rt_dist {
  struct comm *c;
  struct rt_local loc;
  struct part_local pl;   /* plan arrays and gid; agg freed (the local problem has its copy) */
  struct cg_exchange *ex; /* rt_dist_bind's; NULL before */
  int64_t max_cols;
  struct jaca_options halo_cache; /* rt_dist_options' */
  enum rt_fault fail;     /* testing only (CAPGNN_TEST_FAIL_RANK / _AT) */
};

void rt_dist_options_defaults(struct rt_dist_options *o) {
  memset(o, 0, sizeof *o);
  o->method = PART_METIS;
  o->part_seed = 1;
  o->use_cache = 1;
  o->cache_dir = NULL;
  jaca_options_defaults(&o->halo_cache);
}

/* ---- set-up ---------------------------------------------------------------------- */

/* Same graph on every rank: a rank that opened another file (or another version of
 * it) would partition a different graph and train garbage. */
static int check_same_graph(struct comm *c, const struct graph *g) {
  int64_t v[6] = {(int64_t)g->checksum, -(int64_t)g->checksum, g->n, -g->n, g->m, -g->m};
  TRY(comm_allreduce_i64(c, v, 6, COMM_MAX));
  if (v[0] != -v[1] || v[2] != -v[3] || v[4] != -v[5])
    return cg_err_set(CG_ERR_ARG,
                      "the ranks opened different graphs (checksums %08llx..%08llx, %lld..%lld "
                      "vertices): every rank must read the same file or synthetic spec",
                      (unsigned long long)-v[1], (unsigned long long)v[0], (long long)-v[3],
                      (long long)v[2]);
  return CG_OK;
}

static int dist_build(struct comm *c, const struct graph *g, const struct rt_config *cfg,
                      const struct rt_dist_options *o, const int32_t *owner_in, struct rt_dist *d) {
  int st = CG_OK;
  const int rank = comm_rank(c), P = comm_size(c);
  int32_t *owner = NULL;

  TRY(comm_agree(c, check_same_graph(c, g), "checking that every rank opened the same graph"));
  if (g->n < P)
    st = cg_err_set(CG_ERR_ARG, "graph %s has %lld vertices, fewer than the %d ranks", g->name,
                    (long long)g->n, P);
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
    int reused = 0;
    st = o->use_cache ? part_assign_cached(g, &po, o->cache_dir, owner, &reused)
                      : part_assign(g, &po, owner);
    if (st == CG_OK)
      LOG_INFO("dist", "partition: %s, %d parts, seed %llu%s", part_method_name(o->method), P,
               (unsigned long long)o->part_seed, reused ? " (reused from the cache)" : "");
  }
  TRY_GOTO(comm_agree(c, st, "partitioning the graph"), done);
  if (!owner_in) TRY_GOTO(comm_bcast(c, owner, (size_t)g->n * sizeof(int32_t), 0), done);

  int self_loops = 0;
  enum graph_norm norm = rt_model_norm(cfg->model, &self_loops);
  st = part_local_build(g, owner, P, rank, norm, self_loops, &d->pl);
  if (st == CG_OK) st = part_local_check(g, owner, &d->pl);
  if (st == CG_OK) st = rt_local_from_part(g, &d->pl, &d->loc);
  TRY_GOTO(comm_agree(c, st, "building the local graph"), done);
  cg_csr_free(&d->pl.agg); /* the local problem holds its own copy */

done:
  cg_free(owner);
  return st;
}

static void dist_log_memory(const struct rt_dist *d) {
  const struct rt_local *l = &d->loc;
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
  dist_log_memory(d);
  *out = d;
  return CG_OK;
fail:
  rt_dist_destroy(&d);
  return st;
}

/* Every rank opens the graph itself, then the set-up above; from then on this rank
 * holds its partition (plus halos) only. */
int rt_dist_create(struct comm *c, const struct rt_config *cfg, const struct rt_dist_options *o,
                   struct rt_dist **out) {
  int st = CG_OK;
  *out = NULL;
  struct graph g;
  memset(&g, 0, sizeof g);
  if (rt_fault_from_env(comm_rank(c)) == RT_FAULT_SETUP)
    st = cg_err_set(CG_ERR_IO, "cannot open graph '%s' (simulated failure: "
                    "CAPGNN_TEST_FAIL_RANK=%d is set)", cfg->graph, comm_rank(c));
  else
    st = graph_open(cfg->graph, &g);
  TRY_GOTO(comm_agree(c, st, "opening the graph"), done);
  if (cfg->feat_norm_row) graph_feat_rownorm(&g);
  TRY_GOTO(rt_dist_create_from_graph(c, &g, cfg, o, NULL, out), done);
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

int64_t rt_dist_feature_bytes(const struct rt_dist *d) {
  const struct rt_local *l = &d->loc;
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
  /* Layer 0's features once; layers l > 0 exchange at most `hidden` columns (their
   * input, or the narrower transformed rows). */
  d->max_cols = d->loc.feat_dim;
  if (cfg->layers > 1 && cfg->hidden > d->max_cols) d->max_cols = cfg->hidden;
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
    /* hidden layers exchange at most `hidden` values per row (runtime/model.c) */
    const struct jaca_layers layers = {cfg->layers, cfg->layers > 1 ? cfg->hidden : 1};
    TRY(jaca_exchange_create(d->c, be, pl, &d->loc.agg, d->max_cols, &layers, &d->halo_cache, &d->ex));
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
  st = rt_backend_open_ordinal(dev, cfg->threads, cfg->tf32, ordinal, be);
  if (st < 0) cg_err_trail(__FILE__, __LINE__, "rt_backend_open_ordinal");
  TRY(comm_agree(c, st, "opening the compute backend"));
  return CG_OK;
}

/* Rank 0 checks the run's files (it alone writes them); the others take its answer,
 * message included, so that the job reports the one error a single process would
 * (rank 0's, not "rank 0 failed during ..." from every other rank). */
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
  if (st == CG_OK) {
    resolved = *cfg;
    resolved.threads = rt_threads_setup(cfg->threads, comm_host_local_size(c), comm_host_local_rank(c),
                                        cfg->device);
    cfg = &resolved;
  }
  if (comm_size(c) == 1) { /* the single-process path, unchanged */
    if (st < 0) return st;
    return rt_run_checked(cfg, res);
  }
  struct cg_backend *be = NULL;
  struct rt_dist *d = NULL;
  struct cg_exchange *ex = NULL;
  struct rt_checkpoint resume;
  memset(&resume, 0, sizeof resume);
  if (st == CG_OK && path != COMM_PATH_AUTO) st = comm_set_path(c, path);
  TRY_GOTO(comm_agree(c, st, "checking the options"), done);
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
  TRY_GOTO(dist_backend_open(c, cfg, &be), done);
  TRY_GOTO(rt_dist_create(c, cfg, o, &d), done);
  /* the checkpoint against the graph, before training: a wrong --graph is a set-up
   * error (one line), not a failure inside rt_train that aborts the job */
  st = cfg->resume_path ? rt_checkpoint_fits_problem(&resume, cfg->resume_path, rt_dist_local(d), cfg)
                        : CG_OK;
  TRY_GOTO(comm_agree(c, st, "checking the checkpoint against the graph"), done);
  TRY_GOTO(rt_dist_bind(d, be, cfg, &ex), done);
  /* From here on the ranks no longer agree on each status: a rank that fails may leave
   * its peers inside a collective, so the caller must end the job (comm_abort). */
  *fatal = 1;
  st = rt_train_checked(be, rt_dist_local(d), ex, cfg, cfg->resume_path ? &resume : NULL, res);
  /* a stop on request is agreed (every rank stopped after the same epoch): clean up */
  if (st == CG_OK || st == CG_ERR_INTERRUPTED) *fatal = 0;
done:
  if (!*fatal) cg_watchdog_set_slots(NULL, 0, 0, comm_rank(c)); /* the block goes with comm_finalize */
  rt_checkpoint_free(&resume);
  if (!*fatal) {
    rt_dist_destroy(&d);
    cg_backend_destroy(&be);
  }
  return st;
}
