/* runtime/checkpoint_run.c — a checkpoint in a training run: whether it fits the run
 * it should continue, restoring the model and the run's bookkeeping from it, saving
 * them, and keeping the run's files apart (the file format: runtime/checkpoint.c).
 *
 * Design notes (the why):
 * - A resumed run must report what an uninterrupted one would: the losses so far, the
 *   best epoch of the --eval-every schedule and the last evaluation travel with the
 *   parameters and Adam's state.
 * - Every rank holds the same parameters, so rank 0 alone writes; the others learn
 *   whether it worked, so that all stop or none. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "core/log.h"
#include "core/outfile.h"
#include "core/status.h"
#include "runtime/runtime_internal.h"

/* ---- fitting a run -------------------------------------------------------------- */

/* "off", or "--early-stop N (rule R)", for the resume warnings. */
static void early_stop_str(int n, enum rt_early_stop_rule rule, char *buf, size_t len) {
  if (n <= 0) snprintf(buf, len, "off");
  else snprintf(buf, len, "--early-stop %d (rule %s)", n, rt_early_stop_rule_str(rule));
}

int rt_checkpoint_fits(const struct rt_checkpoint *c, const char *path, const struct rt_config *cfg,
                       int warn) {
  if (c->model != cfg->model || c->layers != cfg->layers || c->hidden != cfg->hidden ||
      c->layernorm != cfg->layernorm)
    return cg_err_set(CG_ERR_ARG, "--resume %s: the checkpoint holds a %s model with %d layers, hidden "
                      "%lld%s; this run asks for %s, %d layers, hidden %lld%s", path,
                      rt_model_kind_str(c->model), c->layers, (long long)c->hidden,
                      c->layernorm ? ", layernorm" : "", rt_model_kind_str(cfg->model), cfg->layers,
                      (long long)cfg->hidden, cfg->layernorm ? ", layernorm" : "");
  if (c->stopped_early && cfg->early_stop > 0 && c->early_stop == cfg->early_stop &&
      c->early_stop_rule == cfg->early_stop_rule)
    return cg_err_set(CG_ERR_ARG, "--resume %s: that run stopped early at epoch %d (--early-stop %d, rule %s): "
                      "nothing left to train by the same rule (pass --early-stop 0, or another N, to go on)",
                      path, c->epoch, c->early_stop, rt_early_stop_rule_str(c->early_stop_rule));
  if (cfg->model == RT_MODEL_GAT && (c->heads != cfg->heads || c->out_heads != cfg->out_heads))
    return cg_err_set(CG_ERR_ARG, "--resume %s: the checkpoint holds a GAT model with %d heads and %d "
                      "output heads; this run asks for %d and %d", path, c->heads, c->out_heads,
                      cfg->heads, cfg->out_heads);
  if (c->epoch >= cfg->epochs)
    return cg_err_set(CG_ERR_ARG, "--resume %s: the checkpoint is at epoch %d and --epochs is %d: nothing "
                      "left to train (raise --epochs to continue)", path, c->epoch, cfg->epochs);
  if (!warn) return CG_OK;
  const float in_c = rt_config_layer_dropout(&(struct rt_config){.dropout = c->dropout,
                                                                  .input_dropout = c->input_dropout}, 0);
  const float in_r = rt_config_layer_dropout(cfg, 0);
#define CKPT_DIFF(differs, name, fmt, now, then)                                                    \
  if (differs)                                                                                      \
  LOG_WARN_COMMON("train", "--resume %s: %s is " fmt " in this run, " fmt " in the checkpoint's: "    \
                  "the continuation differs from an uninterrupted run", path, name, now, then)
  CKPT_DIFF(c->feat_norm_row != cfg->feat_norm_row, "--feat-norm", "%s", cfg->feat_norm_row ? "row" : "none",
            c->feat_norm_row ? "row" : "none");
  CKPT_DIFF(c->dropout != cfg->dropout, "--dropout", "%g", (double)cfg->dropout, (double)c->dropout);
  CKPT_DIFF(in_c != in_r, "the input features' dropout (--input-dropout)", "%g", (double)in_r, (double)in_c);
  if (cfg->model == RT_MODEL_GAT) {
    const float att_c = rt_config_attn_dropout(&(struct rt_config){.dropout = c->dropout,
                                                                    .attn_dropout = c->attn_dropout});
    CKPT_DIFF(att_c != rt_config_attn_dropout(cfg), "the attention dropout (--attn-dropout)", "%g",
              (double)rt_config_attn_dropout(cfg), (double)att_c);
  }
  CKPT_DIFF(c->optimizer != cfg->optimizer, "--optimizer", "%s", rt_optimizer_str(cfg->optimizer),
            rt_optimizer_str(c->optimizer));
  CKPT_DIFF(c->lr != cfg->lr, "--lr", "%g", (double)cfg->lr, (double)c->lr);
  CKPT_DIFF(c->weight_decay != cfg->weight_decay, "--weight-decay", "%g", (double)cfg->weight_decay,
            (double)c->weight_decay);
  CKPT_DIFF(c->wd_scope != cfg->wd_scope, "--wd-scope", "%s", rt_wd_scope_str(cfg->wd_scope),
            rt_wd_scope_str(c->wd_scope));
  if (c->beta1 != cfg->beta1 || c->beta2 != cfg->beta2 || c->adam_eps != cfg->adam_eps) {
    char now[96], then[96];
    snprintf(now, sizeof now, "%g/%g/%g", (double)cfg->beta1, (double)cfg->beta2, (double)cfg->adam_eps);
    snprintf(then, sizeof then, "%g/%g/%g", (double)c->beta1, (double)c->beta2, (double)c->adam_eps);
    CKPT_DIFF(1, "Adam's setting (beta1/beta2/eps)", "%s", now, then);
  }
  CKPT_DIFF(c->seed != cfg->seed, "--seed", "%llu", (unsigned long long)cfg->seed,
            (unsigned long long)c->seed);
  CKPT_DIFF(c->eval_every != cfg->eval_every, "--eval-every (it decides which epochs can be the best)", "%d",
            cfg->eval_every, c->eval_every);
  CKPT_DIFF(c->optimizer == RT_OPT_SGD && c->momentum != cfg->momentum, "--momentum", "%g", (double)cfg->momentum,
            (double)c->momentum);
  const int span = cfg->lr_epochs > 0 ? cfg->lr_epochs : cfg->epochs;
  CKPT_DIFF(c->lr_schedule != cfg->lr_schedule, "--lr-schedule", "%s", rt_lr_schedule_str(cfg->lr_schedule),
            rt_lr_schedule_str(c->lr_schedule));
  if (c->lr_schedule == cfg->lr_schedule && cfg->lr_schedule == RT_LR_STEP &&
      (c->lr_step_size != cfg->lr_step_size || c->lr_gamma != cfg->lr_gamma)) {
    char now[64], then[64];
    snprintf(now, sizeof now, "--lr-step-size %d --lr-gamma %g", cfg->lr_step_size, (double)cfg->lr_gamma);
    snprintf(then, sizeof then, "--lr-step-size %d --lr-gamma %g", c->lr_step_size, (double)c->lr_gamma);
    CKPT_DIFF(1, "the step schedule", "%s", now, then);
  }
  CKPT_DIFF(c->lr_warmup != cfg->lr_warmup, "--lr-warmup", "%d", cfg->lr_warmup, c->lr_warmup);
  CKPT_DIFF(c->lr_schedule == cfg->lr_schedule && cfg->lr_schedule == RT_LR_COSINE && c->lr_epochs != span,
            "the cosine schedule's span (--lr-epochs, else --epochs)", "%d", span, c->lr_epochs);
  char es_now[64], es_then[64]; /* (the rule of a run without early stopping is no difference) */
  early_stop_str(cfg->early_stop, cfg->early_stop_rule, es_now, sizeof es_now);
  early_stop_str(c->early_stop, c->early_stop_rule, es_then, sizeof es_then);
  if (strcmp(es_now, es_then) != 0) {
    LOG_WARN_COMMON("train", "--resume %s: early stopping is %s in this run, %s in the checkpoint's: %sthe "
                    "continuation differs from an uninterrupted run", path, es_now, es_then,
                    cfg->early_stop > 0 ? "its rule starts afresh here, and " : "");
  }
  if (c->threads != cfg->threads && strcmp(c->device, "cpu") == 0)
    LOG_WARN_COMMON("train", "--resume %s: the checkpoint was made with --threads %d, this run uses %d: "
                    "results differ from an uninterrupted run by rounding", path, c->threads,
                    cfg->threads);
#undef CKPT_DIFF
  return CG_OK;
}

