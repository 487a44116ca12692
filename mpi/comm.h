/* mpi/comm.h — ranks, node layout, halo exchange and gradient all-reduce.
 *
 * The only public header of the mpi/ module. It does not include mpi.h: every
 * MPI object lives behind an opaque handle, so modules above mpi/ compile
 * without MPI headers.
 *
 * Threading: MPI is initialised with MPI_THREAD_FUNNELED; call every function
 * here from the thread that called comm_init. That includes comm_abort, which the
 * fatal handler comm_init installs calls on the thread where cg_fatal was called
 * (core/fatal.h): a fatal error on another thread makes an MPI_Abort that FUNNELED
 * does not allow (the job may end, or this process may crash or hang with its peers
 * waiting). Nothing does so today; a background thread added later must hand its
 * failure to the thread that called comm_init instead of calling cg_fatal (or an
 * op), or the program must call MPI_Init_thread with MPI_THREAD_MULTIPLE itself
 * before comm_init (which then uses MPI as it finds it). See core/fatal.h, Threads.
 *
 * Errors: setup calls return CG_OK or a negative cg_status with a message
 * (core/status.h). Failing MPI calls return CG_ERR_MPI carrying the MPI error
 * string (the communicators use MPI_ERRORS_RETURN). Functions marked
 * *collective* must be called by every rank in the same order. Inside a
 * training step an error is fatal: log it and call comm_abort() so that no
 * peer waits forever on the rank that gave up.
 *
 * Byte counters (struct comm_stats) count the bytes this rank SENDS, so the sum
 * over ranks is the total traffic; seconds are the wall time spent inside the
 * calls of this module (the part of communication not hidden behind compute).
 * comm_stats adds up every object on a struct comm until comm_stats_reset; each
 * comm_halo and comm_grad also counts its own bytes since its creation
 * (comm_halo_bytes_sent, comm_grad_bytes_sent), which is what the exchange seam
 * reports.
 */
#ifndef CAPGNN_MPI_COMM_H
#define CAPGNN_MPI_COMM_H

#include <stddef.h>
#include <stdint.h>

#include "core/exchange.h"
#include "core/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

struct comm;      /* the job: world communicator, node layout, counters */
struct comm_grad; /* a flat gradient buffer and its all-reduce */
struct comm_halo; /* one halo exchange plan, its communicator and buffers */

/* ---- setup and layout ------------------------------------------------------ */

/* Initialise MPI (MPI_Init_thread, FUNNELED) unless the caller already did, and
 * work out the layout. Works as a singleton too (a program started without
 * mpiexec is one rank). Collective over MPI_COMM_WORLD.
 *
 * Layout: ranks that share memory (MPI_Comm_split_type, MPI_COMM_TYPE_SHARED)
 * form a host. A node is a host, unless the environment variable
 * CAPGNN_EMULATE_NODES=k splits the ranks of each host into k emulated nodes of
 * contiguous host-local ranks (host-local rank r of L goes to block r*k/L; k is
 * clamped to L with a warning), so that multi-node code paths run on one
 * machine. Nodes are numbered 0..nnodes-1 in the order of their lowest world
 * rank; local ranks within a node follow world rank order. Every rank must read the
 * same CAPGNN_EMULATE_NODES (unset = 1): else every rank fails with CG_ERR_ARG and one
 * message naming the ranks that differ from rank 0.
 *
 * Also sets the log rank (cg_log_set_rank) and MPI_ERRORS_RETURN on every
 * communicator this module creates, and on success installs core/fatal.h's handler
 * that ends the whole job (comm_abort with CG_FATAL_EXIT_CODE), whoever initialised
 * MPI; the handler installed before is kept and comm_finalize restores it. On
 * failure *out is NULL, the fatal handler is left as it was and MPI may be
 * initialised: report the error and call comm_abort(NULL, code). CG_ERR_ARG is
 * returned by every rank together (a bad CAPGNN_EMULATE_NODES, or a rank that stopped
 * before it started MPI and called comm_leave: the message names it) with MPI still
 * running: rank 0 may report it, then every rank calls comm_leave and exits, with no
 * comm_abort.
 * Ownership: *out belongs to the caller; release with comm_finalize. Call once
 * per process (MPI cannot be initialised twice). */
int comm_init(int *argc, char ***argv, struct comm **out);
/* The way out of a process that leaves without a struct comm, returning `code`: after
 * comm_init's CG_ERR_ARG (MPI running), or in a process that a launcher started as one
 * of several (mpirun -n P, P > 1) and that stops before it started MPI (a usage error
 * found while parsing, said by rank 0 alone; --help). Flushes stdout and stderr; starts
 * MPI if it is not started and joins comm_init's first collective as a rank that left
 * (comm_init then fails on the ranks that went on, naming it); then a barrier over the
 * world and MPI_Finalize, whoever started MPI. No rank leaves before every rank has said
 * what it had to: mpirun ends the whole job as soon as one process exits non-zero, which
 * killed rank 0 before it printed the error that every rank had found. Nothing when MPI
 * is finalised. Collective over MPI_COMM_WORLD with comm_init or comm_leave on the
 * other ranks. */
int comm_leave(int code);
/* CAPGNN_EMULATE_NODES as comm_init reads it, checked before MPI starts: CG_ERR_ARG with
 * the message comm_init would fail with, CG_OK when unset or valid. Lets a command refuse
 * a bad value like a bad option (one line from rank 0, exit status 2) rather than from
 * inside comm_init on every rank, then MPI_Abort. */
