/* apps/cmd_train.c — `capgnn [train] [options]`: parse options into a struct
 * rt_config and call the runtime. Usage errors exit 2, runtime failures exit 1, each
 * with one line "capgnn: error: ..." on stderr. Settings files (--config, see
 * apps/config_file_internal.h) expand to the same options before the command line, so the
 * command line wins; --print-config prints the resolved settings as a settings file. */
#include <errno.h>
#include <signal.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "apps/commands_internal.h"
#include "apps/config_file_internal.h"
#include "core/log.h"
#include "core/status.h"
#include "core/progress.h"
#include "runtime/runtime.h"
#ifdef CAPGNN_HAVE_DIST
#include "mpi/comm.h"
#include "runtime/dist.h"
#endif
#ifdef CAPGNN_HAVE_RAPA
#include "rapa/rapa.h"
#endif

/* Options of partition-parallel training (`mpiexec -n P capgnn ...`, P > 1). */
struct train_par {
  const char *partition; /* metis | random */
  uint64_t part_seed;
  const char *part_cache; /* NULL: $CAPGNN_CACHE or .capgnn-cache */
  int no_part_cache;
  const char *comm;       /* auto | nccl | mpi-cuda | mpi-staged */
  const char *profile;    /* --profile FILE|auto, NULL: none */
  /* the halo cache (jaca/jaca.h; cache_options turns these into its options) */
  const char *cache_policy; /* jaca | lru | fifo | none */
  float cache_capacity;
  int64_t cache_host_mb, cache_device_mb; /* MB_AUTO: Algorithm 1 (the default) */
  int64_t cache_reserve_mb;
  int staleness, grad_staleness, cache_warmup;
};
#define MB_AUTO (-1) /* jaca.h's JACA_MB_AUTO, for builds without it */

/* --cache-host-mb / --cache-device-mb: auto or MiB >= 0 (0: no MiB limit). */
static int parse_mb(const char *opt, const char *s, int64_t *out) {
  if (strcmp(s, "auto") == 0) {
    *out = MB_AUTO;
    return 0;
  }
  int rc = cli_parse_i64("train", opt, s, out);
  if (rc == 0 && *out < 0) rc = cli_usage_error("train", "%s %s: expected auto or a number of MiB >= 0", opt, s);
  return rc;
}

static void print_mb(FILE *out, const char *key, int64_t mb) {
  if (mb == MB_AUTO) fprintf(out, "%s = auto\n", key);
  else fprintf(out, "%s = %lld\n", key, (long long)mb);
}

#ifdef CAPGNN_HAVE_DIST
/* The halo cache's options from the command line's, checked (jaca_options_check: what is
 * not built yet is refused here, as a usage error). */
