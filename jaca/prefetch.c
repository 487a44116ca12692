/* jaca/prefetch.c — the prefetch queue's thread (see prefetch_internal.h).
 *
 * Design notes (the why):
 * - One job at a time: an exchange has one forward exchange in flight, so a queue of
 *   rows (the job) per exchange is all there is to serve; the thread is the exchange's,
 *   started at create and joined at destroy, not one per exchange in flight.
 * - Per-row claims (C11 atomics) rather than a lock around the copies: the training
 *   thread in finish and the prefetch thread walk the same rows without waiting for
 *   each other; a claimed row is copied by its claimer only, and "done" is stored with
 *   release after the copy, loaded with acquire before dst is used.
 * - The mutex guards only the job descriptor and the thread's "busy" flag: finish and
 *   submit wait until the thread has left its pass over the job (a pass is short: one
 *   look at each pending row), after which it touches none of the job's memory.
 * - The thread naps on a condition variable (CLOCK_MONOTONIC) instead of sleeping, so
 *   a new job or destroy wakes it at once; the nap grows while nothing is published
 *   (the writers are computing their layers) so that on an oversubscribed machine it
 *   takes the CPU from no one.
 * - Device jobs: the thread enqueues each run of rows as soon as it closes (a gap, the
 *   run's size cap or the end of the pass), so the uploads overlap its next copies and
 *   the layer's compute; the claim state "sent" (after "done") tells upload_rest which
 *   rows are still to go. The argument that this is right is in prefetch_internal.h. */
#include "jaca/prefetch_internal.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/log.h"
#include "core/status.h"
#include "core/timer.h"

#define PF_NAP_MIN_NS 20000L
#define PF_NAP_MAX_NS 1000000L

/* DONE: copied into dst; SENT: copied, and its upload enqueued (device jobs) */
enum { ROW_FREE = 0, ROW_BUSY = 1, ROW_DONE = 2, ROW_SENT = 3 };

struct jaca_prefetch {
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t work; /* the thread waits here: a job, or quit */
  pthread_cond_t idle; /* finish / submit wait here for busy == 0 */
  int started, quit, active, busy;
  uint64_t job_seq;
  struct jaca_prefetch_job job;
  int64_t max_rows;
  _Atomic int *state;   /* per row of the job: ROW_* */
  _Atomic int64_t torn; /* the thread's torn copies in this job */
  _Atomic int64_t naps;
  _Atomic int64_t copied; /* rows of this job the thread copied */
  /* device jobs: rows and upload calls the thread enqueued in this job; enqueues that
   * failed in the thread (ever), the first one's message (written once by the thread,
   * read by upload_rest after a take-back), and how many upload_rest has reported */
  _Atomic int64_t up_rows, up_calls, up_failed;
  char up_msg[256];
  int64_t up_warned;
};

void jaca_run_init(struct jaca_run *r, int64_t max_len) {
  r->start = 0;
  r->len = 0;
  r->max_len = max_len > 0 ? max_len : 1;
}

int jaca_run_push(struct jaca_run *r, int64_t k, int64_t *start, int64_t *len) {
  if (r->len > 0 && k == r->start + r->len && r->len < r->max_len) {
    r->len++;
    return 0;
  }
  const int closed = r->len > 0;
  if (closed) {
    *start = r->start;
    *len = r->len;
  }
  r->start = k;
  r->len = 1;
  return closed;
}

int jaca_run_close(struct jaca_run *r, int64_t *start, int64_t *len) {
  if (r->len == 0) return 0;
  *start = r->start;
  *len = r->len;
  r->len = 0;
  return 1;
}

/* Rows per upload: JACA_PF_RUN_BYTES of them, at least one. */
static int64_t run_rows(const struct jaca_prefetch_job *jb) {
  const int64_t row = jb->cols * (int64_t)sizeof(float);
  return row > 0 && JACA_PF_RUN_BYTES / row > 0 ? JACA_PF_RUN_BYTES / row : 1;
}

/* Enqueues rows [a, a + n) of a device job (staged in dst) on its channel. */
static int upload_run(const struct jaca_prefetch_job *jb, int64_t a, int64_t n) {
  const size_t off = (size_t)(a * jb->cols);
  return jb->be->upchan_upload(jb->be, jb->ch, jb->d_dst + off, jb->dst + off,
                               (size_t)(n * jb->cols) * sizeof(float));
}

/* The thread's enqueue of a run it copied: marks the rows sent, or on failure keeps the
 * message (once) and leaves them to upload_rest. */