int comm_emulate_nodes_check(void);

/* Restore the fatal handler that was installed when comm_init ran (core/fatal.h),
 * free the communicators and call MPI_Finalize if comm_init initialised MPI.
 * Collective. Destroy every object made over c first: each cg_exchange from
 * comm_exchange_create, or the wrapper that owns it (cg_exchange_destroy: it holds a
 * comm_halo and a comm_grad), and each comm_halo / comm_grad. Accepts NULL / *c
 * NULL; sets *c to NULL. */
void comm_finalize(struct comm **c);

int comm_rank(const struct comm *c); /* world rank */
int comm_size(const struct comm *c); /* world size */
int comm_node(const struct comm *c); /* node id, 0..nnodes-1 (emulated if asked) */
int comm_nnodes(const struct comm *c);
int comm_local_rank(const struct comm *c); /* rank within the node */
int comm_local_size(const struct comm *c); /* ranks on the node */
/* Rank and size within the physical host, whatever CAPGNN_EMULATE_NODES says
 * (what GPU binding needs: emulated nodes still share the host's devices). */
int comm_host_local_rank(const struct comm *c);
int comm_host_local_size(const struct comm *c);
/* The node (comm_node) of world rank r, -1 when r is not a rank. */
int comm_node_of(const struct comm *c, int world_rank);
/* The world rank of local rank `local_rank` of this node (ascending with the local
 * rank), -1 when there is no such local rank. */
int comm_node_world_rank(const struct comm *c, int local_rank);

/* Abort the whole job with exit code `code` (MPI_Abort on the world): the way
 * out after a fatal error so that no peer hangs. Flushes stdout/stderr first.
 * c may be NULL (before or after a failed comm_init). Does not return. */
void comm_abort(struct comm *c, int code) __attribute__((noreturn));

/* ---- GPU placement ------------------------------------------------------------- */

/* Bind this rank to a GPU: ordinal = host-local rank (comm_host_local_rank, so
 * emulated nodes do not change the binding) modulo the number of visible devices
 * (cudaGetDeviceCount, which honours CUDA_VISIBLE_DEVICES), then cudaSetDevice.
 * Several ranks may share one GPU. Logs, on rank 0 for every rank: the GPU's name,
 * UUID, PCI bus id and its locality from hwloc (NUMA nodes and CPU set of the PCI
 * device, "locality unknown" when hwloc cannot place it), and how many ranks of the
 * host share that GPU (the GPUs' UUIDs are gathered per host). Collective over the
 * world: on any rank's error every rank returns an error. *device_ordinal_out gets
 * the ordinal (-1 on error); pass it to cg_backend_cuda_create.
 * Without CUDA in the build: CG_ERR_UNSUPPORTED (not collective). */
int comm_gpu_bind(struct comm *c, int *device_ordinal_out);
/* Ranks of this host bound to the same GPU as this rank (>= 1), 0 before a
 * successful comm_gpu_bind. */
int comm_gpu_share(const struct comm *c);

/* ---- communication path for device memory ---------------------------------------- */

/* How halo rows and gradients of a backend's memory travel.
 *  HOST        CPU backend: MPI on backend memory directly (always, for the CPU backend)
 *  NCCL        grouped ncclSend/ncclRecv and ncclAllReduce on the backend's stream;
 *              needs every rank on a CUDA backend with a GPU of its own (NCCL refuses
 *              two ranks on one GPU) and a build with NCCL
 *  MPI_CUDA    device pointers handed to a CUDA-aware MPI (MPIX_Query_cuda_support, or
 *              the environment variable CAPGNN_MPI_CUDA_AWARE=1|0 to override it)
 *  MPI_STAGED  copies to pinned host buffers (async on the backend's stream), MPI on
 *              those. Device backends that are not the CUDA backend itself (wrappers)
 *              stage through be->download / be->upload into ordinary host buffers.
 * All paths move the same bytes; halo exchanges give bit-identical results (for the
 * all-reduce see comm_grad_allreduce). The environment
 * variable CAPGNN_HALO_P2P=1 (on any rank) makes every MPI halo exchange use
 * MPI_Isend/MPI_Irecv, the mechanism of MPI_CUDA, instead of the neighbourhood
 * collective (to test that mechanism on the CPU, or where neighbourhood collectives
 * are slow). */
enum comm_path {
  COMM_PATH_AUTO = 0,
  COMM_PATH_HOST = 1,
  COMM_PATH_NCCL = 2,
  COMM_PATH_MPI_CUDA = 3,
  COMM_PATH_MPI_STAGED = 4
};

/* Request a path for the comm_halo / comm_grad objects created afterwards (objects
 * keep the path they were created with). AUTO (the default): NCCL when every rank
 * is on the CUDA backend and no two ranks of a host share a GPU (and NCCL starts),
 * else MPI_CUDA when MPI is CUDA-aware, else MPI_STAGED. A forced path that cannot
 * work (nccl with shared GPUs, mpi-cuda with an MPI that is not CUDA-aware) makes
 * the create calls fail on every rank with CG_ERR_UNSUPPORTED and a message saying
 * why. CPU-backend objects always use HOST: when every rank is on the CPU a forced
 * path is ignored with a warning; in a job mixing CPU and CUDA ranks, nccl is refused
 * (it needs every rank on a GPU) and the MPI paths interoperate with HOST.
 * Every rank must request the same path (checked at create).
 * CG_ERR_ARG for COMM_PATH_HOST (chosen by the backend, not forced) or an unknown
 * value. Local (not collective). */
