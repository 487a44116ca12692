/* mpi/tests/test_shm.c — the node shared-memory segment (comm_shm_*) and the node
 * helpers beside it (comm_node_of, comm_node_world_rank, node gathers, all-to-alls).
 *
 * Checked on every rank: each rank's part has the size it asked for, parts are
 * contiguous in local-rank order and start zeroed; what one rank writes into its part
 * every other rank of the node reads through its own mapping, and only ranks of the
 * same (real or emulated) node share a segment. Hygiene (mpi/comm.h, "node shared
 * memory"): the segment's backing file, found through /proc/self/maps, has mode 0600
 * and no name left in the file system (link count 0) while the job still runs, so no
 * ending of the job can leave it behind; without access to /proc/self/map_files the
 * mode check is skipped with a note (the unlink is still checked from the maps line).
 *
 * Arguments: --kill makes rank 1 print the segment's path and SIGKILL itself after
 * creating it (run_shm_kill.sh then checks what is left once mpirun is gone). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mpi/comm.h"
#include "mpi_test.h"

struct comm *mt_comm;

/* The maps line of the mapping that holds p: its address range and path ("" when
 * anonymous). Returns 0 when found. */
static int find_mapping(const void *p, unsigned long *lo, unsigned long *hi, char *path,
                        size_t len) {
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f) return -1;
  char line[1024];
  int found = -1;
  while (fgets(line, sizeof line, f)) {
    unsigned long a = 0, b = 0;
    if (sscanf(line, "%lx-%lx", &a, &b) != 2) continue;
    if ((unsigned long)p < a || (unsigned long)p >= b) continue;
    *lo = a;
    *hi = b;
    const char *slash = strchr(line, '/');
    snprintf(path, len, "%s", slash ? slash : "");
    path[strcspn(path, "\n")] = '\0';
    found = 0;
    break;
  }
  fclose(f);
  return found;
}

static void check_hygiene(const void *base, int verbose) {
  unsigned long lo = 0, hi = 0;
  char path[512];
  MT_CHECK(find_mapping(base, &lo, &hi, path, sizeof path) == 0,
           "no mapping in /proc/self/maps holds the segment at %p", base);
  if (path[0]) {
    /* a file mapping: it must be gone from the file system already */
    MT_CHECK(strstr(path, "(deleted)") != NULL,
             "the segment's file %s still has a name while the job runs: a killed job would "
             "leave it behind",
             path);
    char mf[128];
    snprintf(mf, sizeof mf, "/proc/self/map_files/%lx-%lx", lo, hi);
    struct stat sb;
    if (stat(mf, &sb) == 0) {
      MT_CHECK((sb.st_mode & 0777) == 0600, "the segment's file %s has mode %03o, expected 0600",
               path, (unsigned)(sb.st_mode & 0777));
      MT_CHECK(sb.st_nlink == 0, "the segment's file %s has %ld links", path, (long)sb.st_nlink);
    } else if (verbose) {
      printf("note: %s not readable here (needs CAP_SYS_ADMIN): mode not checked\n", mf);
    }
    if (verbose) printf("ok: segment file %s, unlinked, mode 0600\n", path);
  } else if (verbose) {
    printf("ok: segment is anonymous shared memory (no file at all)\n");
  }
}

