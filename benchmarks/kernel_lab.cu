/* benchmarks/kernel_lab.cu — validate, then time, every SpMM variant of the CUDA
 * backend on a synthetic CSR shaped like Reddit.
 *
 * Variants: cusparse, warp, subwarp, rowsplit, tiled (forced through
 * cg_cuda_spmm_set_variant) and auto (the backend's rule, reported with the
 * variant it resolved to). A forced variant that does not apply to a width
 * (subwarp above 16 columns, tiled on a matrix without dense tiles) is reported as
 * skipped, not timed twice. With tiled among the variants the matrices are created
 * with the tiled layout (cg_cuda_spmm_set_tiles); its share is printed.
 * --tile-layouts R1,R2h,... also times tiled layouts built with those density
 * thresholds (a tile is dense with >= R x 256 nonzeros; suffix h: heavy rows'
 * dense part in the tiles too), reported as "tiled@R" / "tiled@Rh".
 *
 * Graph: --rows rows (default 232,965 = Reddit, times --scale), each with about
 * --deg distinct neighbours (default 492) plus a self-loop, columns sorted;
 * neighbour order "clustered" (uniform in a window of 4*deg rows around the row:
 * high locality, like a graph reordered by community) or "random" (uniform over
 * all rows: the worst case for caches). --hubs N adds N rows with 100*deg
 * neighbours (power-law hubs: exercises the rowsplit path). Values in (0, 1].
 * The generator is deterministic (--seed).
 * --graph SPEC instead times the GCN operator D^-1/2 (A + I) D^-1/2 of a real or
 * synthetic graph (a .cgr path, a dataset name or synth:...), the matrix that
 * training multiplies by: e.g. --graph synth:reddit, whose neighbours are mostly in
 * the vertex's community (85 %) but whose communities span ~8k rows.
 *
 * Validation: before timing, each variant's output is compared on --check-rows
 * sampled rows (always including the first, the last and up to 64 hubs) with a double
 * reference: |y - ref| <= 1e-6 + 2e-5 * sum_k |a_k x_k|. Y is filled with NaN
 * first, so rows a kernel forgets are caught. A mismatch is printed and makes the
 * program exit 1 (the variant is not timed).
 *
 * Timing: cudaEvents on the backend's stream around each call, --warmup calls
 * first, median (and min) of --runs calls.
 * Effective bandwidth: bytes = nnz*f*4 (gathered X rows) + nrows*f*4 (Y written)
 *                              + nnz*8 (column index + value) + (nrows+1)*8 (row pointers),
 * GB/s = bytes / median time / 1e9. Gathered rows hit L2 often (clustered), so this
 * can exceed DRAM bandwidth; it is a work rate, comparable across variants.
 *
 * Usage: kernel_lab [--rows N] [--scale F] [--deg D] [--order clustered|random|both]
 *                   [--graph SPEC] [--widths 41,64,128,256,602]
 *                   [--variants cusparse,warp,subwarp,rowsplit,tiled,auto] [--tile-layouts 2,4,8,4h]
 *                   [--runs R] [--warmup W] [--check-rows K] [--hubs N] [--seed S]
 *                   [--device D] [--json PATH]
 * Exit: 0 ok, 1 validation failure, 2 usage or setup error, 77 no CUDA device. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <deque>
#include <string>
#include <vector>

#include <cjson/cJSON.h>
#include <cuda_runtime_api.h>

#include "core/csr.h"
#include "core/ops.h"
#include "core/status.h"
#include "cuda/cuda_backend.h"
#include "graph/graph.h"

namespace {

struct options {
  int64_t rows = 232965;
  double scale = 1.0;
  int64_t deg = 492;
  int orders = 3; /* bit 0 clustered, bit 1 random */
  std::vector<int64_t> widths{41, 64, 128, 256, 602};
  std::vector<enum cg_cuda_spmm_variant> variants{CG_CUDA_SPMM_CUSPARSE, CG_CUDA_SPMM_WARP,
                                                  CG_CUDA_SPMM_SUBWARP, CG_CUDA_SPMM_ROWSPLIT,
                                                  CG_CUDA_SPMM_TILED,   CG_CUDA_SPMM_AUTO};
  const char *graph = nullptr; /* --graph: the GCN operator of this graph instead */
  std::vector<std::string> tile_layouts; /* --tile-layouts: extra tiled layouts to time */
  int runs = 20;
  int warmup = 3;
  int64_t check_rows = 2000;
  int64_t hubs = 0;
  uint64_t seed = 42;
  int device = 0;
  const char *json = nullptr;
};

