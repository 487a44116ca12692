/* mpi/probe.c — what the link benchmarks of rapa/ need from MPI: a ping-pong on each
 * path, a barrier per host, gathering one text per rank, and what the libraries say
 * about themselves.
 *
 * Design notes (the why):
 * - The ping-pong is blocking and strictly alternating so that one repetition is one
 *   round trip, nothing overlapped; the echo comes from the receiver's buffer (not
 *   the sender's again) so that a corruption on either leg shows in the initiator's
 *   rbuf, which the caller checks.
 * - Device paths synchronise the backend stream before reading the clock: NCCL calls
 *   return when enqueued, so only the synchronised time is the transfer's.
 * - comm_gather_text lets rank 0 collect per-rank JSON without a fixed-size record. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <time.h>

#include "core/status.h"
#include "core/timer.h"
#include "mpi/comm_internal.h"
#include "mpi/nccl_internal.h"
#include "mpi/path_internal.h"

#define PROBE_TAG 7301 /* on c->world; no other point-to-point call of mpi/ uses it */

int comm_host_barrier(struct comm *c) {
  /* MPI_Barrier busy-polls: a rank waiting for its turn would take a core from the
   * rank that is measuring. Poll a non-blocking barrier and sleep in between. */
  MPI_Request req;
  COMM_MPI_TRY(MPI_Ibarrier(c->host, &req));
  for (;;) {
    int done = 0;
    COMM_MPI_TRY(MPI_Test(&req, &done, MPI_STATUS_IGNORE));
    if (done) return CG_OK;
    struct timespec ts = {0, 1000000}; /* 1 ms */
    nanosleep(&ts, NULL);
  }
}

void comm_texts_free(char **texts, int n) {
  if (!texts) return;
  for (int i = 0; i < n; i++) cg_free(texts[i]);
  cg_free(texts);
}

int comm_gather_text(struct comm *c, const char *text, int root, char ***out) {
  int st = CG_OK;
  *out = NULL;
  if (root < 0 || root >= c->size)
    return cg_err_set(CG_ERR_ARG, "comm_gather_text: root %d is not a rank (world size %d)", root,
                      c->size);
  size_t len = text ? strlen(text) : 0;
  if (len > (size_t)1 << 30) st = cg_err_set(CG_ERR_ARG, "comm_gather_text: text of %zu bytes > 1 GiB", len);
  int mine = st < 0 ? 0 : (int)len;
  int *lens = NULL, *displs = NULL;
  char *all = NULL, **texts = NULL;
  if (c->rank == root && st == CG_OK) {
    lens = cg_calloc((size_t)c->size, sizeof *lens, "text lengths of every rank");
    displs = cg_calloc((size_t)c->size, sizeof *displs, "text offsets of every rank");
    if (!lens || !displs) st = CG_ERR_NOMEM;
  }
  TRY_GOTO(comm_agree(c, st, "comm_gather_text"), done);
  COMM_MPI_TRY_GOTO(MPI_Gather(&mine, 1, MPI_INT, lens, 1, MPI_INT, root, c->world), done);
  int64_t total = 0;
  if (c->rank == root) {
    for (int r = 0; r < c->size; r++) {
      displs[r] = (int)total;
      total += lens[r];
    }
    if (total > INT_MAX) st = cg_err_set(CG_ERR_ARG, "comm_gather_text: %lld bytes in all > 2 GiB",
                                         (long long)total);
    if (st == CG_OK) {
      all = cg_malloc((size_t)total + 1, "texts gathered from every rank");
      texts = cg_calloc((size_t)c->size, sizeof *texts, "texts gathered from every rank");
      if (!all || !texts) st = CG_ERR_NOMEM;
    }
  }
  TRY_GOTO(comm_agree(c, st, "comm_gather_text"), done);
  COMM_MPI_TRY_GOTO(MPI_Gatherv(text ? text : "", mine, MPI_CHAR, all, lens, displs, MPI_CHAR, root,
                                c->world),
                    done);
  if (c->rank == root) {
    for (int r = 0; r < c->size && st == CG_OK; r++) {
      texts[r] = cg_malloc((size_t)lens[r] + 1, "one rank's gathered text");
      if (!texts[r]) {
        st = CG_ERR_NOMEM;
        break;
      }
      memcpy(texts[r], all + displs[r], (size_t)lens[r]);
      texts[r][lens[r]] = '\0';
    }
  }
  /* agreed: the root's copy can fail alone, and a caller that reports an error
   * collectively (apps/cli.c cli_report_setup_error) must not be entered by it alone */
  TRY_GOTO(comm_agree(c, st, "comm_gather_text"), done);
  if (c->rank == root) {
    *out = texts;
    texts = NULL;
  }
done:
  if (texts) comm_texts_free(texts, c->size);
  cg_free(all);
  cg_free(lens);
  cg_free(displs);
  return st;
}

