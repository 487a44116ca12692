/* jaca/tests/test_prefetch.c — the prefetch queue (jaca/prefetch_internal.h) on rows in
 * plain memory, a writer thread standing in for the node's ranks.
 *
 *  1. start and stop with no job, and with a job never finished (destroy joins);
 *  2. rows published before and while the job runs: every row lands once, with the
 *     value and metadata of the generation wanted (payloads encode row, generation,
 *     column), prefetched + copied in finish = all rows; with every row published
 *     before finish, the thread copies all of them;
 *  3. many generations in a row with a writer racing the thread and finish (the same
 *     checks each time: a row of the wrong generation, or torn, fails);
 *  4. the timeout path: rows that never reach their generation make finish report one
 *     of them after the timeout, with its last metadata; the queue works again after;
 *  5. the thread's cost while it waits for rows nobody publishes: its CPU time over
 *     0.5 s of waiting must stay under 10 % of a core (it naps, it does not spin);
 *  6. the grouping of rows into runs (jaca_run_*) on hand-made sequences;
 *  7. device jobs on a stand-in backend whose side uploads are deferred until joined
 *     (core/ops.h): every row reaches "device memory" exactly once per job, with its
 *     value, only through the channel and only after upload_rest's join; the thread
 *     sends the rows it copied (all of them, in one run, when all were published
 *     first); begin comes once per job before any upload of it; an enqueue failing on
 *     the thread leaves its rows to upload_rest; 200 generations racing a writer.
 * Exit 0 when all pass; any failure prints FAIL and exits 1. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/status.h"
#include "core/timer.h"
#include "jaca/prefetch_internal.h"
#include "jaca/seqlock_internal.h"

#define ROWS 300
#define COLS 37
#define NREAD 200

#define CHECK(c, ...)                                                  \
  do {                                                                 \
    if (!(c)) {                                                        \
      fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #c);     \
      fprintf(stderr, __VA_ARGS__);                                    \
      fprintf(stderr, "\n");                                           \
      exit(1);                                                         \
    }                                                                  \
  } while (0)
#define OK(e) CHECK((e) == CG_OK, "%s", cg_err_msg())

static char *g_seg;
static size_t g_stride;
static int64_t g_row[NREAD];
static uint32_t g_want[NREAD];
static float g_dst[NREAD * COLS];
static struct jaca_row_meta g_meta[NREAD];

static float val(int64_t r, uint32_t gen, int64_t j) { return (float)(r * 1000 + j) + 0.25f * (float)(gen % 1024); }

static void publish(int64_t r, uint32_t gen) {
  float v[COLS];
  for (int64_t j = 0; j < COLS; j++) v[j] = val(r, gen, j);
  const struct jaca_row_meta m = {gen, gen + 7, (uint32_t)(r + 100)};
  jaca_row_publish(g_seg + (size_t)r * g_stride, v, COLS, &m);
}

static struct jaca_prefetch_job job_for(uint32_t gen) {
  for (int64_t k = 0; k < NREAD; k++) g_want[k] = gen;
  memset(g_dst, 0, sizeof g_dst);
  memset(g_meta, 0, sizeof g_meta);
  const struct jaca_prefetch_job jb = {g_seg, g_stride, g_row, g_want, g_dst, g_meta, NREAD, COLS, NULL, NULL, NULL};
  return jb;
}

static void check_rows(uint32_t gen) {
  for (int64_t k = 0; k < NREAD; k++) {
    const int64_t r = g_row[k];
    CHECK(g_meta[k].gen == gen && g_meta[k].epoch == gen + 7 && g_meta[k].gid == (uint32_t)(r + 100),
          "row %lld: generation %u epoch %u gid %u, expected %u %u %lld", (long long)k, g_meta[k].gen,
          g_meta[k].epoch, g_meta[k].gid, gen, gen + 7, (long long)(r + 100));
    for (int64_t j = 0; j < COLS; j++)
      CHECK(g_dst[k * COLS + j] == val(r, gen, j), "row %lld col %lld: %g, expected %g", (long long)k, (long long)j,
            (double)g_dst[k * COLS + j], (double)val(r, gen, j));
  }
}

/* The writer: publishes generation gen of every row, in a scrambled order, with short
 * pauses (the peers computing their layers), then rewrites rows not read (a later
 * generation's writes of other rows racing the readers). */