static void thread_send(struct jaca_prefetch *pf, const struct jaca_prefetch_job *jb, int64_t a, int64_t n) {
  if (upload_run(jb, a, n) != CG_OK) {
    if (atomic_fetch_add_explicit(&pf->up_failed, 1, memory_order_relaxed) == 0)
      snprintf(pf->up_msg, sizeof pf->up_msg, "%s", cg_err_msg());
    cg_err_clear();
    return;
  }
  for (int64_t k = a; k < a + n; k++) atomic_store_explicit(&pf->state[k], ROW_SENT, memory_order_release);
  atomic_fetch_add_explicit(&pf->up_rows, n, memory_order_relaxed);
  atomic_fetch_add_explicit(&pf->up_calls, 1, memory_order_relaxed);
}

/* One look at every free row: copies those published with the generation wanted.
 * *left: rows not done yet. Returns the rows copied. */
static int64_t pass(struct jaca_prefetch *pf, const struct jaca_prefetch_job *jb, int64_t *left) {
  int64_t copied = 0, pending = 0, ra = 0, rn = 0;
  struct jaca_run run;
  jaca_run_init(&run, run_rows(jb));
  for (int64_t k = 0; k < jb->n; k++) {
    if (atomic_load_explicit(&pf->state[k], memory_order_acquire) != ROW_FREE) continue;
    const void *row = jb->seg + (size_t)jb->row[k] * jb->stride;
    /* cheap check before claiming: even sequence number, generation reached */
    const _Atomic uint32_t *w = row;
    const uint32_t s = atomic_load_explicit(&w[0], memory_order_acquire);
    const uint32_t gen = atomic_load_explicit(&w[1], memory_order_relaxed);
    if ((s & 1u) || gen < jb->want[k]) {
      pending++;
      continue;
    }
    int expect = ROW_FREE;
    if (!atomic_compare_exchange_strong_explicit(&pf->state[k], &expect, ROW_BUSY, memory_order_acq_rel,
                                                 memory_order_acquire))
      continue; /* finish took it */
    struct jaca_row_meta m;
    if (jaca_row_try_read(row, jb->dst + k * jb->cols, jb->cols, &m) && m.gen >= jb->want[k]) {
      jb->meta[k] = m;
      atomic_store_explicit(&pf->state[k], ROW_DONE, memory_order_release);
      atomic_fetch_add_explicit(&pf->copied, 1, memory_order_relaxed);
      copied++;
      if (jb->ch && jaca_run_push(&run, k, &ra, &rn)) thread_send(pf, jb, ra, rn);
    } else { /* torn: give it back, next pass */
      atomic_fetch_add_explicit(&pf->torn, 1, memory_order_relaxed);
      atomic_store_explicit(&pf->state[k], ROW_FREE, memory_order_release);
      pending++;
    }
  }
  if (jb->ch && jaca_run_close(&run, &ra, &rn)) thread_send(pf, jb, ra, rn);
  *left = pending;
  return copied;
}

static void deadline_in(struct timespec *ts, long ns) {
  clock_gettime(CLOCK_MONOTONIC, ts);
  ts->tv_nsec += ns;
  while (ts->tv_nsec >= 1000000000L) {
    ts->tv_nsec -= 1000000000L;
    ts->tv_sec++;
  }
}

static void *thread_main(void *arg) {
  struct jaca_prefetch *pf = arg;
  uint64_t done_seq = 0; /* the last job with every row copied */
  long nap = PF_NAP_MIN_NS;
  pthread_mutex_lock(&pf->mu);
  for (;;) {
    while (!pf->quit && (!pf->active || pf->job_seq == done_seq)) {
      nap = PF_NAP_MIN_NS;
      pthread_cond_wait(&pf->work, &pf->mu);
    }
    if (pf->quit) break;
    const struct jaca_prefetch_job jb = pf->job;
    const uint64_t seq = pf->job_seq;
    pf->busy = 1;
    pthread_mutex_unlock(&pf->mu);
    int64_t left = 0;
    const int64_t copied = pass(pf, &jb, &left);
    pthread_mutex_lock(&pf->mu);
    pf->busy = 0;
    pthread_cond_broadcast(&pf->idle);
    if (left == 0) {
      done_seq = seq;
      continue;
    }
    if (copied > 0) {
      nap = PF_NAP_MIN_NS;
      continue;
    }
    if (pf->quit || !pf->active || pf->job_seq != seq) continue;
    struct timespec ts;
    deadline_in(&ts, nap);
    atomic_fetch_add_explicit(&pf->naps, 1, memory_order_relaxed);
    const int rc = pthread_cond_timedwait(&pf->work, &pf->mu, &ts);
    if (rc == ETIMEDOUT && nap < PF_NAP_MAX_NS) nap *= 2;
  }
  pthread_mutex_unlock(&pf->mu);
  return NULL;
}

