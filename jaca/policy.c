/* jaca/policy.c — directories of the cache tiers (policy_internal.h) and Belady's MIN.
 *
 * Design notes (the why):
 * - One structure for every policy: slot <-> key arrays, a doubly linked list of the
 *   residents (LRU order or admission order) and a min-heap by priority (JACA). Each
 *   policy uses the part it needs, so the bookkeeping cost differs only by what the
 *   policy itself requires, and hit rates compare like for like.
 * - Free slots are a stack: a slot freed by an eviction is reused by the admission
 *   that caused it, so a full tier never moves other rows.
 * - MIN uses a max-heap of (next use, key) with lazy deletion: a resident's entry is
 *   current when its next use matches the one recorded for the key. */
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "jaca/policy_internal.h"

struct jaca_dir {
  enum jaca_policy policy;
  int64_t nkeys, cap, size;
  int64_t *slot_of; /* key -> slot, -1 */
  int64_t *key_of;  /* slot -> key, -1 */
  int64_t *free_slots, nfree;
  /* residents in order: head = most recent (LRU) / newest (FIFO), tail = victim */
  int64_t *prev, *next; /* by slot, -1 = none */
  int64_t head, tail;
  /* JACA: min-heap of slots by rank[key_of[slot]]; pos by slot */
  int64_t *rank; /* by key */
  int64_t *heap, *hpos;
};

int64_t jaca_dir_capacity(const struct jaca_dir *d) { return d->cap; }
int64_t jaca_dir_size(const struct jaca_dir *d) { return d->size; }

void jaca_dir_destroy(struct jaca_dir **dp) {
  if (!dp || !*dp) return;
  struct jaca_dir *d = *dp;
  cg_free(d->slot_of);
  cg_free(d->key_of);
  cg_free(d->free_slots);
  cg_free(d->prev);
  cg_free(d->next);
  cg_free(d->rank);
  cg_free(d->heap);
  cg_free(d->hpos);
  cg_free(d);
  *dp = NULL;
}

int jaca_dir_create(enum jaca_policy policy, int64_t nkeys, int64_t capacity, const int64_t *rank,
                    struct jaca_dir **out) {
  *out = NULL;
  if (nkeys < 0)
    return cg_err_set(CG_ERR_ARG, "jaca_dir_create: negative key count %lld", (long long)nkeys);
  if (policy != JACA_POLICY_NONE && policy != JACA_POLICY_JACA && policy != JACA_POLICY_LRU &&
      policy != JACA_POLICY_FIFO)
    return cg_err_set(CG_ERR_ARG, "jaca_dir_create: unknown policy %d", (int)policy);
  if (policy == JACA_POLICY_JACA && nkeys > 0 && !rank)
    return cg_err_set(CG_ERR_ARG, "jaca_dir_create: the jaca policy needs a priority order");
  struct jaca_dir *d = cg_calloc(1, sizeof *d, "cache directory");
  if (!d) return CG_ERR_NOMEM;
  d->policy = policy;
  d->nkeys = nkeys;
  d->cap = policy == JACA_POLICY_NONE ? 0 : capacity < 0 ? 0 : capacity > nkeys ? nkeys : capacity;
  d->head = d->tail = -1;
  const size_t nk = (size_t)(nkeys > 0 ? nkeys : 1), nc = (size_t)(d->cap > 0 ? d->cap : 1);
  d->slot_of = cg_malloc(nk * sizeof(int64_t), "cache directory: slot of each key");
  d->key_of = cg_malloc(nc * sizeof(int64_t), "cache directory: key of each slot");
  d->free_slots = cg_malloc(nc * sizeof(int64_t), "cache directory: free slots");
  d->prev = cg_malloc(nc * sizeof(int64_t), "cache directory: order");
  d->next = cg_malloc(nc * sizeof(int64_t), "cache directory: order");
  if (!d->slot_of || !d->key_of || !d->free_slots || !d->prev || !d->next) goto nomem;
  if (policy == JACA_POLICY_JACA) {
    d->rank = cg_malloc(nk * sizeof(int64_t), "cache directory: priorities");
    d->heap = cg_malloc(nc * sizeof(int64_t), "cache directory: priority heap");
    d->hpos = cg_malloc(nc * sizeof(int64_t), "cache directory: priority heap positions");
    if (!d->rank || !d->heap || !d->hpos) goto nomem;
    if (nkeys > 0) memcpy(d->rank, rank, (size_t)nkeys * sizeof(int64_t));
  }
  for (int64_t k = 0; k < nkeys; k++) d->slot_of[k] = -1;
  for (int64_t s = 0; s < d->cap; s++) {
    d->key_of[s] = -1;
    d->prev[s] = d->next[s] = -1;
    d->free_slots[s] = d->cap - 1 - s; /* pop gives slot 0 first */
  }
  d->nfree = d->cap;
  *out = d;
  return CG_OK;
nomem:
  jaca_dir_destroy(&d);
  return CG_ERR_NOMEM;
}

