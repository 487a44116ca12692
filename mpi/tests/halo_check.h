/* mpi/tests/halo_check.h — a halo exchange and an all-reduce workout, checked value
 * by value, for comparing backends and communication paths bit for bit.
 *
 * Halo values are random floats using the whole 24-bit mantissa, a function of
 * (salt, global id, column), so every rank knows what every row must hold. Forward:
 * each halo row must equal its owner's row. Backward: each inner row must equal its
 * own value plus the halo values of the ranks holding it, added one rank at a time in
 * ascending rank order in float arithmetic — the order comm_halo_end promises
 * backward — so the expected result is exact and the same for every backend and path
 * (a different order or a lost block shows up as a wrong bit). Rounds run non-blocking
 * (a barrier between begin and end), back to back on two matrices with no host
 * synchronisation in between, which catches a staged path that reuses a host buffer
 * before its asynchronous copy is done, and overlapped (progress polled until done
 * between begin and end; backward with the inner rows doubled by a backend op in
 * between, which end's adds must follow: on NCCL the transfer runs on its own stream). Byte counters are checked too (comm_stats and
 * the object's own, comm_halo_bytes_sent).
 *
 * Every check that fails aborts the job (mpi_test.h). */
#ifndef CAPGNN_MPI_TESTS_HALO_CHECK_H
#define CAPGNN_MPI_TESTS_HALO_CHECK_H

#include <stdint.h>

#include "core/ops.h"
#include "halo_fixture.h"
#include "mpi/comm.h" /* and core/exchange.h, the seam */

struct hc_case {
  struct comm *c;
  struct fx_graph g;
  struct fx_local l;
  unsigned char *marks; /* marks[q * n + v]: v is a halo vertex of rank q */
};

/* The fixture graph of `o` over all ranks of c and this rank's plan (k->l.plan). */
void hc_case_make(struct hc_case *k, struct comm *c, const struct fx_opts *o);
void hc_case_free(struct hc_case *k);

/* The workout on h (created from k->l.plan over be) with rows of `cols` values.
 * Returns an FNV-1a hash of every value read back. */
uint64_t hc_halo_workout(const struct hc_case *k, struct cg_backend *be, struct comm_halo *h,
                         int64_t cols, uint64_t salt);

/* The same workout through the seam: ex (comm_exchange_create over k->l.plan and be)
 * must give exactly what comm_halo gives, so with the same salt the hash equals
 * hc_halo_workout's, whatever tags the calls carry (they vary with the direction
 * and the width; the plain exchange ignores them). Also checks the seam's counters
 * (halo bytes = forward + backward bytes sent, no all-reduce bytes, no cache). */
uint64_t hc_exchange_workout(const struct hc_case *k, struct cg_backend *be, struct cg_exchange *ex,
                             int64_t cols, uint64_t salt);

/* Two all-reduces of n integer-valued floats (exact in any summation order) through
 * g (created over be for n values), checked after each; returns a hash of the result. */
uint64_t hc_grad_workout(struct comm *c, struct cg_backend *be, struct comm_grad *g, int64_t n);

#endif
