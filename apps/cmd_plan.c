/* apps/cmd_plan.c — `capgnn plan`: the predicted training step of a job of P ranks on
 * N nodes (rapa/plan.h): per rank compute, communication (halo rows per peer and
 * layer, intra- and inter-node, the gradient all-reduce) and memory, and the epoch,
 * with and without the halo cache. No MPI: one process, any P. Usage errors return 2,
 * runtime failures 1, each with one line "capgnn: error: ..." on stderr. */
#include <getopt.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "apps/commands_internal.h"
#include "core/ops.h"
#include "core/ops_emulate.h"
#include "core/log.h"
#include "core/outfile.h"
#include "core/progress.h"
#include "core/status.h"
#include "graph/graph.h"
#include "partition/partition.h"
#include "rapa/balance.h"
#include "rapa/plan.h"
#include "rapa/rapa.h"
#include "runtime/runtime.h"

static void usage(FILE *out) {
  fprintf(out,
          "usage: capgnn plan --graph G --parts P [options]\n"
          "\n"
          "Predicts one training step (an epoch) of P ranks on N nodes without running it: per\n"
          "rank compute, communication (halo rows per peer and layer, within and between nodes,\n"
          "the gradient all-reduce) and memory, and the epoch (the slowest rank), without and\n"
          "with the halo cache. Partitions the graph as training does (METIS, the partition\n"
          "cache), prices the work with the cost model of --partition rapa (rapa/balance.h) at\n"
          "measured or declared rates.\n"
          "\n"
          "  --graph NAME|FILE|synth:SPEC  the graph (synth:reddit:scale=S: a Reddit-shaped twin)\n"
          "  --parts P                     ranks, 1 .. 4096 (and at most the vertices)\n"
          "  --nodes N                     nodes, ranks in contiguous blocks (default 1)\n"
          "  --hosts H                     machines the nodes run on (default N; 1 for emulated\n"
          "                                nodes on one machine: CAPGNN_EMULATE_NODES)\n"
          "  --cores C                     cores per machine: ranks x threads beyond them share\n"
          "                                cores (one-thread ranks bound round-robin, as mpirun\n"
          "                                --map-by core --bind-to core: a rank's compute is its\n"
          "                                core's summed compute; threads > 1: slowed by the\n"
          "                                ratio); default: the profile's host for a CPU profile;\n"
          "                                with rates measured here (no profile, none declared),\n"
          "                                this machine's; else not modelled (0)\n"
          "  --quantum-ms Q                the round-robin quantum ranks that share a core run under:\n"
          "                                a compute phase shorter than it runs unpreempted, its\n"
          "                                core-mates computing while it waits (0: its ops stretch\n"
          "                                over the core's summed compute); default: this process's\n"
          "                                (sched_rr_timeslice_ms) when it runs SCHED_RR, else 0\n"
          "  --threads T                   threads per rank (default: the profile's, else 1)\n"
          "  --profile FILE                rates from `capgnn profile --json FILE` (MM, SpMM, IDT,\n"
          "                                H2D/D2H of a GPU, memory; rank r takes entry r mod the\n"
          "                                profile's ranks) and its links (medians of the pairs\n"
          "                                within and between nodes)\n"
          "  --measure-rates               compute rates measured here on the CPU (--threads) at the\n"
          "                                model's shapes (GEMMs of n/P rows at each layer's widths,\n"
          "                                the graph's own operator, dropout, the cost of an op: what\n"
          "                                --partition rapa measures at start-up), even with a\n"
          "                                profile (its links and cores are still used). Measured\n"
          "                                or a profile's, CAPGNN_EMULATE_SPEED=f,f,... scales rank\n"
          "                                r's compute rates by f_r (declared rates: not scaled)\n"
          "  --gemm-gflops X, --spmm-gnnz X, --mem-gbs X\n"
          "                                declared rates (GEMM GFLOP/s; SpMM G nonzero-columns/s;\n"
          "                                elementwise GB/s): override the profile's; without a\n"
          "                                profile all three are needed, or none: then they are\n"
          "                                measured here on the CPU at the model's shapes\n"
          "  --h2d-gbs X, --d2h-gbs X      device ranks: host staging of halo rows (GB/s)\n"
          "  --device-memory-gib X         memory of each device (fits / does not fit)\n"
          "  --gpu-direct                  device ranks send halo rows device to device (NCCL,\n"
          "                                CUDA-aware MPI): only the node tier is staged\n"
          "  --link-gbps B[,INTER]         link bandwidth in GB/s (10^9 bytes, not bits: a 200 Gb/s\n"
          "                                InfiniBand port is 25), within a node and between nodes\n"
          "                                (one value: both); default the profile's\n"
          "  --link-latency-us L[,INTER]   one-way latency (default the profile's, else 2 and 5)\n"
          "  --model gcn|sage|gat, --layers L, --hidden H, --dropout P, --input-dropout P\n"
          "                                the model (training's defaults: gcn, 2, 16, 0.5, as\n"
          "                                --dropout); gat is priced as a GCN of the same widths\n"
          "  --layer0-halo auto|local|exchange  layer 0 over inner and halo rows (local) or over\n"
          "                                the inner rows with its transformed rows exchanged, as\n"
          "                                `capgnn train --layer0-halo` (default auto, as training)\n"
          "  --cache-policy none|jaca      the plan the per-rank table shows (default none); both\n"
          "                                are always computed and summarised (alias --cache)\n"
          "  --allreduce auto|mpi|flat|hier  the gradient all-reduce (auto: hier on several nodes\n"
          "                                of equal size, else mpi, as training)\n"
          "  --partition metis|random, --part-seed N, --part-cache DIR, --no-part-cache\n"
          "                                the partition, as `capgnn train` makes it (alias --method)\n"
          "  --json FILE                   also write the whole plan as JSON ('-': stdout, no table;\n"
          "                                docs/plan.schema.json): an earlier plan is replaced, any\n"
          "                                other existing file only with --force, never an input\n"
          "  --force                       replace an existing --json file of another kind\n"
          "  --quiet                       no progress lines\n"
          "  -h, --help                    this help\n");
}

#define usage_error(...) cli_usage_error("plan", __VA_ARGS__)

enum { OPT_GRAPH = 256, OPT_PARTS, OPT_NODES, OPT_HOSTS, OPT_CORES, OPT_THREADS, OPT_PROFILE, OPT_GEMM, OPT_SPMM,
       OPT_MEM, OPT_H2D, OPT_D2H, OPT_DEVMEM, OPT_LINK, OPT_LAT, OPT_MODEL, OPT_LAYERS, OPT_HIDDEN, OPT_DROPOUT,
       OPT_IDROPOUT, OPT_CACHE, OPT_ALLREDUCE, OPT_METHOD, OPT_SEED, OPT_PCACHE, OPT_NO_PCACHE, OPT_JSON, OPT_QUIET, OPT_MEASURE, OPT_FORCE, OPT_DIRECT,
       OPT_LAYER0, OPT_QUANTUM, OPT_CACHE_ALIAS, OPT_NO_CACHE };

