/* runtime/config.c — training configuration defaults and range checks. */
#include <math.h>
#include <string.h>

#include "core/status.h"
#include "runtime/runtime.h"

void rt_config_defaults(struct rt_config *c) {
  memset(c, 0, sizeof *c);
  c->graph = "synth:small";
  c->feat_norm_row = 0;
  c->sparse_features = RT_SPARSE_AUTO;
  c->layer0_halo = RT_L0_AUTO;
  c->model = RT_MODEL_GCN;
  c->layers = 2;
  c->hidden = 16;
  c->dropout = 0.5f;
  c->input_dropout = -1.0f;
  c->layernorm = 0;
  c->heads = 8;
  c->out_heads = 1;
  c->attn_dropout = -1.0f;
  c->optimizer = RT_OPT_ADAM;
  c->lr = 0.01f;
  c->weight_decay = 5e-4f;
  c->beta1 = 0.9f;
  c->beta2 = 0.999f;
  c->adam_eps = 1e-8f;
  c->wd_scope = RT_WD_ALL;
  c->epochs = 200;
  c->eval_every = 1;
  c->seed = 1;
  c->device = "auto";
  c->threads = 0;
  c->tf32 = 0;
  c->overlap = 1;
  c->halo_bits = 32;
  c->metrics_path = NULL;
  c->quiet = 0;
  c->checkpoint_path = NULL;
  c->checkpoint_every = 0;
  c->resume_path = NULL;
  c->stall_timeout_s = 300.0;
  c->momentum = 0.0f;
  c->lr_schedule = RT_LR_NONE;
  c->lr_step_size = 0;
  c->lr_gamma = 0.1f;
  c->lr_warmup = 0;
  c->lr_epochs = 0;
  c->early_stop = 0;
  c->early_stop_rule = RT_ES_PATIENCE;
  c->log_every = 0;
  c->save_best_path = NULL;
}

float rt_config_layer_dropout(const struct rt_config *c, int l) {
  return (l == 0 && c->input_dropout >= 0.0f) ? c->input_dropout : c->dropout;
}

float rt_config_attn_dropout(const struct rt_config *c) {
  return c->attn_dropout >= 0.0f ? c->attn_dropout : c->dropout;
}

int64_t rt_config_halo_cols(const struct rt_config *c, int64_t classes) {
  if (c->layers < 2) return 1; /* no hidden layer's rows move */
  if (c->model != RT_MODEL_GAT) return c->hidden;
  const int64_t hid = (int64_t)c->heads * (c->hidden + 1), out = (int64_t)c->out_heads * (classes + 1);
  return hid > out ? hid : out;
}

int64_t rt_config_feature_cols(const struct rt_config *c, int64_t feat_dim, int64_t classes) {
  int64_t w = c->layers > 1 ? rt_config_halo_cols(c, classes) : 0;
  if (w < RT_FEATURE_COLS_MIN) w = RT_FEATURE_COLS_MIN;
  const int64_t few = (feat_dim + RT_FEATURE_SLICES_MAX - 1) / RT_FEATURE_SLICES_MAX;
  if (w < few) w = few;
  return w < feat_dim ? w : feat_dim;
}

const char *rt_layer0_halo_str(enum rt_layer0_halo h) {
  return h == RT_L0_LOCAL ? "local" : h == RT_L0_EXCHANGE ? "exchange" : "auto";
}

