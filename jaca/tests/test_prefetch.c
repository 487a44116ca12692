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
 *     0.5 s of waiting must stay under 10 % of a core (it naps, it does not spin).
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
  const struct jaca_prefetch_job jb = {g_seg, g_stride, g_row, g_want, g_dst, g_meta, NREAD, COLS};
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

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
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
      OK(jaca_prefetch_submit(pf, &jb));
      struct writer_arg wa = {gen, gen % 3 == 0 ? 100 : 0};
      pthread_t w;
      CHECK(pthread_create(&w, NULL, writer, &wa) == 0, "pthread_create");
      if (gen % 2) sleep_ms(1);
      CHECK(jaca_prefetch_finish(pf, 30.0, &res) == -1, "generation %u: finish failed", gen);
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
  }
  jaca_prefetch_destroy(&pf); /* with that job still active */
  free(g_seg);
  printf("test_prefetch: all checks passed\n");
  return 0;
}