/* "A" or "A,B" as one or two positive numbers. */
static int parse_pair(const char *opt, const char *s, float *a, float *b, int allow_zero) {
  char buf[64];
  const char *comma = strchr(s, ',');
  if (strlen(s) >= sizeof buf) return usage_error("%s '%s': expected X or X,Y", opt, s);
  snprintf(buf, sizeof buf, "%s", s);
  if (comma) buf[comma - s] = '\0';
  if (cli_parse_float("plan", opt, buf, a) != 0) return CAPGNN_EXIT_USAGE;
  *b = *a;
  if (comma && cli_parse_float("plan", opt, comma + 1, b) != 0) return CAPGNN_EXIT_USAGE;
  if (!(*a > 0 || (allow_zero && *a == 0)) || !(*b > 0 || (allow_zero && *b == 0)))
    return usage_error("%s '%s': expected %s numbers", opt, s, allow_zero ? "non-negative" : "positive");
  return 0;
}

static int parse_rate(const char *opt, const char *s, double *out) {
  float f;
  if (cli_parse_float("plan", opt, s, &f) != 0) return CAPGNN_EXIT_USAGE;
  if (!(f > 0)) return usage_error("%s '%s': expected a positive number", opt, s);
  *out = f;
  return 0;
}

static cJSON *plan_json(const struct rapa_plan *p, const struct rapa_shape *s) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "epoch_s", p->epoch_s);
  cJSON_AddNumberToObject(o, "slowest_rank", p->slowest);
  cJSON_AddNumberToObject(o, "halo_bytes", p->halo_bytes);
  cJSON_AddNumberToObject(o, "inter_node_bytes", p->inter_node_bytes);
  cJSON_AddNumberToObject(o, "allreduce_bytes", p->allreduce_bytes);
  cJSON_AddNumberToObject(o, "node_tier_bytes_max", p->node_tier_bytes_max);
  cJSON *w = cJSON_AddArrayToObject(o, "exchanged_width");
  for (int l = 0; l < s->layers; l++) cJSON_AddItemToArray(w, cJSON_CreateNumber((double)p->width[l]));
  cJSON *ranks = cJSON_AddArrayToObject(o, "ranks");
  for (int i = 0; i < p->P; i++) {
    const struct rapa_plan_rank *R = &p->rank[i];
    const struct rapa_load *L = &p->loads[i];
    cJSON *r = cJSON_CreateObject();
    cJSON_AddNumberToObject(r, "rank", i);
    cJSON_AddNumberToObject(r, "node", R->node);
    cJSON_AddNumberToObject(r, "inner", (double)L->n_inner);
    cJSON_AddNumberToObject(r, "halo", (double)L->n_halo);
    cJSON_AddNumberToObject(r, "nnz", (double)L->nnz);
    cJSON_AddNumberToObject(r, "compute_s", R->comp_s);
    cJSON_AddNumberToObject(r, "oversubscription", R->oversub);
    cJSON_AddNumberToObject(r, "core_wait_s", R->core_wait_s);
    cJSON_AddNumberToObject(r, "comm_s", R->comm_s);
    cJSON_AddNumberToObject(r, "halo_s", R->halo_s);
    cJSON_AddNumberToObject(r, "shm_s", R->shm_s);
    cJSON_AddNumberToObject(r, "staging_s", R->staging_s);
    cJSON_AddNumberToObject(r, "allreduce_s", R->allreduce_s);
    cJSON_AddNumberToObject(r, "loss_s", R->loss_s);
    cJSON_AddNumberToObject(r, "lambda_s", R->lambda_s);
    cJSON_AddNumberToObject(r, "wait_s", R->wait_s);
    cJSON_AddNumberToObject(r, "memory_bytes", R->cost.memory_bytes);
    cJSON_AddBoolToObject(r, "fits", R->cost.fits);
    cJSON_AddNumberToObject(r, "gemm_flops", R->cost.gemm_flops);
    cJSON_AddNumberToObject(r, "spmm_nnzcols", R->cost.spmm_nnzcols);
    cJSON_AddNumberToObject(r, "peers", R->peers);
    cJSON_AddNumberToObject(r, "halo_bytes_intra", R->halo_bytes_intra);
    cJSON_AddNumberToObject(r, "halo_bytes_inter", R->halo_bytes_inter);
    cJSON_AddNumberToObject(r, "shm_bytes", R->shm_bytes);
    cJSON_AddNumberToObject(r, "allreduce_inter_bytes", R->allreduce_inter);
    /* rows per peer: one hidden layer's (each hidden layer moves the same rows) */
    cJSON *peers = cJSON_AddArrayToObject(r, "peer_rows");
    for (int q = 0; q < p->P; q++) {
      const int64_t out = p->fwd_rows[(size_t)i * p->P + q], in = p->fwd_rows[(size_t)q * p->P + i];
      if (q == i || (out == 0 && in == 0 && L->recv_rows[q] == 0 && L->send_rows[q] == 0)) continue;
      cJSON *e = cJSON_CreateObject();
      cJSON_AddNumberToObject(e, "peer", q);
      cJSON_AddBoolToObject(e, "same_node", p->rank[q].node == R->node);
      cJSON_AddNumberToObject(e, "halo_rows", (double)L->recv_rows[q]);
      cJSON_AddNumberToObject(e, "mpi_rows_out", (double)out);
      cJSON_AddNumberToObject(e, "mpi_rows_in", (double)in);
      cJSON_AddItemToArray(peers, e);
    }
    cJSON_AddItemToArray(ranks, r);
  }
  return o;
}

static int write_text(const char *path, const char *text) {
  if (!strcmp(path, "-")) {
    fputs(text, stdout);
    fputc('\n', stdout);
    return CG_OK;
  }
  struct cg_outfile out;
  TRY(cg_outfile_open(&out, path, "plan"));
  if (fputs(text, out.fp) >= 0 && fputc('\n', out.fp) != EOF) return cg_outfile_commit(&out);
  cg_outfile_abort(&out);
  return cg_err_set(CG_ERR_IO, "writing the plan to '%s' failed", path);
}