/* xoshiro-style splitmix64: fast and reproducible. */
struct rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double unif() { return (double)(next() >> 11) * (1.0 / 9007199254740992.0); } /* [0,1) */
};

void die(const char *what) {
  fprintf(stderr, "kernel_lab: %s\n", what);
  exit(2);
}

void check_cuda(cudaError_t e, const char *what) {
  if (e != cudaSuccess) {
    fprintf(stderr, "kernel_lab: %s: %s\n", what, cudaGetErrorString(e));
    exit(2);
  }
}

void check_st(int st, const char *what) {
  if (st < 0) {
    fprintf(stderr, "kernel_lab: %s failed\n", what);
    cg_err_report("kernel_lab");
    exit(2);
  }
}

std::vector<int64_t> parse_list(const char *s) {
  std::vector<int64_t> v;
  const char *p = s;
  while (*p) {
    char *end;
    long long x = strtoll(p, &end, 10);
    if (end == p || x <= 0) die("--widths expects a comma list of positive integers");
    v.push_back(x);
    p = *end == ',' ? end + 1 : end;
    if (*end && *end != ',') die("--widths expects a comma list of positive integers");
  }
  return v;
}

/* Append to cols the columns of [lo, hi) selected with probability p each,
 * sorted, by skipping geometric gaps (O(selected), exact Bernoulli sampling). */
void bernoulli_cols(rng &g, int64_t lo, int64_t hi, double p, std::vector<int32_t> &cols) {
  if (p >= 1.0) {
    for (int64_t c = lo; c < hi; c++) cols.push_back((int32_t)c);
    return;
  }
  const double lq = log1p(-p);
  int64_t c = lo - 1;
  for (;;) {
    double u = g.unif();
    c += 1 + (int64_t)floor(log1p(-u) / lq);
    if (c >= hi) break;
    cols.push_back((int32_t)c);
  }
}

void build_csr(const options &o, int64_t n, bool clustered, struct cg_csr *a) {
  std::vector<int64_t> rowptr((size_t)n + 1, 0);
  std::vector<int32_t> cols;
  cols.reserve((size_t)(n * (o.deg + 2) * 1.05) + 1024);
  std::vector<int32_t> row;
  std::vector<char> is_hub((size_t)n, 0);
  for (int64_t h = 0; h < o.hubs && h < n; h++) is_hub[(size_t)(h * (n / std::max<int64_t>(o.hubs, 1)))] = 1;
  rng g{o.seed * 0x100000001B3ull + (clustered ? 1 : 2)};
  for (int64_t r = 0; r < n; r++) {
    row.clear();
    if (is_hub[(size_t)r]) {
      bernoulli_cols(g, 0, n, std::min(1.0, 100.0 * (double)o.deg / (double)n), row);
    } else if (clustered) {
      int64_t w = std::min<int64_t>(4 * o.deg + 1, n);
      int64_t lo = std::max<int64_t>(0, std::min<int64_t>(r - w / 2, n - w));
      bernoulli_cols(g, lo, lo + w, std::min(1.0, (double)o.deg / (double)w), row);
    } else {
      bernoulli_cols(g, 0, n, std::min(1.0, (double)o.deg / (double)n), row);
    }
    /* self-loop, keeping the row sorted and distinct */
    auto it = std::lower_bound(row.begin(), row.end(), (int32_t)r);
    if (it == row.end() || *it != (int32_t)r) row.insert(it, (int32_t)r);
    cols.insert(cols.end(), row.begin(), row.end());
    rowptr[(size_t)r + 1] = (int64_t)cols.size();
  }
  check_st(cg_csr_alloc(a, n, n, (int64_t)cols.size(), 1), "allocating the CSR");
  memcpy(a->rowptr, rowptr.data(), rowptr.size() * sizeof(int64_t));
  memcpy(a->colidx, cols.data(), cols.size() * sizeof(int32_t));
  for (int64_t k = 0; k < a->nnz; k++) a->vals[k] = (float)(1.0 - g.unif()); /* (0, 1] */
}