int jaca_prefetch_create(int64_t max_rows, struct jaca_prefetch **out) {
  *out = NULL;
  struct jaca_prefetch *pf = cg_calloc(1, sizeof *pf, "jaca: prefetch queue");
  if (!pf) return CG_ERR_NOMEM;
  pf->max_rows = max_rows > 0 ? max_rows : 0;
  pf->state = cg_calloc((size_t)(pf->max_rows > 0 ? pf->max_rows : 1), sizeof *pf->state, "jaca: prefetch row claims");
  if (!pf->state) {
    cg_free(pf);
    return CG_ERR_NOMEM;
  }
  int rc = pthread_mutex_init(&pf->mu, NULL);
  pthread_condattr_t ca;
  int cinit = 0;
  if (rc == 0) rc = pthread_condattr_init(&ca);
  if (rc == 0) {
    cinit = 1;
    rc = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  }
  if (rc == 0) rc = pthread_cond_init(&pf->work, &ca);
  if (rc == 0) rc = pthread_cond_init(&pf->idle, NULL);
  if (cinit) pthread_condattr_destroy(&ca);
  if (rc == 0) rc = pthread_create(&pf->thread, NULL, thread_main, pf);
  if (rc != 0) {
    /* the objects initialised before the failure are plain memory on Linux (no
     * resources to release); the thread was not started */
    cg_free(pf->state);
    cg_free(pf);
    return cg_err_set(CG_ERR_INTERNAL, "jaca: starting the prefetch thread: %s", strerror(rc));
  }
  pf->started = 1;
  *out = pf;
  return CG_OK;
}

/* Takes the job back from the thread (mutex held): when this returns the thread is
 * not in a pass and will not start one on this job. */
static void take_back(struct jaca_prefetch *pf) {
  pf->active = 0;
  while (pf->busy) pthread_cond_wait(&pf->idle, &pf->mu);
}

void jaca_prefetch_destroy(struct jaca_prefetch **pfp) {
  struct jaca_prefetch *pf = *pfp;
  if (!pf) return;
  *pfp = NULL;
  if (pf->started) {
    pthread_mutex_lock(&pf->mu);
    pf->quit = 1;
    pf->active = 0;
    pthread_cond_broadcast(&pf->work);
    pthread_mutex_unlock(&pf->mu);
    pthread_join(pf->thread, NULL);
  }
  pthread_cond_destroy(&pf->work);
  pthread_cond_destroy(&pf->idle);
  pthread_mutex_destroy(&pf->mu);
  cg_free(pf->state);
  cg_free(pf);
}

int jaca_prefetch_submit(struct jaca_prefetch *pf, const struct jaca_prefetch_job *job) {
  if (job->n < 0 || job->n > pf->max_rows)
    return cg_err_set(CG_ERR_ARG, "jaca: a prefetch job of %lld rows, the queue holds at most %lld",
                      (long long)job->n, (long long)pf->max_rows);
  if (job->ch && (!job->be || !job->d_dst || !job->be->upchan_begin || !job->be->upchan_upload ||
                  !job->be->upchan_join))
    return cg_err_set(CG_ERR_ARG, "jaca: a device prefetch job without a backend with side uploads");
  pthread_mutex_lock(&pf->mu);
  take_back(pf);
  if (job->ch) {
    /* the thread is out of every pass and sees no job: the previous job's uploads are
     * all enqueued; wait for them and order the new ones after the stream's work */
    pthread_mutex_unlock(&pf->mu);
    TRY(job->be->upchan_begin(job->be, job->ch));
    pthread_mutex_lock(&pf->mu);
  }
  for (int64_t k = 0; k < job->n; k++) atomic_store_explicit(&pf->state[k], ROW_FREE, memory_order_relaxed);
  atomic_store_explicit(&pf->torn, 0, memory_order_relaxed);
  atomic_store_explicit(&pf->copied, 0, memory_order_relaxed);
  atomic_store_explicit(&pf->up_rows, 0, memory_order_relaxed);
  atomic_store_explicit(&pf->up_calls, 0, memory_order_relaxed);
  pf->job = *job;
  pf->job_seq++;
  pf->active = 1;
  pthread_cond_signal(&pf->work);
  pthread_mutex_unlock(&pf->mu); /* the unlock publishes the states and the job */
  return CG_OK;
}