int rt_layer0_exchange_choose(const struct rt_config *c, int64_t feat_dim, int64_t classes, int sparse,
                              int partitioned, const char **why) {
  const char *w = NULL;
  int x = 0;
  const int64_t fout = c->layers > 1 ? c->hidden : classes;
  const int cached = !sparse && rt_config_layer_dropout(c, 0) == 0.0f; /* Â·X kept from set-up */
  if (!partitioned) w = "one rank: no halo";
  else if (c->model == RT_MODEL_GAT) w = "GAT: local (an exchanged layer 0 is not built for attention)";
  else if (c->layer0_halo == RT_L0_LOCAL) w = "--layer0-halo local";
  else if (c->layer0_halo == RT_L0_EXCHANGE) x = 1, w = "--layer0-halo exchange";
  else if (cached) w = "auto: no input dropout, Â·X is computed once at set-up (no layer-0 halo work in training)";
  else if (sparse && c->halo_cache)
    w = "auto: local with the halo cache, which serves the hidden layers only (sparse features: transforming a "
        "halo row costs its few stored entries, less than sending its row every step beside the cache)";
  else if (sparse) x = 1, w = "auto: sparse features transform first";
  else if (fout < feat_dim && c->halo_cache && c->on_gpu)
    w = "auto: local with the halo cache, which serves the hidden layers only (on GPUs transforming the halo "
        "rows costs less than sending them every step beside the cache)";
  else if (fout < feat_dim && c->halo_cache)
    x = 1, w = "auto: layer 0 transforms first (fout < fin), exchanged beside the halo cache (dense features on "
               "the CPU: transforming every halo row would cost more than its exchange)";
  else if (fout < feat_dim) x = 1, w = "auto: layer 0 transforms first (fout < fin)";
  else w = "auto: layer 0 aggregates first (fout >= fin: its halo rows are the narrower)";
  if (why) *why = w;
  return x;
}

const char *rt_model_kind_str(enum rt_model_kind k) {
  return k == RT_MODEL_SAGE ? "sage" : k == RT_MODEL_GAT ? "gat" : "gcn";
}
const char *rt_optimizer_str(enum rt_optimizer o) {
  return o == RT_OPT_ADAMW ? "adamw" : o == RT_OPT_SGD ? "sgd" : "adam";
}
const char *rt_lr_schedule_str(enum rt_lr_schedule s) {
  return s == RT_LR_STEP ? "step" : s == RT_LR_COSINE ? "cosine" : "none";
}
const char *rt_early_stop_rule_str(enum rt_early_stop_rule r) {
  return r == RT_ES_WINDOW ? "window" : r == RT_ES_GAT ? "gat" : "patience";
}
const char *rt_wd_scope_str(enum rt_wd_scope s) { return s == RT_WD_FIRST ? "first" : "all"; }

enum graph_norm rt_model_norm(enum rt_model_kind k, int *self_loops) {
  if (k == RT_MODEL_SAGE) {
    if (self_loops) *self_loops = 0;
    return GRAPH_NORM_MEAN;
  }
  if (self_loops) *self_loops = 1;
  return GRAPH_NORM_GCN;
}