/* ---- the resident list ---- */

static void list_unlink(struct jaca_dir *d, int64_t s) {
  if (d->prev[s] >= 0) d->next[d->prev[s]] = d->next[s];
  else d->head = d->next[s];
  if (d->next[s] >= 0) d->prev[d->next[s]] = d->prev[s];
  else d->tail = d->prev[s];
  d->prev[s] = d->next[s] = -1;
}

static void list_push_front(struct jaca_dir *d, int64_t s) {
  d->prev[s] = -1;
  d->next[s] = d->head;
  if (d->head >= 0) d->prev[d->head] = s;
  d->head = s;
  if (d->tail < 0) d->tail = s;
}

/* ---- the JACA heap: min by rank of the slot's key ---- */

static int64_t hrank(const struct jaca_dir *d, int64_t i) { return d->rank[d->key_of[d->heap[i]]]; }

static void heap_swap(struct jaca_dir *d, int64_t i, int64_t j) {
  int64_t t = d->heap[i];
  d->heap[i] = d->heap[j];
  d->heap[j] = t;
  d->hpos[d->heap[i]] = i;
  d->hpos[d->heap[j]] = j;
}

static void heap_up(struct jaca_dir *d, int64_t i) {
  while (i > 0) {
    int64_t p = (i - 1) / 2;
    if (hrank(d, p) <= hrank(d, i)) break;
    heap_swap(d, i, p);
    i = p;
  }
}

static void heap_down(struct jaca_dir *d, int64_t i, int64_t n) {
  for (;;) {
    int64_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < n && hrank(d, l) < hrank(d, m)) m = l;
    if (r < n && hrank(d, r) < hrank(d, m)) m = r;
    if (m == i) break;
    heap_swap(d, i, m);
    i = m;
  }
}

/* the heap holds d->size entries */
static void heap_remove_slot(struct jaca_dir *d, int64_t s) {
  int64_t i = d->hpos[s], last = d->size - 1;
  if (i != last) {
    heap_swap(d, i, last);
    heap_down(d, i, last);
    heap_up(d, i);
  }
}

/* ---- operations ---- */

int64_t jaca_dir_peek(const struct jaca_dir *d, int64_t key) {
  if (key < 0 || key >= d->nkeys) return -1;
  return d->slot_of[key];
}

int64_t jaca_dir_lookup(struct jaca_dir *d, int64_t key) {
  int64_t s = jaca_dir_peek(d, key);
  if (s >= 0 && d->policy == JACA_POLICY_LRU && d->head != s) {
    list_unlink(d, s);
    list_push_front(d, s);
  }
  return s;
}

static void evict_slot(struct jaca_dir *d, int64_t s) {
  if (d->policy == JACA_POLICY_JACA) heap_remove_slot(d, s);
  list_unlink(d, s);
  d->slot_of[d->key_of[s]] = -1;
  d->key_of[s] = -1;
  d->free_slots[d->nfree++] = s;
  d->size--;
}

