/* mpi/path.c — the path that device memory takes between ranks (NCCL, CUDA-aware
 * MPI, staging through host memory): names, the request, and the choice per object.
 *
 * Design notes (the why):
 * - The path of one object is decided by the same rule on every rank from inputs
 *   reduced over the world (backend kinds, GPUs shared on a host, CUDA-awareness, the
 *   requested path): NCCL calls, MPI point-to-point and MPI neighbourhood collectives
 *   do not match each other, so a rank that took another road would hang its peers.
 * - NCCL refuses two ranks on one GPU (ncclCommInitRank: "Duplicate GPU detected"),
 *   so AUTO does not try it then (shared GPUs are counted by UUID, gpu_bind.c) and a
 *   forced NCCL fails with a message that says why and what to use instead.
 * - NCCL is started here, the first time an object is given that path (setup, never
 *   inside a step); AUTO falls back to MPI, on every rank, when it does not start.
 * - Without CUDA or NCCL in the build the same rule runs: it just never picks a path
 *   the build lacks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/status.h"
#include "mpi/comm_internal.h"
#include "mpi/gpu_bind_internal.h"
#include "mpi/nccl_internal.h"
#include "mpi/path_internal.h"

#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h> /* MPIX_Query_cuda_support, when Open MPI has its CUDA extension */
#endif

#ifdef CAPGNN_HAVE_CUDA
#include "cuda/cuda_backend.h"
#endif

/* ---- names ---------------------------------------------------------------------- */

const char *comm_path_name(enum comm_path p) {
  switch (p) {
    case COMM_PATH_AUTO:
      return "auto";
    case COMM_PATH_HOST:
      return "host";
    case COMM_PATH_NCCL:
      return "nccl";
    case COMM_PATH_MPI_CUDA:
      return "mpi-cuda";
    case COMM_PATH_MPI_STAGED:
      return "mpi-staged";
  }
  return "?";
}

int comm_path_parse(const char *s, enum comm_path *out) {
  static const enum comm_path choices[] = {COMM_PATH_AUTO, COMM_PATH_NCCL, COMM_PATH_MPI_CUDA,
                                           COMM_PATH_MPI_STAGED};
  for (size_t i = 0; s && i < sizeof choices / sizeof choices[0]; i++)
    if (strcmp(s, comm_path_name(choices[i])) == 0) {
      *out = choices[i];
      return CG_OK;
    }
  return cg_err_set(CG_ERR_ARG, "--comm %s: expected auto, nccl, mpi-cuda or mpi-staged",
                    s ? s : "(none)");
}

int comm_set_path(struct comm *c, enum comm_path p) {
  if (p != COMM_PATH_AUTO && p != COMM_PATH_NCCL && p != COMM_PATH_MPI_CUDA &&
      p != COMM_PATH_MPI_STAGED)
    return cg_err_set(CG_ERR_ARG,
                      "comm_set_path: path %s (%d) cannot be requested: use auto, nccl, mpi-cuda "
                      "or mpi-staged (the CPU backend always uses host)",
                      comm_path_name(p), (int)p);
  c->path_req = p;
  return CG_OK;
}

enum comm_path comm_get_path(const struct comm *c) { return c->path_req; }

/* ---- small helpers ------------------------------------------------------------------ */

enum be_class { BE_HOST = 0, BE_CUDA = 1, BE_OTHER = 2 };

/* BE_OTHER: a device backend that is not the CUDA backend itself (the profiling
 * wrapper, a test double): its stream is out of reach, its pointers may not be CUDA
 * pointers, so it can only be staged through its own download/upload. */
static enum be_class be_classify(const struct cg_backend *be) {
  if (be->kind == CG_DEVICE_CPU) return BE_HOST;
#ifdef CAPGNN_HAVE_CUDA
  if (cg_cuda_is_backend(be)) return BE_CUDA;
#endif
  return BE_OTHER;
}

static int have_nccl(void) {
#ifdef CAPGNN_HAVE_NCCL
  return 1;
#else
  return 0;
#endif
}