_Static_assert(MB_AUTO == JACA_MB_AUTO, "--cache-host-mb auto is jaca's JACA_MB_AUTO");
static int cache_options(const struct train_par *par, struct jaca_options *o) {
  jaca_options_defaults(o);
  TRY(jaca_policy_parse(par->cache_policy, &o->policy));
  o->capacity = par->cache_capacity;
  o->host_mb = par->cache_host_mb;
  o->device_mb = par->cache_device_mb;
  o->reserve_mb = par->cache_reserve_mb;
  o->staleness = par->staleness;
  o->grad_staleness = par->grad_staleness;
  o->warmup = par->cache_warmup;
  return jaca_options_check(o);
}
#endif

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
          "  --input-dropout P             dropout on the input features instead (default: as\n"
          "                                --dropout); with 0, layer 0's aggregation is computed\n"
          "                                once and each epoch skips two of its sparse products\n"
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
          "  --threads N                   CPU threads per rank (default 0 = the host's cores / its\n"
          "                                ranks, at least 1: all cores for one process); results\n"
          "                                are reproducible for a fixed thread count\n"
          "  --tf32                        CUDA: allow TF32 matrix products (faster, less exact)\n"
          "  --metrics FILE                write JSON Lines metrics: one object per epoch, then a\n"
          "                                summary object (an earlier metrics file is replaced,\n"
          "                                any other existing file only with --force)\n"
          "  --force                       let --metrics and --checkpoint replace an existing file\n"
          "                                of another kind (never an input: the graph, --resume,\n"
          "                                a settings file)\n"
          "  --quiet                       no per-epoch log lines and no progress lines\n"
          "  --stall-timeout SECONDS       a rank that makes no progress in training for this long\n"
          "                                (stopped, a hung GPU or file system, a peer gone) ends\n"
          "                                the whole job, naming the rank and where it stopped;\n"
          "                                exit status 75 (default 300; 0 = never)\n"
          "checkpoints\n"
          "  --checkpoint FILE             save the training state (parameters, Adam state, losses)\n"
          "                                after the last epoch, and when Ctrl-C or SIGTERM stops\n"
          "                                the run (after the current epoch; exit status 130);\n"
          "                                written whole or not at all; FILE must be new, an earlier\n"
          "                                checkpoint (replaced) or /dev/null\n"
          "  --checkpoint-every N          ... and every N epochs (default 0: not in between)\n"
          "  --resume FILE                 continue from a checkpoint up to --epochs: the same\n"
          "                                losses and parameters, bit for bit, as a run that never\n"
          "                                stopped (same settings, device and thread count); writes\n"
          "                                no checkpoint without --checkpoint (which may be FILE);\n"
          "                                a resumed run appends to its --metrics file\n"
          "parallel (mpiexec -n P capgnn ..., one partition per rank; P = 1 trains as without MPI;\n"
          "the same names as capgnn partition)\n"
          "  --partition metis|random      how vertices are split over the ranks (default metis);\n"
          "                                alias --method\n"
          "  --part-seed N                 seed of METIS / the random split (default 1)\n"
          "  --part-cache DIR              partition cache folder (default $CAPGNN_CACHE, else\n"
          "                                .capgnn-cache); alias --cache\n"
          "  --no-part-cache               neither read nor write the cache; alias --no-cache\n"
          "  --comm auto|nccl|mpi-cuda|mpi-staged  how GPU ranks exchange halo rows and gradients\n"
          "                                (default auto; CPU ranks always use plain MPI)\n"
          "  --profile FILE|auto           load a device profile (capgnn profile --json FILE, or\n"
          "                                auto: each rank's device from the cache), validate it\n"
          "                                and log the ranks' relative capabilities (training is\n"
          "                                unchanged: the resource-aware partitioner comes later)\n"
          "  --overlap on|off              compute the inner rows' aggregation while halo rows\n"
          "                                travel (default on); results are bit-identical either\n"
          "                                way, only the time spent waiting differs\n"
          "halo cache (JACA; parallel runs)\n"
          "  --cache-policy jaca|lru|fifo|none  keep one copy of each halo row per node in shared\n"
          "                                memory, rows from another node sent once per node;\n"
          "                                which rows a smaller tier keeps: jaca (overlap ratio x\n"
          "                                influence), lru, fifo (default none: no cache)\n"
          "  --cache-capacity F            fraction of a node's halo rows its tier holds, and of a\n"
          "                                rank's other halo rows it keeps, (0, 1] (default 1)\n"
          "  --cache-host-mb N|auto        ... and at most N MiB of shared memory per node (0: no\n"
          "                                MiB limit; default auto: Algorithm 1, the node's free\n"
          "                                host memory less --cache-reserve-mb)\n"
          "  --cache-device-mb N|auto      ... and at most N MiB per rank (0: no MiB limit; default\n"
          "                                auto: the device's free memory less the reserve)\n"
          "  --cache-reserve-mb N          memory auto leaves free for the rest of the job (default\n"
          "                                1024)\n"
          "  --staleness S                 APPROXIMATE for S > 0: a hidden layer's halo row is\n"
          "                                reused for up to S epochs before it is sent again\n"
          "                                (default 0: exact, the same results as without a cache)\n"
          "  --grad-staleness S            APPROXIMATE for S > 0: a halo row's gradient is sent\n"
          "                                back at most every S + 1 epochs, its owner reusing the\n"
          "                                last one meanwhile (default 0: every epoch, exact)\n"
          "  --cache-warmup E              the cache off (exact exchange) for the first E epochs\n"
          "  --staleness adaptive[:EPS]    not built yet\n"
          "settings\n"
          "  --config FILE                 read settings from an INI file (keys are the long options\n"
          "                                above, e.g. configs/reddit.ini); options given on the\n"
          "                                command line override it; may be repeated\n"
          "  --print-config                print the resolved settings (as a settings file) and exit\n"
          "  -h, --help                    this help\n");
}

