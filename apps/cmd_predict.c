/* apps/cmd_predict.c — `capgnn predict`: the logits (and embeddings) of a checkpoint's
 * model on its graph, as .npy files in the graph's vertex order (runtime.h,
 * rt_predict). One process: under mpirun with several ranks it refuses, once. */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "apps/commands_internal.h"
#include "core/log.h"
#include "core/progress.h"
#include "core/status.h"
#include "runtime/runtime.h"

static void cmd_predict_usage(FILE *out) {
  fprintf(out,
          "usage: capgnn predict --checkpoint FILE --output LOGITS.npy [options]\n"
          "\n"
          "Writes the model's output for every vertex of the graph: the logits (float32, shape\n"
          "[vertices, classes], row v = vertex v of the graph file, whatever partitioning a run\n"
          "used) and, with --embeddings, the last hidden layer's output (after its activation:\n"
          "ReLU, ELU for GAT) that the last layer reads ([vertices, hidden]). Any checkpoint\n"
          "works: --checkpoint's, or --save-best's (the best epoch's weights). It prints the\n"
          "train/val/test accuracy of the predictions, which equal the training run's\n"
          "evaluation of that epoch.\n"
          "\n"
          "  --checkpoint FILE             the checkpoint (capgnn train --checkpoint / --save-best)\n"
          "  --graph NAME|FILE|synth:SPEC  the graph it was trained on (default: the synth: spec\n"
          "                                the checkpoint records, else its graph's name, from\n"
          "                                $CAPGNN_DATA; a pruned or converted file keeps its\n"
          "                                source's name: give it here)\n"
          "  --output FILE, -o FILE        the logits, .npy\n"
          "  --embeddings FILE             the last hidden layer's output, .npy (models of 2 or\n"
          "                                more layers)\n"
          "  --device auto|cpu|cuda        compute backend (default auto)\n"
          "  --threads N                   CPU threads (default 0: all cores); give the training\n"
          "                                run's count for bit-identical logits\n"
          "  --reorder none|rcm|cluster|metis|auto  compute in a locality order (capgnn train's\n"
          "                                option; default none): the rows written stay in the\n"
          "                                graph's vertex order, equal to rounding\n"
          "  --force                       replace an existing .npy (never the checkpoint or graph)\n"
          "  --quiet                       no log lines\n"
          "  -h, --help                    this help\n"
          "\n"
          "One process: run it without mpirun (or mpirun -np 1). An existing .npy is replaced only\n"
          "with --force; outputs are written whole or not at all (FILE.tmp.XXXXXX, renamed).\n");
}

#define usage_error(...) cli_usage_error("predict", __VA_ARGS__)