/* Whether MPI accepts device pointers; asked once. CAPGNN_MPI_CUDA_AWARE=1|0 overrides
 * the library's answer (for MPIs without Open MPI's query, or to test the fallback). */
int comm_mpi_cuda_aware(struct comm *c) {
  if (c->cuda_aware >= 0) return c->cuda_aware;
  int aware = 0;
  c->cuda_aware_how =
      "this MPI has no MPIX_Query_cuda_support() (not Open MPI with its CUDA "
      "extension)";
  const char *env = getenv("CAPGNN_MPI_CUDA_AWARE");
  if (env && (strcmp(env, "0") == 0 || strcmp(env, "1") == 0)) {
    aware = env[0] == '1';
    c->cuda_aware_how = aware ? "CAPGNN_MPI_CUDA_AWARE=1" : "CAPGNN_MPI_CUDA_AWARE=0";
  } else {
    if (env && env[0])
      LOG_WARN("mpi", "CAPGNN_MPI_CUDA_AWARE='%s' ignored: set it to 1 or 0, or unset it", env);
#if defined(OMPI_HAVE_MPI_EXT_CUDA) && OMPI_HAVE_MPI_EXT_CUDA
    aware = MPIX_Query_cuda_support() == 1;
    c->cuda_aware_how = aware ? "MPIX_Query_cuda_support() = 1"
                              : "MPIX_Query_cuda_support() = 0: Open MPI was built or runs "
                                "without CUDA support";
#endif
  }
  LOG_DEBUG("mpi", "MPI CUDA-aware: %s (%s)", aware ? "yes" : "no", c->cuda_aware_how);
  c->cuda_aware = aware;
  return aware;
}

/* ---- path selection ------------------------------------------------------------------- */

/* Flags reduced over the world (MAX) so that every rank applies the rule to the same
 * inputs. */
enum {
  F_NOT_CUDA, /* some rank is not on the CUDA backend itself */
  F_CUDA,     /* some rank is on the CUDA backend */
  F_DEVICE,   /* some rank is on a device backend (CUDA or wrapped) */
  F_UNAWARE,  /* some CUDA-backend rank's MPI is not CUDA-aware */
  F_REQ_MAX,  /* requested path, max and (negated) min: they must agree */
  F_REQ_NEGMIN,
  F_FAILED, /* some rank failed to gather its inputs */
  F_P2P,    /* CAPGNN_HALO_P2P=1 somewhere: halo by point-to-point calls on every path */
  F_N
};

/* Why AUTO did not pick NCCL (for the log). */
static const char *why_not_nccl(const struct comm *c, const int *f, int maxsame) {
  if (!have_nccl()) return "this build has no NCCL";
  if (f[F_NOT_CUDA]) return "not every rank is on the CUDA backend";
  if (maxsame > 1) return "ranks share a GPU";
  if (c->nccl_failed) return "NCCL did not start";
  return "?";
}

static void announce(struct comm *c, const struct comm_sel *sel, int auto_req, const int *f,
                     int maxsame) {
  int key = (int)sel->path * 16 + (int)c->path_req; /* a new path, or a new request */
  if (key == c->path_logged) return;
  c->path_logged = key;
  char why[256] = "requested";
  if (auto_req) {
    switch (sel->path) {
      case COMM_PATH_NCCL:
        snprintf(why, sizeof why, "auto: every rank has a GPU of its own");
        break;
      case COMM_PATH_MPI_CUDA:
        snprintf(why, sizeof why, "auto: no NCCL (%s); MPI is CUDA-aware (%s)",
                 why_not_nccl(c, f, maxsame), c->cuda_aware_how ? c->cuda_aware_how : "?");
        break;
      case COMM_PATH_MPI_STAGED:
        if (!sel->pinned)
          snprintf(why, sizeof why,
                   "auto: the backend wraps a device: it stages through its "
                   "own copies");
        else
          snprintf(why, sizeof why,
                   "auto: no NCCL (%s); MPI is not CUDA-aware on every rank "
                   "(this rank: %s)",
                   why_not_nccl(c, f, maxsame), c->cuda_aware_how ? c->cuda_aware_how : "?");
        break;
      default:
        break;
    }
  }
  switch (sel->path) {
    case COMM_PATH_HOST:
      LOG_INFO("mpi", "communication path: host (CPU backend: MPI on host memory)"); /* (a --comm given: warned) */
      break;
    case COMM_PATH_NCCL:
      LOG_INFO("mpi", "communication path: nccl (%s)", why);
      break;
    case COMM_PATH_MPI_CUDA:
      LOG_INFO("mpi", "communication path: mpi-cuda, device pointers to MPI (%s)", why);
      break;
    default:
      LOG_INFO("mpi", "communication path: mpi-staged, %s host buffers (%s)",
               sel->pinned ? "pinned" : "pageable", why);
      break;
  }
}

