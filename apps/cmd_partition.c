/* apps/cmd_partition.c — `capgnn partition`: partition a graph, save/reuse the
 * partition set, print its statistics (and optionally write them as JSON, and check
 * every rank's local graph and exchange plans). Usage errors return 2, runtime
 * failures 1, each with one line "capgnn: error: ..." on stderr. */
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "apps/commands_internal.h"
#include "core/log.h"
#include "core/outfile.h"
#include "core/status.h"
#include "graph/graph.h"
#include "core/progress.h"
#include "partition/partition.h"
#ifdef CAPGNN_HAVE_RAPA
#include <cjson/cJSON.h>

#include "core/ops.h"
#include "core/ops_emulate.h"
#include "rapa/balance.h"
#include "rapa/rapa.h"
#include "runtime/runtime.h"
#endif

static void cmd_partition_usage(FILE *out) {
  fprintf(out,
          "usage: capgnn partition --graph G --parts P [options]\n"
          "\n"
          "Splits the graph into P parts (one per rank), saves the partition set in the cache\n"
          "folder (reused when graph and options match) and prints per-part statistics.\n"
          "\n"
          "  --graph NAME|FILE|synth:SPEC  graph to partition (NAME reads $CAPGNN_DATA/NAME.cgr)\n"
          "  --parts P                     number of parts, 1 <= P <= vertices\n"
          "  --partition metis|random|rapa METIS k-way (minimum edge cut), a seeded balanced random\n"
          "                                split, or METIS with part weights proportional to each\n"
          "                                rank's measured capability (rapa; default metis);\n"
          "                                alias --method\n"
          "  --part-seed N                 seed of METIS / the random split (default 1); alias --seed\n"
          "  --hops 1|2                    halo depth of the statistics (default 1)\n"
          "  --json FILE                   also write the statistics as JSON (an earlier statistics\n"
          "                                file is replaced; any other existing file only with\n"
          "                                --force; never the graph)\n"
          "  --force                       replace an existing --json or --html file of another kind\n"
          "  --part-cache DIR              partition cache folder (default $CAPGNN_CACHE, else\n"
          "                                .capgnn-cache); alias --cache\n"
          "  --no-part-cache               neither read nor write the cache; alias --no-cache\n"
          "  --profile FILE                rates of the P ranks from `capgnn profile --json FILE` (P\n"
          "                                ranks): print and write the predicted epoch (compute +\n"
          "                                communication) and memory of every rank. Without it,\n"
          "                                rapa and the prediction use rates measured here on the\n"
          "                                CPU, compute only. CAPGNN_EMULATE_SPEED scales each\n"
          "                                rank's compute rates either way (a profile measured the\n"
          "                                devices as they are)\n"
          "  --html FILE                   with --profile: write the profile's report (as `capgnn\n"
          "                                profile --html`) with a \"Chosen split\" section: per\n"
          "                                rank capability, target and received share, predicted\n"
          "                                compute, communication and memory (an earlier report is\n"
          "                                replaced; any other existing file only with --force;\n"
          "                                never the graph or the profile)\n"
          "  --model gcn|sage, --layers N, --hidden N, --dropout P\n"
          "                                the model the prediction prices (default gcn, 2, 16, 0.5;\n"
          "                                only with --profile or --partition rapa)\n"
          "  --check                       build every rank's local graph and exchange plans and\n"
          "                                run the invariant checkers on them\n"
          "  --quiet                       no progress lines\n"
          "  -h, --help                    this help\n"
          "\n"
          "statistics: inner/halo vertices, edges (CSR entries of inner rows) and outer edges\n"
          "per part; edge cut, halo rows per vertex and the replication factor (inner + halo\n"
          "rows over n), and the histogram of R(v), the number of parts in which vertex v is\n"
          "a halo.\n");
}

#define usage_error(...) cli_usage_error("partition", __VA_ARGS__)

#define runtime_error cli_runtime_error

/* Every rank's local graph (GCN operator with self-loops, what training uses by
 * default), each checked, then all plans against each other. */
