/* core/sgd.h — one SGD step (torch.optim.SGD, momentum, no dampening, no Nesterov),
 * written once for the CPU backend and the CUDA kernel (cuda/elementwise.cu), as
 * core/adam.h is for Adam.
 *
 *   g += wd w                         (L2 in the gradient, as torch.optim.SGD and as
 *                                      capgnn's Adam apply weight decay)
 *   buf = momentum buf + g            (momentum > 0; buf starts at 0, so the first step
 *                                      sets buf = g, as torch's clone does)
 *   w -= lr buf                       (momentum 0: w -= lr g, buf untouched)
 *
 * Bits: as core/adam.h (the CPU result is fixed by this source and the compiler's
 * flags; nvcc may contract w - lr*buf into a fused multiply-add). */
#ifndef CAPGNN_CORE_SGD_H
#define CAPGNN_CORE_SGD_H

#include "core/hostdev.h"
#include "core/ops.h"

/* One element: *w and the momentum buffer *buf updated in place from gradient g. */
CG_HD void cg_sgd_update(struct cg_sgd_params p, float *w, float g, float *buf) {
  const float gi = g + p.weight_decay * *w;
  if (p.momentum != 0.0f) {
    const float b = p.momentum * *buf + gi;
    *buf = b;
    *w = *w - p.lr * b;
  } else {
    *w = *w - p.lr * gi;
  }
}

#endif