void jaca_dir_remove(struct jaca_dir *d, int64_t key) {
  int64_t s = jaca_dir_peek(d, key);
  if (s >= 0) evict_slot(d, s);
}

int64_t jaca_dir_admit(struct jaca_dir *d, int64_t key, int64_t *evicted) {
  if (evicted) *evicted = -1;
  if (d->cap == 0 || key < 0 || key >= d->nkeys || d->slot_of[key] >= 0) return -1;
  if (d->size == d->cap) {
    int64_t victim;
    if (d->policy == JACA_POLICY_JACA) {
      victim = d->heap[0];
      if (d->rank[d->key_of[victim]] >= d->rank[key]) return -1; /* declined */
    } else {
      victim = d->tail; /* LRU: least recent; FIFO: earliest admitted */
    }
    if (evicted) *evicted = d->key_of[victim];
    evict_slot(d, victim);
  }
  int64_t s = d->free_slots[--d->nfree];
  d->key_of[s] = key;
  d->slot_of[key] = s;
  list_push_front(d, s);
  if (d->policy == JACA_POLICY_JACA) {
    d->heap[d->size] = s;
    d->hpos[s] = d->size;
    heap_up(d, d->size);
  }
  d->size++;
  return s;
}

int jaca_dir_check(const struct jaca_dir *d) {
  int64_t resident = 0;
  for (int64_t k = 0; k < d->nkeys; k++) {
    int64_t s = d->slot_of[k];
    if (s < 0) continue;
    resident++;
    if (s >= d->cap || d->key_of[s] != k)
      return cg_err_set(CG_ERR_INTERNAL, "cache directory: key %lld says slot %lld, which holds %lld",
                        (long long)k, (long long)s, s < d->cap ? (long long)d->key_of[s] : -1LL);
  }
  if (resident != d->size || d->size + d->nfree != d->cap)
    return cg_err_set(CG_ERR_INTERNAL, "cache directory: %lld resident, size %lld, %lld free of %lld",
                      (long long)resident, (long long)d->size, (long long)d->nfree, (long long)d->cap);
  int64_t n = 0, prev = -1;
  for (int64_t s = d->head; s >= 0; s = d->next[s]) {
    if (++n > d->size || d->key_of[s] < 0 || d->prev[s] != prev)
      return cg_err_set(CG_ERR_INTERNAL, "cache directory: the resident list is broken at slot %lld",
                        (long long)s);
    prev = s;
  }
  if (n != d->size || d->tail != prev)
    return cg_err_set(CG_ERR_INTERNAL, "cache directory: the resident list holds %lld of %lld",
                      (long long)n, (long long)d->size);
  if (d->policy == JACA_POLICY_JACA)
    for (int64_t i = 0; i < d->size; i++) {
      if (d->hpos[d->heap[i]] != i || d->key_of[d->heap[i]] < 0)
        return cg_err_set(CG_ERR_INTERNAL, "cache directory: heap entry %lld misplaced", (long long)i);
      if (i > 0 && hrank(d, (i - 1) / 2) > hrank(d, i))
        return cg_err_set(CG_ERR_INTERNAL, "cache directory: heap order broken at %lld", (long long)i);
    }
  return CG_OK;
}

int jaca_dir_simulate(enum jaca_policy policy, const int64_t *seq, int64_t n, int64_t nkeys,
                      int64_t capacity, const int64_t *rank, int64_t *hits) {
  struct jaca_dir *d = NULL;
  *hits = 0;
  TRY(jaca_dir_create(policy, nkeys, capacity, rank, &d));
  for (int64_t i = 0; i < n; i++) {
    if (seq[i] < 0 || seq[i] >= nkeys) {
      jaca_dir_destroy(&d);
      return cg_err_set(CG_ERR_ARG, "jaca_dir_simulate: key %lld at %lld outside [0, %lld)",
                        (long long)seq[i], (long long)i, (long long)nkeys);
    }
    if (jaca_dir_lookup(d, seq[i]) >= 0) (*hits)++;
    else jaca_dir_admit(d, seq[i], NULL);
  }
  jaca_dir_destroy(&d);
  return CG_OK;
}