int comm_path_select(struct comm *c, struct cg_backend *be, struct comm_sel *sel) {
  int st = CG_OK;
  memset(sel, 0, sizeof *sel);
  enum be_class cls = be_classify(be);
  const char *uuid = "";
  int dev = -1;
#ifdef CAPGNN_HAVE_CUDA
  if (cls == BE_CUDA) {
    dev = cg_cuda_device(be);
    st = comm_gpu_uuid(c, dev, &uuid);
  }
#endif
  int same = 0, maxsame = 0;
  int st2 = comm_gpu_count_same(c, uuid, &same, &maxsame);
  if (st >= 0) st = st2;
  int f[F_N] = {0};
  f[F_NOT_CUDA] = cls != BE_CUDA;
  f[F_CUDA] = cls == BE_CUDA;
  f[F_DEVICE] = cls != BE_HOST;
  f[F_UNAWARE] = cls == BE_CUDA && !comm_mpi_cuda_aware(c);
  f[F_REQ_MAX] = (int)c->path_req;
  f[F_REQ_NEGMIN] = -(int)c->path_req;
  f[F_FAILED] = st < 0;
  const char *p2p_env = getenv("CAPGNN_HALO_P2P");
  f[F_P2P] = p2p_env && strcmp(p2p_env, "1") == 0;
  int rc = MPI_Allreduce(MPI_IN_PLACE, f, F_N, MPI_INT, MPI_MAX, c->world);
  if (rc != MPI_SUCCESS && st >= 0)
    st = comm_mpi_error(rc, "MPI_Allreduce (path flags)", __FILE__, __LINE__);
  /* A peer failed to gather its inputs: the flags are incomplete; agree below names it. */
  int peer_failed = st >= 0 && f[F_FAILED];
  enum comm_path req = c->path_req, g = COMM_PATH_MPI_STAGED;
  if (st >= 0 && !peer_failed && f[F_REQ_MAX] != -f[F_REQ_NEGMIN])
    st = cg_err_set(CG_ERR_ARG,
                    "ranks request different communication paths (this rank: %s; from %s to %s): "
                    "pass the same --comm to every rank",
                    comm_path_name(req), comm_path_name((enum comm_path)(-f[F_REQ_NEGMIN])),
                    comm_path_name((enum comm_path)f[F_REQ_MAX]));
  /* All ranks on the CPU: no device path is involved, whatever was requested. */
  if (st >= 0 && !peer_failed && f[F_DEVICE]) {
    switch (req) {
      case COMM_PATH_NCCL:
        g = COMM_PATH_NCCL;
        if (!have_nccl())
          st = cg_err_set(CG_ERR_UNSUPPORTED,
                          "--comm nccl: this build has no NCCL (configure where nccl.h and "
                          "libnccl are found), use --comm mpi-staged or mpi-cuda");
        else if (f[F_NOT_CUDA])
          st = cg_err_set(CG_ERR_UNSUPPORTED,
                          "--comm nccl needs every rank on the CUDA backend itself (this rank: "
                          "backend %s%s); use --comm mpi-staged",
                          be->name, cls == BE_OTHER ? ", a wrapped device backend" : "");
        else if (maxsame > 1)
          st = cg_err_set(CG_ERR_UNSUPPORTED,
                          "--comm nccl: %d ranks of one host share a GPU (this rank: %d on %s) "
                          "and NCCL refuses two ranks on one GPU (\"Duplicate GPU detected\"); "
                          "run one rank per GPU, or use --comm mpi-staged or mpi-cuda",
                          maxsame, same, uuid[0] ? uuid : "its GPU");
        break;
      case COMM_PATH_MPI_CUDA:
        g = COMM_PATH_MPI_CUDA;
        if (cls == BE_OTHER)
          st = cg_err_set(CG_ERR_UNSUPPORTED,
                          "--comm mpi-cuda needs the CUDA backend itself: backend %s wraps or "
                          "emulates a device, so its pointers cannot go to MPI; use --comm "
                          "mpi-staged",
                          be->name);
        else if (f[F_UNAWARE])
          st = cg_err_set(CG_ERR_UNSUPPORTED,
                          "--comm mpi-cuda: the MPI library is not CUDA-aware on every rank "
                          "(this rank: %s); use --comm mpi-staged or nccl, or an MPI built "
                          "with CUDA support",
                          cls == BE_CUDA ? c->cuda_aware_how : "not on the CUDA backend");
        break;
      case COMM_PATH_MPI_STAGED:
        g = COMM_PATH_MPI_STAGED;
        break;
      default: /* AUTO */
        if (have_nccl() && !f[F_NOT_CUDA] && maxsame <= 1 && !c->nccl_failed)
          g = COMM_PATH_NCCL;
        else if (f[F_CUDA] && !f[F_UNAWARE])
          g = COMM_PATH_MPI_CUDA;
        else
          g = COMM_PATH_MPI_STAGED;
        break;
    }
  }
  /* Everything above is decided from reduced inputs, so g and the errors are the same
   * on every rank (but for messages); agree anyway: the gathering may have failed. */
  TRY(comm_agree(c, st, "choosing the communication path"));
  if (peer_failed) return cg_err_set(CG_ERR_INTERNAL, "path flags disagree with comm_agree");

  if (g == COMM_PATH_NCCL) {
    if (c->nccl && c->nccl_dev != dev)
      st = cg_err_set(CG_ERR_ARG,
                      "NCCL already runs on CUDA device %d but this backend is on device %d: "
                      "use one device per rank",
                      c->nccl_dev, dev);
    TRY(comm_agree(c, st, "choosing the communication path (NCCL device)"));
    if (!c->nccl) {
      st = comm_nccl_start(c, dev);
      if (st < 0 && req != COMM_PATH_AUTO) return st;
      if (st < 0) { /* AUTO: fall back to MPI; every rank saw the failure (agreed) */
        if (c->rank == 0)
          LOG_WARN("mpi", "NCCL did not start (%s); falling back to MPI", cg_err_msg());
        cg_err_clear();
        c->nccl_failed = 1;
        st = CG_OK;
        g = f[F_CUDA] && !f[F_UNAWARE] ? COMM_PATH_MPI_CUDA : COMM_PATH_MPI_STAGED;
      }
    }
  }

  if (cls == BE_HOST) {
    sel->path = COMM_PATH_HOST;
    if (req != COMM_PATH_AUTO && !c->warned_host_forced) { /* every rank's case: rank 0 says it */
      LOG_WARN_COMMON("mpi", "--comm %s applies to GPU ranks; device auto did not find a GPU on every rank, so the "
                      "run is on the CPU backend (host memory)", comm_path_name(req));
      c->warned_host_forced = 1;
    }
  } else if (cls == BE_OTHER) {
    sel->path = COMM_PATH_MPI_STAGED; /* NCCL and mpi-cuda were refused above */
  } else {
    sel->path = g;
  }
  sel->pinned = cls == BE_CUDA && sel->path == COMM_PATH_MPI_STAGED;
  sel->p2p = (g == COMM_PATH_MPI_CUDA && f[F_CUDA]) || f[F_P2P];
  announce(c, sel, req == COMM_PATH_AUTO, f, maxsame);
  return CG_OK;
}

int comm_path_resolve(struct comm *c, struct cg_backend *be, enum comm_path *out) {
  struct comm_sel sel;
  *out = COMM_PATH_AUTO;
  TRY(comm_path_select(c, be, &sel));
  *out = sel.path;
  return CG_OK;
}