int cmd_predict(int argc, char **argv) {
  enum { OPT_CHECKPOINT = 256, OPT_GRAPH, OPT_EMB, OPT_DEVICE, OPT_THREADS, OPT_FORCE, OPT_QUIET, OPT_REORDER };
  static const struct option longopts[] = {
      {"checkpoint", required_argument, NULL, OPT_CHECKPOINT},
      {"graph", required_argument, NULL, OPT_GRAPH},
      {"output", required_argument, NULL, 'o'},
      {"embeddings", required_argument, NULL, OPT_EMB},
      {"device", required_argument, NULL, OPT_DEVICE},
      {"threads", required_argument, NULL, OPT_THREADS},
      {"force", no_argument, NULL, OPT_FORCE},
      {"reorder", required_argument, NULL, OPT_REORDER},
      {"quiet", no_argument, NULL, OPT_QUIET},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  struct rt_predict_options o;
  memset(&o, 0, sizeof o);
  o.device = "auto";
  int c, rc = 0, quiet = 0;
  optind = 1;
  opterr = 0;
  while (rc == 0 && (c = getopt_long(argc, argv, ":ho:", longopts, NULL)) != -1) {
    const char *name = optind > 0 && optind <= argc ? argv[optind - 1] : "?";
    if ((rc = cli_check_value("predict", argc, argv, optind, optarg)) != 0) break;
    switch (c) {
      case 'h':
        if (cli_speaks()) cmd_predict_usage(stdout);
        return CAPGNN_EXIT_OK;
      case OPT_CHECKPOINT: o.checkpoint = optarg; break;
      case OPT_GRAPH: o.graph = optarg; break;
      case 'o': o.logits_path = optarg; break;
      case OPT_EMB: o.embeddings_path = optarg; break;
      case OPT_DEVICE:
        if (strcmp(optarg, "auto") && strcmp(optarg, "cpu") && strcmp(optarg, "cuda"))
          rc = usage_error("--device '%s': expected auto, cpu or cuda", optarg);
        o.device = optarg;
        break;
      case OPT_THREADS:
        rc = cli_parse_int_in("predict", "--threads", optarg, 0, 4096, &o.threads);
        break;
      case OPT_FORCE: o.force = 1; break;
      case OPT_REORDER:
        if (graph_reorder_parse(optarg, &o.reorder) != CG_OK) {
          cg_err_clear();
          rc = usage_error("--reorder '%s': expected none, rcm, cluster, metis or auto", optarg);
        }
        break;
      case OPT_QUIET: quiet = 1; break;
      case ':': rc = usage_error("option '%s' needs a value", name); break;
      case '?':
      default: rc = cli_bad_option("predict", name, longopts); break;
    }
  }
  cli_options_done();
  if (rc) return rc;
  if (optind < argc) return usage_error("unexpected argument '%s'", argv[optind]);
  if (!o.checkpoint || !o.checkpoint[0]) return usage_error("--checkpoint FILE is required (the model to predict with)");
  if (!o.logits_path || !o.logits_path[0]) return usage_error("--output FILE is required (where the logits go, .npy)");
  { /* .npy only: a name with another extension would hold a file its name misdescribes */
    const char *paths[2] = {o.logits_path, o.embeddings_path}, *opts[2] = {"--output", "--embeddings"};
    for (int k = 0; k < 2; k++) {
      if (!paths[k] || strncmp(paths[k], "/dev/", 5) == 0) continue;
      const char *base = strrchr(paths[k], '/');
      const char *dot = strrchr(base ? base + 1 : paths[k], '.');
      if (dot && dot[1] && strcasecmp(dot, ".npy") != 0)
        return usage_error("%s %s: predict writes NumPy .npy files (float32), not %s (name it with .npy)", opts[k],
                           paths[k], dot);
    }
  }
  if (o.embeddings_path && strcmp(o.embeddings_path, o.logits_path) == 0)
    return usage_error("--output and --embeddings name the same file (%s): use two files", o.logits_path);
  if (cli_launch_size() > 1)
    return usage_error("predict runs as one process, not under mpirun with %d ranks (run it without mpirun, or "
                       "mpirun -np 1): the whole graph's predictions fit one process", cli_launch_size());
  if (cg_cpu_settings_check() != CG_OK) { /* now, not once the graph has loaded and the backend is made */
    fprintf(stderr, "capgnn: error: %s\n", cg_err_msg());
    return CAPGNN_EXIT_USAGE;
  }
  if (quiet) {
    cg_progress_set_mode(CG_PROGRESS_OFF);
    cg_log_set_level(CG_LOG_WARN);
  }
  o.threads = rt_threads_setup("predict", o.threads, 1, 0, o.device);
  struct rt_predict_result r;
  if (rt_predict(&o, &r) != CG_OK) return cli_runtime_error();
  if (!quiet) {
    const char *acc = r.multilabel ? "f1" : "acc"; /* the name training's lines give it */
    LOG_INFO("predict", "checkpoint %s (epoch %d): train %s %.4f, val %s %.4f, test %s %.4f", o.checkpoint, r.epoch,
             acc, r.ev.train_acc, acc, r.ev.val_acc, acc, r.ev.test_acc);
    const char *labels[2] = {"logits", "embeddings"};
    const char *paths[2] = {o.logits_path, o.embeddings_path};
    cg_progress_files("predict", labels, paths, 2);
  }
  return CAPGNN_EXIT_OK;
}
