/* jaca/tests/test_seqlock.c — seqlock rows under a writer and several readers
 * (threads of one process; test_seqlock_shm does the same with ranks on a node
 * segment).
 *
 * One writer rewrites ROWS rows of COLS values again and again, each write a new
 * generation with a payload that encodes (row, generation, column) in every word; READERS
 * threads copy random rows with jaca_row_try_read until they have accepted N copies in
 * all (argument 1, default 10^6). Every accepted copy must be exactly one write: a
 * single torn row accepted fails the test. Reported: torn copies detected and thrown
 * away, and, as evidence that the writer really raced with the readers, how many copies
 * taken without the sequence check (plain relaxed loads) mixed two writes. With the
 * argument "strict" the test also requires that readers met at least one write in
 * progress (the slow variant: long enough to be sure on a loaded machine).
 * Also: jaca_row_read_wait waits for a generation that is published later, and gives up
 * after its timeout; the row stride is a multiple of 64 bytes. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/status.h"
#include "jaca/seqlock_internal.h"
#include "seqlock_check.h"

#define ROWS 8
#define COLS 61
#define READERS 3

static char *g_rows;
static size_t g_stride;
static atomic_int g_stop;
static atomic_llong g_accepted, g_torn, g_unchecked_torn, g_unchecked, g_bad;
static long long g_target;

static void *row_at(int64_t r) { return g_rows + (size_t)r * g_stride; }

static void *writer(void *arg) {
  (void)arg;
  float v[COLS];
  struct jaca_row_meta m;
  for (uint32_t gen = 1; !atomic_load(&g_stop); gen++)
    for (int64_t r = 0; r < ROWS; r++) {
      sq_fill(v, r, gen, COLS, &m);
      jaca_row_publish(row_at(r), v, COLS, &m);
    }
  return NULL;
}

/* A copy without the sequence check: relaxed loads of the same words. */
static void unchecked_copy(const void *row, float *dst, struct jaca_row_meta *m) {
  _Atomic uint32_t *w = (_Atomic uint32_t *)row;
  m->gen = atomic_load_explicit(&w[1], memory_order_relaxed);
  m->epoch = atomic_load_explicit(&w[2], memory_order_relaxed);
  m->gid = atomic_load_explicit(&w[3], memory_order_relaxed);
  for (int64_t j = 0; j < COLS; j++) {
    uint32_t b = atomic_load_explicit(&w[JACA_ROW_HEADER_WORDS + j], memory_order_relaxed);
    memcpy(&dst[j], &b, sizeof b);
  }
}

static void *reader(void *arg) {
  uint64_t s = (uint64_t)(uintptr_t)arg * 0x9E3779B97F4A7C15ull + 1;
  float v[COLS];
  struct jaca_row_meta m;
  long long acc = 0, torn = 0, ut = 0, un = 0;
  while (atomic_load(&g_accepted) < g_target) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    const int64_t r = (int64_t)(s % ROWS);
    if ((s >> 32) % 16 == 0) { /* now and then a copy without the check */
      unchecked_copy(row_at(r), v, &m);
      un++;
      if (!sq_consistent(v, r, COLS, &m)) ut++;
      continue;
    }
    if (!jaca_row_try_read(row_at(r), v, COLS, &m)) {
      torn++;
      continue;
    }
    if (!sq_consistent(v, r, COLS, &m)) {
      if (atomic_fetch_add(&g_bad, 1) == 0)
        fprintf(stderr, "FAIL: an accepted copy of row %lld is torn (gen %u, epoch %u, gid %u)\n", (long long)r,
                m.gen, m.epoch, m.gid);
    }
    acc++;
    if ((acc & 1023) == 0) atomic_fetch_add(&g_accepted, 1024);
  }
  atomic_fetch_add(&g_accepted, acc & 1023);
  atomic_fetch_add(&g_torn, torn);
  atomic_fetch_add(&g_unchecked_torn, ut);
  atomic_fetch_add(&g_unchecked, un);
  return NULL;
}