/* ---- Belady's MIN ---- */

struct min_entry {
  int64_t next, key;
};

static void min_up(struct min_entry *h, int64_t i) {
  while (i > 0) {
    int64_t p = (i - 1) / 2;
    if (h[p].next >= h[i].next) break;
    struct min_entry t = h[p];
    h[p] = h[i];
    h[i] = t;
    i = p;
  }
}

static void min_down(struct min_entry *h, int64_t n) {
  int64_t i = 0;
  for (;;) {
    int64_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < n && h[l].next > h[m].next) m = l;
    if (r < n && h[r].next > h[m].next) m = r;
    if (m == i) break;
    struct min_entry t = h[m];
    h[m] = h[i];
    h[i] = t;
    i = m;
  }
}

int jaca_oracle_hits(const int64_t *seq, int64_t n, int64_t nkeys, int64_t capacity,
                     int64_t *hits) {
  int st = CG_OK;
  *hits = 0;
  if (capacity > nkeys) capacity = nkeys;
  if (capacity <= 0 || n <= 0) return CG_OK;
  const int64_t never = INT64_MAX;
  int64_t *nxt = cg_malloc((size_t)n * sizeof(int64_t), "oracle: next uses");
  int64_t *last = cg_malloc((size_t)nkeys * sizeof(int64_t), "oracle: last uses");
  int64_t *cur = cg_malloc((size_t)nkeys * sizeof(int64_t), "oracle: next use of residents");
  /* lazy heap: at most one live entry per resident plus stale ones, one push per access */
  struct min_entry *h = cg_malloc((size_t)(n + 1) * sizeof *h, "oracle: heap");
  if (!nxt || !last || !cur || !h) {
    st = CG_ERR_NOMEM;
    goto done;
  }
  for (int64_t k = 0; k < nkeys; k++) {
    last[k] = never;
    cur[k] = -1; /* -1: not resident */
  }
  for (int64_t i = n - 1; i >= 0; i--) {
    if (seq[i] < 0 || seq[i] >= nkeys) {
      st = cg_err_set(CG_ERR_ARG, "jaca_oracle_hits: key %lld at %lld outside [0, %lld)",
                      (long long)seq[i], (long long)i, (long long)nkeys);
      goto done;
    }
    nxt[i] = last[seq[i]];
    last[seq[i]] = i;
  }
  int64_t hn = 0, size = 0;
  for (int64_t i = 0; i < n; i++) {
    const int64_t k = seq[i];
    if (cur[k] >= 0) { /* hit: its next use moves on */
      (*hits)++;
      cur[k] = nxt[i];
      h[hn] = (struct min_entry){nxt[i], k};
      min_up(h, hn++);
      continue;
    }
    if (nxt[i] == never) continue; /* never used again: keeping it cannot help */
    if (size == capacity) {
      /* the resident used furthest in the future (skipping stale entries) */
      while (hn > 0 && cur[h[0].key] != h[0].next) {
        h[0] = h[--hn];
        min_down(h, hn);
      }
      if (hn == 0 || h[0].next < nxt[i]) continue; /* bypass: every resident is needed sooner */
      cur[h[0].key] = -1;
      h[0] = h[--hn];
      min_down(h, hn);
      size--;
    }
    cur[k] = nxt[i];
    size++;
    h[hn] = (struct min_entry){nxt[i], k};
    min_up(h, hn++);
  }
done:
  cg_free(nxt);
  cg_free(last);
  cg_free(cur);
  cg_free(h);
  return st;
}
