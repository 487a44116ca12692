/* apps/cmd_profile.c — `mpirun -np P capgnn profile [options]`: every rank profiles
 * its device (rapa/rapa.h), rank 0 gathers, prints an nccl-tests style table and
 * writes the JSON and the HTML report. Usage errors exit 2 (before MPI starts when
 * they do not depend on the rank count), runtime failures 1. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apps/commands_internal.h"
#include "core/log.h"
#include "core/outfile.h"
#include "core/status.h"
#include "mpi/comm.h"
#include "rapa/rapa.h"
#include "runtime/runtime.h"

#define MAX_LIST 1024

static void usage(FILE *out) {
  fprintf(out,
          "usage: mpirun -np P capgnn profile [options]\n"
          "\n"
          "Every rank measures its device (GEMM at the model's shapes and a size sweep, SpMM on a\n"
          "Reddit-shaped synthetic operator at widths 16..602, host/device copies pageable and\n"
          "pinned from 4 KiB to 1 GiB, copies inside the device and between GPUs) and every pair\n"
          "of ranks its link (MPI ping-pong on host and device buffers, NCCL send/recv, the\n"
          "gradient all-reduce); rank 0 prints a table, writes the profile and a report, and logs\n"
          "each rank's relative capability. A device's profile is kept in the cache folder and\n"
          "reused by later runs.\n"
          "\n"
          "  --device cpu|cuda|auto   backend of every rank (default auto: CUDA when every rank\n"
          "                           sees a GPU)\n"
          "  --threads N[,N...]       CPU threads per rank: one value for all ranks, or one per\n"
          "                           rank (rank r takes the r-th); default 0: as capgnn train,\n"
          "                           the host's cores divided by its ranks (at least 1)\n"
          "  --gpu-share P[,P...]     CUDA: limit each rank to P %% of its GPU's SMs through MPS\n"
          "                           (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE, set before the CUDA\n"
          "                           context; the MPS daemon must run); one value or one per rank\n"
          "  --quick                  smaller sweeps (copies up to 16 MiB) and a smaller SpMM graph\n"
          "  --refresh                measure even when the cache holds a profile\n"
          "  --json FILE              write the whole profile (docs/profile.md)\n"
          "  --html FILE              write the report (self-contained HTML, inline SVG charts)\n"
          "                           (--json, --html: an earlier profile or report is replaced,\n"
          "                           any other existing file only with --force)\n"
          "  --force                  replace an existing --json or --html file of another kind\n"
          "  --cache DIR              cache folder (default $CAPGNN_CACHE, else .capgnn-cache)\n"
          "  --spmm-graph SPEC        SpMM operator (default synth:reddit:scale=0.1, --quick 0.02)\n"
          "  --rows N                 rows of the model-shape GEMMs (default 32768, --quick 4096)\n"
          "  --hidden N               hidden width of the model (default 256)\n"
          "  -h, --help               this help\n");
}

#define usage_error(...) cli_usage_error("profile", __VA_ARGS__)

/* "2,1,4" -> values; each in [lo, hi]. */
static int parse_list(const char *opt, const char *s, int lo, int hi, int *v, int *n) {
  *n = 0;
  const char *p = s;
  while (*p) {
    char word[32];
    size_t len = strcspn(p, ",");
    if (len == 0 || len >= sizeof word || *n >= MAX_LIST)
      return usage_error("%s '%s': expected a comma-separated list of integers in [%d, %d]", opt, s, lo, hi);
    memcpy(word, p, len);
    word[len] = '\0';
    if (cli_parse_int_in("profile", opt, word, lo, hi, &v[*n]) != 0) return CAPGNN_EXIT_USAGE;
    (*n)++;
    p += len;
    if (*p == ',') {
      p++;
      if (!*p) return usage_error("%s '%s': a list may not end with a comma", opt, s);
    }
  }
  if (*n == 0) return usage_error("%s: empty list", opt);
  return 0;
}

enum { OPT_DEVICE = 256, OPT_THREADS, OPT_SHARE, OPT_QUICK, OPT_REFRESH, OPT_JSON, OPT_HTML, OPT_CACHE, OPT_SPMM,
       OPT_ROWS, OPT_HIDDEN, OPT_FORCE };

