/* core/ops_profile.h — a profiling backend that wraps another one.
 *
 * cg_backend_profile_wrap() returns a backend whose every op forwards to `inner`
 * and, when timing is on, synchronises `inner` before and after the op so the
 * measured wall time belongs to that op alone (this serialises the device: use it
 * for breakdowns, not for the headline epoch time). SpMM also counts the bytes of
 * the rows it gathers (nnz x f x 4) so benchmarks can report effective bandwidth.
 * Destroying the wrapper does not destroy `inner`. */
#ifndef CAPGNN_CORE_OPS_PROFILE_H
#define CAPGNN_CORE_OPS_PROFILE_H

#include "ops.h"

#ifdef __cplusplus
extern "C" {
#endif

enum cg_prof_op {
  CG_PROF_GEMM, CG_PROF_SPMM, CG_PROF_ELEMWISE, CG_PROF_DROPOUT, CG_PROF_LAYERNORM,
  CG_PROF_LOSS, CG_PROF_ADAM, CG_PROF_HALO_ROWS, CG_PROF_MEMORY,
  CG_PROF_ATTENTION, /* the graph attention ops (edge scores, softmax, attention dropout, per-edge SpMM) */
  CG_PROF_NOPS
};

struct cg_prof_counters {
  double seconds[CG_PROF_NOPS];
  int64_t calls[CG_PROF_NOPS];
  double spmm_gathered_bytes; /* sum over SpMM calls of nnz * f * sizeof(float) */
  double spmm_flops;          /* 2 * nnz * f per call */
  double gemm_flops;          /* 2 * m * n * k per call */
};

int cg_backend_profile_wrap(struct cg_backend *inner, struct cg_backend **out);
/* Timing on (1) or off (0; ops forward with no synchronisation). Default on. */
void cg_profile_set_timing(struct cg_backend *prof, int on);
void cg_profile_get(const struct cg_backend *prof, struct cg_prof_counters *c);
void cg_profile_reset(struct cg_backend *prof);
const char *cg_prof_op_name(enum cg_prof_op op);

#ifdef __cplusplus
}
#endif
#endif
