/* apps/cmd_gen.c — `capgnn gen SPEC --output FILE.cgr`: write a synthetic graph
 * (graph_synth) to a .cgr file, so that benchmarks and other tools share one graph
 * instead of each generating its own. */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "apps/commands_internal.h"
#include "core/log.h"
#include "core/outfile.h"
#include "core/status.h"
#include "core/timer.h"
#include "graph/graph.h"
#include "core/progress.h"

static void cmd_gen_usage(FILE *out) {
  fprintf(out,
          "usage: capgnn gen SPEC --output FILE.cgr [--cgr-version N] [--block-shift S] [--force] [--quiet]\n"
          "\n"
          "Generates a synthetic graph and writes it as a .cgr file (a temporary beside it, then\n"
          "renamed over it; a symbolic link is followed, a device is written in place). The same\n"
          "SPEC always gives the same file.\n"
          "\n"
          "  SPEC                  synth:PRESET[:key=value,...], or PRESET[:key=value,...]\n"
          "                        presets: tiny, small, reddit (232,965 vertices, ~114.6M directed\n"
          "                        edges, 602 features, 41 classes), products (2,449,029 / ~123.7M /\n"
          "                        100 / 47); keys: scale=F, seed=N, nodes=, degree=, feats=,\n"
          "                        classes=, communities=, multilabel=0|1, identity=0|1 (features =\n"
          "                        the identity matrix, stored sparse: a graph without features),\n"
          "                        shuffle=0|1 (the same graph with its vertices in a seeded\n"
          "                        random order)\n"
          "  -o, --output FILE     the .cgr file to write; an existing file (a dataset above all)\n"
          "                        is never replaced without --force\n"
          "  --force               replace an existing file at --output\n"
          "  --cgr-version N       1 (default, ../shared/datasets/FORMAT.md) or 2 (the same plus a\n"
          "                        CRC-32 per block, so that each rank verifies the rows it reads:\n"
          "                        docs/cgr-v2.md)\n"
          "  --block-shift S       version 2 (implies it): blocks of 2^S bytes, 6 <= S <= 30\n"
          "                        (default 16: 64 KiB)\n"
          "  --quiet               no progress lines\n"
          "  -h, --help            this help\n"
          "\n"
          "example: capgnn gen reddit:scale=0.1 -o reddit-0.1.cgr; then capgnn --graph reddit-0.1.cgr\n");
}

#define usage_error(...) cli_usage_error("gen", __VA_ARGS__)

#define runtime_error cli_runtime_error

int cmd_gen(int argc, char **argv) {
  static const struct option longopts[] = {{"output", required_argument, NULL, 'o'},
                                           {"spec", required_argument, NULL, 's'},
                                           {"quiet", no_argument, NULL, 'q'},
                                           {"force", no_argument, NULL, 'f'},
                                           {"cgr-version", required_argument, NULL, 'V'},
                                           {"block-shift", required_argument, NULL, 'B'},
                                           {"help", no_argument, NULL, 'h'},
                                           {NULL, 0, NULL, 0}};
  const char *output = NULL, *spec_arg = NULL;
  int c, force = 0, bad_opt = 0, version = 0, block_shift = 0; /* version 0: not given */
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, ":ho:", longopts, NULL)) != -1) {
    const char *name = optind > 0 && optind <= argc ? argv[optind - 1] : "?";
    const int bad = cli_check_value("gen", argc, argv, optind, optarg);
    if (bad) return bad;
    switch (c) {
      case 'h': cmd_gen_usage(stdout); return CAPGNN_EXIT_OK;
      case 'o': output = optarg; break;
      case 's': spec_arg = optarg; break;
      case 'q': cg_progress_set_mode(CG_PROGRESS_OFF); break;
      case 'f': force = 1; break;
      case 'V':
        if ((bad_opt = cli_parse_int_in("gen", "--cgr-version", optarg, 1, 2, &version)) != 0) return bad_opt;
        break;
      case 'B':
        if ((bad_opt = cli_parse_int_in("gen", "--block-shift", optarg, 6, 30, &block_shift)) != 0) return bad_opt;
        break;
      case ':': return usage_error("option '%s' needs a value", name);
      default: return cli_bad_option("gen", name, longopts);
    }
  }
  if (optind < argc) {
    if (spec_arg || optind + 1 < argc) return usage_error("unexpected argument '%s'", argv[optind + (spec_arg ? 0 : 1)]);
    spec_arg = argv[optind];
  }
  if (!spec_arg) return usage_error("a SPEC is required, e.g. capgnn gen products:scale=0.1 -o products-0.1.cgr");
  if (!output) return usage_error("--output is required");
  if (block_shift && version == 1)
    return usage_error("--block-shift sets version 2's blocks: it does not apply to --cgr-version 1");
  if (!version) version = block_shift ? 2 : 1;
  /* the output rule (core/outfile.h): before generating, which takes minutes at full size */
  if (cg_outfile_check(output, "--output", graph_outfile_kind(), NULL, 0, force, 0) != CG_OK ||
      cg_outfile_probe(output, "graph") != CG_OK)
    return runtime_error();
  char spec[1024];
  snprintf(spec, sizeof spec, "%s%s", strncmp(spec_arg, "synth:", 6) == 0 ? "" : "synth:", spec_arg);

  struct graph g;
  struct cg_progress pr;
  char what[1200];
  snprintf(what, sizeof what, "generating %s", spec);
  cg_progress_begin(&pr, what, 0, "");
  cg_progress_update(&pr, 0);
  double t0 = cg_time_now();
  if (graph_synth(spec, &g) != CG_OK) {
    cg_progress_cancel(&pr);
    if (cg_err_status() == CG_ERR_ARG) {
      fprintf(stderr, "capgnn: error: %s (see capgnn gen --help)\n", cg_err_msg());
      return CAPGNN_EXIT_USAGE;
    }
    return runtime_error();
  }
  cg_progress_end(&pr);
  double t_gen = cg_time_now() - t0;
  snprintf(what, sizeof what, "writing %s", output);
  cg_progress_begin(&pr, what, 0, "");
  cg_progress_update(&pr, 0);
  if (graph_save_cgr_version(output, &g, (unsigned)version, (unsigned)block_shift) != CG_OK) {
    cg_progress_cancel(&pr);
    graph_free(&g);
    return runtime_error();
  }
  cg_progress_end(&pr);
  struct stat sb;
  char size[48] = "?", nv[48], ne[48];
  if (stat(output, &sb) == 0) cg_progress_amount(size, sizeof size, (double)sb.st_size, "B");
  cg_progress_amount(nv, sizeof nv, (double)g.n, "");
  cg_progress_amount(ne, sizeof ne, (double)g.m, "");
  char shown[4200], shown2[4200]; /* (the user's strings escaped: core/log.h) */
  fprintf(cli_report_stream(output),
          "wrote %s: %s (generated in %.1f s): %s vertices, %s directed entries, %lld feature%s, %lld "
          "class%s%s; %s, checksum 0x%08x\n",
         cg_text_escape(shown, sizeof shown, output), cg_text_escape(shown2, sizeof shown2, spec), t_gen, nv, ne,
         (long long)g.feat_dim, g.feat_dim == 1 ? "" : "s", (long long)g.num_classes,
         g.num_classes == 1 ? "" : "es",
         g.multilabel ? " (multi-label)" : "", size, g.checksum);
  graph_free(&g);
  return CAPGNN_EXIT_OK;
}
