/* core/watchdog.c — the stall watchdog (see watchdog.h).
 *
 * Design notes (the why):
 * - A slot is written by one thread (its rank's main thread) and read by watchdog
 *   threads of any rank of the host, so it is a seqlock: the writer makes the sequence
 *   odd, writes, makes it even; a reader retries until it copied an even, unchanged
 *   sequence. No lock is shared between processes (a stopped process holding one would
 *   block its peers' watchdogs).
 * - Times are CLOCK_MONOTONIC nanoseconds, one clock for every process of a host.
 * - The watchdog ticks (alive_ns) a few times per timeout: a peer whose tick is old is
 *   not running at all (stopped), which tells it apart from a peer that runs but is
 *   stuck in a call, and from one that waits like this rank. */
#define _GNU_SOURCE
#include "core/watchdog.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"
#include "core/status.h"

#define WHERE_LEN 48

struct slot {
  _Atomic uint32_t seq;   /* odd while the fields below change */
  _Atomic int32_t armed;  /* 1 while a watchdog watches this rank */
  _Atomic int64_t alive_ns; /* the watchdog's last tick */
  int32_t rank, pid;
  int32_t epoch, layer, waiting;
  int64_t mark_ns;        /* the last mark */
  char where[WHERE_LEN];
};

static struct slot own_slot;
static struct slot *slots = &own_slot;
static int nslots = 1, self_slot = 0, self_rank = 0;

static pthread_t thread;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static int running, stopping;
static double timeout;
static char what_txt[64];

static void (*handler)(const char *message, void *ctx);
static void *handler_ctx;

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

size_t cg_watch_slot_bytes(void) { return sizeof(struct slot); }

void cg_watchdog_set_slots(void *mem, int n, int self, int rank) {
  if (!mem || n < 1 || self < 0 || self >= n) {
    slots = &own_slot;
    nslots = 1;
    self_slot = 0;
  } else {
    slots = mem;
    nslots = n;
    self_slot = self;
  }
  self_rank = rank;
  slots[self_slot].rank = rank;
  slots[self_slot].pid = (int32_t)getpid();
}

void cg_watchdog_set_handler(void (*fn)(const char *message, void *ctx), void *ctx) {
  handler = fn;
  handler_ctx = ctx;
}

void cg_watch_mark(const char *where, int epoch, int layer, int waiting) {
  struct slot *s = &slots[self_slot];
  const uint32_t q = atomic_load_explicit(&s->seq, memory_order_relaxed);
  atomic_store_explicit(&s->seq, q + 1, memory_order_relaxed);
  atomic_thread_fence(memory_order_release);
  s->epoch = epoch;
  s->layer = layer;
  s->waiting = waiting;
  snprintf(s->where, sizeof s->where, "%s", where ? where : "?");
  s->mark_ns = now_ns();
  atomic_store_explicit(&s->seq, q + 2, memory_order_release);
}

/* A consistent copy of slot i (its writer may be mid-update, or stopped mid-update:
 * then the last copy read is used). */
static void read_slot(int i, struct slot *out) {
  const struct slot *s = &slots[i];
  for (int tries = 0; tries < 1000; tries++) {
    const uint32_t q = atomic_load_explicit(&s->seq, memory_order_acquire);
    memcpy(out, (const void *)s, sizeof *out);
    atomic_thread_fence(memory_order_acquire);
    if (!(q & 1) && q == atomic_load_explicit(&s->seq, memory_order_relaxed)) break;
  }
  out->where[WHERE_LEN - 1] = '\0';
}

static void describe(char *buf, size_t len, const struct slot *s) {
  char at[32] = "";
  if (s->layer >= 0) snprintf(at, sizeof at, ", layer %d", s->layer);
  if (s->epoch > 0) snprintf(buf, len, "%s%s of epoch %d", s->where, at, s->epoch);
  else snprintf(buf, len, "%s%s", s->where, at);
}

/* Seconds the report may take before the process ends without it (fire). */
#define REPORT_DEADLINE_S 5