int rt_checkpoint_read_resume(const struct rt_config *cfg, struct rt_checkpoint *out) {
  memset(out, 0, sizeof *out);
  if (!cfg->resume_path) return CG_OK;
  TRY(rt_checkpoint_read(cfg->resume_path, out));
  const int st = rt_checkpoint_fits(out, cfg->resume_path, cfg, 0);
  if (st < 0) rt_checkpoint_free(out);
  return st;
}

int rt_checkpoint_fits_problem(const struct rt_checkpoint *c, const char *path,
                               const struct rt_local *loc, const struct rt_config *cfg) {
  if (c->graph_checksum != loc->graph_checksum || c->nodes != loc->n_global ||
      c->features != loc->feat_dim || c->classes != loc->num_classes) {
    char hint[600] = "";
    if (loc->pred && loc->pred->prune_eps > 0) /* (the checkpoint's run kept the original degrees: say so) */
      snprintf(hint, sizeof hint, "; halo pruning follows rates measured at start-up, so it need not remove what "
               "the checkpoint's run removed: resume on that run's pruned graph instead (--prune-write FILE, then "
               "--graph FILE without --prune-halo%s%s)", c->norm_graph[0] ? ", with --norm-degrees " : "",
               c->norm_graph);
    else if (strcmp(c->graph, loc->name) == 0) /* a pruned or reordered copy keeps its source's name */
      snprintf(hint, sizeof hint, ": another graph of the same name, e.g. a pruned (--prune-write) or reordered copy; "
               "resume with the file the checkpoint's run trained as --graph FILE");
    return cg_err_set(CG_ERR_ARG, "--resume %s: the checkpoint was written for graph %s (%lld vertices, "
                      "checksum %08x), this run trains %s (%lld vertices, checksum %08x)%s", path, c->graph,
                      (long long)c->nodes, c->graph_checksum, loc->name, (long long)loc->n_global,
                      loc->graph_checksum, hint);
  }
  int64_t n = 0;
  TRY(rt_model_count_params(loc, cfg, &n));
  if (c->num_params != n)
    return cg_err_set(CG_ERR_ARG, "--resume %s: the checkpoint has %lld parameters, this model %lld", path,
                      (long long)c->num_params, (long long)n);
  const char *norm = rt_norm_graph_of(cfg, loc);
  if (strcmp(c->norm_graph, norm) != 0 && cfg->model != RT_MODEL_GAT) /* (GAT: no degrees to differ) */
    LOG_WARN_COMMON("train", "--resume %s: the aggregation is normalised by the degrees of %s in this run, of %s in "
                    "the checkpoint's (--norm-degrees, --prune-norm): the continuation differs from an "
                    "uninterrupted run", path, norm[0] ? norm : "the graph itself",
                    c->norm_graph[0] ? c->norm_graph : "the graph itself");
  return CG_OK;
}