struct writer_arg {
  uint32_t gen;
  int pause_us;
};
static void *writer(void *p) {
  const struct writer_arg *a = p;
  for (int64_t i = 0; i < ROWS; i++) {
    const int64_t r = (i * 7919) % ROWS;
    publish(r, a->gen);
    if (a->pause_us > 0 && i % 50 == 0) usleep((useconds_t)a->pause_us);
  }
  return NULL;
}

/* ---- a stand-in backend with side uploads (7.): "device memory" is g_dev; uploads are
 * queued and carried out at join (and begin), each row's arrivals counted ---- */
static float g_dev[NREAD * COLS];
static int g_dev_rows[NREAD];      /* uploads that carried each row in this job */
static pthread_t g_main;
static pthread_mutex_t g_chmu = PTHREAD_MUTEX_INITIALIZER;
static struct {
  float *dst;
  const float *src;
  size_t bytes;
} g_q[4 * NREAD];
static int g_nq, g_begins, g_joins, g_calls, g_calls_thread, g_fail_thread;
static int64_t g_rows_thread;

static void carry_out(void) {
  for (int i = 0; i < g_nq; i++) memcpy(g_q[i].dst, g_q[i].src, g_q[i].bytes);
  g_nq = 0;
}
static int st_begin(struct cg_backend *be, struct cg_upchan *ch) {
  (void)be;
  (void)ch;
  pthread_mutex_lock(&g_chmu);
  carry_out();
  g_begins++;
  pthread_mutex_unlock(&g_chmu);
  return CG_OK;
}
static int st_join(struct cg_backend *be, struct cg_upchan *ch) {
  (void)be;
  (void)ch;
  pthread_mutex_lock(&g_chmu);
  carry_out();
  g_joins++;
  pthread_mutex_unlock(&g_chmu);
  return CG_OK;
}
static int st_upload(struct cg_backend *be, struct cg_upchan *ch, void *dst, const void *src, size_t bytes) {
  (void)be;
  (void)ch;
  const int thread = !pthread_equal(pthread_self(), g_main);
  pthread_mutex_lock(&g_chmu);
  if (thread && g_fail_thread > 0) {
    g_fail_thread--;
    pthread_mutex_unlock(&g_chmu);
    return cg_err_set(CG_ERR_CUDA, "stand-in: an upload failed on purpose");
  }
  const int64_t off = ((float *)dst - g_dev), n = (int64_t)(bytes / (COLS * sizeof(float)));
  int ok = g_nq < 4 * NREAD && off >= 0 && off % COLS == 0 && bytes % (COLS * sizeof(float)) == 0 &&
           off / COLS + n <= NREAD && (const float *)src - g_dst == off;
  if (ok) {
    g_q[g_nq].dst = dst;
    g_q[g_nq].src = src;
    g_q[g_nq].bytes = bytes;
    g_nq++;
    for (int64_t k = off / COLS; k < off / COLS + n; k++) g_dev_rows[k]++;
    g_calls++;
    g_calls_thread += thread;
    if (thread) g_rows_thread += n;
  }
  pthread_mutex_unlock(&g_chmu);
  CHECK(ok, "an upload of %zu bytes to row offset %lld (rows, from the same rows of the staging)", bytes,
        (long long)off);
  return CG_OK;
}

static struct cg_backend g_sb; /* only the channel's entries */
static struct cg_upchan *g_ch = (struct cg_upchan *)&g_sb; /* never dereferenced */

static struct jaca_prefetch_job dev_job_for(uint32_t gen) {
  struct jaca_prefetch_job jb = job_for(gen);
  jb.be = &g_sb;
  jb.ch = g_ch;
  jb.d_dst = g_dev;
  memset(g_dev, 0, sizeof g_dev);
  memset(g_dev_rows, 0, sizeof g_dev_rows);
  g_calls = g_calls_thread = 0;
  g_rows_thread = 0;
  return jb;
}

