/* jaca/prefetch_internal.h — the prefetch queue of a caching exchange (issue #13 item 3):
 * one background thread per exchange that copies the node-tier rows a forward exchange
 * will read into the rank tier while the training thread computes, so that the
 * exchange's end waits only for rows not copied yet.
 *
 * A job is the list of node-tier rows one forward exchange reads: row k lives at
 * seg + row[k] * stride (a seqlock row, jaca/seqlock_internal.h), must reach generation
 * want[k], and goes to dst + k * cols (host memory: the rank tier's read area on the CPU
 * backend, the host staging buffer on a device backend) with its metadata in meta[k].
 * The thread and the training thread share the rows through a per-row claim (0 free,
 * 1 being copied, 2 done): whoever claims a row copies it, so each row is copied once,
 * by one thread, with the seqlock's read protocol (copy, re-check), which is the same
 * from any thread.
 *
 *  - The thread calls no MPI and no backend function: it only reads shared memory and
 *    writes host memory. The training thread keeps doing every MPI call (so MPI's
 *    thread level does not matter) and never waits on the segment before its own
 *    transfer has completed (jaca/exchange.c's design notes): the thread may wait on
 *    peers' rows meanwhile, which blocks nobody.
 *  - It never spins a core: a pass over the pending rows copies those published with
 *    the generation wanted; after a pass that copied nothing it sleeps on a condition
 *    variable for a nap that doubles from 20 us up to 1 ms (and is woken at once by a
 *    new job, by finish or by destroy); with no job, or every row of the job copied, it
 *    sleeps until the next job.
 *  - Timeouts are finish's (CAPGNN_JACA_TIMEOUT semantics: jaca_row_read_wait on each
 *    row the thread has not copied); the thread itself never fails, it only leaves
 *    rows for finish.
 *  - Shutdown: destroy sets a flag, wakes the thread and joins it; a job left active
 *    (an exchange that failed between begin and end) is simply dropped. */
#ifndef CAPGNN_JACA_PREFETCH_INTERNAL_H
#define CAPGNN_JACA_PREFETCH_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "jaca/seqlock_internal.h"

struct jaca_prefetch;

struct jaca_prefetch_job {
  const char *seg;      /* the layer's rows in the node tier */
  size_t stride;        /* bytes per row (jaca_row_stride) */
  const int64_t *row;   /* n rows: index into seg */
  const uint32_t *want; /* n: the generation each must hold */
  float *dst;           /* n x cols, host memory */
  struct jaca_row_meta *meta; /* n: what each copied row said about itself */
  int64_t n, cols;
};

/* What finish found (counters of one job). */
struct jaca_prefetch_result {
  int64_t prefetched; /* rows the thread had copied (or was copying) when finish began */
  int64_t in_end;     /* rows finish copied itself (waiting for their writers as needed) */
  int64_t torn;       /* torn seqlock copies thrown away, by either thread */
  int64_t wait_ns;    /* time finish took (waiting for and copying the rows left) */
};

/* Starts the thread; max_rows: the longest job (its per-row claims are allocated here).
 * CG_ERR_NOMEM / CG_ERR_INTERNAL (pthread) with a message. */
int jaca_prefetch_create(int64_t max_rows, struct jaca_prefetch **out);
/* Stops and joins the thread (a job in progress is dropped), frees; *pf = NULL. */
void jaca_prefetch_destroy(struct jaca_prefetch **pf);
/* Hands the thread a job (the arrays must stay valid until finish or the next submit);
 * a job still active is dropped first. CG_ERR_ARG when job->n exceeds max_rows. */
int jaca_prefetch_submit(struct jaca_prefetch *pf, const struct jaca_prefetch_job *job);
/* Completes the job: copies every row the thread has not (jaca_row_read_wait, at most
 * timeout_s per row), waits for a row the thread is copying, then takes the job back
 * (the thread no longer touches dst or meta once this returns). Returns -1 when every
 * row was copied, else the index of a row that did not reach its generation within
 * timeout_s (its last good metadata in meta[k]); r gets the job's counters either way. */
int64_t jaca_prefetch_finish(struct jaca_prefetch *pf, double timeout_s, struct jaca_prefetch_result *r);
/* CPU seconds the thread has used so far (its cost; -1 when the clock is unavailable). */
double jaca_prefetch_cpu_s(const struct jaca_prefetch *pf);
/* Rows of the current job the thread has copied so far (tests: waiting for it). */
int64_t jaca_prefetch_copied(const struct jaca_prefetch *pf);
/* Naps taken so far (passes that found nothing to copy). */
int64_t jaca_prefetch_naps(const struct jaca_prefetch *pf);

#endif
