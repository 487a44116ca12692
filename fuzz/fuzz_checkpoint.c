/* fuzz/fuzz_checkpoint.c — rt_checkpoint_read on untrusted bytes.
 * Input: one mode byte, then the file. Mode bit 0 set: the trailing CRC-32 is
 * recomputed, so that mutations reach the header JSON and the size checks. */
#include "fuzz_util.h"

#include "runtime/runtime.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_quiet();
  if (size < 1) return 0;
  const size_t n = size - 1;
  uint8_t *b = malloc(n ? n : 1);
  memcpy(b, data + 1, n);
  if ((data[0] & 1) && n >= 4) fuzz_put_le32(b + n - 4, fuzz_crc32(b, n - 4));
  const char *path = fuzz_file(b, n);
  free(b);
  struct rt_checkpoint c;
  if (rt_checkpoint_read(path, &c) == 0) rt_checkpoint_free(&c);
  return 0;
}
