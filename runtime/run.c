/* runtime/run.c — a whole run in one process: the checks a run makes before anything
 * long (its files, the checkpoint it resumes from), then the graph, the local
 * problem, the backend and the training loop. Several ranks: rt_run_dist
 * (runtime/dist.c) makes the same checks, agreed over the ranks.
 *
 * Design notes (the why):
 * - The files are checked and the resume checkpoint is read before the graph is
 *   loaded, which can take minutes: a typo in a path must fail at once, not after
 *   the load and partitioning, nor after the last epoch.
 * - Each is done once per run: the checkpoint read here is the one rt_train restores,
 *   so the file is read (and its CRC computed) once, and what was checked is what is
 *   used.
 * - The checkpoint is checked against the graph as soon as the local problem exists,
 *   before the backend is opened and training starts; rt_run_dist does the same,
 *   agreed over the ranks, so that a checkpoint of another graph is one set-up error
 *   there too, not a failure inside training (rt_train checks it again when it
 *   restores, for its direct callers). */
#include <string.h>

#include "core/log.h"
#include "core/outfile.h"
#include "core/status.h"
#include "runtime/runtime_internal.h"

/* The run's inputs no output may be (core/outfile.h's rule 1): the graph's file (a
 * dataset name resolved), the checkpoint resumed from (a checkpoint may replace it:
 * that is how a run continues in place; the metrics may not), the settings files. */
#define RT_MAX_INPUTS 32

int rt_run_check_files(const struct rt_config *cfg) {
  TRY(rt_checkpoint_check_paths(cfg));
  char gpath[4200], npath[4200];
  struct cg_outfile_input in[RT_MAX_INPUTS];
  int n = 0;
  in[n++] = (struct cg_outfile_input){"--graph", graph_path(cfg->graph, gpath, sizeof gpath)};
  if (cfg->norm_graph)
    in[n++] = (struct cg_outfile_input){"--norm-degrees", graph_path(cfg->norm_graph, npath, sizeof npath)};
  for (int i = 0; cfg->inputs && cfg->inputs[i] && n < RT_MAX_INPUTS - 1; i++)
    in[n++] = (struct cg_outfile_input){"--config", cfg->inputs[i]};
  in[n++] = (struct cg_outfile_input){"--resume", cfg->resume_path}; /* last: the checkpoint skips it */
  if (cfg->metrics_path) {
    TRY(cg_outfile_check(cfg->metrics_path, "--metrics", rt_metrics_kind(), in, n, cfg->force, 0));
    TRY(rt_metrics_probe(cfg->metrics_path));
  }
  if (cfg->checkpoint_path)
    TRY(rt_checkpoint_probe_target(cfg->checkpoint_path, !cfg->resume_path, in, n - 1, cfg->force));
  if (cfg->save_best_path) { /* the same rule, as --save-best (the message names the option) */
    TRY(cg_outfile_check(cfg->save_best_path, "--save-best", rt_checkpoint_kind(), in, n - 1, cfg->force, 0));
    TRY(cg_outfile_probe(cfg->save_best_path, "best-weights checkpoint"));
  }
  return CG_OK;
}

int rt_graph_norm_apply(struct graph *g, const struct rt_config *cfg) {
  if (!cfg->norm_graph) return CG_OK;
  if (cfg->model == RT_MODEL_GAT) /* (capgnn train refuses it as a usage error first) */
    return cg_err_set(CG_ERR_ARG, "--norm-degrees %s: GAT weighs each neighbour by its attention coefficient, not "
                      "by degrees, so it has no degree normalisation to change", cfg->norm_graph);
  struct graph s;
  memset(&s, 0, sizeof s);
  char buf[4096];
  const char *path = graph_path(cfg->norm_graph, buf, sizeof buf);
  int st = CG_OK;
  if (path) { /* a file: its row pointers are all the degrees need */
    struct graph_cgr *f = NULL;
    st = graph_cgr_open(path, &f);
    if (st == CG_OK) {
      graph_cgr_info(f, &s);
      s.rowptr = cg_malloc((size_t)(s.n + 1) * sizeof *s.rowptr, "--norm-degrees row pointers");
      st = s.rowptr ? graph_cgr_read_rowptr(f, s.rowptr) : CG_ERR_NOMEM;
    }
    graph_cgr_close(&f);
  } else {
    st = graph_open(cfg->norm_graph, &s);
  }
  if (st == CG_OK) st = graph_set_norm_degrees(g, &s, "--norm-degrees");
  if (st == CG_OK)
    LOG_INFO("train", "normalising the aggregation by the degrees of %s (%lld entries; the graph trained has "
             "%lld): rows that lost neighbours keep their weights", cfg->norm_graph, (long long)s.m, (long long)g->m);
  graph_free(&s); /* (rowptr alone, or the whole graph) */
  return st;
}

const char *rt_norm_graph_of(const struct rt_config *cfg, const struct rt_local *loc) {
  if (cfg->norm_graph) return cfg->norm_graph;
  if (loc->pred && loc->pred->prune_keep_degrees && loc->pred->pruned_edges > 0) return cfg->graph;
  return "";
}

int rt_run_checked(const struct rt_config *cfg, struct rt_result *res) {
  int st = CG_OK;
  struct graph g;
  struct rt_local loc;
  struct rt_checkpoint resume;
  struct cg_backend *be = NULL;
  memset(&g, 0, sizeof g);
  memset(&loc, 0, sizeof loc);
  memset(&resume, 0, sizeof resume);
  TRY(rt_run_check_files(cfg));
  TRY(rt_checkpoint_read_resume(cfg, &resume));
  TRY_GOTO(graph_open(cfg->graph, &g), done);
  TRY_GOTO(rt_graph_norm_apply(&g, cfg), done);
  if (cfg->feat_norm_row) graph_feat_rownorm(&g);
  int sparse = 0;
  TRY_GOTO(rt_features_choose(&g, cfg, 1, &sparse), done);
  TRY_GOTO(rt_local_from_graph_feat(&g, cfg->model, sparse, &loc), done);
  graph_free(&g); /* the local problem holds what training needs */
  TRY_GOTO(rt_local_reorder(&loc, cfg->reorder, NULL), done);
  if (cfg->resume_path) TRY_GOTO(rt_checkpoint_fits_problem(&resume, cfg->resume_path, &loc, cfg), done);
  TRY_GOTO(rt_backend_open(cfg->device, cfg->threads, cfg->tf32, &be), done);
  TRY_GOTO(rt_backend_emulate(&be, 0, 1), done);
  TRY_GOTO(rt_train_owned(be, &loc, NULL, cfg, cfg->resume_path ? &resume : NULL, res), done);
done:
  cg_backend_destroy(&be);
  rt_local_free(&loc);
  graph_free(&g);
  rt_checkpoint_free(&resume);
  return st;
}

int rt_run(const struct rt_config *cfg, struct rt_result *res) {
  TRY(rt_config_check(cfg));
  struct rt_config c = *cfg; /* the thread count used, for the backend, summary and checkpoints */
  c.threads = rt_threads_setup("train", cfg->threads, 1, 0, cfg->device);
  return rt_run_checked(&c, res);
}