int64_t jaca_prefetch_finish(struct jaca_prefetch *pf, double timeout_s, struct jaca_prefetch_result *r) {
  const double t0 = cg_time_now();
  memset(r, 0, sizeof *r);
  pthread_mutex_lock(&pf->mu);
  const struct jaca_prefetch_job jb = pf->job;
  const int active = pf->active;
  pthread_mutex_unlock(&pf->mu);
  int64_t bad = -1;
  for (int64_t k = 0; active && k < jb.n && bad < 0; k++) {
    for (;;) {
      int expect = ROW_FREE;
      if (atomic_compare_exchange_strong_explicit(&pf->state[k], &expect, ROW_BUSY, memory_order_acq_rel,
                                                  memory_order_acquire)) {
        const void *row = jb.seg + (size_t)jb.row[k] * jb.stride;
        const int64_t torn =
            jaca_row_read_wait(row, jb.dst + k * jb.cols, jb.cols, jb.want[k], timeout_s, &jb.meta[k]);
        atomic_store_explicit(&pf->state[k], ROW_DONE, memory_order_release);
        if (torn < 0) bad = k;
        else {
          r->torn += torn;
          r->in_end++;
        }
        break;
      }
      if (expect == ROW_DONE || expect == ROW_SENT) { /* the thread copied it (and may have sent it) */
        r->prefetched++;
        break;
      }
      /* the thread is copying it (a few microseconds); if it gives the row back (a torn
       * copy), the next try claims it here and reads it with the timeout: a writer that
       * died mid-publish is reported, not waited for forever */
      sched_yield();
    }
  }
  pthread_mutex_lock(&pf->mu);
  take_back(pf);
  pthread_mutex_unlock(&pf->mu);
  r->torn += atomic_load_explicit(&pf->torn, memory_order_relaxed);
  r->wait_ns = (int64_t)((cg_time_now() - t0) * 1e9);
  return bad;
}

int jaca_prefetch_upload_rest(struct jaca_prefetch *pf, struct jaca_prefetch_result *r) {
  r->up_thread = r->up_end = r->up_calls = 0;
  pthread_mutex_lock(&pf->mu);
  const struct jaca_prefetch_job jb = pf->job;
  const int active = pf->active;
  pthread_mutex_unlock(&pf->mu);
  if (!jb.ch) return CG_OK;
  if (active) return cg_err_set(CG_ERR_ARG, "jaca_prefetch_upload_rest: the job is not finished");
  r->up_thread = atomic_load_explicit(&pf->up_rows, memory_order_relaxed);
  r->up_calls = atomic_load_explicit(&pf->up_calls, memory_order_relaxed);
  const int64_t failed = atomic_load_explicit(&pf->up_failed, memory_order_relaxed);
  if (failed > pf->up_warned) {
    LOG_WARN("jaca", "prefetch: %lld upload%s failed on the prefetch thread (the first: %s); their rows are "
             "uploaded from the training thread",
             (long long)(failed - pf->up_warned), failed - pf->up_warned == 1 ? "" : "s", pf->up_msg);
    pf->up_warned = failed;
  }
  struct jaca_run run;
  jaca_run_init(&run, run_rows(&jb));
  int64_t a = 0, n = 0;
  for (int64_t k = 0; k <= jb.n; k++) {
    int closed = 0;
    if (k == jb.n) closed = jaca_run_close(&run, &a, &n);
    else {
      const int s = atomic_load_explicit(&pf->state[k], memory_order_relaxed);
      if (s == ROW_SENT) continue;
      if (s != ROW_DONE)
        return cg_err_set(CG_ERR_INTERNAL, "jaca_prefetch_upload_rest: row %lld of the job was never copied",
                          (long long)k);
      closed = jaca_run_push(&run, k, &a, &n);
    }
    if (!closed) continue;
    TRY(upload_run(&jb, a, n));
    for (int64_t i = a; i < a + n; i++) atomic_store_explicit(&pf->state[i], ROW_SENT, memory_order_relaxed);
    r->up_end += n;
    r->up_calls++;
  }
  return jb.be->upchan_join(jb.be, jb.ch);
}

double jaca_prefetch_cpu_s(const struct jaca_prefetch *pf) {
  clockid_t cid;
  struct timespec ts;
  if (!pf || pthread_getcpuclockid(pf->thread, &cid) != 0 || clock_gettime(cid, &ts) != 0) return -1.0;
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int64_t jaca_prefetch_naps(const struct jaca_prefetch *pf) {
  return pf ? atomic_load_explicit(&pf->naps, memory_order_relaxed) : 0;
}

int64_t jaca_prefetch_copied(const struct jaca_prefetch *pf) {
  return pf ? atomic_load_explicit(&pf->copied, memory_order_relaxed) : 0;
}