int comm_set_path(struct comm *c, enum comm_path p);
enum comm_path comm_get_path(const struct comm *c); /* the requested path */

/* Wire precision of the halo rows and gradients of training steps (--halo-bits; an
 * approximation, opt-in): 32 (the default) sends floats, exact; 16, 8 or 4 sends each
 * row as its range and one code of that many bits per value, rounded stochastically
 * (unbiased, within one step (max - min) / (2^bits - 1) of the value; deterministic
 * run to run). The exchanges that read it (comm_exchange_create's, jaca/'s) code the
 * rows of training steps only (tag epoch > 0): evaluation and the set-up exchange of
 * the input features stay exact. Coding happens in host memory, so on a device
 * backend it needs the staged path (comm_halo_set_quant). Rows written into a node's
 * shared memory (jaca/) are not coded: only what goes through MPI. Local; CG_ERR_ARG
 * for another value. */
int comm_set_halo_bits(struct comm *c, int bits);
int comm_halo_bits(const struct comm *c); /* 32 unless set */

/* The path an object created now over backend `be` would use (AUTO resolved),
 * without creating one. Starts NCCL if that is the answer and it is not running yet
 * (the NCCL communicator lives until comm_finalize). Logs the choice at INFO when it
 * differs from the last one announced. Collective over the world, like the create
 * calls, which call it; errors are returned on every rank. */
int comm_path_resolve(struct comm *c, struct cg_backend *be, enum comm_path *out);

/* "auto", "host", "nccl", "mpi-cuda", "mpi-staged" ("?" for other values). */
const char *comm_path_name(enum comm_path p);
/* The command-line names auto | nccl | mpi-cuda | mpi-staged -> path; CG_ERR_ARG
 * listing them for anything else. */
int comm_path_parse(const char *s, enum comm_path *out);

/* How the gradient all-reduce (comm_grad_allreduce) adds the ranks' buffers on the MPI
 * paths (mpi/allreduce.c):
 *  MPI   MPI_Allreduce: the library's algorithm and summation order;
 *  FLAT  ours, in a fixed order: per value, each node's ranks in local-rank order, then
 *        the nodes in node order; a reduce-scatter and an all-gather over all ranks;
 *  HIER  the same order and the same bits as FLAT, hierarchically: inside each node,
 *        among the nodes (each segment once per node), inside the node again; needs
 *        the same number of ranks on every node;
 *  AUTO  (default) HIER when the job spans several nodes (CAPGNN_EMULATE_NODES
 *        included) with the same number of ranks on each, else MPI.
 * The NCCL path always uses ncclAllReduce (NCCL's own order). */
enum comm_allreduce { COMM_ALLREDUCE_AUTO = 0, COMM_ALLREDUCE_MPI, COMM_ALLREDUCE_FLAT, COMM_ALLREDUCE_HIER };
/* Request an algorithm for the comm_grad objects created afterwards. Local. */
int comm_set_allreduce(struct comm *c, enum comm_allreduce a);
/* The algorithm AUTO (or the request) comes to on this job; CG_ERR_UNSUPPORTED on every
 * rank for HIER with uneven nodes. Collective. */
int comm_allreduce_resolve(struct comm *c, enum comm_allreduce *out);
const char *comm_allreduce_name(enum comm_allreduce a); /* "auto", "mpi", "flat", "hier" */
int comm_allreduce_parse(const char *s, enum comm_allreduce *out);

/* ---- small host collectives (all collective, blocking) ------------------- */

enum comm_op { COMM_SUM = 0, COMM_MAX = 1, COMM_MIN = 2 };

int comm_barrier(struct comm *c);
/* Broadcast `bytes` bytes of host memory from `root` (any size). */
int comm_bcast(struct comm *c, void *buf, size_t bytes, int root);
/* In-place all-reduce of n host values. */
int comm_allreduce_host(struct comm *c, double *v, int n, enum comm_op op);
int comm_allreduce_i64(struct comm *c, int64_t *v, int n, enum comm_op op);
/* In-place sum of *v over the ranks of this rank's physical host (comm_host_local_size
 * ranks, whatever CAPGNN_EMULATE_NODES says). Collective over the host. */
int comm_host_sum_i64(struct comm *c, int64_t *v);
/* out[comm_size(c)] receives every rank's `value` (out is host memory). */
int comm_allgather_i64(struct comm *c, int64_t value, int64_t *out);

/* out[comm_local_size(c)] receives the `value` of every rank of this node, by local
 * rank. Collective over the node. */
int comm_node_allgather_i64(struct comm *c, int64_t value, int64_t *out);
/* Variable gather over the node: every rank of the node contributes n values; all
 * receive them concatenated in local-rank order into `all` (sum of the node's n values;
 * query it first with comm_node_allgather_i64). Collective over the node. */
int comm_node_allgatherv_i64(struct comm *c, const int64_t *mine, int64_t n, int64_t *all);
/* Personalised exchange of host values over the world: send[sdispl...] of scount[q]
 * values to rank q, receive rcount[q] values from q into recv, packed in rank order
 * (displacements are the prefix sums of the counts). rcount must match what each q
 * sends (exchange the counts first, e.g. with comm_alltoall_i64). Collective. */
