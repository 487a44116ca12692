/* mpi/tests/mpi_test.h — checks for tests that run under mpiexec.
 *
 * A failed check prints "[rank R] FAIL file:line: message" and aborts the whole
 * job (comm_abort), so one rank's failure can never leave the others waiting in
 * a collective: the test ends at once with a non-zero exit code. */
#ifndef CAPGNN_MPI_TESTS_MPI_TEST_H
#define CAPGNN_MPI_TESTS_MPI_TEST_H

#include <stdint.h>
#include <stdio.h>

#include "core/status.h"
#include "mpi/comm.h"

extern struct comm *mt_comm; /* set by the test's main after comm_init */

#define MT_CHECK(cond, ...)                                                                      \
  do {                                                                                           \
    if (!(cond)) {                                                                               \
      fprintf(stderr, "[rank %d] FAIL %s:%d: %s: ", mt_comm ? comm_rank(mt_comm) : -1, __FILE__, \
              __LINE__, #cond);                                                                  \
      fprintf(stderr, __VA_ARGS__);                                                              \
      fprintf(stderr, "\n");                                                                     \
      comm_abort(mt_comm, 1);                                                                    \
    }                                                                                            \
  } while (0)

/* A call that must succeed; prints the error message otherwise. */
#define MT_OK(expr)                                                                                \
  do {                                                                                             \
    int mt_st_ = (expr);                                                                           \
    if (mt_st_ < 0) {                                                                              \
      fprintf(stderr, "[rank %d] FAIL %s:%d: %s returned %s: %s\n",                                \
              mt_comm ? comm_rank(mt_comm) : -1, __FILE__, __LINE__, #expr, cg_status_str(mt_st_), \
              cg_err_msg());                                                                       \
      comm_abort(mt_comm, 1);                                                                      \
    }                                                                                              \
  } while (0)

/* splitmix64: the same sequence on every rank for the same seed. */
struct mt_rng {
  uint64_t s;
};
static inline uint64_t mt_next(struct mt_rng *r) {
  uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static inline int64_t mt_int(struct mt_rng *r, int64_t n) {
  return (int64_t)(mt_next(r) % (uint64_t)n);
}

#endif