static void print_plan(const struct rapa_plan *p, const char *name) {
  printf("\n%s: epoch %.3f ms (slowest rank %d)\n", name, p->epoch_s * 1e3, p->slowest);
  printf("%5s %4s %9s %9s %10s %10s %9s %9s %9s %9s %5s %12s %12s %10s\n", "rank", "node", "inner", "halo",
         "compute_ms", "comm_ms", "halo_ms", "allred_ms", "wait_ms", "lambda_ms", "peers", "intra_bytes",
         "inter_bytes", "mem_MiB");
  for (int i = 0; i < p->P; i++) {
    const struct rapa_plan_rank *R = &p->rank[i];
    printf("%5d %4d %9lld %9lld %10.3f %10.3f %9.3f %9.3f %9.3f %9.3f %5d %12.0f %12.0f %10.1f%s\n", i, R->node,
           (long long)p->loads[i].n_inner, (long long)p->loads[i].n_halo, R->comp_s * 1e3, R->comm_s * 1e3,
           (R->halo_s + R->shm_s + R->staging_s) * 1e3, R->allreduce_s * 1e3, R->wait_s * 1e3, R->lambda_s * 1e3,
           R->peers, R->halo_bytes_intra, R->halo_bytes_inter, R->cost.memory_bytes / 1048576.0,
           R->cost.fits ? "" : "  does not fit");
  }
}

/* An option capgnn plan does not take: a training option that changes what is priced
 * gets its own message (the plan prices the exact run), any other the general one. */
static int plan_bad_option(const char *name, const struct option *longopts) {
  static const char *const train_only[] = {"--config", "--cache-preset", "--staleness", "--grad-staleness",
                                           "--halo-bits", "--cache-capacity", "--cache-warmup", "--prune-halo", NULL};
  const char *eq = strchr(name, '=');
  const size_t len = eq ? (size_t)(eq - name) : strlen(name); /* (without "=VALUE") */
  int plan_prefix = 0; /* a prefix of one of plan's own options: theirs, not a training option */
  for (const struct option *o = longopts; o->name && len > 2; o++)
    plan_prefix |= !strncmp(o->name, name + 2, len - 2);
  for (int k = 0; train_only[k]; k++) {
    const size_t n = strlen(train_only[k]);
    /* the whole name, or (as capgnn train takes them) a prefix of at least 5 characters */
    const int hit = len == n ? !strncmp(name, train_only[k], n) : len >= 5 && len < n && !plan_prefix &&
                                                                     !strncmp(name, train_only[k], len);
    if (hit)
      return usage_error("%s is an option of capgnn train: capgnn plan prices the exact run (the halo cache at "
                         "staleness 0 with full-precision rows, no pruning, METIS or random parts) and takes the "
                         "model's shape as options (--layers, --hidden, --dropout, --model)", train_only[k]);
  }
  return cli_bad_option("plan", name, longopts);
}