int comm_alltoallv_i64(struct comm *c, const int64_t *send, const int64_t *scount, int64_t *recv,
                       const int64_t *rcount);
/* recv[q] = the value send[r] of rank q for this rank r (one value per pair). Collective. */
int comm_alltoall_i64(struct comm *c, const int64_t *send, int64_t *recv);
int comm_node_barrier(struct comm *c);

/* Agree on a setup status: returns CG_OK when status >= 0 on every rank,
 * otherwise a negative status on EVERY rank. A rank whose own status failed keeps
 * its message; the others get "rank R failed during <what> (see its log)", R the
 * lowest failing rank. Lets every rank leave a failed setup together. */
int comm_agree(struct comm *c, int status, const char *what);
/* 1 when this rank's current error (cg_err_msg) is the "rank R failed during ..." that
 * comm_agree gave it for another rank's failure, not a failure of its own: a report of
 * an agreed set-up error prints each failing rank's own message once and leaves these
 * out (the failing rank says why; "see that rank's log" adds nothing). */
int comm_err_is_relay(const struct comm *c);

/* ---- measurement helpers (mpi/probe.c; the link benchmarks of rapa/ use them) --- */

/* Barrier over the ranks of this rank's physical host (comm_host_local_size ranks,
 * whatever CAPGNN_EMULATE_NODES says): lets the ranks of one host take turns on its
 * shared CPUs and GPUs. The wait does not spin (a non-blocking barrier polled every
 * millisecond), so waiting ranks leave the cores to the one whose turn it is.
 * Collective over the host. */
int comm_host_barrier(struct comm *c);

/* Gather one NUL-terminated string from every rank at `root`. On root, *out gets an
 * array of comm_size(c) strings (rank order, each cg_malloc'ed; release with
 * comm_texts_free(*out, comm_size(c))); elsewhere *out is NULL. Strings up to 1 GiB.
 * Collective over the world; on any rank's error every rank returns an error. */
int comm_gather_text(struct comm *c, const char *text, int root, char ***out);
void comm_texts_free(char **texts, int n); /* accepts NULL */

/* A blocking ping-pong of `bytes` bytes between this rank and `peer` (both call it
 * with the same bytes and reps; ranks other than the two do not take part). The lower
 * rank of the two is the initiator: per repetition it sends sbuf and receives the
 * echo into rbuf; the other receives into rbuf and sends rbuf back. After the call,
 * rbuf holds the initiator's sbuf on both ranks (the caller checks it: the payload
 * went there and back). seconds[r] (reps entries) is repetition r's round-trip time
 * on this rank's monotonic clock, synchronising the backend stream first on the
 * device paths. Paths:
 *  COMM_PATH_HOST      MPI_Send/MPI_Recv on host memory (`be` may be NULL);
 *  COMM_PATH_MPI_CUDA  the same on device pointers of `be` (a CUDA backend); needs a
 *                      CUDA-aware MPI (comm_lib_info), CG_ERR_UNSUPPORTED otherwise;
 *  COMM_PATH_NCCL      ncclSend/ncclRecv on be's stream; needs NCCL running, i.e. a
 *                      comm_path_resolve over `be` that answered COMM_PATH_NCCL
 *                      (CG_ERR_UNSUPPORTED otherwise).
 * 1 <= bytes <= 2^30, reps >= 1, peer a rank other than this one (CG_ERR_ARG). A
 * failure of the transport returns CG_ERR_MPI (or CG_ERR_CUDA); the peer may then be
 * left waiting, so treat it like a failure inside a step (comm_abort). */
int comm_pingpong(struct comm *c, struct cg_backend *be, enum comm_path path, int peer,
                  const void *sbuf, void *rbuf, size_t bytes, int reps, double *seconds);

/* What can be learnt about the communication libraries on this rank. */
struct comm_lib_info {
  char mpi_library[256];    /* MPI_Get_library_version, first line ("Open MPI v4.1.4, ...") */
  int mpi_version, mpi_subversion; /* MPI standard, e.g. 3.1 */
  int cuda_aware;           /* MPI takes device pointers (see comm_set_path) */
  char cuda_aware_how[160]; /* where that answer came from */
  int nccl_version;         /* ncclGetVersion (e.g. 22703), 0 when the build has no NCCL */
  /* The transport as far as the environment tells it: Open MPI's OMPI_MCA_pml and
   * OMPI_MCA_btl, UCX_TLS when set, and the InfiniBand devices under
   * /sys/class/infiniband ("none" when there are none). */
  char transport[256];
};
/* Local (not collective). */
int comm_lib_info(struct comm *c, struct comm_lib_info *out);

/* ---- memory shared by the ranks of a host ------------------------------------- */

/* `bytes` zeroed bytes for each rank of this host in one block that every rank of the
 * host sees (MPI_Win_allocate_shared over the host's ranks): host-local rank r's part
 * starts at *base + r * bytes. For data another process of the host reads without
 * calling MPI: the stall watchdog's progress slots (core/watchdog.h). Collective over
 * the world (each host's ranks allocate together; on any rank's error every rank
 * returns an error). One block per struct comm: a later call returns the same block
 * (CG_ERR_ARG for another size). Freed by comm_finalize. */
