/* fuzz/fuzz_checkpoint.c — rt_checkpoint_read on untrusted bytes.
 * Input: one mode byte, then the file. Mode bit 0 set: the trailing CRC-32 is
 * recomputed, so that mutations reach the header JSON and the size checks. Mode bit 1
 * set: the input is not a file but "HEADER\0PAYLOAD", which the harness frames as the
 * writer does (magic, version 1, header length, header, payload, CRC-32), so that
 * mutations of the JSON header that change its length still reach its parser. A
 * checkpoint that reads must write and read back the same (an oracle: else abort). */
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
  if (FUZZ(rt_checkpoint_read(path, &c)) != 0) return 0;
  /* what a resumed run does with it: compare with a run's settings (logging each
   * difference) */
  struct rt_config cfg;
  rt_config_defaults(&cfg);
  (void)rt_checkpoint_fits(&c, path, &cfg, 1);
  /* a state the reader accepts, the writer writes and the reader reads back the same
   * (a resumed run checkpoints what it resumed from) */
  static char dir[64], out[96];
  if (!dir[0]) {
    snprintf(dir, sizeof dir, "/tmp/capgnn-fuzz-ckpt.XXXXXX");
    if (!mkdtemp(dir)) abort();
    snprintf(out, sizeof out, "%s/ck", dir);
  }
  if (FUZZ(rt_checkpoint_write(out, &c)) != 0) abort();
  struct rt_checkpoint back;
  if (FUZZ(rt_checkpoint_read(out, &back)) != 0) abort();
  const size_t pb = (size_t)c.num_params * sizeof(float);
  int same = back.num_params == c.num_params && back.epoch == c.epoch && back.es_hist_n == c.es_hist_n &&
             memcmp(back.params, c.params, pb) == 0 && memcmp(back.adam_m, c.adam_m, pb) == 0 &&
             memcmp(back.adam_v, c.adam_v, pb) == 0 &&
             memcmp(back.loss, c.loss, (size_t)c.epoch * sizeof(double)) == 0 &&
             (c.es_hist_n == 0 || memcmp(back.es_hist, c.es_hist, (size_t)c.es_hist_n * sizeof(double)) == 0);
  struct rt_checkpoint sa = c, sb = back; /* the scalars: the structs without their arrays */
  sa.params = sa.adam_m = sa.adam_v = sb.params = sb.adam_m = sb.adam_v = NULL;
  sa.loss = sa.es_hist = sb.loss = sb.es_hist = NULL;
  /* the writer keeps es_best_acc for the gat rule only (the patience rule never reads it) */
  if (c.early_stop_rule != RT_ES_GAT) sa.es_best_acc = sb.es_best_acc;
  same = same && memcmp(&sa, &sb, sizeof sa) == 0;
  if (!same) {
    fprintf(stderr, "fuzz_checkpoint: the checkpoint read back differs from the one written\n");
    abort();
  }
  rt_checkpoint_free(&back);
  rt_checkpoint_free(&c);
  unlink(out);
  return 0;
}
