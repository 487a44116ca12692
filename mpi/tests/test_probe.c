/* mpi/tests/test_probe.c — the measurement helpers of mpi/probe.c (comm.h):
 * comm_pingpong between every pair of ranks on host memory (the payload goes there
 * and back: both ranks' rbuf must hold the initiator's sbuf), its argument checks and
 * refusals (device paths without a device), comm_host_barrier, comm_gather_text with
 * texts of different lengths (empty included) and comm_lib_info. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/comm.h"
#include "mpi_test.h"

struct comm *mt_comm;

static void fill(unsigned char *b, size_t n, int seed) {
  for (size_t i = 0; i < n; i++) b[i] = (unsigned char)((i * 131u + (size_t)seed * 7u) & 0xff);
}

int main(int argc, char **argv) {
  MT_OK(comm_init(&argc, &argv, &mt_comm));
  struct comm *c = mt_comm;
  const int rank = comm_rank(c), size = comm_size(c);

  /* every pair, one at a time, the others waiting at the barrier */
  const size_t sizes[] = {1, 4096, 1 << 20};
  for (int i = 0; i < size; i++)
    for (int j = i + 1; j < size; j++) {
      for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        if (rank == i || rank == j) {
          size_t n = sizes[s];
          unsigned char *sb = malloc(n), *rb = malloc(n), *want = malloc(n);
          MT_CHECK(sb && rb && want, "malloc");
          fill(sb, n, rank + 1); /* differs per rank: the echo must be the initiator's */
          fill(want, n, i + 1);
          memset(rb, 0xee, n);
          double t[3] = {-1, -1, -1};
          MT_OK(comm_pingpong(c, NULL, COMM_PATH_HOST, rank == i ? j : i, sb, rb, n, 3, t));
          MT_CHECK(memcmp(rb, want, n) == 0, "pair %d-%d, %zu bytes: rbuf is not the initiator's sbuf", i, j, n);
          for (int r = 0; r < 3; r++) MT_CHECK(t[r] > 0.0, "round trip %d took %g s", r, t[r]);
          free(sb);
          free(rb);
          free(want);
        }
        MT_OK(comm_barrier(c));
      }
    }

  /* refusals, local */
  unsigned char b1[8] = {0}, b2[8] = {0};
  double t1[1];
  MT_CHECK(comm_pingpong(c, NULL, COMM_PATH_HOST, rank, b1, b2, 8, 1, t1) == CG_ERR_ARG, "self as peer");
  MT_CHECK(comm_pingpong(c, NULL, COMM_PATH_HOST, size, b1, b2, 8, 1, t1) == CG_ERR_ARG, "peer out of range");
  if (size > 1) {
    int peer = rank == 0 ? 1 : 0;
    MT_CHECK(comm_pingpong(c, NULL, COMM_PATH_HOST, peer, b1, b2, 0, 1, t1) == CG_ERR_ARG, "0 bytes");
    MT_CHECK(comm_pingpong(c, NULL, COMM_PATH_HOST, peer, b1, b2, 8, 0, t1) == CG_ERR_ARG, "0 reps");
    MT_CHECK(comm_pingpong(c, NULL, COMM_PATH_NCCL, peer, b1, b2, 8, 1, t1) == CG_ERR_UNSUPPORTED,
             "NCCL without NCCL running");
    MT_CHECK(strstr(cg_err_msg(), "NCCL is not running") != NULL, "message: %s", cg_err_msg());
    MT_CHECK(comm_pingpong(c, NULL, COMM_PATH_MPI_CUDA, peer, b1, b2, 8, 1, t1) == CG_ERR_UNSUPPORTED,
             "device memory without a device");
    MT_CHECK(comm_pingpong(c, NULL, COMM_PATH_MPI_STAGED, peer, b1, b2, 8, 1, t1) == CG_ERR_ARG,
             "staged is not a ping-pong path");
  }
  cg_err_clear();

  MT_OK(comm_host_barrier(c));

  /* texts of different lengths; rank 1's is empty */
  char mine[64];
  if (rank == 1) mine[0] = '\0';
  else snprintf(mine, sizeof mine, "rank %d says %.*s", rank, rank % 7, "xxxxxxx");
  for (int root = 0; root < size; root++) {
    char **all = NULL;
    MT_OK(comm_gather_text(c, mine, root, &all));
    if (rank == root) {
      MT_CHECK(all != NULL, "root got nothing");
      for (int r = 0; r < size; r++) {
        char want[64];
        if (r == 1) want[0] = '\0';
        else snprintf(want, sizeof want, "rank %d says %.*s", r, r % 7, "xxxxxxx");
        MT_CHECK(strcmp(all[r], want) == 0, "root %d: rank %d sent '%s', got '%s'", root, r, want, all[r]);
      }
      comm_texts_free(all, size);
    } else {
      MT_CHECK(all == NULL, "non-root got texts");
    }
  }
  char **none = NULL;
  MT_CHECK(comm_gather_text(c, "x", size, &none) == CG_ERR_ARG, "root out of range");
  cg_err_clear();

  struct comm_lib_info li;
  MT_OK(comm_lib_info(c, &li));
  MT_CHECK(li.mpi_library[0] != '\0', "no MPI library name");
  MT_CHECK(li.mpi_version >= 3, "MPI standard %d.%d", li.mpi_version, li.mpi_subversion);
  MT_CHECK(strstr(li.transport, "InfiniBand devices:") != NULL, "transport: %s", li.transport);
  if (rank == 0) printf("MPI: %s (MPI %d.%d); %s; NCCL %d\n", li.mpi_library, li.mpi_version,
                        li.mpi_subversion, li.transport, li.nccl_version);

  comm_finalize(&mt_comm);
  if (rank == 0) printf("test_probe: ok on %d rank%s\n", size, size == 1 ? "" : "s");
  return 0;
}
