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
#include <unistd.h>

#include "apps/commands_internal.h"
#include "core/outfile.h"
#include "core/status.h"
#include "graph/graph.h"
#include "core/progress.h"
#include "partition/partition.h"

static void cmd_partition_usage(FILE *out) {
  fprintf(out,
          "usage: capgnn partition --graph G --parts P [options]\n"
          "\n"
          "Splits the graph into P parts (one per rank), saves the partition set in the cache\n"
          "folder (reused when graph and options match) and prints per-part statistics.\n"
          "\n"
          "  --graph NAME|FILE|synth:SPEC  graph to partition (NAME reads $CAPGNN_DATA/NAME.cgr)\n"
          "  --parts P                     number of parts, 1 <= P <= vertices\n"
          "  --partition metis|random      METIS k-way (minimum edge cut) or a seeded balanced\n"
          "                                random split (default metis); alias --method\n"
          "  --part-seed N                 seed of METIS / the random split (default 1); alias --seed\n"
          "  --hops 1|2                    halo depth of the statistics (default 1)\n"
          "  --json FILE                   also write the statistics as JSON (an earlier statistics\n"
          "                                file is replaced; any other existing file only with\n"
          "                                --force; never the graph)\n"
          "  --force                       replace an existing --json file of another kind\n"
          "  --part-cache DIR              partition cache folder (default $CAPGNN_CACHE, else\n"
          "                                .capgnn-cache); alias --cache\n"
          "  --no-part-cache               neither read nor write the cache; alias --no-cache\n"
          "  --check                       build every rank's local graph and exchange plans and\n"
          "                                run the invariant checkers on them\n"
          "  --quiet                       no progress lines\n"
          "  -h, --help                    this help\n"
          "\n"
          "statistics: inner/halo vertices, edges (CSR entries of inner rows) and outer edges\n"
          "per part; edge cut, halo replication factor (sum of halos / n) and the histogram of\n"
          "R(v), the number of parts in which vertex v is a halo.\n");
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
       OPT_QUIET, OPT_FORCE };

int cmd_partition(int argc, char **argv) {
  static const struct option longopts[] = {
      {"graph", required_argument, NULL, OPT_GRAPH},   {"parts", required_argument, NULL, OPT_PARTS},
      {"method", required_argument, NULL, OPT_METHOD}, {"seed", required_argument, NULL, OPT_SEED},
      {"hops", required_argument, NULL, OPT_HOPS},     {"json", required_argument, NULL, OPT_JSON},
      {"cache", required_argument, NULL, OPT_CACHE},   {"no-cache", no_argument, NULL, OPT_NO_CACHE},
      /* the names `capgnn train` uses (canonical; the short ones above are aliases) */
      {"partition", required_argument, NULL, OPT_METHOD}, {"part-seed", required_argument, NULL, OPT_SEED},
      {"part-cache", required_argument, NULL, OPT_CACHE}, {"no-part-cache", no_argument, NULL, OPT_NO_CACHE},
      {"check", no_argument, NULL, OPT_CHECK},         {"quiet", no_argument, NULL, OPT_QUIET},
      {"force", no_argument, NULL, OPT_FORCE},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  const char *graph_name = NULL, *json = NULL, *cache = NULL;
  int parts = 0, hops = 1;
  uint64_t seed = 1;
  enum part_method method = PART_METIS;
  int no_cache = 0, check = 0, quiet = 0, force = 0, c, rc = 0;
  opterr = 0;
  while (rc == 0 && (c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
    const char *name = optind > 0 && optind <= argc ? argv[optind - 1] : "?";
    if ((rc = cli_check_value("partition", argc, argv, optind, optarg)) != 0) break;
    switch (c) {
      case 'h': cmd_partition_usage(stdout); return CAPGNN_EXIT_OK;
      case OPT_GRAPH: graph_name = optarg; break;
      case OPT_PARTS: rc = cli_parse_int_in("partition", "--parts", optarg, 1, INT_MAX, &parts); break;
      case OPT_METHOD:
        if (part_method_parse(optarg, &method) != CG_OK)
          rc = usage_error("--partition '%s': expected metis or random", optarg);
        break;
      case OPT_SEED: rc = cli_parse_u64("partition", "--part-seed", optarg, &seed); break;
      case OPT_HOPS: rc = cli_parse_int_in("partition", "--hops", optarg, 1, 2, &hops); break;
      case OPT_JSON: json = optarg; break;
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
  if (quiet) cg_progress_set_mode(CG_PROGRESS_OFF);
  /* the output rule (core/outfile.h), and an unwritable --json fails now, not after the
   * partitioning */
  char gpath[4200];
  const struct cg_outfile_input inputs[] = {{"--graph", graph_path(graph_name, gpath, sizeof gpath)}};
  if (json && (cg_outfile_check(json, "--json", part_stats_outfile_kind(), inputs, 1, force, 0) != CG_OK ||
               cg_outfile_probe(json, "partition statistics") != CG_OK))
    return runtime_error();

  struct graph g;
  memset(&g, 0, sizeof g);
  if (graph_open(graph_name, &g) != CG_OK) return runtime_error();
  int32_t *owner = malloc((size_t)g.n * sizeof *owner);
  struct part_stats s;
  memset(&s, 0, sizeof s);
  int st = CG_OK, reused = 0;
  if (!owner) {
    st = cg_err_set(CG_ERR_NOMEM, "out of memory for the owners of %lld vertices", (long long)g.n);
    goto done;
  }
  struct part_options o = {.method = method, .nparts = parts, .seed = seed};
  if (no_cache) st = part_assign(&g, &o, owner);
  else st = part_assign_cached(&g, &o, cache, owner, &reused);
  if (st != CG_OK) goto done;
  if (!no_cache) {
    char path[4096];
    /* A failed save is only a warning in part_assign_cached: say so here too rather
     * than name a file that does not exist. */
    if (part_cache_path(&g, &o, cache, path, sizeof path) == CG_OK)
      printf("partition set: %s (%s)\n", path,
             reused ? "reused" : access(path, R_OK) == 0 ? "computed" : "computed, not saved");
  }
  st = part_stats_compute(&g, owner, parts, hops, &s);
  if (st != CG_OK) goto done;
  snprintf(s.method, sizeof s.method, "%s", part_method_name(method));
  part_stats_print(stdout, &s);
  if (json) {
    st = part_stats_write_json(&s, json);
    if (st != CG_OK) goto done;
  }
  if (check) st = check_all_ranks(&g, owner, parts);
done:
  part_stats_free(&s);
  free(owner);
  graph_free(&g);
  if (st != CG_OK) return runtime_error();
  return CAPGNN_EXIT_OK;
}