struct late_writer {
  void *row;
  useconds_t delay;
};

static void *late_publish(void *arg) {
  struct late_writer *lw = arg;
  usleep(lw->delay);
  float v[COLS];
  struct jaca_row_meta m;
  sq_fill(v, 0, 5, COLS, &m);
  jaca_row_publish(lw->row, v, COLS, &m);
  return NULL;
}

#define CHECK(c, ...)                 \
  do {                                \
    if (!(c)) {                       \
      fprintf(stderr, "FAIL: " __VA_ARGS__); \
      fprintf(stderr, "\n");          \
      return 1;                       \
    }                                 \
  } while (0)

int main(int argc, char **argv) {
  g_target = argc > 1 ? atoll(argv[1]) : 1000000;
  const int strict = argc > 2 && !strcmp(argv[2], "strict");
  if (g_target < 1) g_target = 1;
  for (int64_t c = 0; c < 300; c++) {
    size_t s = jaca_row_stride(c);
    CHECK(s % 64 == 0 && s >= (size_t)(4 + c) * 4 && s < (size_t)(4 + c) * 4 + 64, "stride of %lld cols is %zu",
          (long long)c, s);
  }
  g_stride = jaca_row_stride(COLS);
  g_rows = cg_calloc(ROWS, g_stride, "test rows");
  CHECK(g_rows != NULL, "out of memory");
  for (int64_t r = 0; r < ROWS; r++) CHECK(jaca_row_seq(row_at(r)) == 0, "fresh rows start at sequence 0");

  /* read_wait: a later generation arrives from another thread; a missing one times out */
  {
    float v[COLS];
    struct jaca_row_meta m;
    struct late_writer lw = {row_at(0), 50000};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, late_publish, &lw) == 0, "pthread_create");
    int64_t torn = jaca_row_read_wait(row_at(0), v, COLS, 5, 10.0, &m);
    pthread_join(t, NULL);
    CHECK(torn >= 0 && m.gen == 5 && sq_consistent(v, 0, COLS, &m), "read_wait got gen %u (returned %lld)", m.gen,
          (long long)torn);
    CHECK(jaca_row_seq(row_at(0)) == 2, "one write leaves sequence 2, not %u", jaca_row_seq(row_at(0)));
    torn = jaca_row_read_wait(row_at(0), v, COLS, 6, 0.05, &m);
    CHECK(torn == -1 && m.gen == 5, "read_wait for a generation never written returned %lld (gen %u)", (long long)torn,
          m.gen);
    memset(g_rows, 0, ROWS * g_stride);
  }

  pthread_t w, r[READERS];
  CHECK(pthread_create(&w, NULL, writer, NULL) == 0, "pthread_create");
  for (int i = 0; i < READERS; i++) CHECK(pthread_create(&r[i], NULL, reader, (void *)(uintptr_t)(i + 1)) == 0, "pthread_create");
  for (int i = 0; i < READERS; i++) pthread_join(r[i], NULL);
  atomic_store(&g_stop, 1);
  pthread_join(w, NULL);
  const long long acc = atomic_load(&g_accepted), torn = atomic_load(&g_torn), bad = atomic_load(&g_bad);
  const long long ut = atomic_load(&g_unchecked_torn), un = atomic_load(&g_unchecked);
  printf("seqlock, %d reader threads, 1 writer, %d rows x %d cols: %lld copies accepted, %lld torn copies "
         "detected and retried; without the check %lld of %lld copies were torn\n",
         READERS, ROWS, COLS, acc, torn, ut, un);
  CHECK(bad == 0, "%lld torn copies were accepted", bad);
  CHECK(acc >= g_target, "only %lld copies accepted", acc);
  if (strict) CHECK(torn + ut > 0, "the readers never met a write in progress: the test did not race");
  cg_free(g_rows);
  printf("ok\n");
  return 0;
}
