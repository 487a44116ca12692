/* runtime/fault.c — test-only fault injection for partition-parallel runs
 * (CAPGNN_TEST_FAIL_RANK / CAPGNN_TEST_FAIL_AT, runtime/dist.h).
 *
 * Design notes (the why):
 * - The "train" and "kill" faults are an exchange that wraps the real one and fails
 *   (or SIGKILLs the rank) at the 2nd halo exchange of training (tag epoch > 0: the
 *   first step's backward; set-up fetches the halo features in one or several
 *   exchanges of epoch 0, and evaluations use epoch 0 too). As a decorator behind the
 *   seam of core/exchange.h it is installed on the named rank only, and neither the
 *   model nor the MPI exchange carries a test branch.
 * - The fault is raised at begin, before the wrapped exchange starts, so that the
 *   failing rank never leaves a half-started exchange behind; its peers are then
 *   left waiting in theirs, which is what the fault tests want to see ended.
 * - The "skip" fault leaves one forward exchange out on one rank and lets the rank go
 *   on, as a schedule broken by a bug would: its peers wait for its rows, and how they
 *   end (the halo cache's read timeout, the stall watchdog) is what its test checks.
 * - The messages are those tests/run_dist_fault.sh looks for. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "runtime/runtime_internal.h"

enum rt_fault rt_fault_from_env(int rank) {
  const char *r = getenv("CAPGNN_TEST_FAIL_RANK"); /* a rank, or a comma list of them */
  if (!r || !r[0]) return RT_FAULT_NONE;
  int named = 0;
  for (const char *q = r; *q && !named;) {
    char *end = NULL;
    errno = 0;
    const long v = strtol(q, &end, 10);
    if (errno || end == q || (*end != '\0' && *end != ',')) return RT_FAULT_NONE;
    named = v == rank;
    q = *end ? end + 1 : end;
  }
  if (!named) return RT_FAULT_NONE;
  const char *at = getenv("CAPGNN_TEST_FAIL_AT");
  if (!at || !at[0] || strcmp(at, "setup") == 0) return RT_FAULT_SETUP;
  if (strcmp(at, "train") == 0) return RT_FAULT_TRAIN;
  if (strcmp(at, "kill") == 0) return RT_FAULT_KILL;
  if (strcmp(at, "skip") == 0) return RT_FAULT_SKIP;
  return RT_FAULT_SETUP;
}

struct fault_exchange {
  struct cg_exchange ex; /* first: the seam's table */
  struct cg_exchange *inner;
  enum rt_fault mode;
  int rank;
  int64_t halo_calls; /* training exchanges begun (tag epoch > 0) */
  int skipped, skipping; /* SKIP: done once; the exchange left out is "in flight" */
};

static struct fault_exchange *impl(struct cg_exchange *ex) { return (struct fault_exchange *)ex; }

/* The call a real failure at begin names (mpi/exchange.c), so that an injected one
 * reads the same. */
static const char *halo_call(enum cg_halo_dir dir) {
  return dir == CG_HALO_FORWARD ? "comm_halo_begin(forward)" : "comm_halo_begin(backward)";
}

static int fault_halo_begin(struct cg_exchange *ex, enum cg_halo_dir dir, struct cg_halo_tag tag,
                            float *x, int64_t cols) {
  struct fault_exchange *f = impl(ex);
  if (f->mode == RT_FAULT_SKIP) {
    if (!f->skipped && dir == CG_HALO_FORWARD && tag.epoch > 0 && tag.layer >= 1) {
      fprintf(stderr, "rank %d: leaving out the forward exchange of layer %d, epoch %u (CAPGNN_TEST_FAIL_AT=skip)\n",
              f->rank, tag.layer, tag.epoch);
      f->skipped = f->skipping = 1;
      return CG_OK;
    }
    return f->inner->halo_begin(f->inner, dir, tag, x, cols);
  }
  if (tag.epoch > 0 && ++f->halo_calls >= 2) {
    if (f->mode == RT_FAULT_KILL) {
      fprintf(stderr, "rank %d: killing myself in %s (CAPGNN_TEST_FAIL_AT=kill)\n", f->rank, halo_call(dir));
      fflush(stderr);
      raise(SIGKILL);
    }
    return cg_err_set(CG_ERR_MPI, "%s (%lld columns) failed: simulated failure (CAPGNN_TEST_FAIL_AT=train)",
                      halo_call(dir), (long long)cols);
  }
  return f->inner->halo_begin(f->inner, dir, tag, x, cols);
}

static int fault_halo_end(struct cg_exchange *ex, enum cg_halo_dir dir, struct cg_halo_tag tag,
                          float *x, int64_t cols) {
  struct fault_exchange *f = impl(ex);
  if (f->skipping) {
    f->skipping = 0;
    return CG_OK;
  }
  return f->inner->halo_end(f->inner, dir, tag, x, cols);
}

static int fault_halo_progress(struct cg_exchange *ex) {
  if (impl(ex)->skipping) return 1;
  return cg_exchange_halo_progress(impl(ex)->inner);
}

static int fault_allreduce_grads(struct cg_exchange *ex, float *buf, int64_t n) {
  struct fault_exchange *f = impl(ex);
  return f->inner->allreduce_grads(f->inner, buf, n);
}

static int fault_allreduce_host(struct cg_exchange *ex, double *v, int n, enum cg_reduce op) {
  struct fault_exchange *f = impl(ex);
  return f->inner->allreduce_host(f->inner, v, n, op);
}

static void fault_counters(const struct cg_exchange *ex, struct cg_exchange_counters *out) {
  const struct fault_exchange *f = (const struct fault_exchange *)ex;
  f->inner->counters(f->inner, out);
}

static void fault_destroy(struct cg_exchange *ex) {
  struct fault_exchange *f = impl(ex);
  cg_exchange_destroy(&f->inner);
  cg_free(f);
}

int rt_fault_exchange_wrap(struct cg_exchange **ex, int rank, enum rt_fault mode) {
  if (mode != RT_FAULT_TRAIN && mode != RT_FAULT_KILL && mode != RT_FAULT_SKIP) return CG_OK;
  struct fault_exchange *f = cg_calloc(1, sizeof *f, "fault-injecting exchange");
  if (!f) return CG_ERR_NOMEM;
  f->inner = *ex;
  f->mode = mode;
  f->rank = rank;
  f->ex.halo_begin = fault_halo_begin;
  f->ex.halo_end = fault_halo_end;
  f->ex.halo_progress = fault_halo_progress;
  f->ex.allreduce_grads = fault_allreduce_grads;
  f->ex.allreduce_host = fault_allreduce_host;
  f->ex.counters = fault_counters;
  f->ex.destroy = fault_destroy;
  *ex = &f->ex;
  return CG_OK;
}