int comm_host_shared(struct comm *c, size_t bytes, void **base);

/* ---- counters -------------------------------------------------------------- */

struct comm_stats {
  /* Bytes SENT by this rank (float32 payload, 4 bytes per value). Halo forward:
   * rows this rank owns that peers hold as halo, times cols; halo backward: this
   * rank's halo rows times cols (the gradients go back to their owners; jaca/'s
   * gradient returns too, over their own plans: comm_halo_count_as).
   * All-reduce: the size of the buffer (the payload this rank contributes; the
   * wire traffic depends on MPI's algorithm). */
  int64_t halo_fwd_bytes, halo_bwd_bytes, allreduce_bytes;
  int64_t halo_fwd_calls, halo_bwd_calls, allreduce_calls;
  /* The bytes this rank sent, split by where they went: to ranks of its own node or of
   * other nodes. Halo: forward rows and returned gradients (halo_fwd_bytes +
   * halo_bwd_bytes = intra + inter). All-reduce: what the FLAT and HIER algorithms send
   * (wire bytes, not the buffer size above); 0 for MPI_Allreduce and NCCL, whose
   * traffic is the library's. */
  int64_t halo_intra_bytes, halo_inter_bytes, allreduce_intra_bytes, allreduce_inter_bytes;
  /* Seconds inside begin, progress and end (halo) and inside the all-reduce incl.
   * staging. */
  double halo_fwd_s, halo_bwd_s, halo_s /* = fwd + bwd */, allreduce_s;
};

void comm_stats_get(const struct comm *c, struct comm_stats *s);
void comm_stats_reset(struct comm *c);

/* ---- node shared memory -------------------------------------------------------- */

/* One shared-memory segment per node: an MPI_Win_allocate_shared window on the node
 * communicator (real or emulated node, comm_init). Every rank of the node gives the
 * size of its own part (0 is fine); every rank of the node can read and write every
 * part through its own mapping (comm_shm_part). The parts are contiguous in local-rank
 * order (MPI's default), so the part of local rank 0 with the node's total size is
 * one node-wide segment (comm_shm_node). Base addresses differ between processes:
 * store offsets in the segment, never pointers. Parts are 8-byte aligned (align larger
 * units yourself). The memory starts zeroed (set here, with a node barrier).
 *
 * Concurrency is the caller's: MPI only provides the memory (the window is never used
 * for RMA calls). Ordering between processes comes from C11 atomics on the shared
 * memory (jaca/'s row sequence numbers) or a node barrier (comm_node_barrier).
 *
 * Hygiene (what Open MPI 4.1 does, tested by mpi/tests/test_shm.c and
 * run_shm_kill.sh): the segment is a file under /dev/shm (osc_sm.<host>.<jobid>...)
 * created with mode 0600, mapped by every rank of the node and unlinked as soon as
 * they have all attached, before comm_shm_create returns. So nothing stays behind
 * whatever ends the job: a normal exit (comm_shm_destroy, or process exit), an error
 * (comm_abort), SIGTERM or SIGKILL of any rank: the kernel frees the memory when the
 * last mapping goes. Open MPI's own shared-memory transport files (vader_segment.*)
 * are removed by mpirun when the job ends, also after a SIGKILL (checked by the same
 * script). Only a rank killed inside comm_shm_create, between the file's creation and
 * its unlink, could leave a file behind; mpirun's session clean-up does not know it.
 *
 * Collective over the world (every rank of every node calls it; an error on any rank
 * fails every rank, comm_agree; a segment that does not fit the backing folder too,
 * before it is allocated; a failed allocation past that check ends the job,
 * comm_abort). Release with comm_shm_destroy (collective over the
 * node; destroy every segment before comm_finalize). */
struct comm_shm;
int comm_shm_create(struct comm *c, size_t bytes, struct comm_shm **out);
/* The folder whose files back the node segments (Open MPI's osc_sm_backing_directory,
 * its effective value read through MPI_T once MPI is initialised, so mpirun --mca, the
 * environment and MCA parameter files all count; else $OMPI_MCA_osc_sm_backing_directory,
 * else /dev/shm), and its free bytes (-1 when it
 * cannot be read). comm_shm_create checks the host's segments against it first (those
 * of nodes of more than one rank: a one-rank node's window is private memory). */
const char *comm_shm_dir(void);
int64_t comm_shm_free_bytes(void);
/* *fits: whether comm_shm_create(c, bytes) would pass that check on every node (the same
 * on every rank). Collective over the world. */
int comm_shm_fits(struct comm *c, size_t bytes, int *fits);
void comm_shm_destroy(struct comm_shm **s); /* accepts NULL; sets *s to NULL */
/* The part of local rank `local_rank` in this process' mapping and its size in bytes
 * (*bytes may be NULL); NULL for a rank that is not on the node. */
void *comm_shm_part(const struct comm_shm *s, int local_rank, size_t *bytes);
/* The whole node-wide segment (all parts, contiguous) and its size. */
void *comm_shm_node(const struct comm_shm *s, size_t *bytes);

/* ---- gradient all-reduce ----------------------------------------------------- */

/* Prepare the all-reduce of a flat float buffer of n values living in backend
 * memory of `be`, over the path comm_path_resolve picks (see enum comm_path). For
 * the staged path a host buffer of n floats is allocated here (pinned for the CUDA
 * backend); nothing is allocated later. Collective: every rank must pass the same
 * n (checked); on any rank's error every rank returns an error.
 * `c` and `be` must outlive the object. Release with comm_grad_destroy. */
