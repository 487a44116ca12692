/* jaca/seqlock_internal.h — rows published with a sequence number (a seqlock per row),
 * for the node tier in shared memory: one process writes a row, others read it
 * concurrently without any lock.
 *
 * A row is a run of 32-bit words, 64-byte aligned and a multiple of 64 bytes long
 * (jaca_row_stride), so that no two rows share a cache line:
 *   word 0  sequence number: even while the row is stable, odd while it is written;
 *           0 = never written
 *   word 1  generation: which exchange wrote it (1, 2, ...; the reader waits for the
 *           one it needs)
 *   word 2  epoch the values were produced in (their age, for the staleness bound)
 *   word 3  global id of the vertex (so a reader can tell a misplaced row)
 *   word 4+ the cols float values
 * Words 1.. form the payload: a reader gets all of it from one write or none.
 *
 * Protocol (H.-J. Boehm, "Can seqlocks get along with programming language memory
 * models?", 2012), with C11 atomics so that the concurrent accesses are not data races:
 *  writer  s = seq; seq = s + 1 (relaxed); release fence; payload (relaxed stores);
 *          seq = s + 2 (release)
 *  reader  s1 = seq (acquire); if odd: torn; payload (relaxed loads) into a private
 *          copy; acquire fence; s2 = seq (relaxed); the copy is good iff s1 == s2.
 * If the reader saw any word of a later write, the fences order that write's odd
 * sequence number before its second load, so s2 != s1 and the copy is thrown away.
 * One writer per row at a time (the row's owner, or the one rank that receives it for
 * its node): the protocol does not arbitrate between writers.
 *
 * Relaxed 32-bit atomic loads and stores compile to plain moves on x86-64 and
 * AArch64; the rows are plain shared memory (comm_shm), the same in every process. */
#ifndef CAPGNN_JACA_SEQLOCK_INTERNAL_H
#define CAPGNN_JACA_SEQLOCK_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#define JACA_ROW_HEADER_WORDS 4
#define JACA_ROW_ALIGN 64

/* What a row says about itself. */
struct jaca_row_meta {
  uint32_t gen, epoch, gid;
};

/* Bytes one row of cols values takes (header included, a multiple of 64). */
size_t jaca_row_stride(int64_t cols);

/* Write src[0..cols) as the row's new payload (single writer). */
void jaca_row_publish(void *row, const float *src, int64_t cols, const struct jaca_row_meta *m);

/* One attempt to copy the row: 1 when dst and *m hold one write's payload, 0 when the
 * copy was torn (a write was in progress or happened meanwhile: dst is garbage). A row
 * never written reads as gen 0 (with zero payload). */
int jaca_row_try_read(const void *row, float *dst, int64_t cols, struct jaca_row_meta *m);

/* Read until a good copy of generation >= min_gen is taken: retries torn copies and
 * waits (yielding the CPU) while the row is older. Returns the number of torn copies
 * thrown away (>= 0), or -1 when timeout_s passed without such a copy (the row's last
 * good metadata is in *m then). */
int64_t jaca_row_read_wait(const void *row, float *dst, int64_t cols, uint32_t min_gen,
                           double timeout_s, struct jaca_row_meta *m);

/* A 32-bit word in shared memory that only grows (adaptive staleness: "this rank has
 * finished its writes of generation g"): publish stores it with release order, so that
 * every row written before is visible to a reader that saw it; wait spins (yielding,
 * then napping) until it holds at least min_value (acquire), 0, or -1 after timeout_s;
 * *seen gets the last value read. */
void jaca_word_publish(void *word, uint32_t value);
int jaca_word_wait(const void *word, uint32_t min_value, double timeout_s, uint32_t *seen);
/* The word's value now (acquire), without waiting. */
uint32_t jaca_word_read(const void *word);

/* The sequence number alone (tests: a row is stable when it is even). */
uint32_t jaca_row_seq(const void *row);

#endif
