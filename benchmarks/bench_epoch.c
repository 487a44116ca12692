/* benchmarks/bench_epoch.c — full-batch epoch time of one model on one backend.
 *
 * Reports, for a graph and model (default: synth:reddit, GCN 3 x 256, dropout 0.5):
 * - the median wall time of a training epoch (forward, loss, backward, Adam), with
 *   the backend synchronised around each epoch and nothing else running;
 * - a breakdown by op category (SpMM / GEMM / other) from separate profiled epochs,
 *   where every op is bracketed by synchronisations (core/ops_profile.h), so the
 *   parts add up to slightly more than the unprofiled epoch;
 * - the SpMM's effective bandwidth: bytes of gathered rows (nnz x f x 4) per second;
 * - peak RSS (and device memory use for CUDA), the machine and the command line.
 * It checks its own result before timing: the loss must be finite and must fall
 * over the measured epochs, else it exits non-zero.
 *
 *   bench_epoch [--graph SPEC] [--model gcn|sage] [--layers N] [--hidden H]
 *               [--dropout P] [--input-dropout P] [--feat-norm row|none] [--device cpu|cuda] [--threads T] [--epochs E]
 *               [--warmup W] [--profile-epochs K] [--json FILE] [--save-graph FILE.cgr]
 *               [--sparse-features on|off|auto]
 * --save-graph writes the graph (before feature normalisation) so that another
 * system (benchmarks/torch_gcn.py) can train on exactly the same file.
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/log.h"
#include "core/ops_profile.h"
#include "core/status.h"
#include "core/timer.h"
#include "graph/graph.h"
#include "runtime/runtime.h"

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void cpu_model(char *out, size_t len) {
  snprintf(out, len, "unknown CPU");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "model name", 10) == 0) {
      char *c = strchr(line, ':');
      if (c) {
        c += 2;
        c[strcspn(c, "\n")] = '\0';
        snprintf(out, len, "%s", c);
      }
      break;
    }
  }
  fclose(f);
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: bench_epoch [--graph SPEC] [--model gcn|sage] [--layers N] [--hidden H]\n"
          "                   [--dropout P] [--input-dropout P] [--device cpu|cuda] [--threads T]\n"
          "                   [--epochs E]\n"
          "                   [--warmup W] [--profile-epochs K] [--json FILE] [--save-graph FILE]\n"
          "                   [--sparse-features on|off|auto]   (default off: layer 0 dense)\n");
}

int main(int argc, char **argv) {
  struct rt_config cfg;
  rt_config_defaults(&cfg);
  cfg.graph = "synth:reddit";
  cfg.layers = 3;
  cfg.hidden = 256;
  cfg.dropout = 0.5f;
  cfg.weight_decay = 0.0f;
  cfg.device = "cpu";
  cfg.feat_norm_row = 0; /* synthetic features are Gaussian: row sums can be ~0 */
  cfg.sparse_features = RT_SPARSE_OFF; /* the dense layer 0 unless asked (training's default is auto) */
  int epochs = 10, warmup = 2, prof_epochs = 2;
  const char *json_path = NULL, *save_path = NULL;
  static const struct option opts[] = {
      {"graph", required_argument, 0, 'g'},   {"model", required_argument, 0, 'm'},
      {"layers", required_argument, 0, 'l'},  {"hidden", required_argument, 0, 'H'},
      {"dropout", required_argument, 0, 'd'}, {"device", required_argument, 0, 'D'},
      {"input-dropout", required_argument, 0, 'i'},
      {"threads", required_argument, 0, 't'}, {"epochs", required_argument, 0, 'e'},
      {"warmup", required_argument, 0, 'w'},  {"profile-epochs", required_argument, 0, 'p'},
      {"json", required_argument, 0, 'j'},    {"help", no_argument, 0, 'h'},
      {"save-graph", required_argument, 0, 's'}, {"feat-norm", required_argument, 0, 'f'},
      {"sparse-features", required_argument, 0, 'S'},
      {0, 0, 0, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    switch (c) {
      case 'g': cfg.graph = optarg; break;
      case 'm':
        if (!strcmp(optarg, "gcn")) cfg.model = RT_MODEL_GCN;
        else if (!strcmp(optarg, "sage")) cfg.model = RT_MODEL_SAGE;
        else { fprintf(stderr, "bench_epoch: error: --model %s: expected gcn or sage\n", optarg); return 2; }
        break;
      case 'l': cfg.layers = atoi(optarg); break;
      case 'H': cfg.hidden = atoll(optarg); break;
      case 'd': cfg.dropout = (float)atof(optarg); break;
      case 'i': cfg.input_dropout = (float)atof(optarg); break;
      case 'D': cfg.device = optarg; break;
      case 't': cfg.threads = atoi(optarg); break;
      case 'e': epochs = atoi(optarg); break;
      case 'w': warmup = atoi(optarg); break;
      case 'p': prof_epochs = atoi(optarg); break;
      case 'j': json_path = optarg; break;
      case 's': save_path = optarg; break;
      case 'f': cfg.feat_norm_row = !strcmp(optarg, "row"); break;
      case 'S':
        if (!strcmp(optarg, "on")) cfg.sparse_features = RT_SPARSE_ON;
        else if (!strcmp(optarg, "off")) cfg.sparse_features = RT_SPARSE_OFF;
        else if (!strcmp(optarg, "auto")) cfg.sparse_features = RT_SPARSE_AUTO;
        else { fprintf(stderr, "bench_epoch: error: --sparse-features %s: expected on, off or auto\n", optarg); return 2; }
        break;
      case 'h': usage(stdout); return 0;
      default: usage(stderr); return 2;
    }
  }
  if (epochs < 3 || warmup < 0 || prof_epochs < 0) {
    fprintf(stderr, "bench_epoch: error: need --epochs >= 3, --warmup >= 0, --profile-epochs >= 0\n");
    return 2;
  }
  if (rt_config_check(&cfg) < 0) {
    cg_err_report("bench_epoch");
    return 2;
  }

  int st = 0;
  struct graph g = {0};
  struct rt_local loc = {0};
  struct cg_backend *be = NULL, *prof = NULL;
  struct rt_model *model = NULL;
  double *t = NULL, *losses = NULL;

  double t0 = cg_time_now();
  TRY_GOTO(graph_open(cfg.graph, &g), fail);
  if (save_path) TRY_GOTO(graph_save_cgr(save_path, &g), fail);
  if (cfg.feat_norm_row) graph_feat_rownorm(&g);
  int sparse = 0;
  TRY_GOTO(rt_features_choose(&g, &cfg, 0, &sparse), fail);
  TRY_GOTO(rt_local_from_graph_feat(&g, cfg.model, sparse, &loc), fail);
  const int64_t n = g.n, m = g.m;
  graph_free(&g); /* the local problem holds its own copies */
  double t_load = cg_time_now() - t0;

  TRY_GOTO(rt_backend_open(cfg.device, cfg.threads, 0, &be), fail);
  TRY_GOTO(cg_backend_profile_wrap(be, &prof), fail);
  cg_profile_set_timing(prof, 0);
  t0 = cg_time_now();
  TRY_GOTO(rt_model_create(prof, &loc, &cfg, NULL, &model), fail);
  double t_setup = cg_time_now() - t0;

  t = calloc((size_t)epochs, sizeof *t);
  losses = calloc((size_t)(warmup + epochs + prof_epochs), sizeof *losses);
  if (!t || !losses) { st = cg_err_set(CG_ERR_NOMEM, "bench_epoch: out of memory"); goto fail; }
  uint32_t ep = 0;
  for (int i = 0; i < warmup; i++, ep++) {
    struct rt_step_stats s;
    TRY_GOTO(rt_model_step(model, ep, &s), fail);
    losses[ep] = s.loss;
  }
  for (int i = 0; i < epochs; i++, ep++) {
    struct rt_step_stats s;
    be->sync(be);
    double a = cg_time_now();
    TRY_GOTO(rt_model_step(model, ep, &s), fail);
    be->sync(be);
    t[i] = cg_time_now() - a;
    losses[ep] = s.loss;
  }
  cg_profile_reset(prof);
  cg_profile_set_timing(prof, 1);
  double prof_wall = 0.0;
  for (int i = 0; i < prof_epochs; i++, ep++) {
    struct rt_step_stats s;
    double a = cg_time_now();
    TRY_GOTO(rt_model_step(model, ep, &s), fail);
    be->sync(be);
    prof_wall += cg_time_now() - a;
    losses[ep] = s.loss;
  }
  /* Self-check: finite losses, and training makes progress. */
  for (uint32_t i = 0; i < ep; i++)
    if (!isfinite(losses[i])) {
      st = cg_err_set(CG_ERR_INTERNAL, "bench_epoch: loss of epoch %u is not finite", i);
      goto fail;
    }
  if (!(losses[ep - 1] < losses[0])) {
    st = cg_err_set(CG_ERR_INTERNAL, "bench_epoch: loss did not fall (%.6f -> %.6f)", losses[0],
                    losses[ep - 1]);
    goto fail;
  }

  struct cg_prof_counters pc;
  cg_profile_get(prof, &pc);
  double med = median(t, epochs);
  double spmm_s = 0, gemm_s = 0, other_s = 0;
  if (prof_epochs > 0) {
    spmm_s = pc.seconds[CG_PROF_SPMM] / prof_epochs;
    gemm_s = pc.seconds[CG_PROF_GEMM] / prof_epochs;
    for (int k = 0; k < CG_PROF_NOPS; k++)
      if (k != CG_PROF_SPMM && k != CG_PROF_GEMM) other_s += pc.seconds[k] / prof_epochs;
  }
  double spmm_gbs = pc.seconds[CG_PROF_SPMM] > 0 ? pc.spmm_gathered_bytes / pc.seconds[CG_PROF_SPMM] / 1e9 : 0;
  double gemm_gflops = pc.seconds[CG_PROF_GEMM] > 0 ? pc.gemm_flops / pc.seconds[CG_PROF_GEMM] / 1e9 : 0;
  size_t mem_free = 0, mem_total = 0;
  be->mem_info(be, &mem_free, &mem_total);
  char cpu[256];
  cpu_model(cpu, sizeof cpu);
  char cmd[1024] = "";
  for (int i = 0; i < argc; i++) {
    strncat(cmd, argv[i], sizeof cmd - strlen(cmd) - 2);
    if (i + 1 < argc) strncat(cmd, " ", sizeof cmd - strlen(cmd) - 1);
  }

  printf("bench_epoch: %s, %s %d x %lld, dropout %.2f (input features %.2f%s)\n", cfg.graph,
         rt_model_kind_str(cfg.model), cfg.layers, (long long)cfg.hidden, cfg.dropout,
         rt_config_layer_dropout(&cfg, 0),
         rt_config_layer_dropout(&cfg, 0) == 0.0f ? ": layer 0 aggregated once at setup" : "");
  printf("  graph            %lld vertices, %lld directed edges (+ self-loops for GCN); features %s\n",
         (long long)n, (long long)m, sparse ? "sparse (layer 0: csr_mm, csr_mm_t, csr_dropout)" : "dense");
  printf("  device           %s (host CPU: %s, %d threads requested)\n", rt_backend_describe(be), cpu,
         cfg.threads);
  if (be->kind == CG_DEVICE_CPU) printf("  GEMM             %s\n", cg_backend_cpu_blas_info(be));
  printf("  load + setup     %.2f s + %.2f s\n", t_load, t_setup);
  printf("  epoch (median of %d, after %d warm-up)   %.4f s   [min %.4f, max %.4f]\n", epochs,
         warmup, med, t[0], t[epochs - 1]);
  if (prof_epochs > 0) {
    printf("  profiled epoch (%d, ops synchronised)   %.4f s\n", prof_epochs, prof_wall / prof_epochs);
    printf("    spmm   %.4f s  (%.1f GB/s of gathered rows, %.1f GFLOP/s)\n", spmm_s, spmm_gbs,
           pc.seconds[CG_PROF_SPMM] > 0 ? pc.spmm_flops / pc.seconds[CG_PROF_SPMM] / 1e9 : 0.0);
    printf("    gemm   %.4f s  (%.1f GFLOP/s)\n", gemm_s, gemm_gflops);
    printf("    other  %.4f s", other_s);
    for (int k = 0; k < CG_PROF_NOPS; k++)
      if (k != CG_PROF_SPMM && k != CG_PROF_GEMM && pc.calls[k])
        printf("  %s %.4f", cg_prof_op_name((enum cg_prof_op)k), pc.seconds[k] / prof_epochs);
    printf("\n");
  }
  printf("  loss             %.4f -> %.4f over %u epochs\n", losses[0], losses[ep - 1], ep);
  printf("  check            losses finite and falling: ok\n");
  printf("  peak RSS         %.2f GiB; %s memory in use %.2f GiB of %.2f GiB\n",
         (double)cg_peak_rss_bytes() / (1u << 30),
         be->kind == CG_DEVICE_CUDA ? "device" : "host (whole system)",
         (double)(mem_total - mem_free) / (1u << 30), (double)mem_total / (1u << 30));
  printf("  reproduce        %s\n", cmd);

  if (json_path) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "benchmark", "bench_epoch");
    cJSON_AddStringToObject(o, "graph", cfg.graph);
    cJSON_AddNumberToObject(o, "nodes", (double)n);
    cJSON_AddNumberToObject(o, "edges", (double)m);
    cJSON_AddStringToObject(o, "model", rt_model_kind_str(cfg.model));
    cJSON_AddNumberToObject(o, "layers", cfg.layers);
    cJSON_AddNumberToObject(o, "hidden", (double)cfg.hidden);
    cJSON_AddNumberToObject(o, "dropout", cfg.dropout);
    cJSON_AddNumberToObject(o, "input_dropout", rt_config_layer_dropout(&cfg, 0));
    cJSON_AddNumberToObject(o, "setup_s", t_setup);
    cJSON_AddStringToObject(o, "device", rt_backend_describe(be));
    cJSON_AddStringToObject(o, "host_cpu", cpu);
    if (be->kind == CG_DEVICE_CPU) cJSON_AddStringToObject(o, "gemm", cg_backend_cpu_blas_info(be));
    cJSON_AddNumberToObject(o, "threads", cfg.threads);
    cJSON_AddNumberToObject(o, "epochs_timed", epochs);
    cJSON_AddNumberToObject(o, "median_epoch_s", med);
    cJSON_AddNumberToObject(o, "min_epoch_s", t[0]);
    cJSON_AddNumberToObject(o, "max_epoch_s", t[epochs - 1]);
    cJSON_AddNumberToObject(o, "profiled_epoch_s", prof_epochs ? prof_wall / prof_epochs : 0);
    cJSON_AddNumberToObject(o, "spmm_s", spmm_s);
    cJSON_AddNumberToObject(o, "gemm_s", gemm_s);
    cJSON_AddNumberToObject(o, "other_s", other_s);
    cJSON_AddNumberToObject(o, "spmm_gathered_GBps", spmm_gbs);
    cJSON_AddNumberToObject(o, "gemm_GFLOPs", gemm_gflops);
    cJSON_AddNumberToObject(o, "first_loss", losses[0]);
    cJSON_AddNumberToObject(o, "last_loss", losses[ep - 1]);
    cJSON_AddNumberToObject(o, "peak_rss_bytes", (double)cg_peak_rss_bytes());
    cJSON_AddNumberToObject(o, "device_mem_used_bytes", (double)(mem_total - mem_free));
    cJSON_AddStringToObject(o, "command", cmd);
    char *s = cJSON_Print(o);
    FILE *f = fopen(json_path, "w");
    if (!f || !s || fputs(s, f) < 0) {
      fprintf(stderr, "bench_epoch: error: cannot write %s\n", json_path);
      st = CG_ERR_IO;
    }
    if (f) fclose(f);
    cJSON_free(s);
    cJSON_Delete(o);
  }

fail:
  if (st < 0) cg_err_report("bench_epoch");
  free(t);
  free(losses);
  rt_model_destroy(&model);
  cg_backend_destroy(&prof);
  cg_backend_destroy(&be);
  rt_local_free(&loc);
  graph_free(&g);
  return st < 0 ? 1 : 0;
}
