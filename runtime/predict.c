/* runtime/predict.c — `capgnn predict`: the logits (and the last hidden layer's
 * embeddings) of a checkpoint's model on a graph, as NumPy .npy files (runtime.h,
 * rt_predict).
 *
 * Design notes (the why):
 * - The model is rebuilt from the checkpoint's own description (kind, layers, hidden,
 *   LayerNorm, dropout placement, feature normalisation) and evaluated exactly as
 *   training evaluates it (rt_model_evaluate: full graph, no dropout), so the written
 *   logits give the accuracies the training run reported for that epoch.
 * - One process: the local problem of the whole graph has local row v = vertex v, so
 *   the rows come out in the graph's order; a partitioned run's renumbering never
 *   reaches the file (the rows are placed by their global id all the same).
 * - .npy version 1.0, little-endian float32, C order: what numpy.load and every .npy
 *   reader take; capgnn itself never needs Python. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/log.h"
#include "core/outfile.h"
#include "core/status.h"
#include "runtime/runtime_internal.h"

static const struct cg_outfile_kind *npy_kind(void) {
  static const char *const sig[] = {"\x93NUMPY", NULL};
  /* replace_needs_force: capgnn cannot tell its predictions from another float32 array */
  static const struct cg_outfile_kind kind = {"NumPy array (.npy)", sig, 1, NULL};
  return &kind;
}

/* rows x cols floats, row r of the file taken from src row of local id i where
 * gid[i] = r (every row present once). */
static int npy_write(const char *path, const float *src, const int32_t *gid, int64_t rows, int64_t cols) {
  char dict[160];
  int k = snprintf(dict, sizeof dict, "{'descr': '<f4', 'fortran_order': False, 'shape': (%lld, %lld), }",
                   (long long)rows, (long long)cols);
  /* magic (6) + version (2) + length (2) + dict + padding + '\n': a multiple of 64 */
  int total = 10 + k + 1;
  const int pad = (64 - total % 64) % 64;
  char header[256];
  memcpy(header, "\x93NUMPY\x01\x00", 8);
  const uint16_t hl = (uint16_t)(k + pad + 1);
  header[8] = (char)(hl & 0xff);
  header[9] = (char)(hl >> 8);
  memcpy(header + 10, dict, (size_t)k);
  memset(header + 10 + k, ' ', (size_t)pad);
  header[10 + k + pad] = '\n';
  total += pad;
  float *row = cg_malloc((size_t)(cols > 0 ? cols : 1) * sizeof(float), "a row of predictions");
  int32_t *where = cg_malloc((size_t)(rows > 0 ? rows : 1) * sizeof(int32_t), "row order");
  if (!row || !where) {
    cg_free(row);
    cg_free(where);
    return CG_ERR_NOMEM;
  }
  for (int64_t i = 0; i < rows; i++) where[gid[i]] = (int32_t)i;
  struct cg_outfile of;
  int st = cg_outfile_open(&of, path, "predictions");
  if (st == CG_OK) {
    int ok = fwrite(header, 1, (size_t)total, of.fp) == (size_t)total;
    for (int64_t r = 0; ok && r < rows; r++) {
      memcpy(row, src + (size_t)where[r] * (size_t)cols, (size_t)cols * sizeof(float)); /* little-endian host */
      ok = fwrite(row, sizeof(float), (size_t)cols, of.fp) == (size_t)cols;
    }
    if (ok) st = cg_outfile_commit(&of);
    else {
      cg_outfile_abort(&of);
      st = cg_err_set(CG_ERR_IO, "cannot write %s (disk full?)", path);
    }
  }
  cg_free(row);
  cg_free(where);
  return st;
}