int comm_pingpong(struct comm *c, struct cg_backend *be, enum comm_path path, int peer,
                  const void *sbuf, void *rbuf, size_t bytes, int reps, double *seconds) {
  if (peer < 0 || peer >= c->size || peer == c->rank)
    return cg_err_set(CG_ERR_ARG, "comm_pingpong: peer %d is not another rank (this rank %d of %d)",
                      peer, c->rank, c->size);
  if (bytes < 1 || bytes > ((size_t)1 << 30) || reps < 1 || !sbuf || !rbuf || !seconds)
    return cg_err_set(CG_ERR_ARG,
                      "comm_pingpong: %zu bytes (1 .. 2^30), %d repetitions (>= 1), buffers and "
                      "seconds required",
                      bytes, reps);
  const int initiator = c->rank < peer;
  switch (path) {
    case COMM_PATH_HOST:
    case COMM_PATH_MPI_CUDA:
      if (path == COMM_PATH_MPI_CUDA && (!be || be->kind != CG_DEVICE_CUDA || !comm_mpi_cuda_aware(c)))
        return cg_err_set(CG_ERR_UNSUPPORTED,
                          "comm_pingpong on device memory through MPI: %s",
                          !be || be->kind != CG_DEVICE_CUDA ? "the backend is not a CUDA device"
                                                            : c->cuda_aware_how);
      if (path == COMM_PATH_MPI_CUDA) be->sync(be);
      for (int r = 0; r < reps; r++) {
        double t0 = cg_time_now();
        if (initiator) {
          COMM_MPI_TRY(MPI_Send(sbuf, (int)bytes, MPI_BYTE, peer, PROBE_TAG, c->world));
          COMM_MPI_TRY(MPI_Recv(rbuf, (int)bytes, MPI_BYTE, peer, PROBE_TAG, c->world, MPI_STATUS_IGNORE));
        } else {
          COMM_MPI_TRY(MPI_Recv(rbuf, (int)bytes, MPI_BYTE, peer, PROBE_TAG, c->world, MPI_STATUS_IGNORE));
          COMM_MPI_TRY(MPI_Send(rbuf, (int)bytes, MPI_BYTE, peer, PROBE_TAG, c->world));
        }
        seconds[r] = cg_time_now() - t0;
      }
      return CG_OK;
    case COMM_PATH_NCCL:
      if (!c->nccl || !be || be->kind != CG_DEVICE_CUDA)
        return cg_err_set(CG_ERR_UNSUPPORTED,
                          "comm_pingpong over NCCL: NCCL is not running (comm_path_resolve did not "
                          "choose nccl: every rank needs a GPU of its own and a build with NCCL)");
      be->sync(be);
      for (int r = 0; r < reps; r++) {
        double t0 = cg_time_now();
        TRY(comm_nccl_roundtrip(c, be, initiator, peer, sbuf, rbuf, bytes));
        be->sync(be);
        seconds[r] = cg_time_now() - t0;
      }
      return CG_OK;
    default:
      return cg_err_set(CG_ERR_ARG, "comm_pingpong: path %s is not host, mpi-cuda or nccl",
                        comm_path_name(path));
  }
}

/* Appends "KEY=VALUE " for an environment variable that is set. */
static void env_part(char *buf, size_t len, const char *key, const char *label) {
  const char *v = getenv(key);
  size_t used = strlen(buf);
  if (used < len) snprintf(buf + used, len - used, "%s=%s ", label, v && v[0] ? v : "(default)");
}

int comm_lib_info(struct comm *c, struct comm_lib_info *out) {
  memset(out, 0, sizeof *out);
  char lib[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  if (MPI_Get_library_version(lib, &len) == MPI_SUCCESS) {
    lib[len < (int)sizeof lib ? len : (int)sizeof lib - 1] = '\0';
    lib[strcspn(lib, "\n")] = '\0';
    snprintf(out->mpi_library, sizeof out->mpi_library, "%s", lib);
  } else {
    snprintf(out->mpi_library, sizeof out->mpi_library, "unknown");
  }
  MPI_Get_version(&out->mpi_version, &out->mpi_subversion);
  out->cuda_aware = comm_mpi_cuda_aware(c);
  snprintf(out->cuda_aware_how, sizeof out->cuda_aware_how, "%s",
           c->cuda_aware_how ? c->cuda_aware_how : "?");
  out->nccl_version = comm_nccl_version();
  env_part(out->transport, sizeof out->transport, "OMPI_MCA_pml", "pml");
  env_part(out->transport, sizeof out->transport, "OMPI_MCA_btl", "btl");
  if (getenv("UCX_TLS")) env_part(out->transport, sizeof out->transport, "UCX_TLS", "UCX_TLS");
  char ib[128] = "";
  DIR *d = opendir("/sys/class/infiniband");
  if (d) {
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
      if (e->d_name[0] == '.') continue;
      size_t u = strlen(ib), n = strlen(e->d_name);
      if (u + n + 2 >= sizeof ib) break;
      if (u) ib[u++] = ',';
      memcpy(ib + u, e->d_name, n + 1);
    }
    closedir(d);
  }
  size_t used = strlen(out->transport);
  if (used < sizeof out->transport)
    snprintf(out->transport + used, sizeof out->transport - used, "InfiniBand devices: %s",
             ib[0] ? ib : "none");
  return CG_OK;
}
