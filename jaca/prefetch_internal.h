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
 *  - The thread calls no MPI and, of the backend, only a job's upload channel
 *    (upchan_upload, core/ops.h "side uploads"; device jobs only): it reads shared
 *    memory, writes host memory and enqueues copies. The training thread keeps doing
 *    every MPI call (so MPI's thread level does not matter) and every other backend
 *    call, and never waits on the segment before its own transfer has completed
 *    (jaca/exchange.c's design notes): the thread may wait on peers' rows meanwhile,
 *    which blocks nobody.
 *  - It never spins a core: a pass over the pending rows copies those published with
 *    the generation wanted; after a pass that copied nothing it sleeps on a condition
 *    variable for a nap that doubles from 20 us up to 1 ms (and is woken at once by a
 *    new job, by finish or by destroy); with no job, or every row of the job copied, it
 *    sleeps until the next job.
 *  - Timeouts are finish's (CAPGNN_JACA_TIMEOUT semantics: jaca_row_read_wait on each
 *    row the thread has not copied); the thread itself never fails, it only leaves
 *    rows for finish.
 *  - Shutdown: destroy sets a flag, wakes the thread and joins it; a job left active
 *    (an exchange that failed between begin and end) is simply dropped.
 *
 * Device jobs (job->ch set: a device backend with side uploads): dst is pinned host
 * staging (host_alloc) and the rows go on to d_dst + k * cols in device memory, the
 * rank tier. Who does what, and why it is right:
 *  - Staging rows: row k of dst is written by whoever claimed it (above), once per
 *    job; the thread's rows while the layer computes, finish's the rest.
 *  - Uploads: the thread enqueues the rows it copied on the channel (upchan_upload) in
 *    runs of consecutive k (jaca_run_*: copied in one pass, at most JACA_PF_RUN_BYTES
 *    each), after their copies, within the same pass, and marks them sent; finish's
 *    take-back waits for the pass, so when finish returns every row is either sent or
 *    left to jaca_prefetch_upload_rest, which enqueues the rows not sent (finish's,
 *    and any whose enqueue failed in the thread) in runs, then joins the channel
 *    (upchan_join). So each row is enqueued once (an enqueue that failed carried
 *    nothing: its rows go again from upload_rest), never before its copy into dst has
 *    finished (the enqueuer copied it itself, or sees it "done" after finish's
 *    take-back, which follows the copy).
 *  - The compute stream cannot read d_dst early: nothing on it reads d_dst between
 *    submit and upload_rest, and upload_rest's join makes every op enqueued after it
 *    wait (on the device) for every upload of the job.
 *  - Nothing is overwritten under a copy in flight: submit calls upchan_begin after it
 *    has taken the previous job back and before the thread sees the new one: the
 *    host waits there until the previous job's uploads are done (dst may be rewritten)
 *    and the new uploads are ordered after everything the stream had been given (its
 *    reads of d_dst from the previous use included).
 *  - Destroy and failure: a job abandoned after submit (its exchange failed) may leave
 *    uploads in flight; the next submit waits for them (upchan_begin), and the channel's
 *    owner destroys the queue, then the channel (upchan_destroy waits for its uploads),
 *    and only then frees dst and d_dst. An enqueue failing in the thread is counted and
 *    its message kept; upload_rest logs it and enqueues those rows again itself (a
 *    broken device then fails there, on the training thread, with a status). */
#ifndef CAPGNN_JACA_PREFETCH_INTERNAL_H
#define CAPGNN_JACA_PREFETCH_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "core/ops.h"
#include "jaca/seqlock_internal.h"

struct jaca_prefetch;

/* The most bytes one side upload of the thread carries: longer runs are cut, so that the
 * first rows travel while the thread still copies the next ones. */
#define JACA_PF_RUN_BYTES ((int64_t)1 << 20)

/* Grouping of rows (increasing indices) into runs of consecutive indices, each at most
 * max_len rows: the rows one upload carries. A pure helper (tested on its own). */
struct jaca_run {
  int64_t start, len, max_len;
};
/* An empty builder; max_len < 1 counts as 1. */
void jaca_run_init(struct jaca_run *r, int64_t max_len);
/* Adds row k (> every row added before): when k does not extend the open run, or the
 * open run is full, that run is closed: returns 1 with it in *start, *len (k opens the
 * next one); else 0. */
int jaca_run_push(struct jaca_run *r, int64_t k, int64_t *start, int64_t *len);
/* Closes the open run: 1 with it in *start, *len, 0 when none is open. */
int jaca_run_close(struct jaca_run *r, int64_t *start, int64_t *len);

struct jaca_prefetch_job {
  const char *seg;      /* the layer's rows in the node tier */
  size_t stride;        /* bytes per row (jaca_row_stride) */
  const int64_t *row;   /* n rows: index into seg */
  const uint32_t *want; /* n: the generation each must hold */
  float *dst;           /* n x cols, host memory (pinned for a device job) */
  struct jaca_row_meta *meta; /* n: what each copied row said about itself */
  int64_t n, cols;
  /* device jobs (see above; all NULL for a host job): the backend, its upload channel
   * (the backend's side uploads, core/ops.h) and the rows' place in device memory */
  struct cg_backend *be;
  struct cg_upchan *ch;
  float *d_dst; /* n x cols, backend memory */
};

/* What finish found (counters of one job). */
struct jaca_prefetch_result {
  int64_t prefetched; /* rows the thread had copied (or was copying) when finish began */
  int64_t in_end;     /* rows finish copied itself (waiting for their writers as needed) */
  int64_t torn;       /* torn seqlock copies thrown away, by either thread */
  int64_t wait_ns;    /* time finish took (waiting for and copying the rows left) */
  /* device jobs, filled by jaca_prefetch_upload_rest: */
  int64_t up_thread;  /* rows the thread enqueued on the channel */
  int64_t up_end;     /* rows upload_rest enqueued (finish's, and any the thread failed to) */
  int64_t up_calls;   /* upchan_upload calls that carried them (the runs) */
};

/* Starts the thread; max_rows: the longest job (its per-row claims are allocated here).
 * CG_ERR_NOMEM / CG_ERR_INTERNAL (pthread) with a message. */
int jaca_prefetch_create(int64_t max_rows, struct jaca_prefetch **out);
/* Stops and joins the thread (a job in progress is dropped), frees; *pf = NULL. */
void jaca_prefetch_destroy(struct jaca_prefetch **pf);
/* Hands the thread a job (the arrays must stay valid until finish or the next submit);
 * a job still active is dropped first. A device job: upchan_begin is called on its
 * channel (on this thread) before the thread sees the job. CG_ERR_ARG when job->n
 * exceeds max_rows; upchan_begin's status (the job is not started). */
int jaca_prefetch_submit(struct jaca_prefetch *pf, const struct jaca_prefetch_job *job);
/* Completes the job: copies every row the thread has not (jaca_row_read_wait, at most
 * timeout_s per row), waits for a row the thread is copying, then takes the job back
 * (the thread no longer touches dst or meta once this returns). Returns -1 when every
 * row was copied, else the index of a row that did not reach its generation within
 * timeout_s (its last good metadata in meta[k]); r gets the job's counters either way. */
int64_t jaca_prefetch_finish(struct jaca_prefetch *pf, double timeout_s, struct jaca_prefetch_result *r);
/* A device job, after finish returned -1 (on the training thread): enqueues on the
 * channel the rows not enqueued yet, in runs, then joins it (upchan_join): ops enqueued
 * on the backend afterwards see every row in d_dst. Fills r's up_* counters (the
 * others are finish's and stay). CG_OK at once for a host job; a channel call's status. */
int jaca_prefetch_upload_rest(struct jaca_prefetch *pf, struct jaca_prefetch_result *r);
/* CPU seconds the thread has used so far (its cost; -1 when the clock is unavailable). */
double jaca_prefetch_cpu_s(const struct jaca_prefetch *pf);
/* Rows of the current job the thread has copied so far (tests: waiting for it). */
int64_t jaca_prefetch_copied(const struct jaca_prefetch *pf);
/* Naps taken so far (passes that found nothing to copy). */
int64_t jaca_prefetch_naps(const struct jaca_prefetch *pf);

#endif
