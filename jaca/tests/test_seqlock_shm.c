/* jaca/tests/test_seqlock_shm.c — seqlock rows in a node segment (comm_shm) with the
 * writer and the readers in different processes, as the node tier uses them.
 *
 * On every node (real or emulated), local rank 0 rewrites ROWS rows of COLS values with
 * payloads that encode (row, generation, column) in every word (seqlock_check.h), until
 * every other rank of the node has accepted its share of N copies (argument 1, default
 * 10^6 per node). Readers copy random rows with jaca_row_try_read; a single accepted
 * copy that mixes two writes fails the job. Readers also take some copies without the
 * sequence check and count how many of those mixed two writes, as evidence that the
 * processes really ran at the same time (required with the argument "strict"). A node
 * with one rank has no reader: it only checks that its segment works. */
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "jaca/seqlock_internal.h"
#include "mpi/comm.h"
#include "mpi_test.h"
#include "seqlock_check.h"

#define ROWS 16
#define COLS 125

/* the job's world (mpi/tests/mpi_test.h: MT_CHECK aborts the whole job) */
struct comm *mt_comm;
#define g_comm mt_comm
#define CHECK MT_CHECK

int main(int argc, char **argv) {
  if (comm_init(&argc, &argv, &g_comm) != CG_OK) {
    fprintf(stderr, "comm_init failed\n");
    return 1;
  }
  struct comm *c = g_comm;
  const long long per_node = argc > 1 ? atoll(argv[1]) : 1000000;
  const int strict = argc > 2 && !strcmp(argv[2], "strict");
  const int L = comm_local_size(c), lr = comm_local_rank(c);
  const size_t stride = jaca_row_stride(COLS);
  struct comm_shm *s = NULL;
  CHECK(comm_shm_create(c, lr == 0 ? 64 + 64 + ROWS * stride : 0, &s) == CG_OK, "comm_shm_create: %s", cg_err_msg());
  char *base = comm_shm_node(s, NULL);
  char *aligned = (char *)(((uintptr_t)base + 63) / 64 * 64);
  _Atomic int *done = (_Atomic int *)aligned;
  char *rows = aligned + 64;
  const int readers = L - 1;
  const long long share = readers > 0 ? (per_node + readers - 1) / readers : 0;
  long long acc = 0, torn = 0, bad = 0, ut = 0, un = 0, writes = 0;
  CHECK(comm_node_barrier(c) == CG_OK, "barrier");
  if (lr == 0) {
    float v[COLS];
    struct jaca_row_meta m;
    for (uint32_t gen = 1; readers > 0 && atomic_load(done) < readers; gen++)
      for (int64_t r = 0; r < ROWS; r++) {
        sq_fill(v, r, gen, COLS, &m);
        jaca_row_publish(rows + (size_t)r * stride, v, COLS, &m);
        writes++;
      }
  } else {
    uint64_t st = (uint64_t)comm_rank(c) * 0x9E3779B97F4A7C15ull + 11;
    float v[COLS];
    struct jaca_row_meta m;
    while (acc < share) {
      st ^= st << 13;
      st ^= st >> 7;
      st ^= st << 17;
      const int64_t r = (int64_t)(st % ROWS);
      const char *row = rows + (size_t)r * stride;
      if ((st >> 32) % 16 == 0) {
        _Atomic uint32_t *w = (_Atomic uint32_t *)row;
        m.gen = atomic_load_explicit(&w[1], memory_order_relaxed);
        m.epoch = atomic_load_explicit(&w[2], memory_order_relaxed);
        m.gid = atomic_load_explicit(&w[3], memory_order_relaxed);
        for (int64_t j = 0; j < COLS; j++) {
          uint32_t b = atomic_load_explicit(&w[JACA_ROW_HEADER_WORDS + j], memory_order_relaxed);
          memcpy(&v[j], &b, sizeof b);
        }
        un++;
        if (!sq_consistent(v, r, COLS, &m)) ut++;
        continue;
      }
      if (!jaca_row_try_read(row, v, COLS, &m)) {
        torn++;
        if ((torn & 255) == 0) sched_yield();
        continue;
      }
      if (!sq_consistent(v, r, COLS, &m) && bad++ == 0)
        fprintf(stderr, "[rank %d] an accepted copy of row %lld is torn (gen %u)\n", comm_rank(c), (long long)r, m.gen);
      acc++;
    }
    atomic_fetch_add(done, 1);
  }
  int64_t t[6] = {acc, torn, bad, ut, un, writes};
  CHECK(comm_allreduce_i64(c, t, 6, COMM_SUM) == CG_OK, "allreduce");
  if (comm_rank(c) == 0)
    printf("seqlock over node segments: %d ranks on %d nodes, %lld writes; %lld copies accepted, %lld torn copies "
           "detected and retried; without the check %lld of %lld copies were torn\n",
           comm_size(c), comm_nnodes(c), (long long)t[5], (long long)t[0], (long long)t[1], (long long)t[3],
           (long long)t[4]);
  CHECK(t[2] == 0, "%lld torn copies were accepted", (long long)t[2]);
  if (lr > 0) CHECK(acc >= share, "only %lld copies accepted", acc);
  if (strict && t[0] > 0) CHECK(t[1] + t[3] > 0, "the readers never met a write in progress: the test did not race");
  CHECK(comm_node_barrier(c) == CG_OK, "barrier");
  comm_shm_destroy(&s);
  if (comm_rank(c) == 0) printf("ok\n");
  comm_finalize(&g_comm);
  return 0;
}