static int check_all_ranks(const struct graph *g, const int32_t *owner, int nparts) {
  struct part_local *pls = calloc((size_t)nparts, sizeof *pls);
  if (!pls) return cg_err_set(CG_ERR_NOMEM, "out of memory for %d local graphs", nparts);
  int st = CG_OK;
  for (int p = 0; p < nparts && st == CG_OK; p++) {
    st = part_local_build(g, owner, nparts, p, GRAPH_NORM_GCN, 1, &pls[p]);
    if (st == CG_OK) st = part_local_check(g, owner, &pls[p]);
  }
  if (st == CG_OK) st = part_plans_check_global(pls, nparts);
  int64_t sent = 0, peers = 0;
  for (int p = 0; p < nparts; p++) {
    for (int i = 0; i < pls[p].npeers; i++) sent += pls[p].send_count[i];
    peers += pls[p].npeers;
  }
  if (st == CG_OK)
    printf("check: %d local graphs and their exchange plans are consistent (%" PRId64
           " peer links, %" PRId64 " rows sent per exchange)\n",
           nparts, peers, sent);
  for (int p = 0; p < nparts; p++) part_local_free(&pls[p]);
  free(pls);
  return st;
}

enum { OPT_GRAPH = 256, OPT_PARTS, OPT_METHOD, OPT_SEED, OPT_HOPS, OPT_JSON, OPT_CACHE, OPT_NO_CACHE, OPT_CHECK,
       OPT_QUIET, OPT_FORCE, OPT_PROFILE, OPT_MODEL, OPT_LAYERS, OPT_HIDDEN, OPT_DROPOUT, OPT_HTML, OPT_CACHE_ALIAS };

#ifdef CAPGNN_HAVE_RAPA
/* The rates of the P ranks: from the profile, or measured here (CPU, this process's
 * threads) and scaled by each rank's CAPGNN_EMULATE_SPEED. *what says which. */
static int partition_rates(const struct graph *g, const struct rapa_shape *s, int P, const char *profile,
                           struct rapa_rates *rates, struct rapa_links *links, int *have_links, char *what,
                           size_t what_len) {
  *have_links = 0;
  if (profile) {
    struct rapa_profile *prof = NULL;
    TRY(rapa_profile_load(profile, &prof));
    int st = CG_OK;
    if (rapa_profile_nranks(prof) != P)
      st = cg_err_set(CG_ERR_ARG, "--profile %s has %d ranks, but --parts is %d: profile the job's ranks", profile,
                      rapa_profile_nranks(prof), P);
    for (int p = 0; p < P && st == CG_OK; p++) st = rapa_rates_from_profile(prof, p, 0, &rates[p]);
    if (st == CG_OK && P > 1) {
      st = rapa_links_from_profile(prof, links);
      *have_links = st == CG_OK;
    }
    rapa_profile_destroy(&prof);
    /* an emulated speed slows the profiled device (a profile measures devices as they are,
     * never emulated: rapa/run.c), as training under the emulation would run */
    const char *env = getenv("CAPGNN_EMULATE_SPEED");
    if (st == CG_OK) st = rapa_rates_emulate(rates, P);
    snprintf(what, what_len, "profile %s%s%s", profile, env && env[0] ? ", EMULATED speeds " : "",
             env && env[0] ? env : "");
    return st;
  }
  struct cg_backend *be = NULL;
  TRY(cg_backend_cpu_create(1, &be)); /* one thread: what a rank of a CPU job measures */
  struct rapa_rates here;
  const int st = rapa_rates_measure_local(be, g, s, P, &here);
  cg_backend_destroy(&be);
  TRY(st);
  const char *env = getenv("CAPGNN_EMULATE_SPEED");
  for (int p = 0; p < P; p++) rates[p] = here;
  TRY(rapa_rates_emulate(rates, P));
  snprintf(what, what_len, "measured here (cpu, 1 thread)%s%s%s", env && env[0] ? ", EMULATED speeds " : "",
           env && env[0] ? env : "", ", compute only");
  return CG_OK;
}

