/* runtime/optimizer.c — the optimizer's update after each step's gradient (Adam,
 * AdamW, SGD: core/adam.h, core/sgd.h through the backend) at the learning rate of
 * the step's schedule (runtime.h, rt_lr_at).
 *
 * Design notes (the why):
 * - A pure function of the step count and the settings: a checkpoint that keeps the
 *   step count and the settings (runtime/checkpoint.c) resumes the schedule exactly,
 *   with no scheduler state of its own to save.
 * - Steps, not epochs: capgnn takes one optimizer step per epoch, so they are the same
 *   numbers (torch's schedulers, stepped once an epoch, see the same sequence).
 * - Double, then float once, as core/adam.h computes Adam's bias corrections. */
#include <math.h>

#include "runtime/runtime_internal.h"

float rt_lr_at(const struct rt_config *c, int64_t t) {
  const double lr = (double)c->lr;
  const int64_t W = c->lr_warmup;
  if (t < 1) t = 1;
  if (W > 0 && t <= W) return (float)(lr * (double)t / (double)W);
  const int64_t u = t - W - 1;
  switch (c->lr_schedule) {
    case RT_LR_STEP: {
      const int64_t k = c->lr_step_size > 0 ? u / c->lr_step_size : 0;
      return (float)(lr * pow((double)c->lr_gamma, (double)k));
    }
    case RT_LR_COSINE: {
      const int64_t span = (c->lr_epochs > 0 ? c->lr_epochs : c->epochs) - W;
      if (span <= 0) return (float)lr;
      const double x = (double)(u < span ? u : span) / (double)span;
      return (float)(lr * 0.5 * (1.0 + cos(3.14159265358979323846 * x)));
    }
    case RT_LR_NONE:
    default:
      return (float)lr;
  }
}

void rt_model_optimizer_step(struct rt_model *m) {
  const float lr = rt_lr_at(&m->cfg, m->t_step);
  /* One call per tensor: weight decay differs between tensors (weights vs biases and
   * LayerNorm; first layer only with RT_WD_FIRST). */
  if (m->cfg.optimizer == RT_OPT_SGD) {
    struct cg_sgd_params sp;
    sp.lr = lr;
    sp.momentum = m->cfg.momentum;
    for (int i = 0; i < m->ntensors; i++) {
      const struct rt_tensor_info *t = &m->tensors[i];
      sp.weight_decay = t->decay ? m->cfg.weight_decay : 0.0f;
      m->be->sgd(m->be, m->p + t->offset, m->g + t->offset, m->m1 + t->offset, t->count, &sp);
    }
    return;
  }
  struct cg_adam_params ap;
  ap.lr = lr;
  ap.beta1 = m->cfg.beta1;
  ap.beta2 = m->cfg.beta2;
  ap.eps = m->cfg.adam_eps;
  ap.decoupled = m->cfg.optimizer == RT_OPT_ADAMW;
  for (int i = 0; i < m->ntensors; i++) {
    const struct rt_tensor_info *t = &m->tensors[i];
    ap.weight_decay = t->decay ? m->cfg.weight_decay : 0.0f;
    m->be->adam(m->be, m->p + t->offset, m->g + t->offset, m->m1 + t->offset, m->m2 + t->offset,
                t->count, &ap, m->t_step);
  }
}