/* The checkpoint's model as a configuration (what the model build needs of it). */
static void config_of(const struct rt_checkpoint *c, const struct rt_predict_options *o, struct rt_config *cfg) {
  rt_config_defaults(cfg);
  /* the graph: --graph, else the synth: spec the checkpoint recorded, else its name */
  cfg->graph = o->graph ? o->graph : c->graph_spec[0] ? c->graph_spec : c->graph;
  cfg->feat_norm_row = c->feat_norm_row;
  /* normalised as it was trained (GAT has no degree normalisation: a checkpoint written
   * before --norm-degrees was refused with GAT may record one, which changed nothing) */
  cfg->norm_graph = c->norm_graph[0] && c->model != RT_MODEL_GAT ? c->norm_graph : NULL;
  cfg->model = c->model;
  cfg->layers = c->layers;
  cfg->hidden = c->hidden;
  cfg->layernorm = c->layernorm;
  cfg->heads = c->heads; /* GAT (the defaults for other models: unused) */
  cfg->out_heads = c->out_heads;
  cfg->attn_dropout = c->attn_dropout;
  cfg->dropout = c->dropout;
  cfg->input_dropout = c->input_dropout; /* decides layer 0's schedule, so its rounding */
  cfg->seed = c->seed;
  cfg->device = o->device ? o->device : "auto";
  cfg->threads = o->threads;
  cfg->reorder = o->reorder;
  cfg->quiet = 1;
}

static int check_outputs(const struct rt_predict_options *o, const char *gpath) {
  if (!o->checkpoint || !o->checkpoint[0]) return cg_err_set(CG_ERR_ARG, "--checkpoint: give the checkpoint to predict with");
  if (!o->logits_path || !o->logits_path[0]) return cg_err_set(CG_ERR_ARG, "--output: give the .npy file of the logits");
  if (o->embeddings_path && !o->embeddings_path[0]) return cg_err_set(CG_ERR_ARG, "--embeddings: empty file name");
  const struct cg_outfile_input in[3] = {{"--checkpoint", o->checkpoint}, {"--graph", gpath},
                                         {"--output", o->logits_path}};
  TRY(cg_outfile_check(o->logits_path, "--output", npy_kind(), in, 2, o->force, 0));
  TRY(cg_outfile_probe(o->logits_path, "predictions"));
  if (o->embeddings_path) {
    TRY(cg_outfile_check(o->embeddings_path, "--embeddings", npy_kind(), in, 3, o->force, 0));
    TRY(cg_outfile_probe(o->embeddings_path, "embeddings"));
  }
  return CG_OK;
}