struct result {
  const char *variant, *ran, *order;
  int64_t width;
  double median_ms, min_ms, gbps;
  bool skipped;
};

} // namespace

int main(int argc, char **argv) {
  options o;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : nullptr;
    auto need = [&]() {
      if (!v) {
        fprintf(stderr, "kernel_lab: %s needs a value\n", a);
        exit(2);
      }
      i++;
      return v;
    };
    if (!strcmp(a, "--rows")) o.rows = atoll(need());
    else if (!strcmp(a, "--scale")) o.scale = atof(need());
    else if (!strcmp(a, "--deg")) o.deg = atoll(need());
    else if (!strcmp(a, "--order")) {
      const char *s = need();
      o.orders = !strcmp(s, "clustered") ? 1 : !strcmp(s, "random") ? 2 : !strcmp(s, "both") ? 3 : 0;
      if (!o.orders) die("--order expects clustered, random or both");
    } else if (!strcmp(a, "--graph")) o.graph = need();
    else if (!strcmp(a, "--tile-layouts")) {
      char buf[256];
      snprintf(buf, sizeof buf, "%s", need());
      for (char *tok = strtok(buf, ","); tok; tok = strtok(nullptr, ",")) {
        char *end = nullptr;
        double r = strtod(tok, &end);
        if (end == tok || !(r >= 0.25 && r <= 1024.0) || (*end && strcmp(end, "h") != 0))
          die("--tile-layouts expects a comma list of thresholds in 0.25..1024, each optionally "
              "followed by h (e.g. 2,4,4h)");
        o.tile_layouts.push_back(tok);
      }
    }
    else if (!strcmp(a, "--widths")) o.widths = parse_list(need());
    else if (!strcmp(a, "--variants")) {
      o.variants.clear();
      char buf[256];
      snprintf(buf, sizeof buf, "%s", need());
      for (char *tok = strtok(buf, ","); tok; tok = strtok(nullptr, ",")) {
        enum cg_cuda_spmm_variant vv;
        check_st(cg_cuda_spmm_variant_parse(tok, &vv), "--variants");
        o.variants.push_back(vv);
      }
    } else if (!strcmp(a, "--runs")) o.runs = atoi(need());
    else if (!strcmp(a, "--warmup")) o.warmup = atoi(need());
    else if (!strcmp(a, "--check-rows")) o.check_rows = atoll(need());
    else if (!strcmp(a, "--hubs")) o.hubs = atoll(need());
    else if (!strcmp(a, "--seed")) o.seed = strtoull(need(), nullptr, 10);
    else if (!strcmp(a, "--device")) o.device = atoi(need());
    else if (!strcmp(a, "--json")) o.json = need();
    else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      printf("see the header of benchmarks/kernel_lab.cu for options\n");
      return 0;
    } else {
      fprintf(stderr, "kernel_lab: unknown option %s\n", a);
      return 2;
    }
  }
  const int64_t n = (int64_t)llround((double)o.rows * o.scale);
  if (n < 2 || o.deg < 1 || o.runs < 1 || o.warmup < 0 || o.widths.empty() || o.variants.empty())
    die("need rows*scale >= 2, deg >= 1, runs >= 1, at least one width and variant");
  if (cg_cuda_device_count() <= 0) {
    printf("kernel_lab: no CUDA device visible; nothing to measure\n");
    return 77;
  }

  std::string cmdline;
  for (int i = 0; i < argc; i++) {
    if (i) cmdline += ' ';
    cmdline += argv[i];
  }
  struct cg_backend *be = nullptr;
  check_st(cg_backend_cuda_create(o.device, 0, &be), "creating the CUDA backend");
  cudaStream_t stream = cg_cuda_stream(be);
  const bool tiled_listed =
      std::find(o.variants.begin(), o.variants.end(), CG_CUDA_SPMM_TILED) != o.variants.end();
  /* tiled listed: every matrix gets the layout; else what auto does */
  const int tile_mode = tiled_listed ? CG_CUDA_TILES_ON : CG_CUDA_TILES_AUTO;
  cg_cuda_spmm_set_tiles(be, tile_mode, nullptr);
  struct cg_cuda_tile_opts opts0;
  cg_cuda_spmm_get_tile_opts(be, &opts0);
  std::deque<std::string> labels; /* "tiled@R" names, alive as long as the results */
  printf("# kernel_lab: SpMM variants on %s\n",
         o.graph ? "the GCN operator of a graph" : "a Reddit-shaped synthetic CSR");
  printf("# GPU: %s\n# reproduce: %s\n", cg_cuda_describe(be), cmdline.c_str());
  printf("# GB/s = (nnz*f*4 + nrows*f*4 + nnz*8 + (nrows+1)*8) / median time\n");

  int64_t fmax = *std::max_element(o.widths.begin(), o.widths.end());
  std::vector<result> results;
  bool failed = false;
  cudaEvent_t ev0, ev1;
  check_cuda(cudaEventCreate(&ev0), "cudaEventCreate");
  check_cuda(cudaEventCreate(&ev1), "cudaEventCreate");
  int64_t nnz_reported[3] = {0, 0, 0}, rows_reported[3] = {0, 0, 0}, tiles_reported[3][2] = {};

  if (o.graph) o.orders = 4;
  for (int ord = 0; ord < 3; ord++) {
    if (!(o.orders & (1 << ord))) continue;
    const char *order = ord == 0 ? "clustered" : ord == 1 ? "random" : "graph";
    struct cg_csr h;
    memset(&h, 0, sizeof h);
    if (ord < 2) {
      build_csr(o, n, ord == 0, &h);
    } else {
      struct graph g;
      memset(&g, 0, sizeof g);
      check_st(graph_open(o.graph, &g), "--graph");
      check_st(graph_aggr_build(&g, GRAPH_NORM_GCN, 1, &h), "building the GCN operator");
      graph_free(&g);
    }
    const int64_t nr = h.nrows;
    nnz_reported[ord] = h.nnz;
    rows_reported[ord] = nr;
    struct cg_spmat *A = nullptr;
    check_st(be->spmat_create(be, &h, &A), "uploading the matrix");
    int64_t n_heavy = 0, thr = 0, ntiles = 0, tile_nnz = 0;
    cg_cuda_spmat_heavy_rows(A, &n_heavy, &thr);
    cg_cuda_spmat_tiles(A, &ntiles, &tile_nnz);
    tiles_reported[ord][0] = ntiles;
    tiles_reported[ord][1] = tile_nnz;
    printf("# %s%s%s: %lld rows, nnz %lld (%.1f per row), %lld heavy rows (degree > %lld), "
           "%lld dense tiles hold %.1f %% of the nonzeros\n",
           order, ord == 2 ? " " : "", ord == 2 ? o.graph : "", (long long)nr, (long long)h.nnz,
           (double)h.nnz / (double)nr, (long long)n_heavy, (long long)thr, (long long)ntiles,
           h.nnz ? 100.0 * (double)tile_nnz / (double)h.nnz : 0.0);

    /* what to time: each variant on A, then tiled on a layout per --tile-reuse value */
    struct run_spec {
      struct cg_spmat *A;
      enum cg_cuda_spmm_variant v;
      const char *label;
    };
    std::vector<run_spec> specs;
    for (enum cg_cuda_spmm_variant v : o.variants) specs.push_back({A, v, cg_cuda_spmm_variant_name(v)});
    std::vector<struct cg_spmat *> extra;
    for (const std::string &lay : o.tile_layouts) {
      struct cg_spmat *Ar = nullptr;
      const struct cg_cuda_tile_opts opts = {strtod(lay.c_str(), nullptr), lay.back() == 'h'};
      cg_cuda_spmm_set_tiles(be, CG_CUDA_TILES_ON, &opts);
      check_st(be->spmat_create(be, &h, &Ar), "uploading the matrix (tiled layout)");
      extra.push_back(Ar);
      int64_t nt = 0, tn = 0;
      cg_cuda_spmat_tiles(Ar, &nt, &tn);
      labels.push_back("tiled@" + lay);
      printf("# %s: %lld dense tiles hold %.1f %% of the nonzeros\n", labels.back().c_str(),
             (long long)nt, h.nnz ? 100.0 * (double)tn / (double)h.nnz : 0.0);
      specs.push_back({Ar, CG_CUDA_SPMM_TILED, labels.back().c_str()});
    }
    cg_cuda_spmm_set_tiles(be, tile_mode, &opts0);

    /* sampled rows: first, last, hubs, then random */
    std::vector<int32_t> sample{0, (int32_t)(nr - 1)};
    for (int64_t r = 0; r < nr && sample.size() < 66; r++) /* up to 64 hubs */
      if (h.rowptr[r + 1] - h.rowptr[r] > 4 * o.deg) sample.push_back((int32_t)r);
    rng gs{o.seed + 7};
    while ((int64_t)sample.size() < std::min<int64_t>(o.check_rows, nr))
      sample.push_back((int32_t)(gs.next() % (uint64_t)nr));
    const int64_t ns = (int64_t)sample.size();

    float *dX = nullptr, *dY = nullptr, *dS = nullptr;
    int32_t *dIdx = nullptr;
    check_st(be->alloc(be, (void **)&dX, (size_t)(nr * fmax) * sizeof(float), "X"), "alloc X");
    check_st(be->alloc(be, (void **)&dY, (size_t)(nr * fmax) * sizeof(float), "Y"), "alloc Y");
    check_st(be->alloc(be, (void **)&dS, (size_t)(ns * fmax) * sizeof(float), "sample"), "alloc");
    check_st(be->alloc(be, (void **)&dIdx, (size_t)ns * sizeof(int32_t), "sample ids"), "alloc");
    check_st(be->upload(be, dIdx, sample.data(), (size_t)ns * sizeof(int32_t)), "upload ids");
    std::vector<float> hX, hS;
    std::vector<double> ref, absref;

    for (int64_t f : o.widths) {
      /* X[nr x f], contiguous (ld = f) */
      rng gx{o.seed * 31 + (uint64_t)f};
      hX.resize((size_t)(nr * f));
      for (auto &x : hX) x = (float)(2.0 * gx.unif() - 1.0);
      check_st(be->upload(be, dX, hX.data(), hX.size() * sizeof(float)), "upload X");
      ref.assign((size_t)(ns * f), 0.0);
      absref.assign((size_t)(ns * f), 0.0);
      for (int64_t s = 0; s < ns; s++) {
        int64_t r = sample[(size_t)s];
        for (int64_t k = h.rowptr[r]; k < h.rowptr[r + 1]; k++) {
          const float *xr = hX.data() + (int64_t)h.colidx[k] * f;
          for (int64_t c = 0; c < f; c++) {
            double t = (double)h.vals[k] * (double)xr[c];
            ref[(size_t)(s * f + c)] += t;
            absref[(size_t)(s * f + c)] += fabs(t);
          }
        }
      }
      const double bytes = (double)h.nnz * (double)f * 4.0 + (double)nr * (double)f * 4.0 +
                           (double)h.nnz * 8.0 + (double)(nr + 1) * 8.0;
      for (const run_spec &sp : specs) {
        const enum cg_cuda_spmm_variant v = sp.v;
        struct cg_spmat *const Am = sp.A;
        cg_cuda_spmm_set_variant(be, v);
        enum cg_cuda_spmm_variant rv = cg_cuda_spmm_resolve(be, Am, f);
        result res{sp.label, cg_cuda_spmm_variant_name(rv), order, f, 0, 0, 0, false};
        if (v != CG_CUDA_SPMM_AUTO && rv != v) {
          res.skipped = true;
          results.push_back(res);
          continue;
        }
        /* validate */
        check_cuda(cudaMemsetAsync(dY, 0xff, (size_t)(nr * f) * sizeof(float), stream), "NaN fill");
        be->spmm(be, Am, dX, f, dY, f, f);
        be->gather_rows(be, dY, f, dIdx, ns, dS);
        hS.resize((size_t)(ns * f));
        check_st(be->download(be, hS.data(), dS, hS.size() * sizeof(float)), "download sample");
        int64_t bad = 0, wi = 0;
        double worst = -1.0;
        for (int64_t i = 0; i < ns * f; i++) {
          double err = fabs((double)hS[(size_t)i] - ref[(size_t)i]);
          double tol = 1e-6 + 2e-5 * absref[(size_t)i];
          double ratio = std::isnan(err) ? INFINITY : err / tol;
          if (ratio > worst) {
            worst = ratio;
            wi = i;
          }
          if (!(ratio <= 1.0)) bad++;
        }
        if (bad) {
          printf("VALIDATION FAILED: %s (ran %s) %s f=%lld: %lld of %lld sampled values wrong; "
                 "worst at row %d col %lld: got %.9g, want %.9g\n",
                 res.variant, res.ran, order, (long long)f, (long long)bad, (long long)(ns * f),
                 sample[(size_t)(wi / f)], (long long)(wi % f), (double)hS[(size_t)wi],
                 ref[(size_t)wi]);
          failed = true;
          res.skipped = true;
          results.push_back(res);
          continue;
        }
        /* time */
        for (int w = 0; w < o.warmup; w++) be->spmm(be, Am, dX, f, dY, f, f);
        std::vector<float> ms((size_t)o.runs);
        for (int it = 0; it < o.runs; it++) {
          check_cuda(cudaEventRecord(ev0, stream), "cudaEventRecord");
          be->spmm(be, Am, dX, f, dY, f, f);
          check_cuda(cudaEventRecord(ev1, stream), "cudaEventRecord");
          check_cuda(cudaEventSynchronize(ev1), "cudaEventSynchronize");
          check_cuda(cudaEventElapsedTime(&ms[(size_t)it], ev0, ev1), "cudaEventElapsedTime");
        }
        std::sort(ms.begin(), ms.end());
        res.median_ms = o.runs % 2 ? ms[(size_t)o.runs / 2]
                                   : 0.5 * (ms[(size_t)o.runs / 2 - 1] + ms[(size_t)o.runs / 2]);
        res.min_ms = ms[0];
        res.gbps = bytes / (res.median_ms * 1e-3) / 1e9;
        results.push_back(res);
        printf("  %-9s (ran %-8s) %-9s f=%-4lld median %9.3f ms  min %9.3f ms  %8.1f GB/s  "
               "[max rel err %.2g of tol]\n",
               res.variant, res.ran, order, (long long)f, res.median_ms, res.min_ms, res.gbps,
               worst);
        fflush(stdout);
      }
    }
    cg_cuda_spmm_set_variant(be, CG_CUDA_SPMM_AUTO);
    be->free(be, dX);
    be->free(be, dY);
    be->free(be, dS);
    be->free(be, dIdx);
    be->spmat_destroy(be, A);
    for (struct cg_spmat *Ar : extra) be->spmat_destroy(be, Ar);
    cg_csr_free(&h);
  }

  printf("\n%-9s %-9s %-9s %6s %11s %11s %9s\n", "variant", "ran", "order", "width", "median ms",
         "min ms", "GB/s");
  for (const result &r : results) {
    if (r.skipped)
      printf("%-9s %-9s %-9s %6lld %11s %11s %9s\n", r.variant, r.ran, r.order, (long long)r.width,
             "-", "-", "-");
    else
      printf("%-9s %-9s %-9s %6lld %11.3f %11.3f %9.1f\n", r.variant, r.ran, r.order,
             (long long)r.width, r.median_ms, r.min_ms, r.gbps);
  }

  if (o.json) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "benchmark", "kernel_lab_spmm");
    cJSON_AddStringToObject(root, "gpu", cg_cuda_describe(be));
    cJSON_AddStringToObject(root, "command", cmdline.c_str());
    cJSON_AddNumberToObject(root, "rows", (double)n);
    cJSON_AddNumberToObject(root, "degree", (double)o.deg);
    cJSON_AddNumberToObject(root, "hubs", (double)o.hubs);
    cJSON_AddNumberToObject(root, "nnz_clustered", (double)nnz_reported[0]);
    cJSON_AddNumberToObject(root, "nnz_random", (double)nnz_reported[1]);
    if (o.graph) {
      cJSON_AddStringToObject(root, "graph", o.graph);
      cJSON_AddNumberToObject(root, "graph_rows", (double)rows_reported[2]);
      cJSON_AddNumberToObject(root, "graph_nnz", (double)nnz_reported[2]);
    }
    cJSON *tiles = cJSON_AddObjectToObject(root, "dense_tiles");
    for (int ord = 0; ord < 3; ord++) {
      if (!(o.orders & (1 << ord))) continue;
      cJSON *e = cJSON_AddObjectToObject(tiles, ord == 0 ? "clustered" : ord == 1 ? "random" : "graph");
      cJSON_AddNumberToObject(e, "tiles", (double)tiles_reported[ord][0]);
      cJSON_AddNumberToObject(e, "nonzeros", (double)tiles_reported[ord][1]);
    }
    cJSON_AddNumberToObject(root, "runs", o.runs);
    cJSON_AddNumberToObject(root, "warmup", o.warmup);
    cJSON_AddStringToObject(root, "gbps_formula",
                            "(nnz*f*4 + nrows*f*4 + nnz*8 + (nrows+1)*8) / median_s / 1e9");
    cJSON_AddBoolToObject(root, "validation_passed", !failed);
    cJSON *arr = cJSON_AddArrayToObject(root, "results");
    for (const result &r : results) {
      cJSON *e = cJSON_CreateObject();
      cJSON_AddStringToObject(e, "variant", r.variant);
      cJSON_AddStringToObject(e, "ran", r.ran);
      cJSON_AddStringToObject(e, "order", r.order);
      cJSON_AddNumberToObject(e, "width", (double)r.width);
      cJSON_AddBoolToObject(e, "skipped", r.skipped);
      if (!r.skipped) {
        cJSON_AddNumberToObject(e, "median_ms", r.median_ms);
        cJSON_AddNumberToObject(e, "min_ms", r.min_ms);
        cJSON_AddNumberToObject(e, "gbps", r.gbps);
      }
      cJSON_AddItemToArray(arr, e);
    }
    char *txt = cJSON_Print(root);
    FILE *fp = fopen(o.json, "w");
    bool ok = fp && txt && fputs(txt, fp) >= 0;
    if (fp && fclose(fp) != 0) ok = false;
    if (!ok) {
      fprintf(stderr, "kernel_lab: cannot write %s\n", o.json);
      failed = true;
    } else {
      printf("# wrote %s\n", o.json);
    }
    free(txt);
    cJSON_Delete(root);
  }
  cudaEventDestroy(ev0);
  cudaEventDestroy(ev1);
  cg_backend_destroy(&be);
  if (failed) {
    fprintf(stderr, "kernel_lab: VALIDATION FAILED (see above)\n");
    return 1;
  }
  return 0;
}
