/* core/cpu_attn_internal.h — private: the CPU backend's graph attention ops
 * (core/cpu_attn.c) and the sparse-feature ops on the same edge structure
 * (csr_mm, csr_mm_t, csr_dropout), installed into its op table by cg_backend_cpu_create. */
#ifndef CAPGNN_CORE_CPU_ATTN_INTERNAL_H
#define CAPGNN_CORE_CPU_ATTN_INTERNAL_H

#include "core/ops.h"

void cpu_attn_install(struct cg_backend *be);

#endif