int comm_grad_create(struct comm *c, struct cg_backend *be, int64_t n, struct comm_grad **out);
/* Sum buf[0..n) over all ranks, in place. Collective.
 *  HOST: be->sync, then MPI_Allreduce on buf (chunks of 2^30 values beyond that).
 *  MPI_CUDA: be->sync, then MPI_Allreduce on the device buffer.
 *  MPI_STAGED: async copy to the pinned buffer on the backend stream, stream sync,
 *    MPI_Allreduce, async copy back (enqueued; later ops on the stream see it).
 *    Wrapped device backends: be->download / be->upload (synchronous).
 *  NCCL: ncclAllReduce in place, enqueued on the backend stream; returns before it
 *    completes (later ops on the stream, and be->sync, see the sum).
 * The MPI paths add with the algorithm comm_set_allreduce asked for (resolved at
 * create, comm_allreduce_resolve): MPI_Allreduce (the library's order) or FLAT / HIER
 * (mpi/allreduce.c: a fixed order, the same bits for both; on MPI_CUDA the buffer is
 * then staged through host memory like MPI_STAGED, synchronously). NCCL adds in
 * NCCL's order. Results are bit-identical across paths only where the sum is exact
 * (tests use integers), and across FLAT and HIER always. */
int comm_grad_allreduce(struct comm_grad *g, float *buf);
void comm_grad_destroy(struct comm_grad **g);             /* accepts NULL; sets *g to NULL */
enum comm_path comm_grad_path(const struct comm_grad *g); /* the path it uses */
/* The algorithm it adds with (MPI, FLAT or HIER; MPI for the NCCL path, which has its own). */
enum comm_allreduce comm_grad_algorithm(const struct comm_grad *g);
/* Bytes this rank has contributed through g since it was created: n x 4 per
 * comm_grad_allreduce that succeeded (what it adds to comm_stats' allreduce_bytes).
 * Counts g alone: other objects on the same comm do not add to it and
 * comm_stats_reset does not clear it. */
int64_t comm_grad_bytes_sent(const struct comm_grad *g);
/* Wire bytes g's FLAT / HIER sums sent to ranks of other nodes since create (0 for
 * MPI_Allreduce and NCCL, whose traffic is the library's). */
int64_t comm_grad_inter_bytes_sent(const struct comm_grad *g);

/* ---- halo exchange ------------------------------------------------------------ */

/* One rank's exchange plan, in local row ids. Rows [0, n_inner) are the rows this
 * rank owns; rows [n_inner, n_inner + n_halo) are halo rows owned by others.
 * For each peer i (peer[i] strictly ascending, none equal to this rank):
 *  - send: the send_count[i] local ids send_idx[send_offset[i] ...] (each in
 *    [0, n_inner), no repeats within one peer) are the rows peer[i] holds as halo,
 *    in the order of that peer's receive block;
 *  - recv: the halo block of recv_count[i] rows at halo rows
 *    n_inner + recv_offset[i] ... holds the rows owned by peer[i].
 * Both are packed in peer order: send_offset[i] and recv_offset[i] are the sums of
 * the counts before i. Received rows fill halo rows [0, sum recv_count) and
 * sum recv_count <= n_halo (rows beyond are never written).
 * A peer may have one count zero (traffic in one direction only). The arrays are
 * copied by comm_halo_create; the caller keeps ownership. */
struct comm_halo_plan {
  int npeers;
  const int32_t *peer;
  const int64_t *send_offset, *send_count;
  const int32_t *send_idx;
  const int64_t *recv_offset, *recv_count;
  int64_t n_inner, n_halo;
};

/* Build the exchange: checks the plan (locally, then that what each rank sends
 * to each peer is what that peer expects to receive), creates a distributed-graph
 * communicator over the ranks this rank exchanges with in either direction
 * (MPI_Dist_graph_create_adjacent; a rank with no peers works), and allocates all
 * buffers for rows of up to max_cols values: a backend buffer of the send rows and
 * the device index list (be->alloc + be->upload), and for the staged path host
 * buffers (pinned for the CUDA backend). The path is chosen here (comm_path_resolve).
 * Collective over the world: on any rank's error every rank returns an error (see
 * comm_agree).
 * `c` and `be` must outlive the object. Release with comm_halo_destroy. */
int comm_halo_create(struct comm *c, struct cg_backend *be, const struct comm_halo_plan *plan,
                     int64_t max_cols, struct comm_halo **out);
void comm_halo_destroy(struct comm_halo **h); /* accepts NULL; sets *h to NULL */