/* The statistics JSON with the prediction added ("rapa": rates, shape, per part). */
static int write_json_rapa(const struct part_stats *st, const char *path, const struct rapa_split *sp,
                           const struct rapa_shape *s, const char *what) {
  char *text = part_stats_to_json(st);
  cJSON *root = text ? cJSON_Parse(text) : NULL;
  free(text);
  if (!root) return cg_err_set(CG_ERR_NOMEM, "out of memory formatting partition statistics as JSON");
  cJSON *r = cJSON_AddObjectToObject(root, "rapa");
  cJSON_AddStringToObject(r, "rates", what);
  cJSON *sh = cJSON_AddObjectToObject(r, "model");
  cJSON_AddStringToObject(sh, "model", s->sage ? "sage" : "gcn");
  cJSON_AddNumberToObject(sh, "layers", s->layers);
  cJSON_AddNumberToObject(sh, "features", (double)s->features);
  cJSON_AddNumberToObject(sh, "hidden", (double)s->hidden);
  cJSON_AddNumberToObject(sh, "classes", (double)s->classes);
  cJSON_AddNumberToObject(sh, "dropout", s->dropout);
  cJSON_AddNumberToObject(r, "passes", sp->passes);
  cJSON_AddBoolToObject(r, "corrected", sp->corrected);
  cJSON *arr = cJSON_AddArrayToObject(r, "partitions");
  double mx = 0;
  for (int p = 0; p < sp->P; p++) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "part", p);
    cJSON_AddNumberToObject(o, "capability", sp->capability[p]);
    cJSON_AddNumberToObject(o, "target", sp->target[p]);
    cJSON_AddNumberToObject(o, "share", sp->share[p]);
    cJSON_AddNumberToObject(o, "predicted_compute_s", sp->cost[p].comp_s);
    cJSON_AddNumberToObject(o, "predicted_comm_s", sp->cost[p].comm_s);
    cJSON_AddNumberToObject(o, "predicted_lambda_s", sp->cost[p].lambda_s);
    cJSON_AddNumberToObject(o, "memory_bytes", sp->cost[p].memory_bytes);
    cJSON_AddBoolToObject(o, "fits", sp->cost[p].fits);
    cJSON_AddItemToArray(arr, o);
    if (sp->cost[p].lambda_s > mx) mx = sp->cost[p].lambda_s;
  }
  cJSON_AddNumberToObject(r, "predicted_epoch_s", mx);
  text = cJSON_Print(root);
  cJSON_Delete(root);
  if (!text) return cg_err_set(CG_ERR_NOMEM, "out of memory formatting partition statistics as JSON");
  struct cg_outfile out;
  int rc = cg_outfile_open(&out, path, "partition statistics");
  if (rc == CG_OK) {
    if (fputs(text, out.fp) >= 0 && fputc('\n', out.fp) != EOF) rc = cg_outfile_commit(&out);
    else {
      rc = cg_err_set(CG_ERR_IO, "writing partition statistics to '%s' failed", out.tmp ? out.tmp : out.path);
      cg_outfile_abort(&out);
    }
  }
  cJSON_free(text);
  return rc;
}
#endif