enum {
  OPT_GRAPH = 256, OPT_FEAT_NORM, OPT_MODEL, OPT_LAYERS, OPT_HIDDEN, OPT_DROPOUT, OPT_INPUT_DROPOUT, OPT_LAYERNORM,
  OPT_OPTIMIZER, OPT_LR, OPT_WD, OPT_WD_SCOPE, OPT_EPOCHS, OPT_EVAL_EVERY, OPT_SEED, OPT_DEVICE,
  OPT_THREADS, OPT_TF32, OPT_METRICS, OPT_QUIET, OPT_CONFIG, OPT_PRINT_CONFIG,
  OPT_PARTITION, OPT_PART_SEED, OPT_PART_CACHE, OPT_NO_PART_CACHE, OPT_COMM, OPT_CHECKPOINT,
  OPT_CHECKPOINT_EVERY, OPT_RESUME, OPT_FORCE, OPT_STALL_TIMEOUT, OPT_PROFILE, OPT_CACHE_POLICY,
  OPT_CACHE_CAPACITY, OPT_CACHE_HOST_MB, OPT_CACHE_DEVICE_MB, OPT_STALENESS, OPT_GRAD_STALENESS,
  OPT_CACHE_WARMUP, OPT_CACHE_RESERVE_MB, OPT_OVERLAP
};

#define usage_error(...) cli_usage_error("train", __VA_ARGS__)

static int cmd_train_parsed(int argc, char **argv, const struct option *longopts, const char *const *files,
                            int nfiles);

/* The shortest decimal that reads back as the same float ("0.01", not "0.00999999978"). */
static const char *float_str(char *buf, size_t len, float v) {
  for (int prec = 1; prec <= 9; prec++) {
    snprintf(buf, len, "%.*g", prec, (double)v);
    if (strtof(buf, NULL) == v) break;
  }
  return buf;
}

/* The resolved settings in the --config format, so that the output can be saved and
 * read back with --config (every float reads back exactly). */
static void print_config(FILE *out, const struct rt_config *c, const struct train_par *par,
                         const char *const *files, int nfiles) {
  char f1[32], f2[32], f3[32];
  fprintf(out, "# capgnn train settings, resolved from: defaults");
  for (int i = 0; i < nfiles; i++) fprintf(out, ", %s", files[i]);
  fprintf(out, ", the command line\n");
  fprintf(out, "[data]\ngraph = %s\nfeat-norm = %s\n", c->graph, c->feat_norm_row ? "row" : "none");
  fprintf(out, "\n[model]\nmodel = %s\nlayers = %d\nhidden = %lld\ndropout = %s\n",
          rt_model_kind_str(c->model), c->layers, (long long)c->hidden, float_str(f1, sizeof f1, c->dropout));
  if (c->input_dropout >= 0.0f)
    fprintf(out, "input-dropout = %s\n", float_str(f1, sizeof f1, c->input_dropout));
  else
    fprintf(out, "# input-dropout = P (as dropout)\n");
  fprintf(out, "layernorm = %s\n", c->layernorm ? "true" : "false");
  fprintf(out,
          "\n[training]\noptimizer = %s\nlr = %s\nweight-decay = %s\nwd-scope = %s\nepochs = %d\n"
          "eval-every = %d\nseed = %llu\n",
          rt_optimizer_str(c->optimizer), float_str(f2, sizeof f2, c->lr), float_str(f3, sizeof f3, c->weight_decay),
          rt_wd_scope_str(c->wd_scope), c->epochs, c->eval_every, (unsigned long long)c->seed);
  fprintf(out, "\n[execution]\ndevice = %s\nthreads = %d\ntf32 = %s\nstall-timeout = %g\n", c->device,
          c->threads, c->tf32 ? "true" : "false", c->stall_timeout_s);
  fprintf(out, "\n[output]\n");
  if (c->metrics_path) fprintf(out, "metrics = %s\n", c->metrics_path);
  else fprintf(out, "# metrics = FILE (none)\n");
  fprintf(out, "quiet = %s\n", c->quiet ? "true" : "false");
  if (c->force) fprintf(out, "force = true\n");
  fprintf(out, "\n[checkpoints]\n");
  if (c->checkpoint_path) fprintf(out, "checkpoint = %s\ncheckpoint-every = %d\n", c->checkpoint_path, c->checkpoint_every);
  else fprintf(out, "# checkpoint = FILE (none)\n");
  if (c->resume_path) fprintf(out, "resume = %s\n", c->resume_path);
  fprintf(out, "\n[parallel]\npartition = %s\npart-seed = %llu\n", par->partition,
          (unsigned long long)par->part_seed);
  if (par->part_cache) fprintf(out, "part-cache = %s\n", par->part_cache);
  if (par->no_part_cache) fprintf(out, "no-part-cache = true\n");
  fprintf(out, "comm = %s\n", par->comm);
  if (par->profile) fprintf(out, "profile = %s\n", par->profile);
  char cap[32];
  fprintf(out, "\n[cache]\ncache-policy = %s\ncache-capacity = %s\n", par->cache_policy,
          float_str(cap, sizeof cap, par->cache_capacity));
  print_mb(out, "cache-host-mb", par->cache_host_mb);
  print_mb(out, "cache-device-mb", par->cache_device_mb);
  fprintf(out, "cache-reserve-mb = %lld\nstaleness = %d\ngrad-staleness = %d\ncache-warmup = %d\n",
          (long long)par->cache_reserve_mb, par->staleness, par->grad_staleness, par->cache_warmup);
  fprintf(out, "overlap = %s\n", c->overlap ? "on" : "off");
}