int main(int argc, char **argv) {
  MT_OK(comm_init(&argc, &argv, &mt_comm));
  struct comm *c = mt_comm;
  const int rank = comm_rank(c), P = comm_size(c), L = comm_local_size(c), lr = comm_local_rank(c);
  const int kill_mode = argc > 1 && !strcmp(argv[1], "--kill");

  /* node helpers */
  int64_t *all = malloc(sizeof(int64_t) * (size_t)P);
  MT_CHECK(all != NULL, "out of memory");
  MT_OK(comm_allgather_i64(c, comm_node(c), all));
  for (int r = 0; r < P; r++)
    MT_CHECK(comm_node_of(c, r) == all[r], "comm_node_of(%d) = %d, rank %d says %lld", r,
             comm_node_of(c, r), r, (long long)all[r]);
  MT_CHECK(comm_node_of(c, -1) == -1 && comm_node_of(c, P) == -1, "comm_node_of out of range");
  for (int l = 0; l < L; l++) {
    int w = comm_node_world_rank(c, l);
    MT_CHECK(w >= 0 && w < P && comm_node_of(c, w) == comm_node(c), "local rank %d -> world %d", l, w);
    if (l > 0) MT_CHECK(w > comm_node_world_rank(c, l - 1), "node ranks not ascending");
  }
  MT_CHECK(comm_node_world_rank(c, lr) == rank, "my local rank %d maps to %d", lr,
           comm_node_world_rank(c, lr));
  /* node gathers: each rank gives rank+1 values rank*100+i */
  int64_t cnt[64];
  MT_CHECK(L <= 64, "test supports up to 64 ranks per node");
  MT_OK(comm_node_allgather_i64(c, rank + 1, cnt));
  int64_t tot = 0;
  for (int l = 0; l < L; l++) tot += cnt[l];
  int64_t mine[64], *gat = malloc(sizeof(int64_t) * (size_t)(tot > 0 ? tot : 1));
  MT_CHECK(gat != NULL, "out of memory");
  for (int i = 0; i <= rank && i < 64; i++) mine[i] = rank * 100 + i;
  MT_OK(comm_node_allgatherv_i64(c, mine, rank + 1, gat));
  for (int l = 0, k = 0; l < L; l++) {
    int w = comm_node_world_rank(c, l);
    MT_CHECK(cnt[l] == w + 1, "node count of local rank %d is %lld", l, (long long)cnt[l]);
    for (int i = 0; i < cnt[l]; i++, k++)
      MT_CHECK(gat[k] == w * 100 + i, "node gather [%d] = %lld", k, (long long)gat[k]);
  }
  free(gat);
  /* all-to-all: rank r sends q values (r*1000 + q*10 + i), i < q + 1 ... */
  int64_t *sc = calloc((size_t)P * 4, sizeof(int64_t));
  MT_CHECK(sc != NULL, "out of memory");
  int64_t *rc = sc + P, *sv = sc + 2 * P;
  (void)sv;
  for (int q = 0; q < P; q++) sc[q] = (rank + q) % 3;
  MT_OK(comm_alltoall_i64(c, sc, rc));
  int64_t sn = 0, rn = 0;
  for (int q = 0; q < P; q++) {
    MT_CHECK(rc[q] == (q + rank) % 3, "alltoall from %d gave %lld", q, (long long)rc[q]);
    sn += sc[q];
    rn += rc[q];
  }
  int64_t *sb = malloc(sizeof(int64_t) * (size_t)(sn + 1)), *rb = malloc(sizeof(int64_t) * (size_t)(rn + 1));
  MT_CHECK(sb && rb, "out of memory");
  for (int q = 0, k = 0; q < P; q++)
    for (int i = 0; i < sc[q]; i++) sb[k++] = rank * 1000 + q * 10 + i;
  MT_OK(comm_alltoallv_i64(c, sb, sc, rb, rc));
  for (int q = 0, k = 0; q < P; q++)
    for (int i = 0; i < rc[q]; i++, k++)
      MT_CHECK(rb[k] == q * 1000 + rank * 10 + i, "alltoallv from %d [%d] = %lld", q, i,
               (long long)rb[k]);
  free(sb);
  free(rb);
  free(sc);

  /* the segment: local rank l gives 1000 * (l + 1) + 8 bytes (odd sizes on purpose) */
  const size_t my_bytes = (size_t)1000 * (size_t)(lr + 1) + 8;
  struct comm_shm *s = NULL;
  MT_OK(comm_shm_create(c, my_bytes, &s));
  size_t total = 0, b = 0;
  char *node = comm_shm_node(s, &total);
  size_t want_total = 0;
  for (int l = 0; l < L; l++) want_total += (size_t)1000 * (size_t)(l + 1) + 8;
  MT_CHECK(total == want_total, "node segment of %zu bytes, expected %zu", total, want_total);
  MT_CHECK(comm_shm_part(s, L, &b) == NULL && b == 0, "a part beyond the node's ranks");
  char *expect = node;
  for (int l = 0; l < L; l++) {
    char *p = comm_shm_part(s, l, &b);
    MT_CHECK(p == expect, "part %d at %p, expected %p (contiguous)", l, (void *)p, (void *)expect);
    MT_CHECK(b == (size_t)1000 * (size_t)(l + 1) + 8, "part %d has %zu bytes", l, b);
    for (size_t i = 0; i < b; i++) MT_CHECK(p[i] == 0, "part %d byte %zu not zeroed", l, i);
    expect += b;
  }
  check_hygiene(node, rank == 0);
  if (kill_mode) {
    unsigned long lo, hi;
    char path[512];
    MT_CHECK(find_mapping(node, &lo, &hi, path, sizeof path) == 0, "mapping not found");
    if (rank == 1) {
      printf("segment: %s\n", path);
      fflush(stdout);
      raise(SIGKILL);
    }
    MT_OK(comm_barrier(c)); /* never returns: the job ends when rank 1 dies */
  }
  MT_OK(comm_node_barrier(c)); /* everyone checked zeroes before anyone writes */
  /* every rank writes its world rank pattern into its part; everyone reads all parts */
  char *mine_p = comm_shm_part(s, lr, &b);
  for (size_t i = 0; i < b; i++) mine_p[i] = (char)((rank * 31 + (int)i) & 0x7f);
  MT_OK(comm_node_barrier(c));
  for (int l = 0; l < L; l++) {
    const int w = comm_node_world_rank(c, l);
    char *p = comm_shm_part(s, l, &b);
    for (size_t i = 0; i < b; i++)
      MT_CHECK(p[i] == (char)((w * 31 + (int)i) & 0x7f), "part of local rank %d (world %d) byte %zu", l,
               w, i);
  }
  MT_OK(comm_node_barrier(c));
  comm_shm_destroy(&s);
  MT_CHECK(s == NULL, "comm_shm_destroy must clear the handle");
  comm_shm_destroy(&s);

  /* a segment larger than the backing folder's free space: refused on every rank before
   * it is allocated, naming the folder (it had hung: the allocation failed on local rank
   * 0 alone while its peers waited inside MPI_Win_allocate_shared) */
  {
    const int64_t avail = comm_shm_free_bytes();
    int64_t all_avail = avail, min_local = L;
    MT_OK(comm_allreduce_i64(c, &all_avail, 1, COMM_MIN));
    MT_OK(comm_allreduce_i64(c, &min_local, 1, COMM_MIN));
    if (all_avail >= 0 && min_local > 1) { /* (a one-rank node's window is private memory: not checked) */
      const size_t too_big = lr == 0 ? (size_t)avail + ((size_t)64 << 20) : 0;
      const int st2 = comm_shm_create(c, too_big, &s);
      MT_CHECK(st2 < 0 && s == NULL, "a segment of %zu bytes with %lld free was not refused", too_big,
               (long long)avail);
      MT_CHECK(comm_rank(c) != 0 || (strstr(cg_err_msg(), comm_shm_dir()) && strstr(cg_err_msg(), "bytes free")),
               "the refusal does not name the folder: %s", cg_err_msg());
      cg_err_clear();
    }
  }

  /* a second segment after the first is gone, with empty parts except local rank 0 */
  MT_OK(comm_shm_create(c, lr == 0 ? 4096 : 0, &s));
  MT_CHECK(comm_shm_node(s, &total) != NULL && total == 4096, "node-wide segment of %zu bytes",
           total);
  comm_shm_destroy(&s);
  free(all);
  if (rank == 0) printf("ok: %d ranks, %d nodes: node segments, node gathers, all-to-alls\n", P, comm_nnodes(c));
  comm_finalize(&mt_comm);
  return 0;
}
