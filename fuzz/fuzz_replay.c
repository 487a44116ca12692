/* fuzz/fuzz_replay.c — main() for a harness built without libFuzzer (any compiler):
 * runs LLVMFuzzerTestOneInput on every file named, and on every file of every folder
 * named (a corpus), so that CTest replays the seeds and every crash that was fixed.
 * Exit 0 when every input returned; a crash is the test's failure. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* What libFuzzer's -malloc_limit_mb does, for the replay: the allocation functions
 * are wrapped at link time (fuzz/CMakeLists.txt: -Wl,--wrap=...), and one that a few KB
 * of input sizes past 1 GiB fails, so the parser's CG_ERR_NOMEM is a finding
 * (fuzz_util.h) instead of an allocation that succeeds untouched under overcommit.
 * Calls from inside shared libraries (libzip, cJSON) are not wrapped. */
#define REPLAY_MAX_ALLOC ((size_t)1 << 30)
void *__real_malloc(size_t n);
void *__real_calloc(size_t k, size_t n);
void *__real_realloc(void *p, size_t n);
int __real_posix_memalign(void **p, size_t align, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t k, size_t n);
void *__wrap_realloc(void *p, size_t n);
int __wrap_posix_memalign(void **p, size_t align, size_t n);
void *__wrap_malloc(size_t n) {
  if (n > REPLAY_MAX_ALLOC) return errno = ENOMEM, NULL;
  return __real_malloc(n);
}
void *__wrap_calloc(size_t k, size_t n) {
  if (n && k > REPLAY_MAX_ALLOC / n) return errno = ENOMEM, NULL;
  return __real_calloc(k, n);
}
void *__wrap_realloc(void *p, size_t n) {
  if (n > REPLAY_MAX_ALLOC) return errno = ENOMEM, NULL;
  return __real_realloc(p, n);
}
int __wrap_posix_memalign(void **p, size_t align, size_t n) {
  if (n > REPLAY_MAX_ALLOC) return ENOMEM;
  return __real_posix_memalign(p, align, n);
}

int main(int argc, char **argv) {
  int bad = 0, files = 0;
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