static void on_report_deadline(int sig) {
  (void)sig;
  _exit(CG_STALL_EXIT_CODE);
}

/* A thread of its own that ends the process REPORT_DEADLINE_S from now. */
static void *report_deadline(void *arg) {
  (void)arg;
  struct timespec left = {REPORT_DEADLINE_S, 0};
  while (nanosleep(&left, &left) != 0 && errno == EINTR) {
  }
  _exit(CG_STALL_EXIT_CODE);
}

/* The ERROR lines, then the handler or the end of the process. */
static void fire(int64_t now) {
  if (!handler) {
    /* The lines go to stderr, whose lock the main thread may hold for ever: stuck in a
     * write to a pipe nobody reads or to a log file on a hung file system, it waits there
     * holding it, and so would this thread, and the process would never end. A thread of
     * its own ends it REPORT_DEADLINE_S after the stall was seen, the report written or
     * not. Not SIGALRM alone: Linux gives a process's signal to the main thread when
     * that does not block it, and a main thread in a wait only a fatal signal ends (a
     * write to a hard-mounted NFS or a FUSE file system that hangs) never runs its
     * handler; SIGALRM (unused elsewhere) only when that thread cannot be created. */
    pthread_t t;
    pthread_attr_t at;
    int made = pthread_attr_init(&at) == 0;
    if (made) {
      made = pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED) == 0 &&
             pthread_create(&t, &at, report_deadline, NULL) == 0;
      pthread_attr_destroy(&at);
    }
    if (!made) {
      struct sigaction sa;
      memset(&sa, 0, sizeof sa);
      sa.sa_handler = on_report_deadline;
      sigemptyset(&sa.sa_mask);
      sigaction(SIGALRM, &sa, NULL);
      sigset_t alrm;
      sigemptyset(&alrm);
      sigaddset(&alrm, SIGALRM);
      pthread_sigmask(SIG_UNBLOCK, &alrm, NULL);
      alarm(REPORT_DEADLINE_S);
    }
  }
  char msg[4096], step[128];
  size_t n = 0;
  struct slot me;
  read_slot(self_slot, &me);
  describe(step, sizeof step, &me);
  if (me.waiting)
    n += (size_t)snprintf(msg + n, sizeof msg - n,
                          "no progress in %s for %.3g s (--stall-timeout %g): rank %d has been waiting for the "
                          "other ranks in %s", what_txt, (double)(now - me.mark_ns) / 1e9, timeout, self_rank, step);
  else
    n += (size_t)snprintf(msg + n, sizeof msg - n,
                          "no progress in %s for %.3g s (--stall-timeout %g): rank %d is stuck in %s, not waiting "
                          "for another rank (a hung GPU or file system?)", what_txt, (double)(now - me.mark_ns) / 1e9,
                          timeout, self_rank, step);
  const double stale_s = timeout / 2 > 2.0 ? 2.0 : timeout / 2; /* > a few missed ticks */
  for (int i = 0; i < nslots && n < sizeof msg - 200; i++) {
    if (i == self_slot) continue;
    struct slot p;
    read_slot(i, &p);
    if (!atomic_load_explicit(&slots[i].armed, memory_order_relaxed)) continue; /* not training */
    describe(step, sizeof step, &p);
    const double alive_age = (double)(now - p.alive_ns) / 1e9, mark_age = (double)(now - p.mark_ns) / 1e9;
    if (alive_age > stale_s + timeout / 4)
      n += (size_t)snprintf(msg + n, sizeof msg - n,
                            "\nrank %d (pid %d, this host) has not run for %.3g s: it is stopped (SIGSTOP, a "
                            "debugger, a paused machine) or starved of CPU; it stopped in %s",
                            p.rank, p.pid, alive_age, step);
    else if (!p.waiting && mark_age > timeout / 2)
      n += (size_t)snprintf(msg + n, sizeof msg - n,
                            "\nrank %d (pid %d, this host) has been in %s for %.3g s without progress", p.rank,
                            p.pid, step, mark_age);
    else
      n += (size_t)snprintf(msg + n, sizeof msg - n, "\nrank %d (pid %d, this host) is in %s%s", p.rank, p.pid,
                            step, p.waiting ? ", waiting like this one" : "");
  }
  if (nslots > 1 || !me.waiting)
    snprintf(msg + n, sizeof msg - n, "\nending the job (exit code %d; the launcher stops the other ranks)",
             CG_STALL_EXIT_CODE);
  else
    snprintf(msg + n, sizeof msg - n, "\nthe other ranks are on other hosts (their own watchdogs report "
             "them); ending the job (exit code %d; the launcher stops the other ranks)", CG_STALL_EXIT_CODE);
  /* one ERROR line per line of the message, each with the rank's prefix */
  char copy[sizeof msg];
  snprintf(copy, sizeof copy, "%s", msg);
  char *save = NULL;
  for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
    LOG_ERROR("watchdog", "%s", line);
  if (handler) {
    handler(msg, handler_ctx);
    return;
  }
  fflush(stderr);
  _exit(CG_STALL_EXIT_CODE);
}

