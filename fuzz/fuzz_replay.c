/* fuzz/fuzz_replay.c — main() for a harness built without libFuzzer (any compiler):
 * runs LLVMFuzzerTestOneInput on every file named, and on every file of every folder
 * named (a corpus), so that CTest replays the seeds and every crash that was fixed.
 * Exit 0 when every input returned; a crash is the test's failure. */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "fuzz_replay: cannot open %s\n", path);
    return 1;
  }
  size_t cap = 4096, n = 0;
  uint8_t *buf = malloc(cap);
  for (size_t k; buf && (k = fread(buf + n, 1, cap - n, f)) > 0;) {
    n += k;
    if (n == cap) buf = realloc(buf, cap *= 2);
  }
  fclose(f);
  if (!buf) {
    fprintf(stderr, "fuzz_replay: out of memory reading %s\n", path);
    return 1;
  }
  /* the exact size, so that ASan sees an over-read by one byte */
  uint8_t *exact = malloc(n ? n : 1);
  memcpy(exact, buf, n);
  free(buf);
  fprintf(stderr, "fuzz_replay: %s (%zu bytes)\n", path, n);
  LLVMFuzzerTestOneInput(exact, n);
  free(exact);
  return 0;
}

static int by_name(const struct dirent **a, const struct dirent **b) { return strcmp((*a)->d_name, (*b)->d_name); }

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FUZZ_REPLAY_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define FUZZ_REPLAY_ASAN 1
#endif

int main(int argc, char **argv) {
  int bad = 0, files = 0;
#ifndef FUZZ_REPLAY_ASAN
  /* What libFuzzer's -malloc_limit_mb does: an allocation that a few KB of input
   * sizes to gigabytes fails (the parser's CG_ERR_NOMEM is a finding, fuzz_util.h)
   * instead of succeeding untouched under overcommit. ASan reserves terabytes of
   * shadow, so a sanitized build goes without. */
  struct rlimit rl = {(rlim_t)1 << 30, (rlim_t)1 << 30};
  if (getrlimit(RLIMIT_AS, &rl) == 0 && (rl.rlim_max == RLIM_INFINITY || rl.rlim_max > ((rlim_t)1 << 30))) {
    rl.rlim_cur = (rlim_t)1 << 30;
    setrlimit(RLIMIT_AS, &rl);
  }
#endif
  for (int i = 1; i < argc; i++) {
    struct stat sb;
    if (stat(argv[i], &sb) != 0) {
      fprintf(stderr, "fuzz_replay: %s does not exist\n", argv[i]);
      bad = 1;
      continue;
    }
    if (!S_ISDIR(sb.st_mode)) {
      bad |= run_file(argv[i]);
      files++;
      continue;
    }
    struct dirent **ents;
    int ne = scandir(argv[i], &ents, NULL, by_name);
    for (int e = 0; e < ne; e++) {
      char p[4096];
      snprintf(p, sizeof p, "%s/%s", argv[i], ents[e]->d_name);
      if (ents[e]->d_name[0] != '.' && stat(p, &sb) == 0 && S_ISREG(sb.st_mode)) {
        bad |= run_file(p);
        files++;
      }
      free(ents[e]);
    }
    free(ents);
  }
  printf("fuzz_replay: %d inputs replayed\n", files);
  return bad || files == 0;
}
