/* jaca/tests/test_policy.c — the tiers' directories (jaca/policy_internal.h): each
 * policy's hits on hand-made access patterns equal hand-computed values, Belady's MIN
 * is never below any policy (hand patterns, random patterns, the cyclic pattern of
 * full-batch training), and every directory keeps its invariants through random use.
 *
 * Hand patterns (capacity, sequence, priority order 0 > 1 > 2 > ... for jaca):
 *  A  capacity 2, keys 0 1 0 2 0 1:
 *       LRU   0m 1m 0h 2m(evict 1) 0h 1m(evict 2)           -> 2 hits
 *       FIFO  0m 1m 0h 2m(evict 0) 0m(evict 1) 1m(evict 2)  -> 1 hit
 *       JACA  0m 1m 0h 2m(declined: 1 ranks higher) 0h 1h   -> 3 hits
 *       MIN   0m 1m 0h 2m(bypass: never used again) 0h 1h   -> 3 hits
 *  B  capacity 2, three epochs of keys 0 1 2 3 4 (full-batch: every row every epoch):
 *       LRU, FIFO: each miss evicts the key needed next        -> 0 hits
 *       JACA: keeps 0 and 1 from the first epoch               -> 4 hits
 *       MIN: keeps 0 and 1 (bypasses the rest)                 -> 4 hits
 *  C  capacity 3, keys 0 1 2 3 0 1 2 3 4 0, priorities 3 > 2 > 1 > 0 > 4 (key 3 highest):
 *       LRU   0m 1m 2m 3m(e0) 0m(e1) 1m(e2) 2m(e3) 3m(e0) 4m(e1) 0m(e2) -> 0 hits
 *       FIFO  the same evictions (no hit ever moves a key)       -> 0 hits
 *       JACA  0m 1m 2m 3m(evict 0) 0m(declined) 1h 2h 3h 4m(declined) 0m(declined) -> 3 hits
 *       MIN   0m 1m 2m 3m(bypass: 0, 1, 2 are needed at 4, 5, 6, key 3 at 7) 0h 1h 2h 3m 4m 0h
 *                                                              -> 4 hits
 *  NONE: 0 hits always. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "jaca/policy_internal.h"

static int fails = 0;
#define CHECK(c, ...)                                          \
  do {                                                         \
    if (!(c)) {                                                \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);     \
      fprintf(stderr, __VA_ARGS__);                            \
      fprintf(stderr, "\n");                                   \
      fails++;                                                 \
    }                                                          \
  } while (0)

static int64_t sim(enum jaca_policy p, const int64_t *seq, int64_t n, int64_t nkeys, int64_t cap,
                   const int64_t *rank) {
  int64_t h = -1;
  if (jaca_dir_simulate(p, seq, n, nkeys, cap, rank, &h) != CG_OK) {
    fprintf(stderr, "FAIL: simulate: %s\n", cg_err_msg());
    fails++;
  }
  return h;
}

static int64_t oracle(const int64_t *seq, int64_t n, int64_t nkeys, int64_t cap) {
  int64_t h = -1;
  if (jaca_oracle_hits(seq, n, nkeys, cap, &h) != CG_OK) {
    fprintf(stderr, "FAIL: oracle: %s\n", cg_err_msg());
    fails++;
  }
  return h;
}

struct hand {
  const char *name;
  int64_t cap, nkeys, n;
  int64_t seq[32];
  int64_t rank[8];
  int64_t want_lru, want_fifo, want_jaca, want_min;
};

static void hand_patterns(void) {
  static const struct hand cases[] = {
      {"A", 2, 3, 6, {0, 1, 0, 2, 0, 1}, {3, 2, 1}, 2, 1, 3, 3},
      {"B", 2, 5, 15, {0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1, 2, 3, 4}, {5, 4, 3, 2, 1}, 0, 0, 4, 4},
      {"C", 3, 5, 10, {0, 1, 2, 3, 0, 1, 2, 3, 4, 0}, {2, 3, 4, 5, 1}, 0, 0, 3, 4},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const struct hand *h = &cases[i];
    const int64_t lru = sim(JACA_POLICY_LRU, h->seq, h->n, h->nkeys, h->cap, NULL);
    const int64_t fifo = sim(JACA_POLICY_FIFO, h->seq, h->n, h->nkeys, h->cap, NULL);
    const int64_t jaca = sim(JACA_POLICY_JACA, h->seq, h->n, h->nkeys, h->cap, h->rank);
    const int64_t none = sim(JACA_POLICY_NONE, h->seq, h->n, h->nkeys, h->cap, NULL);
    const int64_t min = oracle(h->seq, h->n, h->nkeys, h->cap);
    CHECK(lru == h->want_lru, "pattern %s: LRU %lld hits, expected %lld", h->name, (long long)lru, (long long)h->want_lru);
    CHECK(fifo == h->want_fifo, "pattern %s: FIFO %lld hits, expected %lld", h->name, (long long)fifo,
          (long long)h->want_fifo);
    CHECK(jaca == h->want_jaca, "pattern %s: JACA %lld hits, expected %lld", h->name, (long long)jaca,
          (long long)h->want_jaca);
    CHECK(min == h->want_min, "pattern %s: MIN %lld hits, expected %lld", h->name, (long long)min, (long long)h->want_min);
    CHECK(none == 0, "pattern %s: NONE %lld hits", h->name, (long long)none);
    printf("pattern %s (capacity %lld, %lld accesses): LRU %lld, FIFO %lld, JACA %lld, MIN %lld hits\n", h->name,
           (long long)h->cap, (long long)h->n, (long long)lru, (long long)fifo, (long long)jaca, (long long)min);
    fflush(stdout);
  }
}

/* Evictions the directory reports, on pattern A with LRU and FIFO. */
static void evictions(void) {
  const int64_t seq[] = {0, 1, 0, 2, 0, 1};
  const int64_t want_lru[] = {-1, -1, -2, 1, -2, 2}, want_fifo[] = {-1, -1, -2, 0, 1, 2}; /* -2: hit */
  for (int p = 0; p < 2; p++) {
    struct jaca_dir *d = NULL;
    CHECK(jaca_dir_create(p == 0 ? JACA_POLICY_LRU : JACA_POLICY_FIFO, 3, 2, NULL, &d) == CG_OK, "create");
    if (!d) return;
    for (int i = 0; i < 6; i++) {
      int64_t ev = -3;
      if (jaca_dir_lookup(d, seq[i]) >= 0) ev = -2;
      else CHECK(jaca_dir_admit(d, seq[i], &ev) >= 0, "admit");
      const int64_t want = p == 0 ? want_lru[i] : want_fifo[i];
      CHECK(ev == want, "%s access %d (key %lld): evicted %lld, expected %lld", p == 0 ? "LRU" : "FIFO", i,
            (long long)seq[i], (long long)ev, (long long)want);
      CHECK(jaca_dir_check(d) == CG_OK, "invariants: %s", cg_err_msg());
    }
    jaca_dir_destroy(&d);
    CHECK(d == NULL, "destroy clears the handle");
  }
  /* capacity clamps, NONE admits nothing, a missing priority order is refused */
  struct jaca_dir *d = NULL;
  CHECK(jaca_dir_create(JACA_POLICY_LRU, 4, 10, NULL, &d) == CG_OK && jaca_dir_capacity(d) == 4, "clamp");
  jaca_dir_destroy(&d);
  CHECK(jaca_dir_create(JACA_POLICY_NONE, 4, 3, NULL, &d) == CG_OK && jaca_dir_capacity(d) == 0 &&
            jaca_dir_admit(d, 1, NULL) == -1,
        "NONE admits nothing");
  jaca_dir_destroy(&d);
  CHECK(jaca_dir_create(JACA_POLICY_JACA, 4, 3, NULL, &d) == CG_ERR_ARG && d == NULL, "JACA needs priorities");
  cg_err_clear();
}

