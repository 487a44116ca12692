/* import/tests/test_import_large.c — streaming conversion of a large OGB-style
 * folder shaped like ogbn-products (2,449,029 vertices, 61,859,140 edges listed
 * once, 100 features as CSV text, 47 classes, sales-ranking-like split), at a
 * fraction `scale` of its size. Checks the result against the generator's own
 * edge count bookkeeping and that the peak memory of the conversion stays within
 * the design's bound: ~16 bytes per input edge (CSR build) or the final graph
 * with its features, whichever is larger. Label: slow.
 *
 *   test_import_large [--scale S] [--keep DIR]   (default scale 0.02)
 *
 * With --keep DIR the folder is written to DIR and kept (for timing `capgnn
 * convert` on it by hand, e.g. at --scale 1 for the full ogbn-products shape). */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <zlib.h>

#include "core/status.h"
#include "core/timer.h"
#include "graph/graph.h"
#include "import/import.h"
#include "core/progress.h"
#include "graph_test_util.h"

static uint64_t rs = 0x243f6a8885a308d3ull;
static inline uint64_t rnd(void) {
  uint64_t z = (rs += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static int write_gz(const char *dir, const char *name, gzFile *out) {
  char p[4300];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  *out = gzopen(p, "wb1"); /* fast compression: the fixture, not the test, is the slow part */
  if (!*out) return -1;
  gzbuffer(*out, 1 << 20);
  return 0;
}

/* Writes the folder; returns the number of edge lines. */
static int64_t make_ogb(const char *dir, int64_t n, int64_t e, int f, int c) {
  char p[4300];
  snprintf(p, sizeof p, "%s/raw", dir);
  mkdir(dir, 0755);
  mkdir(p, 0755);
  snprintf(p, sizeof p, "%s/split", dir);
  mkdir(p, 0755);
  snprintf(p, sizeof p, "%s/split/sales_ranking", dir);
  mkdir(p, 0755);
  gzFile gz;
  char line[4096];
  if (write_gz(dir, "raw/num-node-list.csv.gz", &gz)) return -1;
  gzprintf(gz, "%lld\n", (long long)n);
  gzclose(gz);
  if (write_gz(dir, "raw/edge.csv.gz", &gz)) return -1;
  for (int64_t i = 0; i < e; i++) {
    /* Power-law-ish endpoints: a product of two uniforms skews toward low ids. */
    uint64_t r = rnd();
    int64_t u = (int64_t)((double)(r & 0xffffffff) / 4294967296.0 * (double)((r >> 32) % (uint64_t)n + 1));
    int64_t v = (int64_t)(rnd() % (uint64_t)n);
    int k = snprintf(line, sizeof line, "%lld,%lld\n", (long long)u, (long long)v);
    gzwrite(gz, line, (unsigned)k);
  }
  gzclose(gz);
  if (write_gz(dir, "raw/node-feat.csv.gz", &gz)) return -1;
  for (int64_t u = 0; u < n; u++) {
    int k = 0;
    for (int j = 0; j < f; j++) {
      uint64_t r = rnd();
      double x = ((double)(r % 2000001) - 1000000.0) / 1000000.0; /* 6 decimals, like OGB's text */
      k += snprintf(line + k, sizeof line - (size_t)k, j ? ",%.6f" : "%.6f", x);
    }
    line[k++] = '\n';
    gzwrite(gz, line, (unsigned)k);
  }
  gzclose(gz);
  if (write_gz(dir, "raw/node-label.csv.gz", &gz)) return -1;
  for (int64_t u = 0; u < n; u++) gzprintf(gz, "%d\n", (int)(rnd() % (uint64_t)c));
  gzclose(gz);
  gzFile sf[3];
  if (write_gz(dir, "split/sales_ranking/train.csv.gz", &sf[0]) ||
      write_gz(dir, "split/sales_ranking/valid.csv.gz", &sf[1]) ||
      write_gz(dir, "split/sales_ranking/test.csv.gz", &sf[2]))
    return -1;
  for (int64_t u = 0; u < n; u++) {
    uint64_t r = rnd() % 1000;
    gzprintf(sf[r < 80 ? 0 : r < 96 ? 1 : 2], "%lld\n", (long long)u);
  }
  for (int i = 0; i < 3; i++) gzclose(sf[i]);
  return e;
}

static int64_t peak_rss(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (int64_t)ru.ru_maxrss * 1024;
}

int main(int argc, char **argv) {
  double scale = 0.02;
  const char *keep = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--scale") == 0 && i + 1 < argc) scale = atof(argv[++i]);
    else if (strcmp(argv[i], "--keep") == 0 && i + 1 < argc) keep = argv[++i];
    else {
      fprintf(stderr, "usage: %s [--scale S] [--keep DIR]\n", argv[0]);
      return 2;
    }
  }
  const int64_t n = (int64_t)(2449029 * scale), e = (int64_t)(61859140 * scale);
  const int f = 100, c = 47;
  char *tmp = keep ? NULL : gt_mkdtemp();
  const char *base = keep ? keep : tmp;
  if (!base) return 1;
  char dir[4200], out[4300];
  snprintf(dir, sizeof dir, "%s/ogbn_products", base);
  if (keep) mkdir(keep, 0755);
  double t0 = cg_time_now();
  if (make_ogb(dir, n, e, f, c) < 0) {
    fprintf(stderr, "cannot write the fixture in %s\n", dir);
    return 1;
  }
  printf("fixture: %lld vertices, %lld edge lines, %d features, written in %.1f s\n", (long long)n, (long long)e, f,
         cg_time_now() - t0);
  int64_t rss0 = peak_rss();
  snprintf(out, sizeof out, "%s/products.cgr", base);
  struct import_opts o = {.input = dir};
  struct import_stats s;
  t0 = cg_time_now();
  int st = import_convert("ogb", &o, out, &s);
  double dt = cg_time_now() - t0;
  if (st != CG_OK) {
    cg_err_report("convert");
    return 1;
  }
  int64_t rss = peak_rss();
  struct graph g;
  if (graph_load_cgr(out, &g) != CG_OK) {
    cg_err_report("reload");
    return 1;
  }
  /* Bookkeeping: every line is a loop, a duplicate, or a distinct pair; the
   * distinct pairs plus the added mirrors are the CSR entries. */
  int ok = 1;
  ok &= s.edges_read == e;
  ok &= g.m == (s.edges_read - s.self_loops - s.duplicates) + s.reverse_added;
  ok &= g.n == n && g.feat_dim == f && g.num_classes == c && !g.sparse_feat;
  const double final_bytes = 8.0 * (double)(n + 1) + 4.0 * (double)g.m + 4.0 * (double)n * f + 5.0 * (double)n;
  /* Peak = the larger of the CSR build (two 4-byte entries per directed entry, plus
   * the edge list being freed as it is consumed) and the final graph with its
   * features; 10 % and 64 MB for allocator slack, buffers and the process itself. */
  const double build = 16.0 * (double)e + 24.0 * (double)n;
  const double bound = (build > final_bytes ? build : final_bytes) * 1.1 + (64 << 20);
  printf("converted in %.1f s; peak RSS %.0f MB (before: %.0f MB); output %.0f MB in memory; bound %.0f MB\n", dt,
         (double)rss / 1e6, (double)rss0 / 1e6, final_bytes / 1e6, bound / 1e6);
  import_stats_print(stdout, &s, "  ");
  if (!ok) printf("FAIL: counts do not add up\n");
#if defined(__SANITIZE_ADDRESS__)
  /* Shadow memory and the free quarantine make RSS meaningless here. */
  printf("peak RSS not checked under AddressSanitizer\n");
  if (0) {
#else
  if ((double)rss > bound) {
#endif
    printf("FAIL: peak RSS %.0f MB above the bound %.0f MB\n", (double)rss / 1e6, bound / 1e6);
    ok = 0;
  }
  graph_free(&g);
  if (tmp) gt_rmdir(tmp);
  return ok ? 0 : 1;
}