int rt_config_check(const struct rt_config *c) {
  if (!c->graph || !c->graph[0])
    return cg_err_set(CG_ERR_ARG, "--graph: empty graph name (give NAME, a .cgr FILE or synth:PRESET)");
  if ((unsigned)c->reorder > GRAPH_REORDER_AUTO)
    return cg_err_set(CG_ERR_ARG, "--reorder %d: expected none, rcm, cluster, metis or auto", (int)c->reorder);
  if (c->heads < 1 || c->heads > 1024)
    return cg_err_set(CG_ERR_ARG, "--heads %d: expected an integer in [1, 1024]", c->heads);
  if (c->out_heads < 1 || c->out_heads > 1024)
    return cg_err_set(CG_ERR_ARG, "--out-heads %d: expected an integer in [1, 1024]", c->out_heads);
  if (!(c->attn_dropout < 1.0f)) /* negative: unset, follows --dropout */
    return cg_err_set(CG_ERR_ARG, "--attn-dropout %g: expected a probability in [0, 1)",
                      (double)c->attn_dropout);
  if (c->model == RT_MODEL_GAT && c->layernorm)
    return cg_err_set(CG_ERR_ARG, "--layernorm: not available with --model gat (ELU follows each "
                      "hidden GAT layer, as in the paper)");
  if (c->model != RT_MODEL_GCN && c->model != RT_MODEL_SAGE && c->model != RT_MODEL_GAT)
    return cg_err_set(CG_ERR_ARG, "--model: expected gcn, sage or gat");
  if (c->layers < 1 || c->layers > 64)
    return cg_err_set(CG_ERR_ARG, "--layers %d: expected an integer in [1, 64]", c->layers);
  if (c->hidden < 1 || c->hidden > (1 << 20))
    return cg_err_set(CG_ERR_ARG, "--hidden %lld: expected an integer in [1, 1048576]",
                      (long long)c->hidden);
  if (!(c->dropout >= 0.0f && c->dropout < 1.0f))
    return cg_err_set(CG_ERR_ARG, "--dropout %g: expected a probability in [0, 1)", (double)c->dropout);
  if (!(c->input_dropout < 1.0f)) /* negative: unset, follows --dropout */
    return cg_err_set(CG_ERR_ARG, "--input-dropout %g: expected a probability in [0, 1)",
                      (double)c->input_dropout);
  if (!(c->lr > 0.0f) || !isfinite(c->lr))
    return cg_err_set(CG_ERR_ARG, "--lr %g: expected a finite number > 0", (double)c->lr);
  if (!(c->weight_decay >= 0.0f) || !isfinite(c->weight_decay))
    return cg_err_set(CG_ERR_ARG, "--weight-decay %g: expected a finite number >= 0",
                      (double)c->weight_decay);
  if (!(c->beta1 >= 0.0f && c->beta1 < 1.0f) || !(c->beta2 >= 0.0f && c->beta2 < 1.0f) ||
      !(c->adam_eps > 0.0f))
    return cg_err_set(CG_ERR_ARG, "Adam betas must be in [0, 1) and eps > 0");
  if (c->optimizer != RT_OPT_ADAM && c->optimizer != RT_OPT_ADAMW && c->optimizer != RT_OPT_SGD)
    return cg_err_set(CG_ERR_ARG, "--optimizer: expected adam, adamw or sgd");
  if (!(c->momentum >= 0.0f && c->momentum < 1.0f))
    return cg_err_set(CG_ERR_ARG, "--momentum %g: expected a number in [0, 1)", (double)c->momentum);
  if (c->momentum > 0.0f && c->optimizer != RT_OPT_SGD)
    return cg_err_set(CG_ERR_ARG, "--momentum applies to --optimizer sgd only (Adam's momentum is its beta1, %g)",
                      (double)c->beta1);
  if (c->lr_schedule != RT_LR_NONE && c->lr_schedule != RT_LR_STEP && c->lr_schedule != RT_LR_COSINE)
    return cg_err_set(CG_ERR_ARG, "--lr-schedule: expected none, step or cosine");
  if (c->lr_schedule == RT_LR_STEP && c->lr_step_size < 1)
    return cg_err_set(CG_ERR_ARG, "--lr-schedule step needs --lr-step-size N (epochs between decays, >= 1)");
  if (c->lr_step_size < 0)
    return cg_err_set(CG_ERR_ARG, "--lr-step-size %d: expected an integer >= 1", c->lr_step_size);
  if (!(c->lr_gamma > 0.0f && c->lr_gamma <= 1.0f))
    return cg_err_set(CG_ERR_ARG, "--lr-gamma %g: expected a factor in (0, 1]", (double)c->lr_gamma);
  if (c->lr_epochs < 0 || c->lr_epochs > RT_MAX_EPOCHS)
    return cg_err_set(CG_ERR_ARG, "--lr-epochs %d: expected an integer in [0, %d] (0 = --epochs)", c->lr_epochs,
                      RT_MAX_EPOCHS);
  {
    const int span = c->lr_epochs > 0 ? c->lr_epochs : c->epochs;
    if (c->lr_warmup < 0 || (c->lr_warmup > 0 && c->lr_warmup >= span))
      return cg_err_set(CG_ERR_ARG, "--lr-warmup %d: expected an integer in [0, %d) (fewer steps than the "
                        "schedule spans: --lr-epochs, else --epochs)", c->lr_warmup, span);
  }
  if (c->early_stop < 0 || c->early_stop > RT_MAX_EARLY_STOP)
    return cg_err_set(CG_ERR_ARG, "--early-stop %d: expected an integer in [0, %d] (evaluations; 0 = off)",
                      c->early_stop, RT_MAX_EARLY_STOP);
  if (c->early_stop_rule != RT_ES_PATIENCE && c->early_stop_rule != RT_ES_WINDOW && c->early_stop_rule != RT_ES_GAT)
    return cg_err_set(CG_ERR_ARG, "--early-stop-rule: expected patience, window or gat");
  if (c->log_every < 0)
    return cg_err_set(CG_ERR_ARG, "--log-every %d: expected an integer >= 0 (0 = about 20 lines a run)",
                      c->log_every);
  if (c->wd_scope != RT_WD_ALL && c->wd_scope != RT_WD_FIRST)
    return cg_err_set(CG_ERR_ARG, "--wd-scope: expected all or first");
  /* (per-epoch losses and times are kept: 40 bytes an epoch, allocated up front) */
  if (c->epochs < 1 || c->epochs > RT_MAX_EPOCHS)
    return cg_err_set(CG_ERR_ARG, "--epochs %d: expected an integer in [1, %d]", c->epochs,
                      RT_MAX_EPOCHS);
  if (c->eval_every < 1)
    return cg_err_set(CG_ERR_ARG, "--eval-every %d: expected an integer >= 1", c->eval_every);
  if (c->threads < 0 || c->threads > 4096)
    return cg_err_set(CG_ERR_ARG, "--threads %d: expected an integer in [0, 4096] (0 = the host's cores / its ranks)",
                      c->threads);
  if (c->checkpoint_every < 0)
    return cg_err_set(CG_ERR_ARG, "--checkpoint-every %d: expected an integer >= 0 (0 = after the last "
                      "epoch only)", c->checkpoint_every);
  if (c->checkpoint_every > 0 && !c->checkpoint_path)
    return cg_err_set(CG_ERR_ARG, "--checkpoint-every needs --checkpoint FILE (where to write)");
  if (!(c->stall_timeout_s >= 0.0 && c->stall_timeout_s <= 1e7))
    return cg_err_set(CG_ERR_ARG, "--stall-timeout %g: expected seconds in [0, 1e7] (0 = off)", c->stall_timeout_s);
  if (c->sparse_features != RT_SPARSE_AUTO && c->sparse_features != RT_SPARSE_ON &&
      c->sparse_features != RT_SPARSE_OFF)
    return cg_err_set(CG_ERR_ARG, "--sparse-features: expected auto, on or off");
  if (c->layer0_halo != RT_L0_AUTO && c->layer0_halo != RT_L0_LOCAL && c->layer0_halo != RT_L0_EXCHANGE)
    return cg_err_set(CG_ERR_ARG, "--layer0-halo: expected auto, local or exchange");
  if (c->layer0_halo == RT_L0_EXCHANGE && c->model == RT_MODEL_GAT)
    return cg_err_set(CG_ERR_ARG, "--layer0-halo exchange is not built for GAT (its attention reads the halo rows of "
                      "X·W on every rank): use auto or local");
  if (c->overlap != 0 && c->overlap != 1)
    return cg_err_set(CG_ERR_ARG, "--overlap: expected on or off");
  if (c->halo_bits != 32 && c->halo_bits != 16 && c->halo_bits != 8 && c->halo_bits != 4)
    return cg_err_set(CG_ERR_ARG, "--halo-bits %d: expected 32 (exact), 16, 8 or 4", c->halo_bits);
  if (!c->device || (strcmp(c->device, "auto") && strcmp(c->device, "cpu") && strcmp(c->device, "cuda")))
    return cg_err_set(CG_ERR_ARG, "--device %s: expected auto, cpu or cuda", c->device ? c->device : "(null)");
  return CG_OK;
}