/* ---- restoring and saving --------------------------------------------------------- */

int rt_checkpoint_restore(const struct rt_checkpoint *c, const char *path, struct rt_model *m,
                          const struct cg_backend *be, const struct rt_local *loc, const struct rt_config *cfg,
                          struct rt_result *r, struct rt_train_track *tr, struct rt_early_stop *es, int *done) {
  TRY(rt_checkpoint_fits(c, path, cfg, 1));
  const char *gemm = cg_backend_cpu_gemm_name(be);
  if (gemm && c->gemm[0] && strcmp(gemm, c->gemm) != 0)
    LOG_WARN_COMMON("train", "--resume %s: the checkpoint was made with the %s GEMM, this run uses %s (another "
                    "machine's libraries, or CAPGNN_CPU_GEMM): results differ from an uninterrupted run by rounding "
                    "(CAPGNN_CPU_GEMM=%s resumes bit for bit)", path, c->gemm, gemm, c->gemm);
  TRY(rt_checkpoint_fits_problem(c, path, loc, cfg));
  if (c->ranks != loc->nranks) /* (the exactness contract: P ranks equal one to rounding) */
    LOG_WARN_COMMON("train", "--resume %s: the checkpoint was made on %d rank%s, this run has %d: the continuation "
                    "equals an uninterrupted run to rounding (sums in another order), not bit for bit", path,
                    c->ranks, c->ranks == 1 ? "" : "s", loc->nranks);
  if (c->num_params != rt_model_num_params(m)) /* the layout counted above is the model's */
    return cg_err_set(CG_ERR_INTERNAL, "--resume %s: the checkpoint has %lld parameters, the model "
                      "built %lld", path, (long long)c->num_params, (long long)rt_model_num_params(m));
  TRY(rt_model_state_set(m, c->params, c->adam_m, c->adam_v, c->steps));
  memcpy(r->loss, c->loss, (size_t)c->epoch * sizeof(double));
  tr->best = (struct rt_best){c->best_val_acc, c->best_val_loss, c->test_acc_at_best_val, c->best_epoch};
  r->best_val_acc = c->best_val_acc;
  r->test_acc_at_best_val = c->test_acc_at_best_val;
  r->best_epoch = c->best_epoch;
  r->final_train_acc = c->final_train_acc;
  r->final_val_acc = c->final_val_acc;
  r->final_test_acc = c->final_test_acc;
  tr->last_val = c->last_val_acc;
  if (es) TRY(rt_early_stop_from_checkpoint(es, c));
  *done = c->epoch;
  LOG_INFO("train", "resuming from %s after epoch %d (%lld optimizer steps)", path, c->epoch,
           (long long)c->steps);
  return CG_OK;
}