int rt_predict(const struct rt_predict_options *o, struct rt_predict_result *res) {
  int st = CG_OK;
  struct rt_checkpoint c;
  struct graph g;
  struct rt_local loc;
  struct rt_config cfg;
  struct cg_backend *be = NULL;
  struct rt_model *m = NULL;
  float *logits = NULL, *emb = NULL;
  memset(&c, 0, sizeof c);
  memset(&g, 0, sizeof g);
  memset(&loc, 0, sizeof loc);
  if (res) memset(res, 0, sizeof *res);
  /* the outputs first (a typo fails at once), then the checkpoint, then the graph */
  char gpath[4200];
  const char *gp = o->graph ? graph_path(o->graph, gpath, sizeof gpath) : NULL;
  TRY(check_outputs(o, gp));
  TRY(rt_checkpoint_read(o->checkpoint, &c));
  config_of(&c, o, &cfg);
  if (!o->graph) { /* the checkpoint's graph, by name: it must not be an output either */
    gp = graph_path(cfg.graph, gpath, sizeof gpath);
    TRY_GOTO(check_outputs(o, gp), done);
  }
  if (o->embeddings_path && c.layers < 2) {
    st = cg_err_set(CG_ERR_ARG, "--embeddings: the checkpoint's model has one layer, so no hidden layer to take "
                    "embeddings from");
    goto done;
  }
  st = graph_open(cfg.graph, &g);
  if (st == CG_ERR_NOT_FOUND && !o->graph) { /* the checkpoint's name: say how to give its graph */
    char why[1024];
    snprintf(why, sizeof why, "%s", cg_err_msg());
    st = cg_err_set(st, "--checkpoint %s was trained on graph '%s', which is not found here: pass that graph with "
                    "--graph FILE (or --graph synth:... with the spec it was generated from; this checkpoint does "
                    "not record one). %s", o->checkpoint, c.graph, why);
  }
  if (st != CG_OK) goto done;
  TRY_GOTO(rt_graph_norm_apply(&g, &cfg), done);
  if (cfg.feat_norm_row) graph_feat_rownorm(&g);
  int sparse = 0;
  TRY_GOTO(rt_features_choose(&g, &cfg, 0, &sparse), done);
  TRY_GOTO(rt_local_from_graph_feat(&g, cfg.model, sparse, &loc), done);
  graph_free(&g);
  TRY_GOTO(rt_local_reorder(&loc, cfg.reorder, NULL), done); /* rows are written by gid */
  if (c.graph_checksum != loc.graph_checksum || c.nodes != loc.n_global || c.features != loc.feat_dim ||
      c.classes != loc.num_classes) {
    if (strcmp(c.graph, loc.name) == 0) /* a pruned or reordered copy keeps its source's name */
      st = cg_err_set(CG_ERR_ARG, "--checkpoint %s was trained on another graph named %s (%lld vertices, checksum "
                      "%08x) than the %s read here (%s: %lld vertices, checksum %08x), e.g. a pruned "
                      "(--prune-write) or reordered copy: pass the file it was trained on with --graph FILE",
                      o->checkpoint, c.graph, (long long)c.nodes, c.graph_checksum, loc.name, cfg.graph,
                      (long long)loc.n_global, loc.graph_checksum);
    else
      st = cg_err_set(CG_ERR_ARG, "--checkpoint %s was trained on graph %s (%lld vertices, checksum %08x), not on %s "
                      "(%lld vertices, checksum %08x): give that graph with --graph", o->checkpoint, c.graph,
                      (long long)c.nodes, c.graph_checksum, loc.name, (long long)loc.n_global, loc.graph_checksum);
    goto done;
  }
  int64_t np = 0;
  TRY_GOTO(rt_model_count_params(&loc, &cfg, &np), done);
  if (np != c.num_params) {
    st = cg_err_set(CG_ERR_FORMAT, "--checkpoint %s: %lld parameters, the model it describes has %lld", o->checkpoint,
                    (long long)c.num_params, (long long)np);
    goto done;
  }
  TRY_GOTO(rt_backend_open_ordinal("predict", cfg.device, cfg.threads, 0, 0, &be), done);
  TRY_GOTO(rt_model_create(be, &loc, &cfg, NULL, &m), done);
  TRY_GOTO(rt_model_state_set(m, c.params, c.adam_m, c.adam_v, c.steps), done);
  struct rt_eval ev;
  TRY_GOTO(rt_model_evaluate(m, &ev, NULL), done); /* leaves the logits and the layers' inputs */
  const struct rt_layer *last = &m->layers[m->nlayers - 1];
  const int64_t n = loc.n_inner, C = loc.num_classes, H = last->fin;
  logits = cg_malloc((size_t)n * (size_t)C * sizeof(float), "logits");
  if (!logits) {
    st = CG_ERR_NOMEM;
    goto done;
  }
  TRY_GOTO(be->download(be, logits, last->z, (size_t)n * (size_t)C * sizeof(float)), done);
  TRY_GOTO(npy_write(o->logits_path, logits, loc.gid, n, C), done);
  if (o->embeddings_path) {
    emb = cg_malloc((size_t)n * (size_t)H * sizeof(float), "embeddings");
    if (!emb) {
      st = CG_ERR_NOMEM;
      goto done;
    }
    TRY_GOTO(be->download(be, emb, last->in, (size_t)n * (size_t)H * sizeof(float)), done);
    TRY_GOTO(npy_write(o->embeddings_path, emb, loc.gid, n, H), done);
  }
  if (res) {
    res->n = n;
    res->classes = C;
    res->hidden = o->embeddings_path ? H : 0;
    res->epoch = c.epoch;
    res->ev = ev;
    res->multilabel = loc.multilabel;
  }
done:
  cg_free(logits);
  cg_free(emb);
  rt_model_destroy(&m);
  cg_backend_destroy(&be);
  rt_local_free(&loc);
  graph_free(&g);
  rt_checkpoint_free(&c);
  return st;
}