static void *watch_main(void *arg) {
  (void)arg;
  struct slot *s = &slots[self_slot];
  /* a few ticks per timeout, at most one a second, at least every 50 ms */
  double tick = timeout / 4;
  if (tick > 1.0) tick = 1.0;
  if (tick < 0.05) tick = 0.05;
  /* A process that was itself stopped (SIGSTOP, then SIGCONT: a launcher ending the job
   * continues its ranks before it terminates them) did not stall the job: the time it
   * was stopped does not count against it. */
  int64_t last_tick = now_ns(), resumed = 0;
  const int64_t gap = (int64_t)((tick * 4 > 2.0 ? tick * 4 : 2.0) * 1e9);
  pthread_mutex_lock(&lock);
  while (!stopping) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts); /* pthread_cond_timedwait's clock */
    const int64_t ns = ts.tv_nsec + (int64_t)(tick * 1e9);
    ts.tv_sec += ns / 1000000000;
    ts.tv_nsec = ns % 1000000000;
    pthread_cond_timedwait(&wake, &lock, &ts);
    if (stopping) break;
    const int64_t now = now_ns();
    atomic_store_explicit(&s->alive_ns, now, memory_order_relaxed);
    if (now - last_tick > gap) resumed = now;
    last_tick = now;
    struct slot me;
    read_slot(self_slot, &me);
    if ((double)(now - (me.mark_ns > resumed ? me.mark_ns : resumed)) / 1e9 > timeout) {
      /* with the lock held from the check of `stopping` above to the end of the process:
       * a cg_watchdog_stop that came first (the run went on and ended) is never followed
       * by a stall report and exit code 75, and one that comes now waits for them */
      fire(now); /* returns only into a test's handler */
      break;
    }
  }
  pthread_mutex_unlock(&lock);
  return NULL;
}

int cg_watchdog_start(double timeout_s, const char *what) {
  if (running) cg_watchdog_stop();
  if (!(timeout_s > 0)) return CG_OK;
  timeout = timeout_s;
  snprintf(what_txt, sizeof what_txt, "%s", what ? what : "training");
  struct slot *s = &slots[self_slot];
  s->rank = self_rank;
  s->pid = (int32_t)getpid();
  cg_watch_mark("start", 0, -1, 0);
  atomic_store_explicit(&s->alive_ns, now_ns(), memory_order_relaxed);
  stopping = 0;
  const int rc = pthread_create(&thread, NULL, watch_main, NULL);
  if (rc != 0) return cg_err_set(CG_ERR_INTERNAL, "cannot start the stall watchdog thread: %s", strerror(rc));
  atomic_store_explicit(&s->armed, 1, memory_order_relaxed);
  running = 1;
  return CG_OK;
}

void cg_watchdog_stop(void) {
  if (!running) return;
  pthread_mutex_lock(&lock);
  stopping = 1;
  pthread_cond_signal(&wake);
  pthread_mutex_unlock(&lock);
  pthread_join(thread, NULL);
  atomic_store_explicit(&slots[self_slot].armed, 0, memory_order_relaxed);
  running = 0;
}
