/* apps/cmd_train.c — `capgnn [train] [options]`: parse options into a struct
 * rt_config and call the runtime. Usage errors exit 2, runtime failures exit 1, each
 * with one line "capgnn: error: ..." on stderr. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apps/commands.h"
#include "core/status.h"
#include "runtime/runtime.h"

void cmd_train_usage(FILE *out) {
  fprintf(out,
          "usage: capgnn [train] [options]\n"
          "\n"
          "data\n"
          "  --graph NAME|FILE|synth:SPEC  graph to train on (default synth:small). NAME reads\n"
          "                                $CAPGNN_DATA/NAME.cgr; synth:PRESET[:key=value,...] with\n"
          "                                presets tiny, small, reddit, products\n"
          "  --feat-norm row|none          divide each feature row by its sum (default none)\n"
          "model\n"
          "  --model gcn|sage              GCN or GraphSAGE with the mean aggregator (default gcn)\n"
          "  --layers N                    convolution layers, 1..64 (default 2)\n"
          "  --hidden N                    hidden width (default 16)\n"
          "  --dropout P                   dropout on every layer's input, 0 <= P < 1 (default 0.5)\n"
          "  --layernorm                   LayerNorm after each hidden convolution\n"
          "training\n"
          "  --optimizer adam|adamw        Adam with L2 (torch.optim.Adam) or AdamW (default adam)\n"
          "  --lr X                        learning rate (default 0.01)\n"
          "  --weight-decay X              weight decay of the weight matrices (default 5e-4);\n"
          "                                biases and LayerNorm parameters never decay\n"
          "  --wd-scope all|first          decay all layers' weights or the first layer's only,\n"
          "                                as Kipf & Welling (default all)\n"
          "  --epochs N                    training epochs (default 200)\n"
          "  --eval-every N                evaluate train/val/test every N epochs (default 1)\n"
          "  --seed N                      seed of weights and dropout masks (default 1)\n"
          "execution and output\n"
          "  --device auto|cpu|cuda        compute backend (default auto: CUDA if built and present)\n"
          "  --threads N                   CPU threads, 0 = all (default 0); results are\n"
          "                                reproducible for a fixed thread count\n"
          "  --tf32                        CUDA: allow TF32 matrix products (faster, less exact)\n"
          "  --metrics FILE                write JSON Lines metrics: one object per epoch, then a\n"
          "                                summary object\n"
          "  --quiet                       no per-epoch log lines\n"
          "  -h, --help                    this help\n");
}

enum {
  OPT_GRAPH = 256, OPT_FEAT_NORM, OPT_MODEL, OPT_LAYERS, OPT_HIDDEN, OPT_DROPOUT, OPT_LAYERNORM,
  OPT_OPTIMIZER, OPT_LR, OPT_WD, OPT_WD_SCOPE, OPT_EPOCHS, OPT_EVAL_EVERY, OPT_SEED, OPT_DEVICE,
  OPT_THREADS, OPT_TF32, OPT_METRICS, OPT_QUIET
};

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "capgnn: error: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, " (see capgnn train --help)\n");
  va_end(ap);
  return CAPGNN_EXIT_USAGE;
}

static int parse_int(const char *opt, const char *s, int *out) {
  char *end = NULL;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || end == s || *end != '\0' || v < INT_MIN || v > INT_MAX)
    return usage_error("%s '%s': expected an integer", opt, s);
  *out = (int)v;
  return 0;
}

static int parse_i64(const char *opt, const char *s, int64_t *out) {
  char *end = NULL;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || end == s || *end != '\0') return usage_error("%s '%s': expected an integer", opt, s);
  *out = v;
  return 0;
}

static int parse_u64(const char *opt, const char *s, uint64_t *out) {
  char *end = NULL;
  errno = 0;
  const char *p = s;
  while (*p == ' ' || *p == '\t') p++;
  unsigned long long v = strtoull(s, &end, 10);
  if (*p == '-' || errno || end == s || *end != '\0')
    return usage_error("%s '%s': expected an unsigned integer", opt, s);
  *out = v;
  return 0;
}

static int parse_float(const char *opt, const char *s, float *out) {
  char *end = NULL;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end != '\0' || !isfinite(v))
    return usage_error("%s '%s': expected a number", opt, s);
  *out = (float)v;
  return 0;
}

int cmd_train(int argc, char **argv) {
  static const struct option longopts[] = {
      {"graph", required_argument, NULL, OPT_GRAPH},
      {"feat-norm", required_argument, NULL, OPT_FEAT_NORM},
      {"model", required_argument, NULL, OPT_MODEL},
      {"layers", required_argument, NULL, OPT_LAYERS},
      {"hidden", required_argument, NULL, OPT_HIDDEN},
      {"dropout", required_argument, NULL, OPT_DROPOUT},
      {"layernorm", no_argument, NULL, OPT_LAYERNORM},
      {"optimizer", required_argument, NULL, OPT_OPTIMIZER},
      {"lr", required_argument, NULL, OPT_LR},
      {"weight-decay", required_argument, NULL, OPT_WD},
      {"wd-scope", required_argument, NULL, OPT_WD_SCOPE},
      {"epochs", required_argument, NULL, OPT_EPOCHS},
      {"eval-every", required_argument, NULL, OPT_EVAL_EVERY},
      {"seed", required_argument, NULL, OPT_SEED},
      {"device", required_argument, NULL, OPT_DEVICE},
      {"threads", required_argument, NULL, OPT_THREADS},
      {"tf32", no_argument, NULL, OPT_TF32},
      {"metrics", required_argument, NULL, OPT_METRICS},
      {"quiet", no_argument, NULL, OPT_QUIET},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  struct rt_config cfg;
  rt_config_defaults(&cfg);
  opterr = 0; /* our own one-line messages */
  int c, rc = 0;
  while (rc == 0 && (c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
    const char *name = optind > 0 && optind <= argc ? argv[optind - 1] : "?";
    switch (c) {
      case 'h': cmd_train_usage(stdout); return CAPGNN_EXIT_OK;
      case OPT_GRAPH: cfg.graph = optarg; break;
      case OPT_FEAT_NORM:
        if (strcmp(optarg, "row") == 0) cfg.feat_norm_row = 1;
        else if (strcmp(optarg, "none") == 0) cfg.feat_norm_row = 0;
        else rc = usage_error("--feat-norm '%s': expected row or none", optarg);
        break;
      case OPT_MODEL:
        if (strcmp(optarg, "gcn") == 0) cfg.model = RT_MODEL_GCN;
        else if (strcmp(optarg, "sage") == 0 || strcmp(optarg, "graphsage") == 0) cfg.model = RT_MODEL_SAGE;
        else rc = usage_error("--model '%s': expected gcn or sage", optarg);
        break;
      case OPT_LAYERS: rc = parse_int("--layers", optarg, &cfg.layers); break;
      case OPT_HIDDEN: rc = parse_i64("--hidden", optarg, &cfg.hidden); break;
      case OPT_DROPOUT: rc = parse_float("--dropout", optarg, &cfg.dropout); break;
      case OPT_LAYERNORM: cfg.layernorm = 1; break;
      case OPT_OPTIMIZER:
        if (strcmp(optarg, "adam") == 0) cfg.optimizer = RT_OPT_ADAM;
        else if (strcmp(optarg, "adamw") == 0) cfg.optimizer = RT_OPT_ADAMW;
        else rc = usage_error("--optimizer '%s': expected adam or adamw", optarg);
        break;
      case OPT_LR: rc = parse_float("--lr", optarg, &cfg.lr); break;
      case OPT_WD: rc = parse_float("--weight-decay", optarg, &cfg.weight_decay); break;
      case OPT_WD_SCOPE:
        if (strcmp(optarg, "all") == 0) cfg.wd_scope = RT_WD_ALL;
        else if (strcmp(optarg, "first") == 0) cfg.wd_scope = RT_WD_FIRST;
        else rc = usage_error("--wd-scope '%s': expected all or first", optarg);
        break;
      case OPT_EPOCHS: rc = parse_int("--epochs", optarg, &cfg.epochs); break;
      case OPT_EVAL_EVERY: rc = parse_int("--eval-every", optarg, &cfg.eval_every); break;
      case OPT_SEED: rc = parse_u64("--seed", optarg, &cfg.seed); break;
      case OPT_DEVICE: cfg.device = optarg; break;
      case OPT_THREADS: rc = parse_int("--threads", optarg, &cfg.threads); break;
      case OPT_TF32: cfg.tf32 = 1; break;
      case OPT_METRICS: cfg.metrics_path = optarg; break;
      case OPT_QUIET: cfg.quiet = 1; break;
      case ':': rc = usage_error("option '%s' needs a value", name); break;
      case '?':
      default: rc = usage_error("unknown option '%s'", name); break;
    }
  }
  if (rc) return rc;
  if (optind < argc) return usage_error("unexpected argument '%s'", argv[optind]);
  if (rt_config_check(&cfg) != CG_OK) {
    fprintf(stderr, "capgnn: error: %s (see capgnn train --help)\n", cg_err_msg());
    return CAPGNN_EXIT_USAGE;
  }
  if (cfg.metrics_path && !cfg.metrics_path[0]) return usage_error("--metrics: empty file name");
  if (rt_run(&cfg, NULL) != CG_OK) {
    fprintf(stderr, "capgnn: error: %s\n", cg_err_msg()[0] ? cg_err_msg() : cg_status_str(cg_err_status()));
    return CAPGNN_EXIT_FAILURE;
  }
  return CAPGNN_EXIT_OK;
}