/* One halo exchange, in either direction (enum cg_halo_dir, core/exchange.h):
 *  CG_HALO_FORWARD   owners send their boundary rows; x's halo rows get filled:
 *    received rows are in x rows [n_inner, n_inner + sum recv_count) for every later
 *    op on the backend stream.
 *  CG_HALO_BACKWARD  the gradients of halo rows go back to their owners, which ADD
 *    them to their inner rows (the reverse of the forward plan: x rows [n_inner, ...)
 *    are sent). end adds each received block into x's inner rows with
 *    be->scatter_add_rows, one call per peer in ascending peer order, so the result
 *    does not depend on arrival order (an inner row held by several peers receives
 *    from each). Halo rows of x are left as they were.
 * x is backend memory of (n_inner + n_halo) x cols floats, row stride cols,
 * 1 <= cols <= max_cols. begin starts the transfer (forward: after gathering the send
 * rows with be->gather_rows on the backend stream); end completes it. Per path (fixed
 * at create, see enum comm_path), the same in both directions:
 *  HOST: after be->sync, a non-blocking neighbourhood all-to-all
 *    (MPI_Ineighbor_alltoallv) between backend memory directly; end waits.
 *  MPI_CUDA: the same with device pointers, but as MPI_Irecv/MPI_Isend per
 *    neighbour (CUDA-aware MPI supports device buffers in point-to-point calls,
 *    not in non-blocking collectives); in a job where some rank uses MPI_CUDA,
 *    every rank's exchange of that object uses point-to-point calls, so they match.
 *  MPI_STAGED: async copy of the rows to send to pinned host memory, stream sync,
 *    neighbourhood all-to-all between host buffers; end waits and enqueues the async
 *    copy of the received rows to their place (wrapped backends: be->download /
 *    be->upload).
 *  NCCL: one group of ncclSend/ncclRecv per neighbour on the exchange's own stream
 *    (created at create), after the backend stream's work so far (an event), received
 *    straight into place; begin returns at once, and kernels the caller enqueues on the
 *    backend stream before end run beside the transfer. end makes the backend stream
 *    wait for the transfer (an event) and then enqueues nothing forward and the adds
 *    backward.
 * Between begin and end: forward, x's halo rows must not be used, inner rows may be
 * read; backward, x's halo rows must not be modified, inner rows may be read and
 * written (end's adds come after those writes); in both, x must stay allocated (MPI or
 * NCCL may write it any time before end returns). end must get the same direction,
 * x and cols as begin. One exchange per object in flight; every rank calls begin/end
 * in the same order (collective).
 * Counters (comm_stats): begin adds the bytes sent (forward: sum send_count rows,
 * backward: sum recv_count rows, times cols x 4) and one call to the direction's
 * counters; begin, progress and end add their time to its seconds. begin adds the
 * same bytes to h's own count (comm_halo_bytes_sent).
 * Misuse (unknown direction, cols out of range, NULL x with rows, begin while an
 * exchange is in flight, end without the matching begin or with another x or cols)
 * returns CG_ERR_ARG locally, with a message naming the call and the direction. */
int comm_halo_begin(struct comm_halo *h, enum cg_halo_dir dir, float *x, int64_t cols);
int comm_halo_end(struct comm_halo *h, enum cg_halo_dir dir, float *x, int64_t cols);
/* The same exchange with the halo block somewhere else: forward, the received rows land
 * in `recv` (rows [0, comm_halo_recv_rows) of width cols, backend memory) instead of
 * x's rows from n_inner; backward, the gradients sent back are read from `recv`, and
 * the owners add what they receive into x's inner rows as above. x is read (forward:
 * the rows to send) or written (backward) in its rows [0, n_inner) only, so it may hold
 * just those. For a halo cache that routes rows through a node's shared memory instead
 * of placing them straight into x (jaca/). `recv` NULL is comm_halo_begin / comm_halo_end.
 * Everything else (paths, counters, rules between begin and end) as above; end must get
 * the same x, recv and cols as begin. */
int comm_halo_begin_into(struct comm_halo *h, enum cg_halo_dir dir, float *x, float *recv,
                         int64_t cols);
int comm_halo_end_into(struct comm_halo *h, enum cg_halo_dir dir, float *x, float *recv,
                       int64_t cols);
/* Advance the exchange in flight without waiting (core/exchange.h, Progress): MPI
 * paths test their requests (MPI_Testall; Open MPI moves a large message over shared
 * memory only inside MPI calls such as this one), NCCL queries its stream's event.
 * Returns 1 when the transfer has completed (end then waits for no peer; the staged
 * path's copy into place and backward's adds still happen in end), 0 when it is under
 * way, a negative cg_status on failure; CG_ERR_ARG when no exchange is in flight. Call
 * it on the thread that called begin. Costs one MPI_Testall (or event query) when
 * there is nothing to move. */
int comm_halo_progress(struct comm_halo *h);
/* begin + end. */
int comm_halo_exchange(struct comm_halo *h, enum cg_halo_dir dir, float *x, int64_t cols);

/* Code the rows of the exchanges begun from now on with `bits` bits per value (16, 8
 * or 4; 32: floats, exact; see comm_set_halo_bits for the format). Between exchanges
 * only. Counters then count the coded bytes (rows * (8 + ceil(cols * bits / 8))).
 * CG_ERR_UNSUPPORTED below 32 bits on the NCCL and MPI_CUDA paths (they move device
 * memory: use the staged path), CG_ERR_ARG for another width or while in flight.
 * Local (every rank of an exchange must ask the same, as they call begin together). */
int comm_halo_set_quant(struct comm_halo *h, int bits);
/* The rounding stream of the coded begins from now on: a key naming what they carry
 * (e.g. epoch, layer, direction), so that the same exchange of the same values codes
 * alike in every run, a resumed one included; begins under one key are told apart by
 * their order. Local. */