int rt_checkpoint_save_state(const char *path, const struct rt_model *m, const struct cg_backend *be,
                             const struct rt_local *loc, struct cg_exchange *ex, const struct rt_config *cfg,
                             const struct rt_result *r, const struct rt_train_track *tr,
                             const struct rt_early_stop *es, int epoch, const float *params,
                             const float *mom1, const float *mom2, int64_t steps) {
  int st = CG_OK;
  if (loc->rank == 0) {
    struct rt_checkpoint c = {
        .graph_checksum = loc->graph_checksum, .nodes = loc->n_global, .features = loc->feat_dim,
        .classes = loc->num_classes, .feat_norm_row = cfg->feat_norm_row, .model = cfg->model,
        .layers = cfg->layers, .layernorm = cfg->layernorm, .hidden = cfg->hidden,
        .heads = cfg->heads, .out_heads = cfg->out_heads, .attn_dropout = cfg->attn_dropout,
        .dropout = cfg->dropout, .input_dropout = cfg->input_dropout, .optimizer = cfg->optimizer,
        .lr = cfg->lr, .weight_decay = cfg->weight_decay, .beta1 = cfg->beta1, .beta2 = cfg->beta2,
        .adam_eps = cfg->adam_eps, .wd_scope = cfg->wd_scope, .seed = cfg->seed,
        .eval_every = cfg->eval_every, .threads = cfg->threads, .ranks = loc->nranks,
        .epoch = epoch, .num_params = rt_model_num_params(m), .steps = steps,
        .loss = r->loss, /* borrowed */
        .best_val_acc = tr->best.val_acc, .best_val_loss = tr->best.val_loss,
        .test_acc_at_best_val = tr->best.test_acc, .best_epoch = tr->best.epoch,
        .final_train_acc = r->final_train_acc, .final_val_acc = r->final_val_acc,
        .final_test_acc = r->final_test_acc, .last_val_acc = tr->last_val,
        .momentum = cfg->momentum, .lr_schedule = cfg->lr_schedule, .lr_step_size = cfg->lr_step_size,
        .lr_gamma = cfg->lr_gamma, .lr_warmup = cfg->lr_warmup,
        .lr_epochs = cfg->lr_epochs > 0 ? cfg->lr_epochs : cfg->epochs, .early_stop = cfg->early_stop,
        .early_stop_rule = cfg->early_stop_rule, .es_best_loss = INFINITY, .es_best_acc = -1.0};
    if (es) rt_early_stop_to_checkpoint(es, &c); /* borrowed */
    const char *gemm = cg_backend_cpu_gemm_name(be);
    snprintf(c.gemm, sizeof c.gemm, "%s", gemm ? gemm : "");
    snprintf(c.graph, sizeof c.graph, "%s", loc->name);
    /* a synth: spec is regenerated bit for bit from its text (the checksum guards it):
     * predict needs no --graph then. Not recorded when too long to keep whole. */
    if (cfg->graph && strncmp(cfg->graph, "synth:", 6) == 0 && strlen(cfg->graph) < sizeof c.graph_spec)
      snprintf(c.graph_spec, sizeof c.graph_spec, "%s", cfg->graph);
    snprintf(c.norm_graph, sizeof c.norm_graph, "%s", rt_norm_graph_of(cfg, loc));
    snprintf(c.device, sizeof c.device, "%s", be->name);
    const size_t bytes = (size_t)c.num_params * sizeof(float);
    c.params = cg_malloc(bytes, "checkpoint parameters");
    c.adam_m = cg_malloc(bytes, "checkpoint Adam moments");
    c.adam_v = cg_malloc(bytes, "checkpoint Adam moments");
    if (!c.params || !c.adam_m || !c.adam_v) st = CG_ERR_NOMEM;
    if (st == CG_OK) st = be->download((struct cg_backend *)be, c.params, params, bytes);
    if (st == CG_OK) st = be->download((struct cg_backend *)be, c.adam_m, mom1, bytes);
    if (st == CG_OK) st = be->download((struct cg_backend *)be, c.adam_v, mom2, bytes);
    if (st == CG_OK) st = rt_checkpoint_write(path, &c);
    cg_free(c.params);
    cg_free(c.adam_m);
    cg_free(c.adam_v);
  }
  if (ex) {
    double failed = st != CG_OK;
    TRY(ex->allreduce_host(ex, &failed, 1, CG_REDUCE_SUM));
    if (failed > 0 && st == CG_OK)
      st = cg_err_set(CG_ERR_IO, "rank 0 could not write checkpoint %s", path);
  }
  return st;
}

