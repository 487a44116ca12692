/* jaca/policy_internal.h — which rows a tier keeps: one directory per tier, the same
 * structure for every policy, and Belady's offline optimum to measure them against.
 *
 * A directory maps keys [0, nkeys) (a tier's candidate rows: the halo rows of a rank's
 * layer, or the rows of a node) to slots [0, capacity) of the tier's storage. A lookup
 * says where a key sits (or -1); after a miss the caller asks admit() whether the
 * policy takes the row and into which slot (evicting another key when full). Rows are
 * never copied here: the caller moves data into the slot it is given.
 *
 * Policies (enum jaca_policy, jaca/jaca.h):
 *  NONE  capacity 0: nothing is ever admitted.
 *  JACA  admission by static priority: a key is admitted while there is room, and when
 *        full only if its priority is higher than the lowest resident's, which is then
 *        evicted. Priorities are a strict order (jaca_priority_rank: overlap ratio R(v)
 *        times influence, ties by global id), so the tier converges to the top-capacity
 *        keys and stays there: in full-batch training every row is read every epoch,
 *        so the rows worth keeping never change.
 *  LRU   admit every miss, evict the least recently used (lookup hits refresh).
 *  FIFO  admit every miss, evict the earliest admitted (hits change nothing).
 * Cost per operation: O(1) for LRU and FIFO, O(log capacity) for JACA.
 *
 * Belady's MIN (jaca_oracle_hits): with the whole access sequence known in advance
 * (full-batch training reads the same rows in the same order every epoch), a miss
 * evicts the resident whose next use is furthest away, or bypasses the cache when the
 * missed key itself is used later than all residents (or never again). This is the
 * optimal hit count for a cache of that capacity that may decline to store a row, so
 * no policy above can beat it on the same sequence (tested). */
#ifndef CAPGNN_JACA_POLICY_INTERNAL_H
#define CAPGNN_JACA_POLICY_INTERNAL_H

#include <stdint.h>

#include "jaca/jaca.h"

struct jaca_dir;

/* A directory for keys [0, nkeys) with `capacity` slots (clamped to [0, nkeys]; 0 for
 * JACA_POLICY_NONE). `rank` (nkeys entries, JACA only, else may be NULL) is the
 * priority order: a larger value is kept before a smaller one; values must be distinct
 * (jaca_priority_rank makes them so). Copied. */
int jaca_dir_create(enum jaca_policy policy, int64_t nkeys, int64_t capacity, const int64_t *rank,
                    struct jaca_dir **out);
void jaca_dir_destroy(struct jaca_dir **d); /* accepts NULL */

int64_t jaca_dir_capacity(const struct jaca_dir *d);
int64_t jaca_dir_size(const struct jaca_dir *d); /* keys resident */

/* The slot of key, or -1 when it is not resident. A hit counts as a use (LRU). */
int64_t jaca_dir_lookup(struct jaca_dir *d, int64_t key);
/* The slot of key without counting a use (-1 when absent). */
int64_t jaca_dir_peek(const struct jaca_dir *d, int64_t key);
/* After a miss of `key` (not resident): the slot the policy gives it, evicting another
 * key when the directory is full (*evicted gets that key, -1 when none), or -1 when
 * the policy declines it (NONE; JACA when its priority is below every resident's). */
int64_t jaca_dir_admit(struct jaca_dir *d, int64_t key, int64_t *evicted);
/* Drop key if resident (its slot becomes free). */
void jaca_dir_remove(struct jaca_dir *d, int64_t key);

/* Run a policy over an access sequence (lookup, then admit on a miss): its hits. */
int jaca_dir_simulate(enum jaca_policy policy, const int64_t *seq, int64_t n, int64_t nkeys,
                      int64_t capacity, const int64_t *rank, int64_t *hits);

/* Belady's MIN with bypass on the same sequence: the most hits any cache of that
 * capacity can have. O(n log capacity). */
int jaca_oracle_hits(const int64_t *seq, int64_t n, int64_t nkeys, int64_t capacity,
                     int64_t *hits);

/* Invariant checker: slots and keys map to each other one to one, the LRU/FIFO list
 * holds exactly the residents, the JACA heap is a heap of exactly the residents.
 * CG_ERR_INTERNAL naming the broken invariant. */
int jaca_dir_check(const struct jaca_dir *d);

#endif