int cmd_partition(int argc, char **argv) {
  static const struct option longopts[] = {
      {"graph", required_argument, NULL, OPT_GRAPH},   {"parts", required_argument, NULL, OPT_PARTS},
      {"method", required_argument, NULL, OPT_METHOD}, {"seed", required_argument, NULL, OPT_SEED},
      {"hops", required_argument, NULL, OPT_HOPS},     {"json", required_argument, NULL, OPT_JSON},
      {"cache", required_argument, NULL, OPT_CACHE_ALIAS},   {"no-cache", no_argument, NULL, OPT_NO_CACHE},
      /* the names `capgnn train` uses (canonical; the short ones above are aliases) */
      {"partition", required_argument, NULL, OPT_METHOD}, {"part-seed", required_argument, NULL, OPT_SEED},
      {"part-cache", required_argument, NULL, OPT_CACHE}, {"no-part-cache", no_argument, NULL, OPT_NO_CACHE},
      {"check", no_argument, NULL, OPT_CHECK},         {"quiet", no_argument, NULL, OPT_QUIET},
      {"force", no_argument, NULL, OPT_FORCE},
#ifdef CAPGNN_HAVE_RAPA
      {"profile", required_argument, NULL, OPT_PROFILE}, {"model", required_argument, NULL, OPT_MODEL},
      {"layers", required_argument, NULL, OPT_LAYERS},   {"hidden", required_argument, NULL, OPT_HIDDEN},
      {"dropout", required_argument, NULL, OPT_DROPOUT}, {"html", required_argument, NULL, OPT_HTML},
#endif
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  const char *graph_name = NULL, *json = NULL, *cache = NULL;
  int parts = 0, hops = 1;
  uint64_t seed = 1;
  enum part_method method = PART_METIS;
  int no_cache = 0, check = 0, quiet = 0, force = 0, c, rc = 0, rapa = 0, sage = 0, layers = 2;
  const char *profile = NULL, *html = NULL, *model_opt = NULL; /* model_opt: the last model option given */
  int64_t hidden = 16;
  float dropout = 0.5f;
  opterr = 0;
  while (rc == 0 && (c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
    const char *name = optind > 0 && optind <= argc ? argv[optind - 1] : "?";
    if ((rc = cli_check_value("partition", argc, argv, optind, optarg)) != 0) break;
    if (c == OPT_MODEL || c == OPT_LAYERS || c == OPT_HIDDEN || c == OPT_DROPOUT)
      model_opt = c == OPT_MODEL    ? "--model"
                  : c == OPT_LAYERS ? "--layers"
                  : c == OPT_HIDDEN ? "--hidden"
                                    : "--dropout";
    switch (c) {
      case 'h': cmd_partition_usage(stdout); return CAPGNN_EXIT_OK;
      case OPT_GRAPH: graph_name = optarg; break;
      case OPT_PARTS: rc = cli_parse_int_in("partition", "--parts", optarg, 1, INT_MAX, &parts); break;
      case OPT_METHOD:
        rapa = 0;
#ifdef CAPGNN_HAVE_RAPA
        if (!strcmp(optarg, "rapa")) {
          rapa = 1;
          method = PART_METIS;
          break;
        }
#endif
        if (part_method_parse(optarg, &method) != CG_OK)
          rc = usage_error("--partition '%s': expected metis, random or rapa", optarg);
        break;
      case OPT_PROFILE: profile = optarg; break;
      case OPT_HTML: html = optarg; break;
      case OPT_MODEL:
        if (!strcmp(optarg, "gcn")) sage = 0;
        else if (!strcmp(optarg, "sage")) sage = 1;
        else rc = usage_error("--model '%s': expected gcn or sage", optarg);
        break;
      case OPT_LAYERS: rc = cli_parse_int_in("partition", "--layers", optarg, 1, 64, &layers); break;
      case OPT_HIDDEN:
        rc = cli_parse_i64("partition", "--hidden", optarg, &hidden);
        if (rc == 0 && (hidden < 1 || hidden > 65536)) rc = usage_error("--hidden %s: expected 1 .. 65536", optarg);
        break;
      case OPT_DROPOUT:
        rc = cli_parse_float("partition", "--dropout", optarg, &dropout);
        if (rc == 0 && !(dropout >= 0.0f && dropout < 1.0f)) rc = usage_error("--dropout %s: expected [0, 1)", optarg);
        break;
      case OPT_SEED: rc = cli_parse_u64("partition", "--part-seed", optarg, &seed); break;
      case OPT_HOPS: rc = cli_parse_int_in("partition", "--hops", optarg, 1, 2, &hops); break;
      case OPT_JSON: json = optarg; break;
      case OPT_CACHE_ALIAS:
        rc = cli_part_cache_alias("partition", optarg);
        if (rc == 0) cache = optarg;
        break;
      case OPT_CACHE: cache = optarg; break;
      case OPT_NO_CACHE: no_cache = 1; break;
      case OPT_CHECK: check = 1; break;
      case OPT_QUIET: quiet = 1; break;
      case OPT_FORCE: force = 1; break;
      case ':': rc = usage_error("option '%s' needs a value", name); break;
      default: rc = cli_bad_option("partition", name, longopts); break;
    }
  }
  if (rc) return rc;
  if (optind < argc) return usage_error("unexpected argument '%s'", argv[optind]);
  if (!graph_name) return usage_error("--graph is required");
  if (parts == 0) return usage_error("--parts is required");
  if (no_cache && cache) return usage_error("--part-cache and --no-part-cache exclude each other");
  /* the model is what the prediction prices: without one it would change nothing (refused,
   * not ignored, as train refuses the settings of a model or schedule it does not run) */
  if (model_opt && !profile && !rapa)
    return usage_error("%s sets the model the predicted epoch prices, and there is no prediction without "
                       "--profile FILE or --partition rapa (leave it out)", model_opt);
  if (quiet) cg_progress_set_mode(CG_PROGRESS_OFF);
#ifdef CAPGNN_HAVE_RAPA
  if (rapa || profile) { /* the speeds scale the rates (measured or a profile's): a bad list is refused before
                          * the graph loads */
    const char *speed = getenv("CAPGNN_EMULATE_SPEED");
    int n = 0;
    if (cg_emulate_speed_check(speed, &n) != CG_OK) return usage_error("%s", cg_err_msg());
    if (n > 1 && n != parts) /* (a value per part: no job, no ranks here) */
      return usage_error("CAPGNN_EMULATE_SPEED='%s' has %d values but --parts is %d: give one value for all parts "
                         "or one per part", speed, n, parts);
  }
#endif
  /* the output rule (core/outfile.h), and an unwritable --json fails now, not after the
   * partitioning */
  char gpath[4200];
  const struct cg_outfile_input inputs[] = {{"--graph", graph_path(graph_name, gpath, sizeof gpath)}};
  if (json && (cg_outfile_check(json, "--json", part_stats_outfile_kind(), inputs, 1, force, 0) != CG_OK ||
               cg_outfile_probe(json, "partition statistics") != CG_OK))
    return runtime_error();
  if (html) {
    if (!html[0]) return usage_error("--html: empty file name");
    if (!profile) return usage_error("--html needs --profile: the report is that profile's, with the chosen split");
    if (json && !strcmp(json, html)) return usage_error("--json and --html name the same file '%s'", json);
    if (!strcmp(html, profile)) return usage_error("--html would overwrite the profile '%s'", profile);
    /* the output rule (core/outfile.h) as for --json: never the graph or the profile (the
     * same file, whatever the path says), an existing file other than a report only with
     * --force */
    const struct cg_outfile_input hin[] = {{"--graph", inputs[0].path}, {"--profile", profile}};
    if (cg_outfile_check(html, "--html", rapa_report_outfile_kind(), hin, 2, force, 0) != CG_OK ||
        cg_outfile_probe(html, "HTML report") != CG_OK)
      return runtime_error();
  }

  struct graph g;
  memset(&g, 0, sizeof g);
  if (graph_open(graph_name, &g) != CG_OK) return runtime_error();
  int32_t *owner = malloc((size_t)g.n * sizeof *owner);
  struct part_stats s;
  memset(&s, 0, sizeof s);
#ifdef CAPGNN_HAVE_RAPA
  struct rapa_links links;
  memset(&links, 0, sizeof links);
#endif
  int st = CG_OK, reused = 0;
  if (!owner) {
    st = cg_err_set(CG_ERR_NOMEM, "out of memory for the owners of %lld vertices", (long long)g.n);
    goto done;
  }
  struct part_options o = {.method = method, .nparts = parts, .seed = seed};
#ifdef CAPGNN_HAVE_RAPA
  struct rapa_split split;
  struct rapa_shape shape = {layers, g.feat_dim, hidden, g.num_classes, sage, dropout, dropout, 0, 0};
  struct rapa_rates rates[RAPA_MAX_RANKS];
  int have_links = 0, predict = rapa || profile;
  char what[1200] = "";
  if (predict) { /* layer 0's schedule as training's default (--layer0-halo auto) picks it */
    struct rt_config l0c;
    rt_config_defaults(&l0c);
    l0c.model = sage ? RT_MODEL_SAGE : RT_MODEL_GCN;
    l0c.layers = layers;
    l0c.hidden = hidden;
    l0c.dropout = dropout;
    int sparse = 0;
    if (rt_features_choose(&g, &l0c, 0, &sparse) == CG_OK) {
      shape.layer0_exchange = rt_layer0_exchange_choose(&l0c, g.feat_dim, g.num_classes, sparse, parts > 1, NULL);
      shape.feat_density = rt_features_density(&g, sparse);
    }
    cg_err_clear();
  }
  if (predict && parts > RAPA_MAX_RANKS) {
    st = cg_err_set(CG_ERR_ARG, "--partition rapa and --profile support at most %d parts", RAPA_MAX_RANKS);
    goto done;
  }
  if (predict && g.feat_dim < 1) {
    st = cg_err_set(CG_ERR_ARG, "graph '%s' has no features: there is no model to price", g.name);
    goto done;
  }
  if (predict) {
    st = partition_rates(&g, &shape, parts, profile, rates, &links, &have_links, what, sizeof what);
    if (st != CG_OK) goto done;
  }
  if (rapa) {
    /* the weighted split depends on the rates: computed, never read from the cache */
    st = rapa_partition_weighted(&g, &shape, rates, have_links ? &links : NULL, parts, seed, 0.05, 0, owner,
                                 &split);
    if (st != CG_OK) goto done;
    no_cache = 1;
  } else
#endif
  if (no_cache) st = part_assign(&g, &o, owner);
  else st = part_assign_cached(&g, &o, cache, owner, &reused);
  if (st != CG_OK) goto done;
  char shown[4800]; /* (file names, a profile's name: escaped, core/log.h) */
  if (!no_cache) {
    char path[4096];
    /* A failed save is only a warning in part_assign_cached: say so here too rather
     * than name a file that does not exist. */
    struct stat sb; /* (a folder in the file's place also passes access()) */
    if (part_cache_path(&g, &o, cache, path, sizeof path) == CG_OK)
      printf("partition set: %s (%s)\n", cg_text_escape(shown, sizeof shown, path),
             reused ? "reused"
             : stat(path, &sb) == 0 && S_ISREG(sb.st_mode) && access(path, R_OK) == 0 ? "computed"
                                                                                       : "computed, not saved");
  }
  st = part_stats_compute(&g, owner, parts, hops, &s);
  if (st != CG_OK) goto done;
  snprintf(s.method, sizeof s.method, "%s", rapa ? "rapa" : part_method_name(method));
  part_stats_print(stdout, &s);
#ifdef CAPGNN_HAVE_RAPA
  if (predict && !rapa) st = rapa_split_evaluate(&g, &shape, rates, have_links ? &links : NULL, parts, owner, &split);
  if (st != CG_OK) goto done;
  if (predict) {
    printf("predicted epoch per rank (%s %d x %lld, rates: %s):\n", sage ? "sage" : "gcn", layers, (long long)hidden,
           cg_text_escape(shown, sizeof shown, what));
    printf("%6s %11s %11s %11s %11s %11s %11s %12s\n", "part", "capability", "target", "share", "compute_ms",
           "comm_ms", "lambda_ms", "memory_MiB");
    for (int p = 0; p < parts; p++)
      printf("%6d %11.4f %11.4f %11.4f %11.3f %11.3f %11.3f %12.1f%s\n", p, split.capability[p], split.target[p],
             split.share[p], split.cost[p].comp_s * 1e3, split.cost[p].comm_s * 1e3, split.cost[p].lambda_s * 1e3,
             split.cost[p].memory_bytes / 1048576.0, split.cost[p].fits ? "" : "  does not fit");
    if (rapa) printf("rapa: %d METIS run%s%s\n", split.passes, split.passes == 1 ? "" : "s",
                     split.corrected ? ", the correction pass's split kept" : "");
  }
  if (html) {
    struct rapa_profile *prof = NULL;
    char label[1400];
    snprintf(label, sizeof label, "%s of %s into %d parts, %s %d x %lld, rates: %s", rapa ? "rapa" : s.method,
             g.name, parts, sage ? "sage" : "gcn", layers, (long long)hidden, what);
    st = rapa_profile_load(profile, &prof);
    if (st == CG_OK) st = rapa_report_html(prof, &split, label, html);
    rapa_profile_destroy(&prof);
    if (st != CG_OK) goto done;
    printf("report: %s\n", cg_text_escape(shown, sizeof shown, html));
  }
  if (json && predict) {
    st = write_json_rapa(&s, json, &split, &shape, what);
    if (st != CG_OK) goto done;
  } else
#endif
  if (json) {
    st = part_stats_write_json(&s, json);
    if (st != CG_OK) goto done;
  }
  /* say where the statistics went, as the report above and every other command's outputs */
  if (json) fprintf(cli_report_stream(json), "statistics: %s\n", cg_text_escape(shown, sizeof shown, json));
  if (check) st = check_all_ranks(&g, owner, parts);
done:
#ifdef CAPGNN_HAVE_RAPA
  rapa_links_free(&links);
#endif
  part_stats_free(&s);
  free(owner);
  graph_free(&g);
  if (st != CG_OK) return runtime_error();
  return CAPGNN_EXIT_OK;
}