int rt_checkpoint_save(struct rt_model *m, const struct cg_backend *be, const struct rt_local *loc,
                       struct cg_exchange *ex, const struct rt_config *cfg, const struct rt_result *r,
                       const struct rt_train_track *tr, const struct rt_early_stop *es, int epoch) {
  return rt_checkpoint_save_state(cfg->checkpoint_path, m, be, loc, ex, cfg, r, tr, es, epoch, m->p, m->m1,
                                  m->m2, m->t_step);
}

/* ---- the run's files ----------------------------------------------------------------- */

int rt_checkpoint_check_paths(const struct rt_config *cfg) {
  struct {
    const char *opt, *path;
  } f[5] = {{"--checkpoint", cfg->checkpoint_path},
            {"--resume", cfg->resume_path},
            {"--metrics", cfg->metrics_path},
            {"--graph", NULL},
            {"--save-best", cfg->save_best_path}};
  struct stat sb;
  if (cfg->graph && strncmp(cfg->graph, "synth:", 6) != 0 && stat(cfg->graph, &sb) == 0) f[3].path = cfg->graph;
  for (int i = 0; i < 5; i++)
    for (int j = i + 1; j < 5; j++) {
      /* resuming a run into its own checkpoint is the usual case; a best-weights file may
       * be the one resumed from too (it is replaced only by a better epoch) */
      if ((i == 0 && j == 1) || (i == 1 && j == 4)) continue;
      if (f[i].path && f[j].path && cg_outfile_same(f[i].path, f[j].path) && strcmp(f[i].path, "/dev/null") != 0)
        return cg_err_set(CG_ERR_ARG, "%s and %s name the same file (%s): use two files", f[i].opt, f[j].opt,
                          f[i].path);
    }
  return CG_OK;
}
