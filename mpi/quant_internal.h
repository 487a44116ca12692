/* mpi/quant_internal.h — private to mpi/: the wire format of quantised halo rows
 * (--halo-bits, comm_set_halo_bits in mpi/comm.h).
 *
 * A row of `cols` floats travels as its smallest value lo and its step
 * (hi - lo) / (2^bits - 1), two floats, then one code of `bits` bits per value, packed
 * low bits first (bits 4: two codes per byte, the first in the low nibble; 8: one byte;
 * 16: two bytes, little-endian). A value decodes to lo + code * step.
 *
 * Codes are rounded stochastically: code = floor((x - lo) / step + u) with u uniform
 * in [0, 1), so the decoded value is unbiased (its mean over u is x) and within one
 * step of x. u is a hash of (stream, row, column), not a random generator: the same
 * exchange of the same values gives the same codes in every run (deterministic
 * training). A row with hi == lo decodes exactly (step 0); a row holding a NaN or an
 * infinity decodes to NaN in every value (the training's non-finite checks see it). */
#ifndef CAPGNN_MPI_QUANT_INTERNAL_H
#define CAPGNN_MPI_QUANT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

/* Whether bits is a wire precision quantisation supports (4, 8 or 16). */
int comm_quant_bits_ok(int bits);

/* Bytes of one quantised row: 8 + ceil(cols * bits / 8). */
size_t comm_quant_row_bytes(int64_t cols, int bits);

/* Quantise rows x rows[0..nrows) (row stride cols) into out, nrows x
 * comm_quant_row_bytes(cols, bits) bytes. stream and first_row pick the rounding
 * hashes: row i uses (stream, first_row + i). */
void comm_quant_rows(const float *x, int64_t nrows, int64_t cols, int bits, uint64_t stream,
                     int64_t first_row, unsigned char *out);

/* Decode nrows quantised rows of in into x (row stride cols). */
void comm_dequant_rows(const unsigned char *in, int64_t nrows, int64_t cols, int bits, float *x);

#endif
