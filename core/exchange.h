/* core/exchange.h — the exchange seam: how a model reaches the other ranks.
 *
 * The model (runtime/) talks to other ranks only through this table: the halo
 * exchange, begun and ended per direction, the flat gradient all-reduce, small
 * reductions of host values, and the counters behind the metrics. What sits behind
 * it is the implementation's business: mpi/ provides the plain exchange
 * (comm_exchange_create in mpi/comm.h); a halo cache or a fault injector wraps
 * another exchange and forwards what it does not serve itself. A single process
 * trains with no exchange at all (NULL).
 *
 * Every member of struct cg_exchange is required but one: an implementation fills
 * them all (one that has nothing to count reports zeros), and a caller may call any of
 * them without checking for NULL (rt_model_create refuses an incomplete table). The
 * exception is halo_progress, added later (issue #14): NULL means the implementation
 * has nothing to drive, so that an exchange written before it keeps working unchanged;
 * call it through cg_exchange_halo_progress.
 *
 * Rows are laid out as in ARCHITECTURE.md: local rows [0, n_inner) are this rank's
 * own ("inner"), rows [n_inner, n_inner + n_halo) are halo rows owned by others.
 * Matrices are backend memory of the backend the exchange was created over, row
 * stride `cols`, and calls are enqueued on that backend's stream where the
 * implementation uses one.
 *
 * Direction:
 *  CG_HALO_FORWARD   the owners' rows fill the halo rows of x.
 *                    Between begin and end the halo rows of x must not be read or
 *                    written; inner rows may be read, not written.
 *  CG_HALO_BACKWARD  the halo rows of dx (gradients) go back to their owners, which
 *                    ADD them into their inner rows (the reverse of FORWARD); the
 *                    halo rows of dx are left as they were. Between begin and end
 *                    the halo rows of dx must not be written; inner rows may be read
 *                    and written: the owners' adds happen in end, after whatever the
 *                    caller wrote there before calling it (so an implementation
 *                    reads no inner row of dx before end).
 * What may run between begin and end is what an overlapped schedule computes there
 * (runtime/model.c: the inner rows of an aggregation, which need no halo row); the
 * result must not depend on whether anything ran between them.
 * end must get the same direction, tag, matrix and cols as the begin it completes;
 * one halo exchange is in flight at a time, and every rank calls begin and end in
 * the same order with the same tags (the calls are collective over the ranks that
 * share halos).
 *
 * Progress. An implementation may move data only inside its own calls (MPI without
 * an asynchronous progress thread, as Open MPI over shared memory: a large message
 * moves when the receiver is inside an MPI call). A caller that computes between
 * begin and end therefore calls halo_progress now and then (between row blocks): it
 * advances the exchange in flight without waiting and says whether its transfer has
 * completed (end will then not wait for a peer). It is called on the thread that
 * calls begin and end (MPI_THREAD_FUNNELED: no other thread makes MPI calls), only
 * between a begin and its end, any number of times, also after it has returned 1;
 * calling it or not never changes a result.
 *
 * The tag (struct cg_halo_tag) says which rows move: an implementation that keeps
 * state per layer (a halo cache: rows keyed by layer, aged by epoch against its
 * staleness bound) reads it; the plain exchange ignores it.
 *
 * Errors are returned as a negative cg_status with a message naming the failing
 * call and its size (the log prefix adds the rank). Inside a training step such an
 * error is fatal to the job: a peer may be waiting in a collective (the caller ends
 * the job, comm_abort).
 */
#ifndef CAPGNN_CORE_EXCHANGE_H
#define CAPGNN_CORE_EXCHANGE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum cg_halo_dir { CG_HALO_FORWARD = 0, CG_HALO_BACKWARD = 1 };
enum cg_reduce { CG_REDUCE_SUM = 0, CG_REDUCE_MAX = 1 };

/* Which rows an exchange moves, for implementations that keep state per layer.
 *  layer  the model layer whose input (forward) or input gradient (backward) moves:
 *         0 = the input features (fetched once at set-up; no gradient goes back),
 *         l > 0 = layer l's input, or its transformed rows Hd·W when layer l
 *         transforms first, and their gradients backward (runtime/model.c).
 *  epoch  the training epoch of the step (>= 1); 0 outside training: evaluation
 *         and set-up (the features' exchange). */
struct cg_halo_tag {
  int layer;
  uint32_t epoch;
};

/* Cumulative counters since the exchange was created; the runtime reports the
 * per-epoch differences. Bytes are those this rank SENDS, so that the sum over
 * ranks is the traffic. */
struct cg_exchange_counters {
  int64_t halo_bytes;      /* forward rows it owns + backward gradients of its halo rows */
  int64_t allreduce_bytes; /* flat gradient buffer size per all-reduce */
  int64_t cache_hits;      /* halo rows served from a cache ... */
  int64_t cache_lookups;   /* ... of those looked up; both 0 without a cache */
  int64_t inter_node_bytes; /* of halo_bytes and the all-reduce's wire bytes, those sent to
                               ranks of other nodes (0 on one node, and for an all-reduce
                               whose traffic is the library's) */
};

struct cg_exchange {
  /* Start / complete one halo exchange of x (forward) or dx (backward), see above. */
  int (*halo_begin)(struct cg_exchange *ex, enum cg_halo_dir dir, struct cg_halo_tag tag, float *x,
                    int64_t cols);
  int (*halo_end)(struct cg_exchange *ex, enum cg_halo_dir dir, struct cg_halo_tag tag, float *x,
                  int64_t cols);
  /* Sum buf[0..n) over the ranks, in place: the one flat gradient buffer per step. */
  int (*allreduce_grads)(struct cg_exchange *ex, float *buf, int64_t n);
  /* Sum or maximum over the ranks of n host doubles, in place (losses, counts). */
  int (*allreduce_host)(struct cg_exchange *ex, double *v, int n, enum cg_reduce op);
  /* The counters so far (struct cg_exchange_counters). */
  void (*counters)(const struct cg_exchange *ex, struct cg_exchange_counters *out);
  /* Release the exchange (collective when it holds communicators). */
  void (*destroy)(struct cg_exchange *ex);
  /* Optional (NULL: nothing to drive). Advance the halo exchange in flight without
   * blocking (see Progress above): 1 when its transfer has completed, 0 when it is
   * still under way, a negative cg_status on error (fatal in a step, like begin's).
   * Last in the table, so that an implementation written before it (positional or
   * zeroed initialisation) is unchanged. */
  int (*halo_progress)(struct cg_exchange *ex);
};

/* begin + end. */
static inline int cg_exchange_halo(struct cg_exchange *ex, enum cg_halo_dir dir,
                                   struct cg_halo_tag tag, float *x, int64_t cols) {
  int st = ex->halo_begin(ex, dir, tag, x, cols);
  return st < 0 ? st : ex->halo_end(ex, dir, tag, x, cols);
}

/* halo_progress when the implementation has one; 0 (under way, as far as the caller
 * can tell) when it has none. */
static inline int cg_exchange_halo_progress(struct cg_exchange *ex) {
  return ex->halo_progress ? ex->halo_progress(ex) : 0;
}

/* Accepts NULL and *ex NULL; sets *ex to NULL. */
static inline void cg_exchange_destroy(struct cg_exchange **ex) {
  if (ex && *ex) {
    (*ex)->destroy(*ex);
    *ex = NULL;
  }
}

#ifdef __cplusplus
}
#endif
#endif