/* After finish and upload_rest: every row arrived once, with its value, and only at the join. */
static void check_dev(uint32_t gen, const struct jaca_prefetch_result *res) {
  for (int64_t k = 0; k < NREAD; k++) {
    CHECK(g_dev_rows[k] == 1, "generation %u: row %lld uploaded %d times", gen, (long long)k, g_dev_rows[k]);
    for (int64_t j = 0; j < COLS; j++)
      CHECK(g_dev[k * COLS + j] == val(g_row[k], gen, j), "generation %u: device row %lld col %lld: %g, expected %g",
            gen, (long long)k, (long long)j, (double)g_dev[k * COLS + j], (double)val(g_row[k], gen, j));
  }
  CHECK(res->up_thread + res->up_end == NREAD && res->up_thread == g_rows_thread && res->up_calls == g_calls,
        "generation %u: %lld rows sent by the thread (%lld seen), %lld by upload_rest, %lld calls (%d seen)", gen,
        (long long)res->up_thread, (long long)g_rows_thread, (long long)res->up_end, (long long)res->up_calls,
        g_calls);
}

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* Submits the job of generation gen, starts a writer publishing it (pausing every third
 * generation) and finishes the job while the writer races the thread (on odd generations
 * after a millisecond's head start); returns the writer for the caller to join. */
static pthread_t race_writer(struct jaca_prefetch *pf, const struct jaca_prefetch_job *jb, uint32_t gen,
                             struct writer_arg *wa, struct jaca_prefetch_result *res) {
  OK(jaca_prefetch_submit(pf, jb));
  *wa = (struct writer_arg){gen, gen % 3 == 0 ? 100 : 0};
  pthread_t w;
  CHECK(pthread_create(&w, NULL, writer, wa) == 0, "pthread_create");
  if (gen % 2) sleep_ms(1);
  CHECK(jaca_prefetch_finish(pf, 30.0, res) == -1, "generation %u: finish failed", gen);
  return w;
}

int main(void) {
  g_stride = jaca_row_stride(COLS);
  g_seg = aligned_alloc(JACA_ROW_ALIGN, g_stride * ROWS);
  CHECK(g_seg != NULL, "out of memory");
  memset(g_seg, 0, g_stride * ROWS);
  for (int64_t k = 0; k < NREAD; k++) g_row[k] = (k * 37 + 11) % ROWS; /* distinct: 37 and 300 are coprime */

  /* 1. start, stop; a job never finished */
  struct jaca_prefetch *pf = NULL;
  OK(jaca_prefetch_create(NREAD, &pf));
  jaca_prefetch_destroy(&pf);
  CHECK(pf == NULL, "destroy must clear the handle");
  jaca_prefetch_destroy(&pf); /* NULL accepted */
  OK(jaca_prefetch_create(NREAD, &pf));
  struct jaca_prefetch_job jb = job_for(1);
  OK(jaca_prefetch_submit(pf, &jb));
  jaca_prefetch_destroy(&pf); /* rows never published: the thread is napping; joined */
  OK(jaca_prefetch_create(NREAD, &pf));
  jb = job_for(1);
  jb.n = NREAD + 1;
  CHECK(jaca_prefetch_submit(pf, &jb) == CG_ERR_ARG, "a job longer than the queue must be refused");
  cg_err_clear();

  /* 2. every row published before finish: the thread copies them all */
  for (int64_t r = 0; r < ROWS; r++) publish(r, 1);
  jb = job_for(1);
  OK(jaca_prefetch_submit(pf, &jb));
  const double t0 = cg_time_now();
  while (jaca_prefetch_copied(pf) < NREAD && cg_time_now() - t0 < 30.0) sleep_ms(1);
  struct jaca_prefetch_result res;
  CHECK(jaca_prefetch_finish(pf, 5.0, &res) == -1, "finish failed");
  check_rows(1);
  CHECK(res.prefetched == NREAD && res.in_end == 0, "all published: %lld prefetched, %lld in finish",
        (long long)res.prefetched, (long long)res.in_end);
  printf("ok: all rows published first: %lld of %d prefetched\n", (long long)res.prefetched, NREAD);

  /* ... and published while the job runs: some rows by the thread, the rest by finish */
  {
    jb = job_for(2);
    OK(jaca_prefetch_submit(pf, &jb));
    struct writer_arg wa = {2, 2000};
    pthread_t w;
    CHECK(pthread_create(&w, NULL, writer, &wa) == 0, "pthread_create");
    sleep_ms(3);
    CHECK(jaca_prefetch_finish(pf, 30.0, &res) == -1, "finish failed");
    pthread_join(w, NULL);
    check_rows(2);
    CHECK(res.prefetched + res.in_end == NREAD, "%lld + %lld rows, expected %d", (long long)res.prefetched,
          (long long)res.in_end, NREAD);
    printf("ok: rows published during the job: %lld prefetched, %lld in finish, %.2f ms in finish\n",
           (long long)res.prefetched, (long long)res.in_end, 1e-6 * (double)res.wait_ns);
  }

  /* 3. many generations, the writer racing both */
  {
    int64_t pre = 0, fin = 0, torn = 0;
    for (uint32_t gen = 3; gen < 203; gen++) {
      jb = job_for(gen);
      struct writer_arg wa;
      pthread_t w = race_writer(pf, &jb, gen, &wa, &res);
      pthread_join(w, NULL);
      check_rows(gen);
      CHECK(res.prefetched + res.in_end == NREAD, "generation %u: %lld + %lld rows", gen, (long long)res.prefetched,
            (long long)res.in_end);
      pre += res.prefetched;
      fin += res.in_end;
      torn += res.torn;
    }
    printf("ok: 200 generations racing a writer: %lld rows prefetched, %lld copied in finish, %lld torn copies "
           "thrown away\n", (long long)pre, (long long)fin, (long long)torn);
  }

  /* 4. timeout: rows that never reach generation 1000 */
  {
    jb = job_for(1000);
    OK(jaca_prefetch_submit(pf, &jb));
    const double t1 = cg_time_now();
    const int64_t bad = jaca_prefetch_finish(pf, 0.2, &res);
    const double took = cg_time_now() - t1;
    CHECK(bad >= 0 && bad < NREAD, "finish must report a row that never came (got %lld)", (long long)bad);
    CHECK(g_meta[bad].gen == 202, "the late row's last metadata: generation %u, expected 202", g_meta[bad].gen);
    CHECK(took >= 0.2 && took < 10.0, "timeout 0.2 s took %.3f s", took);
    /* the queue still works */
    jb = job_for(202);
    OK(jaca_prefetch_submit(pf, &jb));
    CHECK(jaca_prefetch_finish(pf, 5.0, &res) == -1, "finish after a timeout failed");
    check_rows(202);
    printf("ok: timeout reported row %lld after %.2f s; the queue works again\n", (long long)bad, took);
  }

  /* 5. the cost of waiting: rows nobody publishes for 0.5 s */
  {
    jb = job_for(5000);
    OK(jaca_prefetch_submit(pf, &jb));
    const double c0 = jaca_prefetch_cpu_s(pf), n0 = (double)jaca_prefetch_naps(pf);
    sleep_ms(500);
    const double c1 = jaca_prefetch_cpu_s(pf), n1 = (double)jaca_prefetch_naps(pf);
    CHECK(c0 >= 0.0 && c1 >= c0, "thread CPU clock: %g -> %g", c0, c1);
    CHECK(c1 - c0 < 0.05, "the waiting thread used %.3f s of CPU in 0.5 s (it must nap, not spin)", c1 - c0);
    printf("ok: waiting 0.5 s for rows: %.1f ms of CPU (%.2f %% of a core), %.0f naps\n", 1e3 * (c1 - c0),
           100.0 * (c1 - c0) / 0.5, n1 - n0);
    /* the job's arrays are rewritten below (job_for): finish it first, as submit's
     * contract asks (the thread reads them until finish or the next submit) */
    for (int64_t r = 0; r < ROWS; r++) publish(r, 5000);
    CHECK(jaca_prefetch_finish(pf, 5.0, &res) == -1, "finish of the waiting job failed");
    check_rows(5000);
  }

  /* 6. runs */
  {
    struct jaca_run run;
    int64_t a = -1, n = -1;
    jaca_run_init(&run, 3);
    CHECK(jaca_run_close(&run, &a, &n) == 0, "an empty builder has no run");
    const int64_t ks[] = {0, 1, 2, 3, 4, 7, 9, 10};
    /* cap 3: [0,3) closes at 3, [3,5) at 7, [7,8) at 9, then [9,11) at the close */
    const int64_t want[][2] = {{0, 3}, {3, 2}, {7, 1}, {9, 2}};
    int got = 0;
    for (int i = 0; i < 8; i++)
      if (jaca_run_push(&run, ks[i], &a, &n)) {
        CHECK(got < 4 && a == want[got][0] && n == want[got][1], "run %d: [%lld, +%lld)", got, (long long)a,
              (long long)n);
        got++;
      }
    CHECK(got == 3 && jaca_run_close(&run, &a, &n) == 1 && a == 9 && n == 2, "the last run: [%lld, +%lld)",
          (long long)a, (long long)n);
    CHECK(jaca_run_close(&run, &a, &n) == 0, "closed twice");
    jaca_run_init(&run, 0); /* cap < 1 counts as 1: every row its own run */
    CHECK(jaca_run_push(&run, 5, &a, &n) == 0 && jaca_run_push(&run, 6, &a, &n) == 1 && a == 5 && n == 1,
          "cap 0");
    printf("ok: rows grouped into runs\n");
  }

  /* 7. device jobs */
  {
    g_main = pthread_self();
    g_sb.name = "stand-in";
    g_sb.kind = CG_DEVICE_CUDA;
    g_sb.upchan_begin = st_begin;
    g_sb.upchan_upload = st_upload;
    g_sb.upchan_join = st_join;
    /* all published first: the thread sends every row, in one run (they are consecutive
     * and far below JACA_PF_RUN_BYTES) */
    for (int64_t r = 0; r < ROWS; r++) publish(r, 300);
    jb = dev_job_for(300);
    const int b0 = g_begins, j0 = g_joins;
    OK(jaca_prefetch_submit(pf, &jb));
    CHECK(g_begins == b0 + 1, "submit of a device job must begin the channel once");
    const double t2 = cg_time_now();
    while (jaca_prefetch_copied(pf) < NREAD && cg_time_now() - t2 < 30.0) sleep_ms(1);
    CHECK(jaca_prefetch_finish(pf, 5.0, &res) == -1, "finish failed");
    for (int64_t i = 0; i < NREAD * COLS; i++) CHECK(g_dev[i] == 0.0f, "a row reached the device before the join");
    OK(jaca_prefetch_upload_rest(pf, &res));
    CHECK(g_joins == j0 + 1, "upload_rest must join once");
    check_dev(300, &res);
    CHECK(res.prefetched == NREAD && res.up_thread == NREAD && res.up_calls == 1 && g_calls_thread == 1,
          "all published first: %lld prefetched, %lld sent by the thread in %lld calls", (long long)res.prefetched,
          (long long)res.up_thread, (long long)res.up_calls);
    printf("ok: device job, all rows published first: the thread sent %lld rows in %lld upload\n",
           (long long)res.up_thread, (long long)res.up_calls);

    /* an enqueue failing on the thread: upload_rest sends those rows */
    jb = dev_job_for(301);
    g_fail_thread = 1;
    for (int64_t r = 0; r < ROWS; r++) publish(r, 301);
    OK(jaca_prefetch_submit(pf, &jb));
    const double t3 = cg_time_now();
    while (jaca_prefetch_copied(pf) < NREAD && cg_time_now() - t3 < 30.0) sleep_ms(1);
    CHECK(jaca_prefetch_finish(pf, 5.0, &res) == -1, "finish failed");
    OK(jaca_prefetch_upload_rest(pf, &res));
    check_dev(301, &res);
    CHECK(g_fail_thread == 0 && res.up_thread == 0 && res.up_end == NREAD,
          "a failed enqueue on the thread: %lld rows sent by it, %lld by upload_rest", (long long)res.up_thread,
          (long long)res.up_end);
    printf("ok: device job, the thread's upload failed: upload_rest sent all %lld rows\n", (long long)res.up_end);

    /* racing a writer */
    int64_t by_thread = 0, by_end = 0, calls = 0;
    for (uint32_t gen = 400; gen < 600; gen++) {
      jb = dev_job_for(gen);
      struct writer_arg wa;
      pthread_t w = race_writer(pf, &jb, gen, &wa, &res);
      OK(jaca_prefetch_upload_rest(pf, &res));
      pthread_join(w, NULL);
      check_rows(gen);
      check_dev(gen, &res);
      by_thread += res.up_thread;
      by_end += res.up_end;
      calls += res.up_calls;
    }
    printf("ok: 200 device jobs racing a writer: %lld rows sent by the thread, %lld by upload_rest, in %lld "
           "uploads\n", (long long)by_thread, (long long)by_end, (long long)calls);
    /* a host job after device jobs: upload_rest does nothing */
    jb = job_for(599);
    OK(jaca_prefetch_submit(pf, &jb));
    CHECK(jaca_prefetch_finish(pf, 5.0, &res) == -1, "finish failed");
    const int j1 = g_joins;
    OK(jaca_prefetch_upload_rest(pf, &res));
    CHECK(g_joins == j1 && res.up_thread == 0 && res.up_end == 0, "upload_rest of a host job");
    /* a device job without the channel's entries is refused */
    jb = dev_job_for(599);
    g_sb.upchan_join = NULL;
    CHECK(jaca_prefetch_submit(pf, &jb) == CG_ERR_ARG, "a device job on a backend without side uploads");
    cg_err_clear();
    g_sb.upchan_join = st_join;
  }

  jaca_prefetch_destroy(&pf); /* with that job still active */
  free(g_seg);
  printf("test_prefetch: all checks passed\n");
  return 0;
}