int cmd_plan(int argc, char **argv) {
  static const struct option longopts[] = {
      {"graph", required_argument, NULL, OPT_GRAPH},       {"parts", required_argument, NULL, OPT_PARTS},
      {"nodes", required_argument, NULL, OPT_NODES},       {"hosts", required_argument, NULL, OPT_HOSTS},
      {"cores", required_argument, NULL, OPT_CORES},       {"threads", required_argument, NULL, OPT_THREADS},
      {"profile", required_argument, NULL, OPT_PROFILE},   {"gemm-gflops", required_argument, NULL, OPT_GEMM},
      {"spmm-gnnz", required_argument, NULL, OPT_SPMM},    {"mem-gbs", required_argument, NULL, OPT_MEM},
      {"h2d-gbs", required_argument, NULL, OPT_H2D},       {"d2h-gbs", required_argument, NULL, OPT_D2H},
      {"device-memory-gib", required_argument, NULL, OPT_DEVMEM},
      {"link-gbps", required_argument, NULL, OPT_LINK},    {"link-latency-us", required_argument, NULL, OPT_LAT},
      {"model", required_argument, NULL, OPT_MODEL},       {"layers", required_argument, NULL, OPT_LAYERS},
      {"hidden", required_argument, NULL, OPT_HIDDEN},     {"dropout", required_argument, NULL, OPT_DROPOUT},
      {"input-dropout", required_argument, NULL, OPT_IDROPOUT},
      {"cache-policy", required_argument, NULL, OPT_CACHE}, {"cache", required_argument, NULL, OPT_CACHE_ALIAS},
      {"allreduce", required_argument, NULL, OPT_ALLREDUCE},
      {"partition", required_argument, NULL, OPT_METHOD},  {"part-seed", required_argument, NULL, OPT_SEED},
      {"method", required_argument, NULL, OPT_METHOD},     {"no-cache", no_argument, NULL, OPT_NO_CACHE},
      {"part-cache", required_argument, NULL, OPT_PCACHE}, {"no-part-cache", no_argument, NULL, OPT_NO_PCACHE},
      {"json", required_argument, NULL, OPT_JSON},         {"quiet", no_argument, NULL, OPT_QUIET},
      {"measure-rates", no_argument, NULL, OPT_MEASURE},  {"force", no_argument, NULL, OPT_FORCE},
      {"quantum-ms", required_argument, NULL, OPT_QUANTUM},
      {"gpu-direct", no_argument, NULL, OPT_DIRECT},
      {"layer0-halo", required_argument, NULL, OPT_LAYER0},
      {"help", no_argument, NULL, 'h'},                    {NULL, 0, NULL, 0}};
  const char *graph_name = NULL, *profile = NULL, *json = NULL, *pcache = NULL, *model = "gcn";
  int parts = 0, nodes = 1, hosts = 0, cores = -1, threads = 0, layers = 2, cache = 0, no_pcache = 0, quiet = 0;
  int have_link = 0, have_lat = 0, measure = 0, force = 0, direct = 0, rc = 0, c;
  int64_t hidden = 16;
  enum rt_layer0_halo layer0 = RT_L0_AUTO;
  const char *l0_why = "", *l0_why_cache = "";
  int l0x_cache = 0, l0_sparse = 0; /* layer 0 exchanged in the cached plan (auto weighs the cache) */
  struct rt_config l0c;              /* layer 0's settings, as training's */
  float quantum_ms = -1.0f;
  int quantum_given = 0, cores_given = 0;
  float dropout = 0.5f, idropout = -1.0f, link_a = 0, link_b = 0, lat_a = 0, lat_b = 0;
  double gemm = 0, spmm = 0, mem = 0, h2d = 0, d2h = 0, devmem = 0;
  const char *allreduce = "auto";
  uint64_t seed = 1;
  enum part_method method = PART_METIS;
  optind = 1;
  opterr = 0;
  while (rc == 0 && (c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
    const char *name = optind > 0 && optind <= argc ? argv[optind - 1] : "?";
    if ((rc = cli_check_value("plan", argc, argv, optind, optarg)) != 0) break;
    switch (c) {
      case 'h': usage(stdout); return CAPGNN_EXIT_OK;
      case OPT_GRAPH: graph_name = optarg; break;
      case OPT_PARTS: rc = cli_parse_int_in("plan", "--parts", optarg, 1, RAPA_PLAN_MAX_RANKS, &parts); break;
      case OPT_NODES: rc = cli_parse_int_in("plan", "--nodes", optarg, 1, RAPA_PLAN_MAX_RANKS, &nodes); break;
      case OPT_HOSTS: rc = cli_parse_int_in("plan", "--hosts", optarg, 1, RAPA_PLAN_MAX_RANKS, &hosts); break;
      case OPT_CORES:
        rc = cli_parse_int_in("plan", "--cores", optarg, 0, 1 << 20, &cores);
        cores_given = 1;
        break;
      case OPT_THREADS: rc = cli_parse_int_in("plan", "--threads", optarg, 1, 4096, &threads); break;
      case OPT_PROFILE: profile = optarg; break;
      case OPT_GEMM: rc = parse_rate("--gemm-gflops", optarg, &gemm); break;
      case OPT_SPMM: rc = parse_rate("--spmm-gnnz", optarg, &spmm); break;
      case OPT_MEM: rc = parse_rate("--mem-gbs", optarg, &mem); break;
      case OPT_H2D: rc = parse_rate("--h2d-gbs", optarg, &h2d); break;
      case OPT_D2H: rc = parse_rate("--d2h-gbs", optarg, &d2h); break;
      case OPT_DEVMEM: rc = parse_rate("--device-memory-gib", optarg, &devmem); break;
      case OPT_LINK: rc = parse_pair("--link-gbps", optarg, &link_a, &link_b, 0); have_link = 1; break;
      case OPT_LAT: rc = parse_pair("--link-latency-us", optarg, &lat_a, &lat_b, 1); have_lat = 1; break;
      case OPT_MODEL:
        if (strcmp(optarg, "gcn") && strcmp(optarg, "sage") && strcmp(optarg, "gat"))
          rc = usage_error("--model '%s': expected gcn, sage or gat", optarg);
        model = optarg;
        break;
      case OPT_LAYERS: rc = cli_parse_int_in("plan", "--layers", optarg, 1, 64, &layers); break;
      case OPT_HIDDEN:
        rc = cli_parse_i64("plan", "--hidden", optarg, &hidden);
        if (rc == 0 && (hidden < 1 || hidden > 1048576)) rc = usage_error("--hidden %s: expected 1 .. 1048576", optarg);
        break;
      case OPT_DROPOUT:
      case OPT_IDROPOUT: {
        float *d = c == OPT_DROPOUT ? &dropout : &idropout;
        rc = cli_parse_float("plan", name, optarg, d);
        if (rc == 0 && !(*d >= 0.0f && *d < 1.0f)) rc = usage_error("%s %s: expected [0, 1)", name, optarg);
        break;
      }
      case OPT_LAYER0:
        if (!strcmp(optarg, "auto")) layer0 = RT_L0_AUTO;
        else if (!strcmp(optarg, "local")) layer0 = RT_L0_LOCAL;
        else if (!strcmp(optarg, "exchange")) layer0 = RT_L0_EXCHANGE;
        else rc = usage_error("--layer0-halo '%s': expected auto, local or exchange", optarg);
        break;
      case OPT_CACHE:
      case OPT_CACHE_ALIAS:
        if (!strcmp(optarg, "none")) cache = 0;
        else if (!strcmp(optarg, "jaca")) cache = 1;
        /* capgnn train and partition take --cache for the partition cache folder */
        else if (c == OPT_CACHE_ALIAS)
          rc = usage_error("--cache '%s': in capgnn plan --cache is the halo cache (--cache-policy), none or jaca; "
                           "the partition cache folder is --part-cache DIR", optarg);
        else rc = usage_error("--cache-policy '%s': expected none or jaca", optarg);
        break;
      case OPT_NO_CACHE: /* train's and partition's alias of --no-part-cache: ambiguous here */
        rc = usage_error("--no-cache: in capgnn plan --cache is the halo cache; write --no-part-cache (the "
                         "partition cache) or --cache-policy none (the plan without the halo cache)");
        break;
      case OPT_ALLREDUCE:
        if (strcmp(optarg, "auto") && strcmp(optarg, "mpi") && strcmp(optarg, "flat") && strcmp(optarg, "hier"))
          rc = usage_error("--allreduce '%s': expected auto, mpi, flat or hier", optarg);
        allreduce = optarg;
        break;
      case OPT_METHOD:
        if (!strcmp(optarg, "rapa"))
          rc = usage_error("--partition rapa: capgnn plan prices METIS or random parts; for the capability-weighted "
                           "split and its predicted times per rank use capgnn partition --partition rapa --profile "
                           "FILE");
        else if (part_method_parse(optarg, &method) != CG_OK)
          rc = usage_error("--partition '%s': expected metis or random", optarg);
        break;
      case OPT_SEED: rc = cli_parse_u64("plan", "--part-seed", optarg, &seed); break;
      case OPT_PCACHE: pcache = optarg; break;
      case OPT_NO_PCACHE: no_pcache = 1; break;
      case OPT_JSON: json = optarg; break;
      case OPT_QUIET: quiet = 1; break;
      case OPT_MEASURE: measure = 1; break;
      case OPT_FORCE: force = 1; break;
      case OPT_DIRECT: direct = 1; break;
      case OPT_QUANTUM:
        rc = cli_parse_float("plan", "--quantum-ms", optarg, &quantum_ms);
        quantum_given = 1;
        if (rc == 0 && !(quantum_ms >= 0)) rc = usage_error("--quantum-ms: expected a number >= 0");
        break;
      case ':': rc = usage_error("option '%s' needs a value", name); break;
      default: rc = plan_bad_option(name, longopts); break;
    }
  }
  cli_options_done();
  if (rc) return rc;
  if (optind < argc) return usage_error("unexpected argument '%s'", argv[optind]);
  if (!graph_name) return usage_error("--graph is required");
  if (parts == 0) return usage_error("--parts is required");
  if (nodes > parts) return usage_error("--nodes %d: more nodes than ranks (--parts %d)", nodes, parts);
  if (hosts > nodes) return usage_error("--hosts %d: more machines than nodes (--nodes %d)", hosts, nodes);
  if (!strcmp(allreduce, "hier") && parts % nodes)
    return usage_error("--allreduce hier needs as many ranks on every node (--parts %d, --nodes %d)", parts, nodes);
  const int declared = (gemm > 0) + (spmm > 0) + (mem > 0);
  if (measure && declared) return usage_error("--measure-rates and declared rates (--gemm-gflops ...) exclude each other");
  /* CAPGNN_EMULATE_SPEED scales the rates measured here, as --partition rapa's start-up
   * measurement is scaled by the emulation it runs under: a bad list is refused now */
  const char *speed_env = getenv("CAPGNN_EMULATE_SPEED");
  const int emulated = speed_env && speed_env[0];
  if (emulated) {
    int n = 0;
    if (cg_emulate_speed_check(speed_env, &n) != CG_OK) return usage_error("%s", cg_err_msg());
    if (n > 1 && n != parts)
      return usage_error("CAPGNN_EMULATE_SPEED='%s' has %d values but --parts is %d: give one value for all ranks or "
                         "one per rank", speed_env, n, parts);
  }
  if (!profile && declared != 0 && declared != 3)
    return usage_error("without --profile, declare all of --gemm-gflops, --spmm-gnnz and --mem-gbs (or none: "
                       "measured here)");
  if (!profile && !have_link && parts > 1)
    return usage_error("--parts %d needs link bandwidths: give --profile FILE or --link-gbps B[,INTER]", parts);
  if ((h2d > 0) != (d2h > 0))
    return usage_error("%s: give both --h2d-gbs and --d2h-gbs (the staging of halo rows goes both ways)",
                       h2d > 0 ? "--h2d-gbs without --d2h-gbs" : "--d2h-gbs without --h2d-gbs");
  if (layer0 == RT_L0_EXCHANGE && !strcmp(model, "gat")) /* (as capgnn train refuses it: rt_config_check) */
    return usage_error("--layer0-halo exchange is not built for GAT (its attention reads the halo rows of X·W on "
                       "every rank): use auto or local");
  if (no_pcache && pcache) return usage_error("--part-cache and --no-part-cache exclude each other");
  if (json && !json[0]) return usage_error("--json: empty file name");
  if (json && strcmp(json, "-")) {
    /* the output rule (core/outfile.h), before the partitioning */
    static const char *const sig[] = {"{\n\t\"schema\":\t\"capgnn-plan\"", NULL};
    static const struct cg_outfile_kind kind = {"plan", sig, 0, NULL};
    char gpath[4200];
    const struct cg_outfile_input inputs[] = {{"--graph", graph_path(graph_name, gpath, sizeof gpath)},
                                              {"--profile", profile}};
    if (cg_outfile_check(json, "--json", &kind, inputs, 2, force, 0) != CG_OK ||
        cg_outfile_probe(json, "plan") != CG_OK)
      return cli_runtime_error();
  }
  if (quiet || (json && !strcmp(json, "-"))) cg_progress_set_mode(CG_PROGRESS_OFF);
  const int table = !(json && !strcmp(json, "-"));

  struct rapa_shape shape = {layers, 0, hidden, 0, !strcmp(model, "sage"), dropout, idropout >= 0 ? idropout : dropout, 0, 0};
  struct rapa_plan_opts po;
  memset(&po, 0, sizeof po);
  po.P = parts;
  po.nodes = nodes;
  po.hosts = hosts ? hosts : nodes;
  po.threads = threads ? threads : 1;
  po.gpu_direct = direct;
  po.lat_intra = 2e-6;
  po.lat_inter = 5e-6;
  po.allreduce = !strcmp(allreduce, "flat")   ? RAPA_ALLREDUCE_FLAT
                 : !strcmp(allreduce, "hier") ? RAPA_ALLREDUCE_HIER
                 : !strcmp(allreduce, "mpi")  ? RAPA_ALLREDUCE_MPI
                 : (nodes > 1 && parts % nodes == 0) ? RAPA_ALLREDUCE_HIER
                                                     : RAPA_ALLREDUCE_MPI;
  struct graph g;
  memset(&g, 0, sizeof g);
  struct rapa_profile *prof = NULL;
  struct rapa_rates *rates = NULL;
  int32_t *owner = NULL;
  struct rapa_plan plans[3]; /* without the cache, with it, with it and layer 0's other schedule (alt, below) */
  memset(plans, 0, sizeof plans);
  cJSON *root = NULL;
  char rates_what[1200] = "", links_what[300] = "", ar_why[300] = "from the links (no profile)";
  int st = CG_OK, gpu_profile = 0;
  if (profile) {
    TRY_GOTO(rapa_profile_load(profile, &prof), done);
    const char *kind;
    int pt, pc;
    TRY_GOTO(rapa_plan_host_from_profile(prof, 0, &kind, &pt, &pc), done);
    if (!threads) po.threads = pt;
    /* the model gives every rank one thread count (for the cores they share); a profile of
     * ranks with different counts (--threads 2,1) is said to be priced with rank 0's */
    int tmin = 0, tmax = 0; /* (CPU ranks: a GPU rank's entry has no threads) */
    for (int r = 0; r < rapa_profile_nranks(prof); r++) {
      const char *k2;
      int t2, c2;
      TRY_GOTO(rapa_plan_host_from_profile(prof, r, &k2, &t2, &c2), done);
      if (strcmp(k2, "cpu") != 0) continue;
      if (tmin == 0 || t2 < tmin) tmin = t2;
      if (t2 > tmax) tmax = t2;
    }
    if (tmin != tmax && !threads && table)
      fprintf(stderr, "capgnn: warning: the profile's ranks have %d to %d threads; the plan gives every rank rank 0's "
                      "%d for the cores they share (each rank's compute rates stay its own entry's): --threads T "
                      "sets one count\n", tmin, tmax, pt);
    if (cores < 0 && !strcmp(kind, "cpu")) cores = pc;
    double bi, li, bx, lx;
    TRY_GOTO(rapa_plan_links_from_profile(prof, &bi, &li, &bx, &lx), done);
    if (bi > 0 || bx > 0) {
      po.bw_intra = bi > 0 ? bi : bx;
      po.lat_intra = bi > 0 ? li : lx;
      po.bw_inter = bx > 0 ? bx : bi;
      po.lat_inter = bx > 0 ? lx : li;
      snprintf(links_what, sizeof links_what, "profile %s (medians of its pairs, fastest round trips%s)", profile,
               bx > 0 && bi > 0 ? ""
               : bx > 0     ? "; it has no pair within a node: intra-node = inter-node"
                            : "; it has no inter-node pair: inter-node = intra-node");
    }
    gpu_profile = !strcmp(kind, "cuda");
  }
  /* rates measured here stand for machines like this one: their cores too (counted as a
   * profile counts them) */
  int cores_here = 0;
  if (cores < 0 && !profile && declared == 0 && (cores_here = rapa_plan_host_cores()) > 0) cores = cores_here;
  if (have_link) {
    po.bw_intra = link_a * 1e9;
    po.bw_inter = link_b * 1e9;
    snprintf(links_what, sizeof links_what, "declared (--link-gbps)");
  }
  if (have_lat) {
    po.lat_intra = lat_a * 1e-6;
    po.lat_inter = lat_b * 1e-6;
  }
  if (parts > 1 && !(po.bw_intra > 0)) {
    st = cg_err_set(CG_ERR_ARG, "--profile %s has no link between ranks: give --link-gbps B[,INTER]", profile);
    goto done;
  }
  /* the all-reduce: measured, where the profile ran this layout and the links are its own */
  if (profile && !have_link && !have_lat && parts > 1)
    TRY_GOTO(rapa_plan_allreduce_from_profile(prof, &po, ar_why, sizeof ar_why), done);
  else if (have_link || have_lat)
    snprintf(ar_why, sizeof ar_why, "from the declared %s", have_link ? "links" : "latencies");
  po.host_cores = cores > 0 ? cores : 0;
  if (quantum_ms < 0) { /* the scheduling this process (and so a job it stands for) runs under */
    quantum_ms = 0;
    if (sched_getscheduler(0) == SCHED_RR) {
      FILE *f = fopen("/proc/sys/kernel/sched_rr_timeslice_ms", "r");
      double q = 0;
      if (f && fscanf(f, "%lf", &q) == 1 && q > 0) quantum_ms = (float)q;
      if (f) fclose(f);
    }
  }
  po.quantum_s = quantum_ms * 1e-3;

  TRY_GOTO(cg_cpu_settings_check(), done); /* now, not once the graph has loaded and the rates are measured */
  TRY_GOTO(graph_open(graph_name, &g), done);
  if (g.feat_dim < 1 || g.num_classes < 1) {
    st = cg_err_set(CG_ERR_ARG, "graph '%s' has no features or classes: there is no model to price", g.name);
    goto done;
  }
  if (parts > g.n) {
    st = cg_err_set(CG_ERR_ARG, "--parts %d: the graph has only %lld vertices", parts, (long long)g.n);
    goto done;
  }
  shape.features = g.feat_dim;
  shape.classes = g.num_classes;
  { /* layer 0's schedule, as training chooses it (rt_layer0_exchange_choose) */
    rt_config_defaults(&l0c);
    l0c.model = !strcmp(model, "sage") ? RT_MODEL_SAGE : !strcmp(model, "gat") ? RT_MODEL_GAT : RT_MODEL_GCN;
    l0c.layers = layers;
    l0c.hidden = hidden;
    l0c.dropout = dropout;
    l0c.input_dropout = idropout;
    l0c.layer0_halo = layer0;
    TRY_GOTO(rt_features_choose(&g, &l0c, 0, &l0_sparse), done);
    shape.layer0_exchange = rt_layer0_exchange_choose(&l0c, g.feat_dim, g.num_classes, l0_sparse, parts > 1, &l0_why);
    shape.feat_density = rt_features_density(&g, l0_sparse);
  }
  if (!strcmp(model, "gat") && table)
    fprintf(stderr, "capgnn: warning: the cost model prices GCN and SAGE layers: gat is priced as a GCN of the same "
                    "widths\n");
  rates = calloc((size_t)parts, sizeof *rates);
  owner = malloc((size_t)g.n * sizeof *owner);
  if (!rates || !owner) {
    st = cg_err_set(CG_ERR_NOMEM, "out of memory for %d ranks' rates and %lld owners", parts, (long long)g.n);
    goto done;
  }
  if (profile && !measure) {
    const int n = rapa_profile_nranks(prof);
    for (int p = 0; p < parts && st == CG_OK; p++)
      TRY_GOTO(rapa_rates_from_profile(prof, p % n, gpu_profile, &rates[p]), done);
    /* (a profile measures devices as they are, never emulated: rapa/run.c) */
    TRY_GOTO(rapa_rates_emulate(rates, parts), done);
    snprintf(rates_what, sizeof rates_what, "profile %s (%d rank%s)%s%s%s", profile, n, n == 1 ? "" : "s",
             emulated ? ", EMULATED speeds " : "", emulated ? speed_env : "",
             declared ? ", declared rates override it" : "");
  } else if (!declared || measure) {
    struct cg_backend *be = NULL;
    TRY_GOTO(cg_backend_cpu_create(po.threads, &be), done);
    st = rapa_rates_measure_local(be, &g, &shape, parts, &rates[0]);
    cg_backend_destroy(&be);
    if (st != CG_OK) goto done;
    for (int p = 1; p < parts; p++) rates[p] = rates[0];
    TRY_GOTO(rapa_rates_emulate(rates, parts), done);
    snprintf(rates_what, sizeof rates_what, "measured here (cpu, %d thread%s, at the model's shapes)%s%s", po.threads,
             po.threads == 1 ? "" : "s", emulated ? ", EMULATED speeds " : "", emulated ? speed_env : "");
  } else
    snprintf(rates_what, sizeof rates_what, "declared (--gemm-gflops %g --spmm-gnnz %g --mem-gbs %g)", gemm, spmm, mem);
  for (int p = 0; p < parts; p++) {
    if (gemm > 0) rates[p].gemm_flops = gemm * 1e9;
    if (spmm > 0) rates[p].spmm_rate = spmm * 1e9;
    if (mem > 0) {
      rates[p].mem_bps = mem * 1e9;
      rates[p].rng_eps = rates[p].mem_bps / 8.0;
    }
    if (h2d > 0 && d2h > 0) {
      rates[p].h2d_bps = h2d * 1e9;
      rates[p].d2h_bps = d2h * 1e9;
    }
    if (devmem > 0) rates[p].free_bytes = devmem * 1073741824.0;
  }
  /* options that cannot change this plan, said rather than ignored silently */
  if (emulated && declared && table)
    fprintf(stderr, "capgnn: warning: CAPGNN_EMULATE_SPEED=%s does not scale declared rates (--gemm-gflops, "
                    "--spmm-gnnz, --mem-gbs): they are what each rank does\n", speed_env);
  int device_ranks = 0, dev0 = 0; /* (dev0: the first device rank, whose staging rates are shown) */
  for (int p = parts - 1; p >= 0; p--)
    if (rapa_plan_device_rank(&rates[p])) device_ranks++, dev0 = p;
  /* the cached plan's layer 0 as training chooses it: weighs the cache and the device */
  l0c.halo_cache = 1;
  l0c.on_gpu = device_ranks == parts; /* (training: every rank on a GPU, else all on the CPU) */
  l0x_cache = rt_layer0_exchange_choose(&l0c, g.feat_dim, g.num_classes, l0_sparse, parts > 1, &l0_why_cache);
  if (direct && !device_ranks && table)
    fprintf(stderr, "capgnn: warning: --gpu-direct changes nothing here: no rank stages through a device (no "
                    "--h2d-gbs / --d2h-gbs, and no device profile)\n");
  if (quantum_given && !(po.host_cores > 0) && table)
    fprintf(stderr, "capgnn: warning: --quantum-ms changes nothing here: ranks sharing cores are modelled only with "
                    "--cores (or a CPU profile's)\n");
  else if (device_ranks == parts && table && (quantum_given || cores_given))
    fprintf(stderr, "capgnn: warning: %s%s%s change%s nothing here: every rank computes on its device, sharing no "
            "host core\n", cores_given ? "--cores" : "", cores_given && quantum_given ? " and " : "",
            quantum_given ? "--quantum-ms" : "", cores_given && quantum_given ? "" : "s");
  if (h2d > 0 && !profile && declared == 0 && table) /* device ranks whose compute rates are the CPU's here */
    fprintf(stderr, "capgnn: warning: --h2d-gbs / --d2h-gbs make the ranks device ranks, but their compute rates "
                    "are measured here on the CPU: declare the device's (--gemm-gflops, --spmm-gnnz, --mem-gbs) or "
                    "give its profile\n");

  struct part_options o = {.method = method, .nparts = parts, .seed = seed};
  int reused = 0;
  if (no_pcache) st = part_assign(&g, &o, owner);
  else st = part_assign_cached(&g, &o, pcache, owner, &reused);
  if (st != CG_OK) goto done;
  /* with the halo cache, training's --layer0-halo auto keeps layer 0 local for sparse
   * features and on GPUs (rt_layer0_exchange_choose: the cache serves the hidden layers'
   * exchanges only) */
  const int l0x_plain = shape.layer0_exchange;
  for (int k = 0; k < 2; k++) {
    po.cache = k;
    shape.layer0_exchange = k ? l0x_cache : l0x_plain;
    TRY_GOTO(rapa_plan_compute(&g, owner, &shape, rates, &po, &plans[k]), done);
  }
  /* the cache with layer 0's other schedule: to say why the cache may lose, and when auto's
   * choice is the slower one here (below) */
  const int alt = table && parts > 1 && (l0x_cache != l0x_plain || (l0x_cache && layer0 == RT_L0_AUTO));
  if (alt) {
    po.cache = 1;
    shape.layer0_exchange = !l0x_cache;
    TRY_GOTO(rapa_plan_compute(&g, owner, &shape, rates, &po, &plans[2]), done);
  }
  shape.layer0_exchange = cache ? l0x_cache : l0x_plain; /* the plan the table shows */
  if (cache) l0_why = l0_why_cache;
  char shown[4800], shown2[700]; /* (a graph's and a profile's name escaped: core/log.h) */
  if (table) {
    printf("plan: %s%s%s%s, %d rank%s on %d node%s (%d machine%s), %d thread%s per rank\n",
           cg_text_escape(shown, sizeof shown, g.name), strcmp(graph_name, g.name) ? " (" : "",
           strcmp(graph_name, g.name) ? cg_text_escape(shown2, sizeof shown2, graph_name) : "",
           strcmp(graph_name, g.name) ? ")" : "", parts,
           parts == 1 ? "" : "s", nodes, nodes == 1 ? "" : "s", po.hosts, po.hosts == 1 ? "" : "s", po.threads,
           po.threads == 1 ? "" : "s");
    double over = 1.0;
    for (int p = 0; p < parts; p++)
      if (plans[0].rank[p].oversub > over) over = plans[0].rank[p].oversub;
    if (device_ranks == parts)
      printf("  cores per machine: not used (every rank computes on its device)\n");
    else if (cores > 0) {
      printf("  cores per machine: %d%s (compute x %.2f at most where ranks share them%s)\n", cores,
             cores_here > 0 && cores == cores_here ? ", this machine's" : "", over,
             po.threads == 1 ? ": bound round-robin, a core's ranks take turns" : "");
      if (po.threads == 1 && po.quantum_s > 0)
        printf("  round-robin quantum: %g ms (a shorter compute phase runs whole; core-mates compute in its waits)\n",
               po.quantum_s * 1e3);
    }
    else printf("  cores per machine: not modelled (--cores)\n");
    printf("  model: %s %d x %lld, dropout %g (input %g); %s partition%s\n", model, layers, (long long)hidden,
           (double)shape.dropout, (double)shape.input_dropout, part_method_name(method), reused ? " (reused)" : "");
    printf("  layer 0: %s (%s)\n", shape.layer0_exchange ? "exchange" : "local", l0_why);
    printf("  rates: %s: GEMM %.1f GFLOP/s, SpMM %.3f G nonzero-columns/s, memory %.1f GB/s\n",
           cg_text_escape(shown, sizeof shown, rates_what),
           rates[0].gemm_flops / 1e9, rates[0].spmm_rate / 1e9, rates[0].mem_bps / 1e9);
    if (device_ranks > 0)
      printf("  device ranks: %d of %d (they compute on their devices, sharing no host core); halo rows staged %s "
             "at %.1f GB/s host to device, %.1f GB/s device to host\n", device_ranks, parts,
             direct ? "for the node tier only (--gpu-direct)" : "through the host", rates[dev0].h2d_bps / 1e9,
             rates[dev0].d2h_bps / 1e9);
    if (rates[0].csr_rate > 0)
      printf("  sparse features: csr_mm %.3f, csr_mm_t %.3f G nonzero-columns/s, dropout %.3f G entries/s\n",
             rates[0].csr_rate / 1e9, rates[0].csr_t_rate / 1e9, rates[0].csr_drop_eps / 1e9);
    if (parts > 1)
      printf("  links: %s: %.2f GB/s, %.2f us within a node; %.2f GB/s, %.2f us between nodes; all-reduce %s (%s%s)\n",
             cg_text_escape(shown, sizeof shown, links_what), po.bw_intra / 1e9, po.lat_intra * 1e6, po.bw_inter / 1e9,
             po.lat_inter * 1e6, rapa_allreduce_name(po.allreduce), po.ar_points ? "" : "priced from the links: ",
             cg_text_escape(shown2, sizeof shown2, ar_why));
    print_plan(&plans[cache], cache ? "with the halo cache (jaca, exact)" : "without the halo cache");
    printf("\n%-28s %12s %16s %16s %16s\n", "", "epoch_ms", "halo_bytes", "inter_node_bytes", "allreduce_bytes");
    for (int k = 0; k < 2; k++)
      printf("%-28s %12.3f %16.0f %16.0f %16.0f\n", k ? "with the cache (jaca)" : "without the cache",
             plans[k].epoch_s * 1e3, plans[k].halo_bytes, plans[k].inter_node_bytes, plans[k].allreduce_bytes);
    if (plans[1].node_tier_bytes_max > 0)
      printf("node tier (shared memory): %.1f MiB on the largest node\n", plans[1].node_tier_bytes_max / 1048576.0);
    /* a slower epoch with the cache, said why: with training's --layer0-halo auto the cache
     * keeps layer 0 local (sparse features, GPUs), and every rank transforms its halo rows'
     * features each step */
    const int r = plans[1].slowest;
    const int why_l0 = plans[1].epoch_s > plans[0].epoch_s && l0x_cache != l0x_plain; /* (names the other's epoch) */
    if (why_l0)
      printf("why the cache is slower here: it keeps layer 0 local (--layer0-halo auto), so rank %d also transforms "
             "its halo rows (compute %+.3f ms); with --layer0-halo exchange and the cache: %.3f ms\n", r,
             (plans[1].rank[r].comp_s - plans[0].rank[r].comp_s) * 1e3, plans[2].epoch_s * 1e3);
    else if (plans[1].epoch_s > plans[0].epoch_s)
      printf("why the cache is slower here: its node-tier copies and messages cost rank %d %+.3f ms of communication "
             "more than the plain exchange's messages\n", r, (plans[1].rank[r].comm_s - plans[0].rank[r].comm_s) * 1e3);
    /* auto's rule is by feature kind and device, not by these rates: say when it loses */
    if (alt && !why_l0 && layer0 == RT_L0_AUTO && plans[2].epoch_s < plans[1].epoch_s)
      printf("layer 0 with the cache: --layer0-halo %s would be faster here (%.3f ms an epoch against auto's %.3f)\n",
             l0x_cache ? "local" : "exchange", plans[2].epoch_s * 1e3, plans[1].epoch_s * 1e3);
  }
  if (json) {
    root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "schema", "capgnn-plan");
    cJSON_AddNumberToObject(root, "version", 1);
    cJSON *gj = cJSON_AddObjectToObject(root, "graph");
    cJSON_AddStringToObject(gj, "name", g.name);
    cJSON_AddNumberToObject(gj, "vertices", (double)g.n);
    cJSON_AddNumberToObject(gj, "entries", (double)g.rowptr[g.n]);
    cJSON *m = cJSON_AddObjectToObject(root, "model");
    cJSON_AddStringToObject(m, "model", model);
    cJSON_AddNumberToObject(m, "layers", layers);
    cJSON_AddNumberToObject(m, "features", (double)shape.features);
    cJSON_AddNumberToObject(m, "hidden", (double)hidden);
    cJSON_AddNumberToObject(m, "classes", (double)shape.classes);
    cJSON_AddNumberToObject(m, "dropout", shape.dropout);
    cJSON_AddNumberToObject(m, "input_dropout", shape.input_dropout);
    cJSON_AddStringToObject(m, "layer0_halo", shape.layer0_exchange ? "exchange" : "local");
    cJSON_AddNumberToObject(m, "parameters", (double)rapa_shape_params(&shape));
    cJSON *j = cJSON_AddObjectToObject(root, "job");
    cJSON_AddNumberToObject(j, "parts", parts);
    cJSON_AddNumberToObject(j, "nodes", nodes);
    cJSON_AddNumberToObject(j, "hosts", po.hosts);
    cJSON_AddNumberToObject(j, "host_cores", po.host_cores);
    cJSON_AddNumberToObject(j, "threads", po.threads);
    cJSON_AddNumberToObject(j, "quantum_s", po.quantum_s);
    cJSON_AddStringToObject(j, "allreduce", rapa_allreduce_name(po.allreduce));
    cJSON_AddStringToObject(j, "partition", part_method_name(method));
    cJSON *r = cJSON_AddObjectToObject(root, "rates");
    cJSON_AddStringToObject(r, "source", rates_what);
    cJSON_AddNumberToObject(r, "gemm_gflops", rates[0].gemm_flops / 1e9);
    cJSON_AddNumberToObject(r, "spmm_gnnz_s", rates[0].spmm_rate / 1e9);
    cJSON_AddNumberToObject(r, "mem_gbs", rates[0].mem_bps / 1e9);
    cJSON_AddNumberToObject(r, "dropout_geps", rates[0].rng_eps / 1e9);
    if (rates[0].adam_eps > 0) cJSON_AddNumberToObject(r, "adam_geps", rates[0].adam_eps / 1e9);
    cJSON_AddNumberToObject(r, "op_us", rates[0].op_s * 1e6);
    if (device_ranks > 0) { /* device ranks: the host staging of halo rows */
      cJSON_AddNumberToObject(r, "h2d_gbs", rates[dev0].h2d_bps / 1e9);
      cJSON_AddNumberToObject(r, "d2h_gbs", rates[dev0].d2h_bps / 1e9);
    }
    if (rates[0].csr_rate > 0) { /* sparse features, measured on their own CSR */
      cJSON_AddNumberToObject(r, "csr_gnnz_s", rates[0].csr_rate / 1e9);
      cJSON_AddNumberToObject(r, "csr_t_gnnz_s", rates[0].csr_t_rate / 1e9);
      cJSON_AddNumberToObject(r, "csr_dropout_geps", rates[0].csr_drop_eps / 1e9);
    }
    cJSON *l = cJSON_AddObjectToObject(root, "links");
    cJSON_AddStringToObject(l, "source", parts > 1 ? links_what : "none (one rank)");
    cJSON_AddNumberToObject(l, "intra_gbs", po.bw_intra / 1e9);
    cJSON_AddNumberToObject(l, "inter_gbs", po.bw_inter / 1e9);
    cJSON_AddNumberToObject(l, "intra_latency_us", po.lat_intra * 1e6);
    cJSON_AddNumberToObject(l, "inter_latency_us", po.lat_inter * 1e6);
    cJSON_AddStringToObject(l, "allreduce_source", parts > 1 ? ar_why : "none (one rank)");
    cJSON *arc = cJSON_AddArrayToObject(l, "allreduce_curve"); /* [bytes, seconds] of a measured curve */
    for (int k = 0; k < po.ar_points; k++) {
      cJSON *pt = cJSON_CreateArray();
      cJSON_AddItemToArray(pt, cJSON_CreateNumber(po.ar_bytes[k]));
      cJSON_AddItemToArray(pt, cJSON_CreateNumber(po.ar_s[k]));
      cJSON_AddItemToArray(arc, pt);
    }
    cJSON_AddItemToObject(root, "plain", plan_json(&plans[0], &shape));
    cJSON_AddItemToObject(root, "cache", plan_json(&plans[1], &shape));
    char *text = cJSON_Print(root);
    if (!text) {
      st = cg_err_set(CG_ERR_NOMEM, "out of memory formatting the plan as JSON");
      goto done;
    }
    st = write_text(json, text);
    cJSON_free(text);
    /* say where it went ('-': the JSON is the output) */
    if (st == CG_OK && table)
      fprintf(cli_report_stream(json), "\nwrote the plan to %s\n", cg_text_escape(shown, sizeof shown, json));
  }
done:
  cJSON_Delete(root);
  rapa_plan_free(&plans[0]);
  rapa_plan_free(&plans[1]);
  rapa_plan_free(&plans[2]);
  rapa_profile_destroy(&prof);
  free(rates);
  free(owner);
  graph_free(&g);
  return st != CG_OK ? cli_runtime_error() : CAPGNN_EXIT_OK;
}