int cmd_profile(int argc, char **argv) {
  static const struct option longopts[] = {
      {"device", required_argument, NULL, OPT_DEVICE}, {"threads", required_argument, NULL, OPT_THREADS},
      {"gpu-share", required_argument, NULL, OPT_SHARE}, {"quick", no_argument, NULL, OPT_QUICK},
      {"refresh", no_argument, NULL, OPT_REFRESH},      {"json", required_argument, NULL, OPT_JSON},
      {"html", required_argument, NULL, OPT_HTML},      {"cache", required_argument, NULL, OPT_CACHE},
      {"spmm-graph", required_argument, NULL, OPT_SPMM}, {"rows", required_argument, NULL, OPT_ROWS},
      {"hidden", required_argument, NULL, OPT_HIDDEN},  {"force", no_argument, NULL, OPT_FORCE},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  struct rapa_run_opts o;
  rapa_run_opts_default(&o);
  o.device = "auto";
  static int threads[MAX_LIST], shares[MAX_LIST];
  int nthreads = 0, nshares = 0, rc = 0, c, force = 0;
  const char *json = NULL, *html = NULL;
  int64_t rows = 0, hidden = 256;
  optind = 1;
  opterr = 0;
  while (rc == 0 && (c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
    const char *name = optind > 0 && optind <= argc ? argv[optind - 1] : "?";
    if ((rc = cli_check_value("profile", argc, argv, optind, optarg)) != 0) break;
    switch (c) {
      case 'h': usage(stdout); return CAPGNN_EXIT_OK;
      case OPT_DEVICE:
        if (strcmp(optarg, "cpu") && strcmp(optarg, "cuda") && strcmp(optarg, "auto"))
          rc = usage_error("--device '%s': expected cpu, cuda or auto", optarg);
        o.device = optarg;
        break;
      case OPT_THREADS: rc = parse_list("--threads", optarg, 0, 4096, threads, &nthreads); break;
      case OPT_SHARE: rc = parse_list("--gpu-share", optarg, 1, 100, shares, &nshares); break;
      case OPT_QUICK: o.quick = 1; break;
      case OPT_REFRESH: o.refresh = 1; break;
      case OPT_JSON: json = optarg; break;
      case OPT_HTML: html = optarg; break;
      case OPT_FORCE: force = 1; break;
      case OPT_CACHE: o.cache_dir = optarg; break;
      case OPT_SPMM: o.spmm_graph = optarg; break;
      case OPT_ROWS:
        rc = cli_parse_i64("profile", "--rows", optarg, &rows);
        if (rc == 0 && (rows < 1 || rows > (1 << 24))) rc = usage_error("--rows %s: expected 1 .. 16777216", optarg);
        break;
      case OPT_HIDDEN:
        rc = cli_parse_i64("profile", "--hidden", optarg, &hidden);
        if (rc == 0 && (hidden < 1 || hidden > 65536)) rc = usage_error("--hidden %s: expected 1 .. 65536", optarg);
        break;
      case ':': rc = usage_error("option '%s' needs a value", name); break;
      default: rc = cli_bad_option("profile", name, longopts); break;
    }
  }
  cli_options_done();
  if (rc) return rc;
  if (optind < argc) return usage_error("unexpected argument '%s'", argv[optind]);
  if (nshares && !strcmp(o.device, "cpu"))
    return usage_error("--gpu-share applies to GPU ranks: use --device cuda (or auto) with it");
  if (json && !json[0]) return usage_error("--json: empty file name");
  if (html && !html[0]) return usage_error("--html: empty file name");
  if (json && html && !strcmp(json, html)) return usage_error("--json and --html name the same file '%s'", json);
  o.rows = rows;
  o.hidden = hidden;
  /* the output rule (core/outfile.h): an existing file of another kind only with --force
   * (both were replaced whatever they held) */
  static const char *const profile_sig[] = {"{\n\t\"schema\":\t\"capgnn-profile\"", NULL};
  static const struct cg_outfile_kind profile_kind = {"capgnn profile", profile_sig, 0, NULL};
  if (json && cg_outfile_check(json, "--json", &profile_kind, NULL, 0, force, 0) != CG_OK) return cli_runtime_error();
  if (html && cg_outfile_check(html, "--html", rapa_report_outfile_kind(), NULL, 0, force, 0) != CG_OK)
    return cli_runtime_error();
  if (json && cg_outfile_probe(json, "profile") != CG_OK) return cli_runtime_error();
  if (html && cg_outfile_probe(html, "HTML report") != CG_OK) return cli_runtime_error();

  char command[2048];
  int k = snprintf(command, sizeof command, "capgnn profile");
  for (int i = 1; i < argc && k > 0 && (size_t)k < sizeof command; i++)
    k += snprintf(command + k, sizeof command - (size_t)k, " %s", argv[i]);

  struct comm *cm = NULL;
  /* one process: said now, as a bad option. Several: comm_init compares them all and
   * every rank refuses together, rank 0 speaking (a rank that left here alone, before
   * MPI, would leave the others waiting in MPI's start-up under a launcher that does
   * not end a job when one process exits, e.g. srun without --kill-on-bad-exit) */
  if (cli_launch_size() == 1 && comm_emulate_nodes_check() != CG_OK) {
    fprintf(stderr, "capgnn: error: %s\n", cg_err_msg());
    return CAPGNN_EXIT_USAGE;
  }
  if (comm_init(NULL, NULL, &cm) != CG_OK) {
    if (cg_err_status() == CG_ERR_ARG) { /* refused by every rank together: said once, before any rank leaves */
      if (cli_speaks()) fprintf(stderr, "capgnn: error: %s\n", cg_err_msg());
      return comm_leave(CAPGNN_EXIT_USAGE);
    }
    fprintf(stderr, "capgnn: error: %s\n", cg_err_msg());
    comm_abort(NULL, CAPGNN_EXIT_FAILURE);
  }
  const int rank = comm_rank(cm), P = comm_size(cm);
  /* (agreed before anyone leaves: ranks may be given different lists, cli_first_rank_with) */
  const int bad = cli_first_rank_with(cm, (nthreads > 1 && nthreads != P) || (nshares > 1 && nshares != P));
  if (bad != -1) {
    if (bad == -2 && rank == 0) fprintf(stderr, "capgnn: error: %s\n", cg_err_msg());
    else if (rank == bad) {
      char on[32] = "";
      if (rank) snprintf(on, sizeof on, "on rank %d, ", rank);
      /* (not usage_error: that speaks on rank 0 only) */
      fprintf(stderr, "capgnn: error: %s%s has %d values but the job has %d rank%s: give one value for all ranks "
              "or one per rank (see capgnn profile --help)\n", on,
              nthreads > 1 && nthreads != P ? "--threads" : "--gpu-share",
              nthreads > 1 && nthreads != P ? nthreads : nshares, P, P == 1 ? "" : "s");
    }
    comm_finalize(&cm);
    return bad == -2 ? CAPGNN_EXIT_FAILURE : CAPGNN_EXIT_USAGE;
  }
  { /* what shapes the measurements and the links' message sizes: the same on every rank
     * (--quick on one rank only made the link ping-pong of the two ranks overrun its
     * buffers); --device, --threads, --gpu-share, --cache and the outputs may differ */
    char same[1400];
    snprintf(same, sizeof same, "quick = %d\nrefresh = %d\nspmm-graph = %s\nrows = %lld\nhidden = %lld\n"
             "capgnn-version = %s\n", o.quick, o.refresh, o.spmm_graph ? o.spmm_graph : "(default)",
             (long long)rows, (long long)hidden, CAPGNN_VERSION);
    if (cli_ranks_agree(cm, same, "give every rank the same --quick, --refresh, --spmm-graph, --rows and --hidden "
                        "(per-rank values: --threads N,N,..., --gpu-share P,P,...)") != CG_OK) {
      const int usage = cg_err_status() == CG_ERR_ARG;
      if (!usage && rank == 0) fprintf(stderr, "capgnn: error: %s\n", cg_err_msg());
      comm_finalize(&cm);
      return usage ? CAPGNN_EXIT_USAGE : CAPGNN_EXIT_FAILURE;
    }
  }
  if (P > 1) {
    size_t u = strlen(command);
    snprintf(command + u, sizeof command - u, " (%d ranks)", P);
  }
  o.command = command;
  /* the threads as training sets them up (without --threads the host's CPUs divided by
   * its ranks, a launcher's one-core binding widened to all; the profile's cpu-t<N> key
   * then matches a training run's --profile auto, and it measures what that run gets) */
  o.threads = rt_threads_setup("profile", nthreads ? threads[nthreads == 1 ? 0 : rank] : 0, comm_host_local_size(cm),
                               comm_host_local_rank(cm), o.device);
  o.share_pct = nshares ? shares[nshares == 1 ? 0 : rank] : 0;
  int st = !o.share_pct ? CG_OK
           : !cli_nvidia_present() ? cg_err_set(CG_ERR_UNSUPPORTED, "--gpu-share: host %s has no NVIDIA GPU (no "
                                                "/dev/nvidiactl), and MPS shares apply to GPU ranks only", cg_hostname())
                                   : rapa_mps_share_set(o.share_pct);
  st = comm_agree(cm, st, "setting the MPS share (--gpu-share)");
  struct rapa_profile *prof = NULL;
  if (st == CG_OK) st = rapa_profile_run(cm, &o, &prof);
  if (st == CG_OK && rank == 0) {
    rapa_report_text(prof, stdout);
    fflush(stdout);
    if (json && (st = rapa_profile_save(prof, json)) == CG_OK) LOG_INFO("profile", "wrote the profile to %s", json);
    if (st == CG_OK && html && (st = rapa_report_html(prof, NULL, NULL, html)) == CG_OK)
      LOG_INFO("profile", "wrote the report to %s", html);
  }
  /* (rank 0 alone writes the outputs) once per cause: the failing rank's own message,
   * not "rank R failed during ..." from the lowest other rank */
  const int agreed = comm_agree(cm, st, "writing the profile and the report");
  if (agreed < 0) cli_report_setup_error(cm);
  rapa_profile_destroy(&prof);
  comm_finalize(&cm);
  return agreed < 0 ? CAPGNN_EXIT_FAILURE : CAPGNN_EXIT_OK;
}