static const char *err_text(void) { return cg_err_msg()[0] ? cg_err_msg() : cg_status_str(cg_err_status()); }

#ifdef CAPGNN_HAVE_DIST
/* A set-up error agreed by every rank (comm_agree), printed once per distinct message:
 * a rank stays silent when a lower rank holds the same text. When every rank failed
 * the same way (a missing file, a bad option) rank 0 prints one line without a rank;
 * otherwise each distinct line names its rank (the failing rank's own error, and the
 * lowest other rank's "rank R failed during ..."). */
static void report_setup_error(struct comm *c) {
  const int rank = comm_rank(c), size = comm_size(c);
  const char *msg = err_text();
  if (size == 1) {
    fprintf(stderr, "capgnn: error: %s\n", msg);
    return;
  }
  uint64_t h = 1469598103934665603ull; /* FNV-1a of the message */
  for (const char *p = msg; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
  const int64_t mine = (int64_t)(h >> 1);
  int64_t *all = malloc((size_t)size * sizeof *all);
  char saved[2048];
  snprintf(saved, sizeof saved, "%s", msg); /* the all-gather may record its own error */
  if (!all || comm_allgather_i64(c, mine, all) != CG_OK) { /* cannot compare: every rank prints */
    fprintf(stderr, "capgnn: error: rank %d: %s\n", rank, saved);
    free(all);
    return;
  }
  int first = rank, same = 1;
  for (int r = 0; r < size; r++) {
    if (all[r] != mine) same = 0;
    else if (r < first) first = r;
  }
  free(all);
  if (first != rank) return;
  if (same) fprintf(stderr, "capgnn: error: %s\n", saved);
  else fprintf(stderr, "capgnn: error: rank %d: %s\n", rank, saved);
}
#endif

/* SIGINT / SIGTERM (Ctrl-C, a batch system's time limit) during training stop it
 * after the current epoch, with a checkpoint when --checkpoint is given; outside the
 * training loop, and at a second signal, the default action (termination) applies. */
static void on_stop_signal(int sig) {
  if (!rt_train_request_stop()) {
    signal(sig, SIG_DFL);
    raise(sig);
    return;
  }
  signal(SIGINT, SIG_DFL); /* the next one, of either kind, terminates */
  signal(SIGTERM, SIG_DFL);
}

static void install_stop_handlers(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_stop_signal;
  sa.sa_flags = SA_RESTART; /* an interrupted write (a log line into a pipe) resumes */
  sigemptyset(&sa.sa_mask); /* both blocked while it runs: a second one arrives after the reset */
  sigaddset(&sa.sa_mask, SIGINT);
  sigaddset(&sa.sa_mask, SIGTERM);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  /* a log reader that went away (a `| tee` hit by the same Ctrl-C) must not kill the
   * run before its checkpoint: writes to it fail instead */
  signal(SIGPIPE, SIG_IGN);
}

/* MPI starts for every training run (a singleton without mpiexec). One rank trains
 * exactly as without MPI; P > 1 ranks train one partition each (runtime/dist.h). The
 * run checks its files and reads the checkpoint it resumes from before it loads the
 * graph (runtime.h, "checkpoints in a run"). A set-up error is agreed by all ranks,
 * which leave cleanly; a failure once training has started may leave peers waiting in
 * a collective, so it ends the whole job (comm_abort). */
static int run_training(const struct rt_config *cfg, const struct train_par *par) {
#ifdef CAPGNN_HAVE_DIST
  struct comm *c = NULL;
  if (comm_init(NULL, NULL, &c) != CG_OK) {
    fprintf(stderr, "capgnn: error: %s\n", err_text());
    comm_abort(NULL, CAPGNN_EXIT_FAILURE);
  }
  struct rt_dist_options o;
  rt_dist_options_defaults(&o);
  enum comm_path path = COMM_PATH_AUTO;
  if (part_method_parse(par->partition, &o.method) != CG_OK || comm_path_parse(par->comm, &path) != CG_OK) {
    fprintf(stderr, "capgnn: error: %s\n", err_text()); /* not reached: checked while parsing */
    comm_finalize(&c);
    return CAPGNN_EXIT_USAGE;
  }
  o.part_seed = par->part_seed;
  o.use_cache = !par->no_part_cache;
  o.cache_dir = par->part_cache;
  if (cache_options(par, &o.halo_cache) != CG_OK) { /* not reached: checked while parsing */
    fprintf(stderr, "capgnn: error: %s\n", err_text());
    comm_finalize(&c);
    return CAPGNN_EXIT_USAGE;
  }
  const int rank = comm_rank(c), size = comm_size(c);
  if (size == 1 && o.halo_cache.policy != JACA_POLICY_NONE)
    LOG_INFO("train", "--cache-policy %s: one rank has no halo rows to cache", par->cache_policy);
  if (rank != 0) cg_progress_set_mode(CG_PROGRESS_OFF); /* every rank opens the graph: one progress line */
#ifdef CAPGNN_HAVE_RAPA
  if (par->profile) {
    int pst = rapa_train_profile(c, par->profile, cfg->device, cfg->threads, par->part_cache);
    if (pst != CG_OK) {
      report_setup_error(c);
      comm_finalize(&c);
      return CAPGNN_EXIT_FAILURE;
    }
  }
#endif
  int fatal = 0;
  install_stop_handlers();
  const int st = rt_run_dist(c, cfg, &o, path, NULL, &fatal);
  if (st == CG_ERR_INTERRUPTED) { /* every rank stopped after the same epoch */
    if (rank == 0) fprintf(stderr, "capgnn: %s\n", err_text());
    comm_finalize(&c);
    return CAPGNN_EXIT_INTERRUPTED;
  }
  if (st != CG_OK) {
    if (fatal && size > 1) {
      LOG_ERROR("train", "rank %d of %d failed during training: %s", rank, size, err_text());
      cg_err_report("capgnn");
      comm_abort(c, CAPGNN_EXIT_FAILURE);
    }
    report_setup_error(c);
    comm_finalize(&c);
    return CAPGNN_EXIT_FAILURE;
  }
  comm_finalize(&c);
  return CAPGNN_EXIT_OK;
#else
  (void)par;
  install_stop_handlers();
  const int st = rt_run(cfg, NULL);
  if (st == CG_ERR_INTERRUPTED) {
    fprintf(stderr, "capgnn: %s\n", err_text());
    return CAPGNN_EXIT_INTERRUPTED;
  }
  if (st != CG_OK) {
    fprintf(stderr, "capgnn: error: %s\n", err_text());
    return CAPGNN_EXIT_FAILURE;
  }
  return CAPGNN_EXIT_OK;
#endif
}

int cmd_train(int argc, char **argv) {
  static const struct option longopts[] = {
      {"graph", required_argument, NULL, OPT_GRAPH},
      {"feat-norm", required_argument, NULL, OPT_FEAT_NORM},
      {"model", required_argument, NULL, OPT_MODEL},
      {"layers", required_argument, NULL, OPT_LAYERS},
      {"hidden", required_argument, NULL, OPT_HIDDEN},
      {"dropout", required_argument, NULL, OPT_DROPOUT},
      {"input-dropout", required_argument, NULL, OPT_INPUT_DROPOUT},
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
      {"checkpoint", required_argument, NULL, OPT_CHECKPOINT},
      {"checkpoint-every", required_argument, NULL, OPT_CHECKPOINT_EVERY},
      {"resume", required_argument, NULL, OPT_RESUME},
      {"force", no_argument, NULL, OPT_FORCE},
      {"stall-timeout", required_argument, NULL, OPT_STALL_TIMEOUT},
      {"config", required_argument, NULL, OPT_CONFIG},
      {"print-config", no_argument, NULL, OPT_PRINT_CONFIG},
      {"partition", required_argument, NULL, OPT_PARTITION},
      {"part-seed", required_argument, NULL, OPT_PART_SEED},
      {"part-cache", required_argument, NULL, OPT_PART_CACHE},
      {"no-part-cache", no_argument, NULL, OPT_NO_PART_CACHE},
      /* capgnn partition's names of the same options (aliases; --seed is the model's here) */
      {"method", required_argument, NULL, OPT_PARTITION},
      {"cache", required_argument, NULL, OPT_PART_CACHE},
      {"no-cache", no_argument, NULL, OPT_NO_PART_CACHE},
      {"comm", required_argument, NULL, OPT_COMM},
      {"overlap", required_argument, NULL, OPT_OVERLAP},
#ifdef CAPGNN_HAVE_RAPA
      {"profile", required_argument, NULL, OPT_PROFILE},
#endif
      {"cache-policy", required_argument, NULL, OPT_CACHE_POLICY},
      {"cache-capacity", required_argument, NULL, OPT_CACHE_CAPACITY},
      {"cache-host-mb", required_argument, NULL, OPT_CACHE_HOST_MB},
      {"cache-device-mb", required_argument, NULL, OPT_CACHE_DEVICE_MB},
      {"staleness", required_argument, NULL, OPT_STALENESS},
      {"grad-staleness", required_argument, NULL, OPT_GRAD_STALENESS},
      {"cache-warmup", required_argument, NULL, OPT_CACHE_WARMUP},
      {"cache-reserve-mb", required_argument, NULL, OPT_CACHE_RESERVE_MB},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  /* --config FILE becomes the options it holds, placed before the command line's. */
  int xargc;
  char **xargv;
  if (config_file_expand(argc, argv, longopts, &xargc, &xargv) != CG_OK) {
    if (cli_speaks()) fprintf(stderr, "capgnn: error: %s (see capgnn train --help)\n", cg_err_msg());
    return cg_err_status() == CG_ERR_IO ? CAPGNN_EXIT_FAILURE : CAPGNN_EXIT_USAGE;
  }
  const char *files[17] = {NULL};
  int nfiles = config_file_names(argc, argv, files, 16); /* files[nfiles] stays NULL */
  int rc = cmd_train_parsed(xargc, xargv, longopts, files, nfiles);
  config_file_argv_free(xargc, xargv); /* cfg's strings point into it: freed after the run */
  return rc;
}

static int cmd_train_parsed(int argc, char **argv, const struct option *longopts, const char *const *files,
                            int nfiles) {
  struct rt_config cfg;
  rt_config_defaults(&cfg);
  cfg.inputs = files; /* no output may replace a settings file */
  optind = 1;
  opterr = 0; /* our own one-line messages */
  int c, rc = 0, print = 0;
  struct train_par par = {"metis", 1, NULL, 0, "auto", NULL, "none", 1.0f, MB_AUTO, MB_AUTO, 1024, 0, 0, 0};
  while (rc == 0 && (c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
    const char *name = optind > 0 && optind <= argc ? argv[optind - 1] : "?";
    if ((rc = cli_check_value("train", argc, argv, optind, optarg)) != 0) break;
    switch (c) {
      case 'h':
        if (cli_speaks()) cmd_train_usage(stdout); /* once under mpirun */
        return CAPGNN_EXIT_OK;
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
      case OPT_LAYERS: rc = cli_parse_int("train", "--layers", optarg, &cfg.layers); break;
      case OPT_HIDDEN: rc = cli_parse_i64("train", "--hidden", optarg, &cfg.hidden); break;
      case OPT_DROPOUT:
        rc = cli_parse_float("train", "--dropout", optarg, &cfg.dropout);
        if (rc == 0 && !(cfg.dropout >= 0.0f && cfg.dropout < 1.0f))
          rc = usage_error("--dropout %s: expected a probability in [0, 1)", optarg);
        break;
      case OPT_INPUT_DROPOUT:
        rc = cli_parse_float("train", "--input-dropout", optarg, &cfg.input_dropout);
        if (rc == 0 && !(cfg.input_dropout >= 0.0f && cfg.input_dropout < 1.0f))
          rc = usage_error("--input-dropout %s: expected a probability in [0, 1)", optarg);
        break;
      case OPT_LAYERNORM: cfg.layernorm = 1; break;
      case OPT_OPTIMIZER:
        if (strcmp(optarg, "adam") == 0) cfg.optimizer = RT_OPT_ADAM;
        else if (strcmp(optarg, "adamw") == 0) cfg.optimizer = RT_OPT_ADAMW;
        else rc = usage_error("--optimizer '%s': expected adam or adamw", optarg);
        break;
      case OPT_LR:
        rc = cli_parse_float("train", "--lr", optarg, &cfg.lr);
        if (rc == 0 && !(cfg.lr > 0.0f)) rc = usage_error("--lr %s: expected a number > 0", optarg);
        break;
      case OPT_WD:
        rc = cli_parse_float("train", "--weight-decay", optarg, &cfg.weight_decay);
        if (rc == 0 && !(cfg.weight_decay >= 0.0f))
          rc = usage_error("--weight-decay %s: expected a number >= 0", optarg);
        break;
      case OPT_WD_SCOPE:
        if (strcmp(optarg, "all") == 0) cfg.wd_scope = RT_WD_ALL;
        else if (strcmp(optarg, "first") == 0) cfg.wd_scope = RT_WD_FIRST;
        else rc = usage_error("--wd-scope '%s': expected all or first", optarg);
        break;
      case OPT_EPOCHS: rc = cli_parse_int("train", "--epochs", optarg, &cfg.epochs); break;
      case OPT_EVAL_EVERY: rc = cli_parse_int("train", "--eval-every", optarg, &cfg.eval_every); break;
      case OPT_SEED: rc = cli_parse_u64("train", "--seed", optarg, &cfg.seed); break;
      case OPT_DEVICE: cfg.device = optarg; break;
      case OPT_THREADS:
        rc = cli_parse_int("train", "--threads", optarg, &cfg.threads);
        if (rc == 0 && (cfg.threads < 0 || cfg.threads > 4096))
          rc = usage_error("--threads %d: expected an integer in [0, 4096] (0 = the host's cores / its ranks)", cfg.threads);
        break;
      case OPT_TF32: cfg.tf32 = 1; break;
      case OPT_METRICS: cfg.metrics_path = optarg; break;
      case OPT_QUIET: cfg.quiet = 1; break;
      case OPT_CHECKPOINT: cfg.checkpoint_path = optarg; break;
      case OPT_CHECKPOINT_EVERY:
        rc = cli_parse_int("train", "--checkpoint-every", optarg, &cfg.checkpoint_every);
        break;
      case OPT_RESUME: cfg.resume_path = optarg; break;
      case OPT_FORCE: cfg.force = 1; break;
      case OPT_STALL_TIMEOUT: {
        float v = 0.0f;
        rc = cli_parse_float("train", "--stall-timeout", optarg, &v);
        if (rc == 0 && !(v >= 0.0f && v <= 1e7f))
          rc = usage_error("--stall-timeout %s: expected seconds in [0, 1e7] (0 = off)", optarg);
        cfg.stall_timeout_s = v;
        break;
      }
      case OPT_PRINT_CONFIG: print = 1; break;
      case OPT_PARTITION:
        if (strcmp(optarg, "metis") == 0 || strcmp(optarg, "random") == 0) par.partition = optarg;
        else rc = usage_error("--partition '%s': expected metis or random", optarg);
        break;
      case OPT_PART_SEED: rc = cli_parse_u64("train", "--part-seed", optarg, &par.part_seed); break;
      case OPT_PART_CACHE: par.part_cache = optarg; break;
      case OPT_NO_PART_CACHE: par.no_part_cache = 1; break;
      case OPT_COMM:
        if (!strcmp(optarg, "auto") || !strcmp(optarg, "nccl") || !strcmp(optarg, "mpi-cuda") ||
            !strcmp(optarg, "mpi-staged"))
          par.comm = optarg;
        else rc = usage_error("--comm '%s': expected auto, nccl, mpi-cuda or mpi-staged", optarg);
        break;
      case OPT_PROFILE:
        if (!optarg[0]) rc = usage_error("--profile: empty file name (give a file or auto)");
        par.profile = optarg;
        break;
      case OPT_CACHE_POLICY:
        if (!strcmp(optarg, "jaca") || !strcmp(optarg, "lru") || !strcmp(optarg, "fifo") || !strcmp(optarg, "none"))
          par.cache_policy = optarg;
        else rc = usage_error("--cache-policy '%s': expected jaca, lru, fifo or none", optarg);
        break;
      case OPT_CACHE_CAPACITY:
        rc = cli_parse_float("train", "--cache-capacity", optarg, &par.cache_capacity);
        if (rc == 0 && !(par.cache_capacity > 0.0f && par.cache_capacity <= 1.0f))
          rc = usage_error("--cache-capacity %s: expected a fraction of the halo rows in (0, 1]", optarg);
        break;
      case OPT_CACHE_HOST_MB: rc = parse_mb("--cache-host-mb", optarg, &par.cache_host_mb); break;
      case OPT_CACHE_DEVICE_MB: rc = parse_mb("--cache-device-mb", optarg, &par.cache_device_mb); break;
      case OPT_CACHE_RESERVE_MB:
        rc = cli_parse_i64("train", "--cache-reserve-mb", optarg, &par.cache_reserve_mb);
        if (rc == 0 && par.cache_reserve_mb < 0)
          rc = usage_error("--cache-reserve-mb %s: expected a number of MiB >= 0", optarg);
        break;
      case OPT_STALENESS:
        if (strncmp(optarg, "adaptive", 8) == 0)
          rc = usage_error("--staleness %s: the adaptive mode is not built yet (issue #13); give a number of epochs",
                           optarg);
        else rc = cli_parse_int("train", "--staleness", optarg, &par.staleness);
        break;
      case OPT_GRAD_STALENESS: rc = cli_parse_int("train", "--grad-staleness", optarg, &par.grad_staleness); break;
      case OPT_CACHE_WARMUP: rc = cli_parse_int("train", "--cache-warmup", optarg, &par.cache_warmup); break;
      case OPT_OVERLAP:
        if (strcmp(optarg, "on") == 0) cfg.overlap = 1;
        else if (strcmp(optarg, "off") == 0) cfg.overlap = 0;
        else rc = usage_error("--overlap '%s': expected on or off", optarg);
        break;
      case ':': rc = usage_error("option '%s' needs a value", name); break;
      case '?':
      default: rc = cli_bad_option("train", name, longopts); break;
    }
  }
  cli_options_done();
  if (rc) return rc;
  if (optind < argc) return usage_error("unexpected argument '%s'", argv[optind]);
  if (rt_config_check(&cfg) != CG_OK) {
    if (cli_speaks()) fprintf(stderr, "capgnn: error: %s (see capgnn train --help)\n", cg_err_msg());
    return CAPGNN_EXIT_USAGE;
  }
  if (cfg.metrics_path && !cfg.metrics_path[0]) return usage_error("--metrics: empty file name");
  if (cfg.checkpoint_path && !cfg.checkpoint_path[0]) return usage_error("--checkpoint: empty file name");
  if (cfg.resume_path && !cfg.resume_path[0]) return usage_error("--resume: empty file name");
  if (par.part_cache && par.no_part_cache) return usage_error("--part-cache and --no-part-cache exclude each other");
#ifdef CAPGNN_HAVE_DIST
  struct jaca_options jo;
  if (cache_options(&par, &jo) != CG_OK) return usage_error("%s", cg_err_msg());
#else
  if (strcmp(par.cache_policy, "none") != 0) return usage_error("--cache-policy: parallel training is not built");
#endif
  if (print) {
    if (cli_speaks()) print_config(stdout, &cfg, &par, files, nfiles);
    return CAPGNN_EXIT_OK;
  }
  if (cfg.quiet) cg_progress_set_mode(CG_PROGRESS_OFF);
  return run_training(&cfg, &par);
}
