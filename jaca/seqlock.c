/* jaca/seqlock.c — see seqlock_internal.h for the protocol.
 *
 * Design notes (the why):
 * - The payload is copied word by word with relaxed atomics: a plain memcpy racing
 *   with the writer is a data race (undefined behaviour in C11) even when the torn
 *   copy is thrown away afterwards, and the compiler would be free to assume it does
 *   not happen. Relaxed loads cost what plain loads cost.
 * - Floats travel as their bit patterns (memcpy to/from uint32_t): values are copied
 *   exactly, NaNs included.
 * - The waiting reader yields the CPU, then sleeps with a growing nap (10 us to 1 ms):
 *   the writer may be a process on the same core (the test machines run more ranks than
 *   cores) still computing the layer whose rows it will write, and a spinning reader
 *   would only delay the write it waits for. */
#include "jaca/seqlock_internal.h"

#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "core/timer.h"

typedef _Atomic uint32_t word_t;

size_t jaca_row_stride(int64_t cols) {
  size_t bytes = (size_t)(JACA_ROW_HEADER_WORDS + (cols > 0 ? cols : 0)) * sizeof(uint32_t);
  return (bytes + JACA_ROW_ALIGN - 1) / JACA_ROW_ALIGN * JACA_ROW_ALIGN;
}

uint32_t jaca_row_seq(const void *row) {
  return atomic_load_explicit((word_t *)row, memory_order_acquire);
}

void jaca_row_publish(void *row, const float *src, int64_t cols, const struct jaca_row_meta *m) {
  word_t *w = row;
  const uint32_t s = atomic_load_explicit(&w[0], memory_order_relaxed);
  atomic_store_explicit(&w[0], s + 1, memory_order_relaxed);
  atomic_thread_fence(memory_order_release);
  atomic_store_explicit(&w[1], m->gen, memory_order_relaxed);
  atomic_store_explicit(&w[2], m->epoch, memory_order_relaxed);
  atomic_store_explicit(&w[3], m->gid, memory_order_relaxed);
  word_t *d = w + JACA_ROW_HEADER_WORDS;
  for (int64_t j = 0; j < cols; j++) {
    uint32_t bits;
    memcpy(&bits, &src[j], sizeof bits);
    atomic_store_explicit(&d[j], bits, memory_order_relaxed);
  }
  atomic_store_explicit(&w[0], s + 2, memory_order_release);
}

int jaca_row_try_read(const void *row, float *dst, int64_t cols, struct jaca_row_meta *m) {
  word_t *w = (word_t *)row;
  const uint32_t s1 = atomic_load_explicit(&w[0], memory_order_acquire);
  if (s1 & 1u) return 0;
  m->gen = atomic_load_explicit(&w[1], memory_order_relaxed);
  m->epoch = atomic_load_explicit(&w[2], memory_order_relaxed);
  m->gid = atomic_load_explicit(&w[3], memory_order_relaxed);
  word_t *d = w + JACA_ROW_HEADER_WORDS;
  for (int64_t j = 0; j < cols; j++) {
    uint32_t bits = atomic_load_explicit(&d[j], memory_order_relaxed);
    memcpy(&dst[j], &bits, sizeof bits);
  }
  atomic_thread_fence(memory_order_acquire);
  const uint32_t s2 = atomic_load_explicit(&w[0], memory_order_relaxed);
  return s1 == s2;
}

int64_t jaca_row_read_wait(const void *row, float *dst, int64_t cols, uint32_t min_gen,
                           double timeout_s, struct jaca_row_meta *m) {
  int64_t torn = 0;
  double t0 = -1.0;
  long nap_ns = 10000; /* after the first spins: sleep, doubling up to 1 ms */
  struct jaca_row_meta got = {0, 0, 0};
  for (uint64_t spin = 0;; spin++) {
    /* cheap check first: a row that is not new enough yet is not copied at all */
    word_t *w = (word_t *)row;
    const uint32_t s = atomic_load_explicit(&w[0], memory_order_acquire);
    const uint32_t gen = atomic_load_explicit(&w[1], memory_order_relaxed);
    if (!(s & 1u) && gen >= min_gen) {
      if (jaca_row_try_read(row, dst, cols, &got)) {
        if (got.gen >= min_gen) {
          *m = got;
          return torn;
        }
      } else {
        torn++;
      }
    }
    if ((spin & 63u) == 63u) {
      const double now = cg_time_now();
      if (t0 < 0.0) t0 = now;
      else if (now - t0 > timeout_s) {
        if (!jaca_row_try_read(row, dst, cols, &got)) got.gen = got.epoch = got.gid = 0;
        *m = got;
        return -1;
      }
    }
    if (spin < 256) {
      sched_yield();
    } else { /* the writer is busy elsewhere (computing its layer): stop competing for the CPU */
      struct timespec ts = {0, nap_ns};
      nanosleep(&ts, NULL);
      if (nap_ns < 1000000) nap_ns *= 2;
    }
  }
}

void jaca_word_publish(void *word, uint32_t value) {
  atomic_store_explicit((word_t *)word, value, memory_order_release);
}

uint32_t jaca_word_read(const void *word) {
  return atomic_load_explicit((word_t *)word, memory_order_acquire);
}

int jaca_word_wait(const void *word, uint32_t min_value, double timeout_s, uint32_t *seen) {
  double t0 = -1.0;
  long nap_ns = 1000;
  for (unsigned spin = 0;; spin++) {
    const uint32_t v = atomic_load_explicit((word_t *)word, memory_order_acquire);
    if (v >= min_value) {
      *seen = v;
      return 0;
    }
    if ((spin & 63u) == 63u) {
      const double now = cg_time_now();
      if (t0 < 0.0) t0 = now;
      else if (now - t0 > timeout_s) {
        *seen = v;
        return -1;
      }
    }
    if (spin < 256) {
      sched_yield();
    } else {
      struct timespec ts = {0, nap_ns};
      nanosleep(&ts, NULL);
      if (nap_ns < 1000000) nap_ns *= 2;
    }
  }
}
