/* fuzz/fuzz_checkpoint.c — rt_checkpoint_read on untrusted bytes.
 * Input: one mode byte, then the file. Mode bit 0 set: the trailing CRC-32 is
 * recomputed, so that mutations reach the header JSON and the size checks. Mode bit 1
 * set: the input is not a file but "HEADER\0PAYLOAD", which the harness frames as the
 * writer does (magic, version 1, header length, header, payload, CRC-32), so that
 * mutations of the JSON header that change its length still reach its parser. */
#include "fuzz_util.h"

#include "runtime/runtime.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_quiet();
  if (size < 1) return 0;
  const unsigned mode = data[0];
  size_t n = size - 1;
  uint8_t *b;
  if (mode & 2) {
    const uint8_t *in = data + 1, *nul = memchr(in, 0, n);
    const size_t hlen = nul ? (size_t)(nul - in) : n, plen = nul ? n - hlen - 1 : 0;
    n = 12 + 4 + 8 + hlen + plen + 4;
    b = malloc(n);
    memcpy(b, "CAPGNN-CKPT", 12); /* the magic with its NUL: 12 bytes */
    fuzz_put_le32(b + 12, 1);
    fuzz_put_le32(b + 16, (uint32_t)hlen);
    fuzz_put_le32(b + 20, 0);
    memcpy(b + 24, in, hlen);
    if (plen) memcpy(b + 24 + hlen, nul + 1, plen);
    fuzz_put_le32(b + n - 4, fuzz_crc32(b, n - 4));
  } else {
    b = malloc(n ? n : 1);
    memcpy(b, data + 1, n);
    if ((mode & 1) && n >= 4) fuzz_put_le32(b + n - 4, fuzz_crc32(b, n - 4));
  }
  const char *path = fuzz_file(b, n);
  free(b);
  struct rt_checkpoint c;
  if (FUZZ(rt_checkpoint_read(path, &c)) == 0) rt_checkpoint_free(&c);
  return 0;
}
