/* runtime/runtime_internal.h — what the runtime's sources share. Not part of the
 * public API (runtime/runtime.h, runtime/dist.h). */
#ifndef CAPGNN_RUNTIME_INTERNAL_H
#define CAPGNN_RUNTIME_INTERNAL_H

#include <stdint.h>

#include "core/exchange.h"
#include "runtime/runtime.h"

/* ---- test-only fault injection (fault.c; partition-parallel builds) ----------- */

/* What CAPGNN_TEST_FAIL_RANK / CAPGNN_TEST_FAIL_AT ask of rank `rank` (runtime/dist.h):
 * SETUP: rt_dist_create fails as if the graph could not be opened; TRAIN / KILL: the
 * 3rd halo exchange returns an error / SIGKILLs the rank. */
enum rt_fault { RT_FAULT_NONE = 0, RT_FAULT_SETUP, RT_FAULT_TRAIN, RT_FAULT_KILL };
enum rt_fault rt_fault_from_env(int rank);
/* For TRAIN and KILL: replace *ex by an exchange that forwards to it (and owns it)
 * until the 3rd halo exchange, where it fails as `mode` says. Other modes: nothing. */
int rt_fault_exchange_wrap(struct cg_exchange **ex, int rank, enum rt_fault mode);

#endif
