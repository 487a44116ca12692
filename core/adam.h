/* core/adam.h — one Adam/AdamW step, written once for the CPU backend and the CUDA
 * kernel (cuda/elementwise.cu), as core/philox.h is for dropout.
 *
 * torch.optim.Adam / AdamW (non-amsgrad). The bias corrections and the step size
 * are computed once per step on the host, in double as torch computes them, and
 * rounded to float (cg_adam_coefs_make); the per-element update is float
 * (cg_adam_update):
 *   Adam:  g += wd w            AdamW:  w *= 1 - lr wd
 *   m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;
 *   w -= (lr / (1-b1^t)) * m / (sqrt(v) / sqrt(1-b2^t) + eps)
 * which is lr * mhat / (sqrt(vhat) + eps).
 *
 * Bits: the CPU backend's result is fixed by this source and the C compiler's
 * flags (the same for any thread count; the x86-64 baseline has no FMA, so no
 * contraction). nvcc contracts products and sums into fused multiply-adds, so
 * the GPU's result may differ in the last bits: the two backends are compared
 * with a tolerance, each with itself exactly. */
#ifndef CAPGNN_CORE_ADAM_H
#define CAPGNN_CORE_ADAM_H

#include <math.h>
#include <stdint.h>

#include "core/hostdev.h"
#include "core/ops.h"

/* What one step needs besides the four arrays. Plain data: passed by value to the
 * CUDA kernel. */
struct cg_adam_coefs {
  float step;     /* lr / (1 - beta1^t) */
  float bc2_sqrt; /* sqrt(1 - beta2^t) */
  float beta1, beta2, eps, weight_decay;
  float shrink;   /* 1 - lr * weight_decay (AdamW) */
  int decoupled;  /* 0: Adam with L2 in the gradient; 1: AdamW */
};

/* The coefficients of step t >= 1 (host only; the caller checks t). */
static inline struct cg_adam_coefs cg_adam_coefs_make(const struct cg_adam_params *p, int64_t t) {
  const double bc1 = 1.0 - pow((double)p->beta1, (double)t);
  const double bc2 = 1.0 - pow((double)p->beta2, (double)t);
  struct cg_adam_coefs c;
  c.step = (float)((double)p->lr / bc1);
  c.bc2_sqrt = (float)sqrt(bc2);
  c.beta1 = p->beta1;
  c.beta2 = p->beta2;
  c.eps = p->eps;
  c.weight_decay = p->weight_decay;
  c.shrink = (float)(1.0 - (double)p->lr * (double)p->weight_decay);
  c.decoupled = p->decoupled;
  return c;
}

/* One element: *w, *m, *v updated in place from the gradient g. */
CG_HD void cg_adam_update(struct cg_adam_coefs c, float *w, float g, float *m, float *v) {
  float wi = *w, gi = g;
  if (c.decoupled)
    wi *= c.shrink; /* AdamW: w *= 1 - lr*wd */
  else
    gi += c.weight_decay * wi; /* Adam: L2 term in the gradient */
  const float mi = c.beta1 * *m + (1.0f - c.beta1) * gi;
  const float vi = c.beta2 * *v + (1.0f - c.beta2) * gi * gi;
  *m = mi;
  *v = vi;
  const float denom = sqrtf(vi) / c.bc2_sqrt + c.eps;
  *w = wi - c.step * (mi / denom);
}

#endif