void comm_halo_set_quant_key(struct comm_halo *h, uint64_t key);
/* The comm_stats counters h's exchanges go to, from now on: CG_HALO_BACKWARD counts
 * every call as backward whatever direction it names. For an object over a plan from
 * consumers to owners that carries gradients with CG_HALO_FORWARD calls (jaca/'s
 * gradient returns): its bytes are gradients. Default: the call's direction. Local. */
void comm_halo_count_as(struct comm_halo *h, enum cg_halo_dir dir);
/* Bytes of one row of `cols` values on the wire at `bits` (32: cols x 4). */
int64_t comm_halo_row_bytes(int64_t cols, int bits);

/* Rows this rank sends in a forward exchange (sum send_count) and receives (sum
 * recv_count): bytes per exchange are rows * cols * 4 (unquantised). */
int64_t comm_halo_send_rows(const struct comm_halo *h);
int64_t comm_halo_recv_rows(const struct comm_halo *h);
/* The path the exchange uses (fixed at create; see enum comm_path). */
enum comm_path comm_halo_path(const struct comm_halo *h);
/* Bytes this rank has sent through h since it was created, forward and backward: what
 * each comm_halo_begin that succeeded adds to comm_stats (see Counters above). Counts
 * h alone: other objects on the same comm do not add to it and comm_stats_reset does
 * not clear it. */
int64_t comm_halo_bytes_sent(const struct comm_halo *h);
/* The part of it sent to ranks of other nodes. */
int64_t comm_halo_inter_bytes_sent(const struct comm_halo *h);

/* ---- variable-length halo exchange (host memory) ------------------------------ */

/* An exchange over a comm_halo_plan's peers and counts (send_idx, n_inner and n_halo
 * are not used) in which each rank sends each peer only the rows it picks this time,
 * and the peer learns which: for jaca/'s adaptive staleness, where which rows travel
 * depends on the data. One message per peer with send rows (possibly empty) holding the
 * picked rows' positions in the peer's block and the rows (the whole block: the rows
 * alone, under another tag); the receiver posts its whole block and learns the count
 * from the message's size (MPI_Get_count). Host memory only.
 * create checks that what each rank may send each peer is what that peer receives
 * (collective over the world; every rank fails together), allocates buffers for rows of
 * up to max_cols values and its own communicator (a dup of the world). */
struct comm_vhalo;
int comm_vhalo_create(struct comm *c, const struct comm_halo_plan *plan, int64_t max_cols, struct comm_vhalo **out);
void comm_vhalo_destroy(struct comm_vhalo **h); /* accepts NULL; sets *h to NULL */
/* rows: host, sum send_count rows of `cols` values in plan order (peer blocks); sel: one
 * flag per such row, nonzero = send it. Both are read during begin only (packed). */
int comm_vhalo_begin(struct comm_vhalo *h, const float *rows, const unsigned char *sel, int64_t cols);
/* Tests the requests (1 once all completed, 0 while under way). */
int comm_vhalo_progress(struct comm_vhalo *h);
/* Waits; each received row goes to its place in `recv` (host, sum recv_count rows of
 * `cols` values in plan order, the blocks by peer), got[k] = 1 for the rows received and
 * 0 for the others (whose place in recv is not written); *nrecv (may be NULL) the rows
 * received. A message that is not whole rows within the block, or names a row twice,
 * is CG_ERR_INTERNAL. */
int comm_vhalo_end(struct comm_vhalo *h, float *recv, unsigned char *got, int64_t cols, int64_t *nrecv);
int64_t comm_vhalo_send_rows(const struct comm_vhalo *h);
int64_t comm_vhalo_recv_rows(const struct comm_vhalo *h);
/* Which comm_stats counters the exchanges go to (comm_halo_count_as): forward by
 * default, CG_HALO_BACKWARD for an object that returns gradients to their owners. */
void comm_vhalo_count_as(struct comm_vhalo *h, enum cg_halo_dir dir);
/* Bytes sent since create (positions, where sent, and rows; counted in comm_stats' halo
 * forward or backward bytes, comm_vhalo_count_as, and intra/inter-node bytes too), and
 * the part of them to other nodes; 0 for NULL. */
int64_t comm_vhalo_bytes_sent(const struct comm_vhalo *h);
int64_t comm_vhalo_inter_bytes_sent(const struct comm_vhalo *h);

/* ---- the exchange seam -------------------------------------------------------- */

/* The plain exchange of core/exchange.h over MPI/NCCL: a comm_halo over `plan` for
 * rows of up to max_cols values (comm_halo_create; halo_progress is comm_halo_progress),
 * the flat gradient all-reduce
 * (comm_grad, created at the first call with that call's size and again when the size
 * changes: every rank reaches it together) and host reductions over the world.
 * Counters: those of its own objects since the exchange was created, counted like
 * comm_stats (halo_bytes = comm_halo_bytes_sent, allreduce_bytes = the sum of
 * comm_grad_bytes_sent over its gradient objects); other objects on c and
 * comm_stats_reset do not change them; no cache, so cache counters stay 0. Errors
 * name the failing call and its size.
 * Collective over the world (every rank fails together); `c` and `be` must outlive
 * it. Release with cg_exchange_destroy (collective). */
int comm_exchange_create(struct comm *c, struct cg_backend *be, const struct comm_halo_plan *plan,
                         int64_t max_cols, struct cg_exchange **out);

#ifdef __cplusplus
}
#endif
#endif