static uint64_t rng(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

/* Random patterns (uniform and skewed), and full-batch epochs of a shuffled order: MIN
 * is at least every policy; the directories stay consistent through random operations
 * (lookups, admissions, removals). */
static void random_patterns(void) {
  uint64_t s = 88172645463325252ull;
  int64_t seq[600], rank[40];
  for (int t = 0; t < 300; t++) {
    const int64_t nkeys = 1 + (int64_t)(rng(&s) % 40), n = 1 + (int64_t)(rng(&s) % 600);
    const int64_t cap = (int64_t)(rng(&s) % (uint64_t)(nkeys + 2));
    const int kind = t % 3;
    for (int64_t k = 0; k < nkeys; k++) rank[k] = k;
    for (int64_t k = nkeys - 1; k > 0; k--) { /* a random priority order */
      int64_t j = (int64_t)(rng(&s) % (uint64_t)(k + 1)), x = rank[k];
      rank[k] = rank[j];
      rank[j] = x;
    }
    if (kind == 2) { /* full-batch epochs: one fixed order repeated */
      for (int64_t i = 0; i < n; i++) seq[i] = rank[i % nkeys];
    } else {
      for (int64_t i = 0; i < n; i++) {
        uint64_t r = rng(&s) % (uint64_t)nkeys;
        if (kind == 1) r = r * r / (uint64_t)nkeys; /* skewed towards low keys */
        seq[i] = (int64_t)r;
      }
    }
    const int64_t min = oracle(seq, n, nkeys, cap);
    const enum jaca_policy pol[] = {JACA_POLICY_JACA, JACA_POLICY_LRU, JACA_POLICY_FIFO, JACA_POLICY_NONE};
    for (int k = 0; k < 4; k++) {
      const int64_t h = sim(pol[k], seq, n, nkeys, cap, rank);
      CHECK(h <= min, "trial %d (%lld keys, %lld accesses, capacity %lld): %s has %lld hits, MIN %lld", t,
            (long long)nkeys, (long long)n, (long long)cap, jaca_policy_name(pol[k]), (long long)h, (long long)min);
    }
    if (cap >= nkeys) { /* everything fits: only first accesses miss */
      int64_t distinct = 0;
      unsigned char seen[40] = {0};
      for (int64_t i = 0; i < n; i++) {
        distinct += !seen[seq[i]];
        seen[seq[i]] = 1;
      }
      CHECK(min == n - distinct, "MIN with room for all keys: %lld hits, expected %lld", (long long)min,
            (long long)(n - distinct));
    }
    for (int k = 0; k < 3; k++) {
      struct jaca_dir *d = NULL;
      if (jaca_dir_create(pol[k], nkeys, cap, rank, &d) != CG_OK) {
        CHECK(0, "create: %s", cg_err_msg());
        continue;
      }
      for (int64_t i = 0; i < n; i++) {
        const int64_t key = seq[i];
        if (rng(&s) % 7 == 0) jaca_dir_remove(d, key);
        else if (jaca_dir_lookup(d, key) < 0) jaca_dir_admit(d, key, NULL);
        if (jaca_dir_size(d) > jaca_dir_capacity(d)) CHECK(0, "size above capacity");
      }
      CHECK(jaca_dir_check(d) == CG_OK, "trial %d %s: %s", t, jaca_policy_name(pol[k]), cg_err_msg());
      /* JACA ends with the top priorities among the keys it has seen, when it is full */
      jaca_dir_destroy(&d);
    }
  }
}

int main(void) {
  hand_patterns();
  evictions();
  random_patterns();
  if (fails) {
    fprintf(stderr, "%d checks failed\n", fails);
    return 1;
  }
  printf("ok\n");
  return 0;
}
