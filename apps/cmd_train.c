/* apps/cmd_train.c — `capgnn [train] [options]`: parse options into a struct
 * rt_config and call the runtime. Usage errors exit 2, runtime failures exit 1, each
 * with one line "capgnn: error: ..." on stderr. Settings files (--config, see
 * apps/config_file_internal.h) expand to the same options before the command line, so the
 * command line wins; --print-config prints the resolved settings as a settings file. */
#include <ctype.h>
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
#include "core/ops_emulate.h"
#include "core/outfile.h"
#include "core/status.h"
#include "core/progress.h"
#include "graph/graph.h"
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
  const char *allreduce;  /* auto | mpi | flat | hier */
  const char *profile;    /* --profile FILE|auto, NULL: none */
  const char *threads_list; /* --threads N,N,...: one count per rank (cfg.threads is this rank's) */
  int nthreads;             /* values in threads_list (0: a single --threads N) */
  float prune_eps;          /* --prune-halo EPS (0: off) */
  const char *gpu_share;    /* --gpu-share P[,P...]: MPS share of each rank (NULL: none) */
  const char *prune_write;  /* --prune-write FILE */
  const char *prune_norm;   /* --prune-norm pruned|original (NULL: not given) */
  /* the halo cache (jaca/jaca.h; cache_options turns these into its options) */
  const char *cache_policy; /* jaca | lru | fifo | none */
  float cache_capacity;
  int64_t cache_host_mb, cache_device_mb; /* MB_AUTO: Algorithm 1 (the default) */
  int64_t cache_reserve_mb;
  int staleness, grad_staleness, cache_warmup;
  int adaptive;     /* --staleness adaptive[:EPS[:S]]: staleness holds S */
  double adapt_eps;
  int grad_adaptive; /* --grad-staleness adaptive[:EPS[:G]]: grad_staleness holds G */
  double grad_adapt_eps;
  const char *load;       /* auto | whole | per-rank (runtime/dist.h, enum rt_load) */
  int cache_prefetch;     /* --cache-prefetch on|off (default on) */
  /* --cache-preset exact|fast (NULL: none): fills in the cache settings not given */
  const char *cache_preset;
  int given_policy, given_staleness, given_grad_staleness, given_halo_bits;
};

/* --cache-preset fast: the setting of the measured table (README, "Halo cache: bytes
 * against accuracy") that met issue 13's target (at least 90 % fewer halo bytes, test
 * accuracy within 0.3 points) on cora, citeseer and synth:reddit:scale=0.1 at P = 4. */
#define PRESET_FAST_STALENESS 3
#define PRESET_FAST_GRAD_STALENESS 3
#define PRESET_FAST_HALO_BITS 4
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

/* --staleness (grad 0) or --grad-staleness (grad 1): a number of epochs S, or
 * adaptive[:EPS[:S]] (jaca/options.c's parser; its message names the option). */
static int parse_staleness(const char *arg, int grad, int *s, int *adaptive, double *eps) {
  const char *opt = grad ? "--grad-staleness" : "--staleness";
  if (strncmp(arg, "adaptive", 8) != 0) {
    *adaptive = 0;
    *eps = 0.0;
    return cli_parse_int("train", opt, arg, s);
  }
#ifdef CAPGNN_HAVE_DIST
  struct jaca_options jo;
  jaca_options_defaults(&jo);
  if ((grad ? jaca_grad_staleness_parse(arg, &jo) : jaca_staleness_parse(arg, &jo)) != CG_OK) {
    const int rc = cli_usage_error("train", "%s", cg_err_msg());
    cg_err_clear();
    return rc;
  }
  *adaptive = 1;
  *eps = grad ? jo.grad_adapt_eps : jo.adapt_eps;
  *s = grad ? jo.grad_staleness : jo.staleness;
  return 0;
#else
  return cli_usage_error("train", "%s %s: this build has no halo cache (no MPI)", opt, arg);
#endif
}

static void print_mb(FILE *out, const char *key, int64_t mb) {
  if (mb == MB_AUTO) fprintf(out, "%s = auto\n", key);
  else fprintf(out, "%s = %lld\n", key, (long long)mb);
}

/* --seeds N,N,...: the runs to make, one per seed (n = 0: one run with --seed). */
#define MAX_SEEDS 64
struct seed_list {
  uint64_t v[MAX_SEEDS];
  int n;
};

/* The first halo-cache setting that differs from its default, or NULL: with --cache-policy
 * none such a setting would change nothing, so it is refused rather than ignored (a
 * --print-config file holds every setting at its default and stays valid). */
#define CACHE_RESERVE_MB_DEFAULT 1024
static const char *cache_setting_given(const struct train_par *par) {
  if (par->adaptive || par->staleness != 0) return "--staleness";
  if (par->grad_adaptive || par->grad_staleness != 0) return "--grad-staleness";
  if (par->cache_warmup != 0) return "--cache-warmup";
  if (par->cache_capacity != 1.0f) return "--cache-capacity";
  if (par->cache_host_mb != MB_AUTO) return "--cache-host-mb";
  if (par->cache_device_mb != MB_AUTO) return "--cache-device-mb";
  if (par->cache_reserve_mb != CACHE_RESERVE_MB_DEFAULT) return "--cache-reserve-mb";
  if (!par->cache_prefetch) return "--cache-prefetch off";
  return NULL;
}

#ifdef CAPGNN_HAVE_DIST
/* The halo cache's options from the command line's, checked (jaca_options_check: what is
 * not built yet is refused here, as a usage error). */
_Static_assert(MB_AUTO == JACA_MB_AUTO, "--cache-host-mb auto is jaca's JACA_MB_AUTO");
_Static_assert(CACHE_RESERVE_MB_DEFAULT == JACA_RESERVE_MB_DEFAULT, "jaca's default reserve");
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
  o->prefetch = par->cache_prefetch;
  o->adaptive = par->adaptive;
  o->adapt_eps = par->adapt_eps;
  o->grad_adaptive = par->grad_adaptive;
  o->grad_adapt_eps = par->grad_adapt_eps;
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
          "  --norm-degrees GRAPH          normalise the aggregation by the degrees of GRAPH (the\n"
          "                                same vertices; the graph trained must be part of it):\n"
          "                                one rank trains what --prune-norm original trained,\n"
          "                                from the --prune-write file and the original graph\n"
          "  --sparse-features auto|on|off layer 0 multiplies the input features as a sparse\n"
          "                                matrix (CSR; never made dense) on either backend (on P\n"
          "                                ranks each rank multiplies its own rows: see\n"
          "                                --layer0-halo). auto (default): when the graph stores\n"
          "                                them sparse and at most 10 %% of them are stored; on:\n"
          "                                also a dense file's (its nonzeros). Same results as\n"
          "                                dense to rounding; the choice is logged\n"
          "model\n"
          "  --model gcn|sage|gat          GCN, GraphSAGE with the mean aggregator, or GAT (default\n"
          "                                gcn)\n"
          "  --layers N                    convolution layers, 1..64 (default 2)\n"
          "  --hidden N                    hidden width (default 16; GAT: per head)\n"
          "  --heads H                     GAT: attention heads of each hidden layer, concatenated\n"
          "                                (default 8)\n"
          "  --out-heads K                 GAT: heads of the output layer, averaged (default 1)\n"
          "  --attn-dropout P              GAT: dropout on the attention coefficients (default: as\n"
          "                                --dropout)\n"
          "  --dropout P                   dropout on every layer's input, 0 <= P < 1 (default 0.5)\n"
          "  --input-dropout P             dropout on the input features instead (default: as\n"
          "                                --dropout); with 0, layer 0's aggregation is computed\n"
          "                                once and each epoch skips two of its sparse products\n"
          "  --layernorm                   LayerNorm after each hidden convolution\n"
          "training\n"
          "  --optimizer adam|adamw|sgd    Adam with L2 (torch.optim.Adam), AdamW, or SGD with L2\n"
          "                                and momentum (torch.optim.SGD) (default adam)\n"
          "  --momentum X                  SGD's momentum, 0 <= X < 1 (default 0: plain SGD)\n"
          "  --lr X                        learning rate (default 0.01)\n"
          "  --lr-schedule none|step|cosine  the learning rate over the epochs (default none);\n"
          "                                step: x --lr-gamma every --lr-step-size epochs;\n"
          "                                cosine: down to 0 over --lr-epochs (torch's StepLR,\n"
          "                                CosineAnnealingLR)\n"
          "  --lr-step-size N              step: epochs between decays (needed with step)\n"
          "  --lr-gamma X                  step: the factor, 0 < X <= 1 (default 0.1)\n"
          "  --lr-warmup N                 first N epochs ramp linearly up to --lr, the schedule\n"
          "                                runs after them (default 0)\n"
          "  --lr-epochs N                 epochs the schedule spans (default 0: --epochs)\n"
          "  --weight-decay X              weight decay of the weight matrices (default 5e-4);\n"
          "                                biases and LayerNorm parameters never decay\n"
          "  --wd-scope all|first          decay all layers' weights or the first layer's only,\n"
          "                                as Kipf & Welling (default all)\n"
          "  --epochs N                    training epochs (default 200)\n"
          "  --eval-every N                evaluate train/val/test every N epochs (default 1)\n"
          "  --seed N                      seed of weights and dropout masks (default 1)\n"
          "  --seeds N,N,...               train once per seed, then print mean +- std of the\n"
          "                                runs; --metrics gets every run and an aggregate record;\n"
          "                                --checkpoint/--save-best/--prune-write FILE become\n"
          "                                FILE.seedN per run\n"
          "  --early-stop N                stop when the validation loss has not improved for N\n"
          "                                evaluations (default 0: off)\n"
          "  --early-stop-rule patience|window|gat  patience: no new lowest validation loss in\n"
          "                                N evaluations (Keras, PyG, DGL); window: the loss rose\n"
          "                                above the mean of the N before it (Kipf & Welling's gcn);\n"
          "                                gat: neither a loss <= the lowest nor an accuracy >= the\n"
          "                                highest in N evaluations (Velickovic et al.'s GAT)\n"
          "                                (default patience)\n"
          "execution and output\n"
          "  --device auto|cpu|cuda        compute backend (default auto: CUDA if built and present)\n"
          "  --threads N[,N...]            CPU threads per rank (default 0 = the host's cores / its\n"
          "                                ranks, at least 1: all cores for one process), or one\n"
          "                                count per rank (rank r takes the r-th: ranks of unequal\n"
          "                                speed); results are reproducible for a fixed thread count\n"
          "  --tf32                        CUDA: allow TF32 matrix products (faster, less exact)\n"
          "  --metrics FILE                write JSON Lines metrics: one object per epoch, then a\n"
          "                                summary object (an earlier metrics file is replaced,\n"
          "                                any other existing file only with --force)\n"
          "  --force                       let --metrics, --checkpoint, --save-best and --prune-write\n"
          "                                replace an existing file of another kind (never an\n"
          "                                input: the graph, --resume, a settings file)\n"
          "  --quiet                       no per-epoch log lines and no progress lines (the set-up\n"
          "                                and summary lines stay: CAPGNN_LOG_LEVEL=warn drops them)\n"
          "  --log-every N                 without a terminal: a progress line every N epochs, and\n"
          "                                the first and last (default 0: about 20 lines a run); on\n"
          "                                a terminal one line is updated in place\n"
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
          "  --save-best FILE              save the weights of the best epoch (highest validation\n"
          "                                accuracy) as a checkpoint of that epoch, when the run\n"
          "                                ends (capgnn predict reads it)\n"
          "  --resume FILE                 continue from a checkpoint up to --epochs: the same\n"
          "                                losses and parameters, bit for bit, as a run that never\n"
          "                                stopped (same settings, device and thread count; with\n"
          "                                --staleness or --grad-staleness only alike, a warning\n"
          "                                says so); writes no checkpoint without --checkpoint\n"
          "                                (which may be FILE); a resumed run appends to its\n"
          "                                --metrics file\n"
          "parallel (mpiexec -n P capgnn ..., one partition per rank; P = 1 trains as without MPI;\n"
          "the same names as capgnn partition)\n"
          "  --partition metis|random|rapa how vertices are split over the ranks (default metis);\n"
          "                                rapa: METIS with part weights proportional to each\n"
          "                                rank's capability (rates from --profile FILE, else\n"
          "                                measured at start-up on every rank), exact;\n"
          "                                alias --method\n"
          "  --part-seed N                 seed of METIS / the random split (default 1)\n"
          "  --part-cache DIR              partition cache folder (default $CAPGNN_CACHE, else\n"
          "                                .capgnn-cache); alias --cache\n"
          "  --no-part-cache               neither read nor write the cache; alias --no-cache\n"
          "  --prune-halo EPS              APPROXIMATE for EPS > 0 (with --partition rapa): drop halo\n"
          "                                vertices of ranks whose predicted epoch is above the mean\n"
          "                                (lowest influence first; their edges go both ways) until\n"
          "                                std < EPS x mean; trains the pruned graph (default 0: off)\n"
          "  --prune-write FILE            write the pruned graph as a .cgr (one rank trains the same;\n"
          "                                --seeds: FILE.seedN, each run's own)\n"
          "  --prune-norm pruned|original  normalise the pruned graph by its own degrees (default:\n"
          "                                a pruned row is renormalised over what remains) or by\n"
          "                                the original graph's (its remaining weights unchanged)\n"
          "  --gpu-share P[,P...]          CUDA: limit each rank to P %% of its GPU's SMs through MPS\n"
          "                                (as capgnn profile; the MPS daemon must run); one value\n"
          "                                or one per rank\n"
          "  --comm auto|nccl|mpi-cuda|mpi-staged  how GPU ranks exchange halo rows and gradients\n"
          "                                (default auto; CPU ranks always use plain MPI: refused\n"
          "                                with --device cpu)\n"
          "  --allreduce auto|mpi|flat|hier  how the gradients are summed: mpi (MPI_Allreduce),\n"
          "                                flat or hier (ours, in a fixed order: the same bits\n"
          "                                either way; hier sends each node's sum once between\n"
          "                                nodes); default auto: hier on several nodes with equal\n"
          "                                ranks per node, else mpi (the NCCL path: NCCL's own)\n"
          "  --load auto|whole|per-rank    how ranks read a .cgr file: per-rank (rank 0 reads the\n"
          "                                structure to partition, or nothing when the partition\n"
          "                                is cached, then each rank only its own rows; version-2\n"
          "                                files are verified per block, see docs/cgr-v2.md) or\n"
          "                                whole (every rank the whole file); a synth: spec with\n"
          "                                per-rank: rank 0 generates it whole, each rank its rows\n"
          "                                (not with identity=1 or shuffle=1: use whole);\n"
          "                                default auto: per-rank for a file, whole for synth:\n"
          "  --profile FILE|auto           load a device profile (capgnn profile --json FILE, or\n"
          "                                auto: each rank's device from the cache), validate it\n"
          "                                and log the ranks' relative capabilities; with\n"
          "                                --partition rapa, FILE's rates size the parts\n"
          "  --halo-bits 32|16|8|4         APPROXIMATE below 32: training steps send halo rows and\n"
          "                                their gradients through MPI as a per-row range and one\n"
          "                                code of that many bits per value (stochastic rounding:\n"
          "                                unbiased, within one step of the value; 4 bits: 8 +\n"
          "                                w/2 bytes for a w-wide row); evaluation stays exact; GPU\n"
          "                                ranks need --comm mpi-staged (default 32: floats, exact)\n"
          "  --overlap on|off              compute the inner rows' aggregation while halo rows\n"
          "                                travel (default on); results are bit-identical either\n"
          "                                way, only the time spent waiting differs\n"          "  --layer0-halo auto|local|exchange  partitioned runs: local, every rank fetches\n"
          "                                the halo rows of the input features once and transforms\n"
          "                                them itself; exchange, the owners transform their rows\n"
          "                                (X·W0) and send the fout-wide results every step (no\n"
          "                                halo feature row is fetched or kept; GAT: local only);\n"
          "                                default auto: exchange when layer 0 transforms first\n"
          "                                (fout < fin, or sparse features) unless the input has\n"
          "                                no dropout (Â·X is then computed once at set-up), or a\n"
          "                                halo cache is on (it serves the hidden layers only) and\n"
          "                                the features are sparse or the ranks on GPUs\n"
          "  --reorder none|rcm|cluster|metis|auto  lay out the (each rank's inner) vertices for\n"
          "                                locality before training: rcm (bandwidth), cluster\n"
          "                                (label-propagation communities), metis (k-way blocks\n"
          "                                of 1024), auto (cluster when the input order's tile\n"
          "                                reuse is below 2x a random order's and cluster's is\n"
          "                                at least 1.5x better; logged); default none. Losses\n"
          "                                and accuracies equal to rounding; every\n"
          "                                output stays in the graph's vertex order\n"
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
          "  --cache-preset exact|fast     exact: --cache-policy jaca, staleness 0, 32-bit rows (the\n"
          "                                cache's defaults); fast, APPROXIMATE: --cache-policy jaca\n"
          "                                --staleness 3 --grad-staleness 3 --halo-bits 4 (the setting\n"
          "                                that sent >= 90 %% fewer halo bytes within 0.3 points of\n"
          "                                exact accuracy on cora, citeseer and a Reddit-shaped graph,\n"
          "                                README); options given explicitly win over the preset\n"
          "  --cache-prefetch on|off       a background thread per rank copies the node tier's rows\n"
          "                                into the rank tier while the layer computes (default on;\n"
          "                                the same results either way)\n"
          "  --staleness adaptive[:EPS[:S]] APPROXIMATE for EPS > 0: every step the sender of a kept\n"
          "                                hidden halo row sends it only when it drifted by more\n"
          "                                than EPS (relative, default 0.01) from the copy its\n"
          "                                consumers hold, or when that copy would be older than S\n"
          "                                epochs (default 10); EPS 0: every row every epoch (exact)\n"
          "  --grad-staleness adaptive[:EPS[:G]] APPROXIMATE for EPS > 0: every step a consumer\n"
          "                                sends a halo row's gradient to its owner only when it\n"
          "                                drifted by more than EPS (relative, default 0.01) from\n"
          "                                the one it last sent, or when the owner's copy would be\n"
          "                                older than G epochs (default 10); the owner adds the\n"
          "                                last one received; EPS 0: every gradient every epoch\n"
          "settings\n"
          "  --config FILE                 read settings from an INI file (keys are the long options\n"
          "                                above, e.g. configs/reddit.ini); options given on the\n"
          "                                command line override it; may be repeated (a later\n"
          "                                file overrides an earlier one); --SWITCH=false turns off\n"
          "                                a switch a file turns on (e.g. --layernorm=false)\n"
          "  --print-config                print the resolved settings (as a settings file) and exit\n"
          "  -h, --help                    this help\n");
}

enum {
  OPT_GRAPH = 256, OPT_NORM_DEGREES, OPT_PRUNE_NORM, OPT_FEAT_NORM, OPT_MODEL, OPT_LAYERS, OPT_HIDDEN, OPT_DROPOUT, OPT_INPUT_DROPOUT, OPT_LAYERNORM,
  OPT_OPTIMIZER, OPT_LR, OPT_WD, OPT_WD_SCOPE, OPT_EPOCHS, OPT_EVAL_EVERY, OPT_SEED, OPT_DEVICE,
  OPT_THREADS, OPT_TF32, OPT_METRICS, OPT_QUIET, OPT_CONFIG, OPT_PRINT_CONFIG,
  OPT_PARTITION, OPT_PART_SEED, OPT_PART_CACHE, OPT_NO_PART_CACHE, OPT_COMM, OPT_CHECKPOINT,
  OPT_CHECKPOINT_EVERY, OPT_RESUME, OPT_FORCE, OPT_STALL_TIMEOUT, OPT_PROFILE, OPT_CACHE_POLICY,
  OPT_CACHE_CAPACITY, OPT_CACHE_HOST_MB, OPT_CACHE_DEVICE_MB, OPT_STALENESS, OPT_GRAD_STALENESS,
  OPT_CACHE_WARMUP, OPT_CACHE_PREFETCH, OPT_CACHE_RESERVE_MB, OPT_OVERLAP, OPT_HALO_BITS, OPT_CACHE_PRESET, OPT_LAYER0_HALO, OPT_ALLREDUCE, OPT_MOMENTUM, OPT_LR_SCHEDULE,
  OPT_LR_STEP_SIZE, OPT_LR_GAMMA, OPT_LR_WARMUP, OPT_LR_EPOCHS, OPT_EARLY_STOP, OPT_EARLY_STOP_RULE, OPT_SAVE_BEST,
  OPT_LOG_EVERY, OPT_SEEDS, OPT_HEADS, OPT_OUT_HEADS, OPT_ATTN_DROPOUT, OPT_PRUNE_HALO, OPT_PRUNE_WRITE, OPT_GPU_SHARE, OPT_LOAD,
  OPT_SPARSE_FEATURES, OPT_REORDER, OPT_PART_CACHE_ALIAS
};

#define usage_error(...) cli_usage_error("train", __VA_ARGS__)

static int cmd_train_parsed(int argc, char **argv, const struct option *longopts, const char *const *files,
                            int nfiles);

/* --gpu-share 100,50: percentages in [1, 100], one or one per rank; *n values. */
static int share_list_parse(const char *s, int *n) {
  *n = 0;
  for (const char *p = s;;) {
    char word[32];
    const size_t len = strcspn(p, ",");
    int v = 0;
    if (len == 0 || len >= sizeof word)
      return usage_error("--gpu-share '%s': expected one percentage, or one per rank separated by commas", s);
    memcpy(word, p, len);
    word[len] = '\0';
    if (cli_parse_int_in("train", "--gpu-share", word, 1, 100, &v) != 0) return CAPGNN_EXIT_USAGE;
    (*n)++;
    p += len;
    if (!*p) return 0;
    p++;
  }
}

/* This rank's share (`rank` of the list, or its only value). */
static int share_of(const char *s, int rank) {
  int i = 0, first = 0, mine = -1;
  for (const char *p = s; *p; i++) {
    const int v = atoi(p);
    if (i == 0) first = v;
    if (i == rank) mine = v;
    p += strcspn(p, ",");
    if (*p) p++;
  }
  return i == 1 ? first : mine;
}

/* --threads 2,1: one count per rank; this rank (the launcher's, `rank`) takes its own
 * (the count of values is checked against the job's ranks once MPI is up). */
static int threads_list_parse(const char *s, int rank, int *mine, int *n) {
  *n = 0;
  *mine = 0;
  const char *p = s;
  while (1) {
    char word[32];
    const size_t len = strcspn(p, ",");
    int v = 0;
    if (len == 0 || len >= sizeof word)
      return usage_error("--threads '%s': expected one count, or one per rank separated by commas", s);
    memcpy(word, p, len);
    word[len] = '\0';
    if (cli_parse_int_in("train", "--threads", word, 0, 4096, &v) != 0) return CAPGNN_EXIT_USAGE;
    if (*n == rank) *mine = v;
    (*n)++;
    p += len;
    if (!*p) break;
    p++;
  }
  return 0;
}

/* The shortest decimal that reads back as the same float ("0.01", not "0.00999999978"). */
static const char *float_str(char *buf, size_t len, float v) {
  for (int prec = 1; prec <= 9; prec++) {
    snprintf(buf, len, "%.*g", prec, (double)v);
    if (strtof(buf, NULL) == v) break;
  }
  return buf;
}

/* A value as a settings file reads it back (apps/config_file.c): quoted when it holds what
 * would start a comment (" #", " ;"), starts or ends with a quote or white space. */
static int ini_value_quiet; /* set while the ranks' settings are compared: no --print-config warning */
static const char *ini_value(const char *v, char *buf, size_t len) {
  /* a control byte (a newline above all) would end the line and start another setting in
   * the file: written escaped (\xNN), which --config reads back as other text, and said */
  for (const char *p = v; *p; p++)
    if ((unsigned char)*p < 0x20 || *p == 0x7f) {
      char esc[4200];
      cg_text_escape(esc, sizeof esc, v);
      if (!ini_value_quiet)
        LOG_WARN("train", "--print-config: the value '%s' holds control characters, which a settings file "
                 "cannot hold (a newline would start another line): written escaped, so --config does not read "
                 "back the same value", esc);
      size_t m = strlen(esc); /* quoted (an escape may sit at either end), cut to buf */
      if (m + 3 > len) m = len - 3;
      buf[0] = '"';
      memcpy(buf + 1, esc, m);
      buf[m + 1] = '"';
      buf[m + 2] = '\0';
      return buf;
    }
  const size_t n = strlen(v);
  int quote = n > 0 && (isspace((unsigned char)v[0]) || isspace((unsigned char)v[n - 1]) || v[0] == '"' ||
                        v[0] == '\'' || v[n - 1] == '"' || v[n - 1] == '\'');
  for (size_t i = 1; i < n && !quote; i++)
    quote = (v[i] == '#' || v[i] == ';') && isspace((unsigned char)v[i - 1]);
  for (size_t i = 1; i < n; i++)
    if (v[i] == ';' && isspace((unsigned char)v[i - 1]) && !ini_value_quiet) { /* (quotes keep '#', not ';') */
      LOG_WARN("train", "--print-config: the value '%s' holds ' ;', which a settings file cannot hold (it ends "
               "the line): --config refuses the line as written; give that value on the command line", v);
      break;
    }
  if (!quote) return v;
  snprintf(buf, len, "\"%s\"", v);
  return buf;
}

/* The resolved settings in the --config format, so that the output can be saved and
 * read back with --config (every float reads back exactly). It writes nothing, so its
 * caller checks no output; and it leaves out force and resume, which are for one run
 * (a file that held them would replace files without asking, or resume a one-off
 * checkpoint, on every run from it). */
static void print_config(FILE *out, const struct rt_config *c, const struct train_par *par,
                         const struct seed_list *seeds, const char *const *files, int nfiles) {
  char f1[32], f2[32], f3[32], q[4200];
  fprintf(out, "# capgnn train settings, resolved from: defaults");
  for (int i = 0; i < nfiles; i++) fprintf(out, ", %s", files[i]);
  fprintf(out, ", the command line\n");
  fprintf(out, "[data]\ngraph = %s\nfeat-norm = %s\nsparse-features = %s\n", ini_value(c->graph, q, sizeof q),
          c->feat_norm_row ? "row" : "none", rt_sparse_features_str(c->sparse_features));
  if (c->norm_graph) fprintf(out, "norm-degrees = %s\n", ini_value(c->norm_graph, q, sizeof q));
  fprintf(out, "\n[model]\nmodel = %s\nlayers = %d\nhidden = %lld\ndropout = %s\n",
          rt_model_kind_str(c->model), c->layers, (long long)c->hidden, float_str(f1, sizeof f1, c->dropout));
  if (c->input_dropout >= 0.0f)
    fprintf(out, "input-dropout = %s\n", float_str(f1, sizeof f1, c->input_dropout));
  else
    fprintf(out, "# input-dropout = P (as dropout)\n");
  fprintf(out, "layernorm = %s\n", c->layernorm ? "true" : "false");
  if (c->model == RT_MODEL_GAT) {
    fprintf(out, "heads = %d\nout-heads = %d\n", c->heads, c->out_heads);
    if (c->attn_dropout >= 0.0f) fprintf(out, "attn-dropout = %s\n", float_str(f1, sizeof f1, c->attn_dropout));
    else fprintf(out, "# attn-dropout = P (as dropout)\n");
  }
  fprintf(out,
          "\n[training]\noptimizer = %s\nlr = %s\nweight-decay = %s\nwd-scope = %s\nepochs = %d\n"
          "eval-every = %d\nseed = %llu\n",
          rt_optimizer_str(c->optimizer), float_str(f2, sizeof f2, c->lr), float_str(f3, sizeof f3, c->weight_decay),
          rt_wd_scope_str(c->wd_scope), c->epochs, c->eval_every, (unsigned long long)c->seed);
  if (seeds && seeds->n > 0) {
    fprintf(out, "seeds = ");
    for (int i = 0; i < seeds->n; i++) fprintf(out, "%s%llu", i ? "," : "", (unsigned long long)seeds->v[i]);
    fprintf(out, "\n");
  }
  if (c->optimizer == RT_OPT_SGD) fprintf(out, "momentum = %s\n", float_str(f1, sizeof f1, c->momentum));
  fprintf(out, "lr-schedule = %s\n", rt_lr_schedule_str(c->lr_schedule));
  if (c->lr_schedule == RT_LR_STEP)
    fprintf(out, "lr-step-size = %d\nlr-gamma = %s\n", c->lr_step_size, float_str(f1, sizeof f1, c->lr_gamma));
  if (c->lr_warmup > 0) fprintf(out, "lr-warmup = %d\n", c->lr_warmup);
  if (c->lr_epochs > 0) fprintf(out, "lr-epochs = %d\n", c->lr_epochs);
  fprintf(out, "early-stop = %d\n", c->early_stop);
  if (c->early_stop > 0) fprintf(out, "early-stop-rule = %s\n", rt_early_stop_rule_str(c->early_stop_rule));
  if (par->threads_list)
    fprintf(out, "\n[execution]\ndevice = %s\nthreads = %s\ntf32 = %s\nstall-timeout = %g\n", c->device,
            par->threads_list, c->tf32 ? "true" : "false", c->stall_timeout_s);
  else
    fprintf(out, "\n[execution]\ndevice = %s\nthreads = %d\ntf32 = %s\nstall-timeout = %g\n", c->device,
            c->threads, c->tf32 ? "true" : "false", c->stall_timeout_s);
  fprintf(out, "\n[output]\n");
  if (c->metrics_path) fprintf(out, "metrics = %s\n", ini_value(c->metrics_path, q, sizeof q));
  else fprintf(out, "# metrics = FILE (none)\n");
  fprintf(out, "quiet = %s\n", c->quiet ? "true" : "false");
  if (c->log_every > 0) fprintf(out, "log-every = %d\n", c->log_every);
  /* never force: a settings file that replaces files without asking would do so on
   * every later run from it (--force belongs on the command line of the run it is for) */
  fprintf(out, "# force: left out on purpose (pass --force to the run that should replace files)\n");
  fprintf(out, "\n[checkpoints]\n");
  if (c->checkpoint_path)
    fprintf(out, "checkpoint = %s\ncheckpoint-every = %d\n", ini_value(c->checkpoint_path, q, sizeof q),
            c->checkpoint_every);
  else fprintf(out, "# checkpoint = FILE (none)\n");
  /* never resume: a checkpoint is continued once, by the run that names it */
  fprintf(out, "# resume: left out on purpose (pass --resume FILE to the run that continues a checkpoint)\n");
  if (c->save_best_path) fprintf(out, "save-best = %s\n", ini_value(c->save_best_path, q, sizeof q));
  fprintf(out, "\n[parallel]\npartition = %s\npart-seed = %llu\n", par->partition,
          (unsigned long long)par->part_seed);
  if (par->part_cache) fprintf(out, "part-cache = %s\n", ini_value(par->part_cache, q, sizeof q));
  if (par->no_part_cache) fprintf(out, "no-part-cache = true\n");
  fprintf(out, "comm = %s\n", par->comm);
  fprintf(out, "allreduce = %s\n", par->allreduce);
  fprintf(out, "load = %s\n", par->load);
  if (par->profile) fprintf(out, "profile = %s\n", ini_value(par->profile, q, sizeof q));
  if (par->prune_eps > 0) fprintf(out, "prune-halo = %g\n", (double)par->prune_eps);
  if (par->prune_write) fprintf(out, "prune-write = %s\n", ini_value(par->prune_write, q, sizeof q));
  if (par->prune_norm) fprintf(out, "prune-norm = %s\n", par->prune_norm);
  if (par->gpu_share) fprintf(out, "gpu-share = %s\n", par->gpu_share);
  char cap[32];
  fprintf(out, "\n[cache]\ncache-policy = %s\ncache-capacity = %s\n", par->cache_policy,
          float_str(cap, sizeof cap, par->cache_capacity));
  print_mb(out, "cache-host-mb", par->cache_host_mb);
  print_mb(out, "cache-device-mb", par->cache_device_mb);
  fprintf(out, "cache-reserve-mb = %lld\n", (long long)par->cache_reserve_mb);
  if (par->adaptive) fprintf(out, "staleness = adaptive:%.9g:%d\n", par->adapt_eps, par->staleness);
  else fprintf(out, "staleness = %d\n", par->staleness);
  if (par->grad_adaptive)
    fprintf(out, "grad-staleness = adaptive:%.9g:%d\n", par->grad_adapt_eps, par->grad_staleness);
  else fprintf(out, "grad-staleness = %d\n", par->grad_staleness);
  fprintf(out, "cache-warmup = %d\n", par->cache_warmup);
  fprintf(out, "cache-prefetch = %s\n", par->cache_prefetch ? "on" : "off");
  fprintf(out, "overlap = %s\n", c->overlap ? "on" : "off");
  fprintf(out, "halo-bits = %d\n", c->halo_bits);
  if (par->cache_preset) fprintf(out, "# cache-preset %s: its settings are the values above\n", par->cache_preset);
  fprintf(out, "layer0-halo = %s\n", rt_layer0_halo_str(c->layer0_halo));
  fprintf(out, "reorder = %s\n", graph_reorder_name(c->reorder));
}

static const char *err_text(void) { return cg_err_msg()[0] ? cg_err_msg() : cg_status_str(cg_err_status()); }

/* The settings every rank of a job must share: what print_config writes, less its
 * comments and section lines and the keys a rank may set for itself, plus --resume and
 * the version. Why: each rank parses its own command line and settings files (an
 * MPMD line `mpirun -np 1 capgnn A : -np 1 capgnn B`, a settings file that differs
 * between machines, another capgnn installed on one node), and ranks that build other
 * models or train other epochs corrupt memory (a halo row wider than the receiver's
 * buffer), hang until the stall watchdog, or silently train other weights on each rank.
 * Left out: the graph (its checksum is compared when it is opened: another path to the
 * same file is fine), where a rank runs (device, threads, tf32), what rank 0 alone uses
 * (metrics, part-cache, profile, prune-write), per-rank memory bounds and the watchdog's
 * and the log's settings. */
static const char *const per_rank_keys[] = {"graph",          "device",        "threads",       "tf32",
                                            "stall-timeout",  "metrics",       "quiet",         "log-every",
                                            "part-cache",     "no-part-cache", "profile",       "prune-write",
                                            "cache-host-mb",  "cache-device-mb", "cache-reserve-mb", "gpu-share",
                                            /* compared resolved (shared_settings): given or not */
                                            "input-dropout",  "attn-dropout",  NULL};
/* Paths that may be spelt differently, or be each machine's own, for the same run: only
 * whether they are given is compared (the checkpoint a run resumes from is compared by
 * its contents, runtime/dist.c; checkpoint and save-best files are rank 0's). */
static const char *const path_keys[] = {"checkpoint", "save-best", "norm-degrees", NULL};

static int key_in(const char *const *keys, const char *line, size_t len) {
  for (int i = 0; keys[i]; i++) {
    const size_t k = strlen(keys[i]);
    if (len > k + 2 && !strncmp(line, keys[i], k) && !strncmp(line + k, " = ", 3)) return (int)k;
  }
  return 0;
}

/* NULL when out of memory. Release with free(). */
static char *shared_settings(const struct rt_config *cfg, const struct train_par *par, const struct seed_list *seeds) {
  char *all = NULL, *out = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&all, &len);
  if (!f) return NULL;
  ini_value_quiet = 1;
  print_config(f, cfg, par, seeds, NULL, 0);
  ini_value_quiet = 0;
  /* the dropouts as they resolve: an explicit --input-dropout equal to --dropout is the
   * same run as none, though print_config writes one as a value and the other as a comment */
  fprintf(f, "input-dropout (resolved) = %.9g\n", (double)rt_config_layer_dropout(cfg, 0));
  if (cfg->model == RT_MODEL_GAT)
    fprintf(f, "attn-dropout (resolved) = %.9g\n",
            (double)(cfg->attn_dropout >= 0.0f ? cfg->attn_dropout : cfg->dropout));
  fprintf(f, "resume = %s\ncapgnn-version = %s\n", cfg->resume_path ? "(given)" : "(none)", CAPGNN_VERSION);
  /* each rank reads its own environment: a list on rank 0 only slowed nobody and the
   * summary (rank 0's) still named it; a speed on rank 1 only was missing from it */
  const char *speed = getenv("CAPGNN_EMULATE_SPEED");
  fprintf(f, "CAPGNN_EMULATE_SPEED = %s\n", speed && speed[0] ? speed : "(unset)");
  if (fclose(f) != 0 || !all) {
    free(all);
    return NULL;
  }
  out = malloc(len + 64); /* (a path replaced by "(given)" may grow its line by up to 6 bytes) */
  if (!out) {
    free(all);
    return NULL;
  }
  size_t n = 0;
  for (const char *p = all; *p;) {
    const char *end = strchr(p, '\n');
    const size_t l = end ? (size_t)(end - p) : strlen(p);
    int k = 0;
    if (l > 0 && p[0] != '#' && p[0] != '[' && !key_in(per_rank_keys, p, l)) {
      if ((k = key_in(path_keys, p, l)) > 0) { /* "KEY = (given)" */
        memcpy(out + n, p, (size_t)k);
        memcpy(out + n + k, " = (given)", 10);
        n += (size_t)k + 10;
      } else {
        memcpy(out + n, p, l);
        n += l;
      }
      out[n++] = '\n';
    }
    p += l + (end ? 1 : 0);
  }
  out[n] = '\0';
  free(all);
  return out;
}

/* Collective: CG_OK when every rank has rank 0's shared settings; otherwise rank 0 prints
 * one error naming the first rank and setting that differ (cli_ranks_agree), and every
 * rank returns CG_ERR_ARG. */
static int check_same_settings(struct comm *c, const struct rt_config *cfg, const struct train_par *par,
                               const struct seed_list *seeds) {
  if (comm_size(c) == 1) return CG_OK;
  char *mine = shared_settings(cfg, par, seeds);
  const int st = cli_ranks_agree(c, mine, "every rank must train the same model in the same way, so give every "
                                 "rank the same options, settings files and CAPGNN_EMULATE_SPEED (per-rank values: --threads N,N,..., "
                                 "--gpu-share P,P,...; the graph, --device, --metrics, the part cache and the "
                                 "paths of --checkpoint, --save-best, --resume and --norm-degrees may differ)");
  free(mine);
  return st;
}

/* SIGINT / SIGTERM (Ctrl-C, a batch system's time limit) during training stop it
 * after the current epoch, with a checkpoint when --checkpoint is given; outside the
 * training loop, and at a second signal, the default action (termination) applies. */
static char g_stop_note[320]; /* said at once (write(2): async-signal-safe) by the launch's rank 0 */
static size_t g_stop_note_len;

static void on_stop_signal(int sig) {
  if (!rt_train_request_stop()) {
    signal(sig, SIG_DFL);
    raise(sig);
    return;
  }
  signal(SIGINT, SIG_DFL); /* the next one, of either kind, terminates */
  signal(SIGTERM, SIG_DFL);
  /* said now, not after the epoch: under mpirun a SIGKILL may come before the epoch
   * ends, and then this is the only line the user gets */
  if (g_stop_note_len) {
    const int saved = errno; /* the interrupted code may be about to read it */
    ssize_t w = write(STDERR_FILENO, g_stop_note, g_stop_note_len);
    (void)w;
    errno = saved;
  }
}

static void install_stop_handlers(void) {
  g_stop_note_len = 0;
  if (cli_speaks()) {
    const int n = snprintf(g_stop_note, sizeof g_stop_note, "capgnn: stop signal received: stopping after the epoch in "
                           "progress (a second signal ends the run at once)%s\n",
                           getenv("OMPI_COMM_WORLD_SIZE") && cli_launch_size() > 1
                               ? "; Open MPI's mpirun sends SIGKILL odls_base_sigkill_timeout seconds (default 1) "
                                 "after its SIGTERM"
                               : "");
    if (n > 0) g_stop_note_len = (size_t)n < sizeof g_stop_note ? (size_t)n : sizeof g_stop_note - 1;
  }
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

static int parse_seeds(const char *arg, struct seed_list *out) {
  out->n = 0;
  const char *p = arg;
  while (1) {
    char word[32];
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    /* "1, 2, 3" (as Python prints a list, as a settings file may say it): blanks around
     * a seed are dropped */
    while (len > 0 && (*p == ' ' || *p == '\t')) p++, len--;
    while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t')) len--;
    if (len == 0 || len >= sizeof word)
      return usage_error("--seeds '%s': expected seeds separated by commas, e.g. 1,2,3", arg);
    if (out->n == MAX_SEEDS) return usage_error("--seeds '%s': at most %d seeds", arg, MAX_SEEDS);
    memcpy(word, p, len);
    word[len] = '\0';
    uint64_t v = 0;
    if (cli_parse_u64("train", "--seeds", word, &v) != 0) return CAPGNN_EXIT_USAGE;
    for (int i = 0; i < out->n; i++)
      if (out->v[i] == v) return usage_error("--seeds '%s': seed %llu is given twice", arg, (unsigned long long)v);
    out->v[out->n++] = v;
    if (!comma) break;
    p = comma + 1;
  }
  return 0;
}

/* FILE.seedN: one file per seed's run. */
static const char *seed_path(char *buf, size_t len, const char *path, uint64_t seed) {
  if (!path) return NULL;
  snprintf(buf, len, "%s.seed%llu", path, (unsigned long long)seed);
  return buf;
}

/* Run i of --seeds: its seed, its files; the metrics of the runs after the first go
 * on in the first one's file. */
static void seed_config(const struct rt_config *cfg, const struct seed_list *seeds, int i, struct rt_config *out,
                        char *ck, char *best, size_t len) {
  *out = *cfg;
  if (seeds->n == 0) return;
  out->seed = seeds->v[i];
  out->checkpoint_path = seed_path(ck, len, cfg->checkpoint_path, seeds->v[i]);
  out->save_best_path = seed_path(best, len, cfg->save_best_path, seeds->v[i]);
  out->metrics_append = i > 0;
}

/* The seeds after run i, "a,b,c" (what did not run), into rest. */
static void seeds_after(const struct seed_list *seeds, int i, char *rest, size_t cap) {
  size_t k = 0;
  rest[0] = '\0';
  for (int j = i + 1; j < seeds->n && k < cap; j++)
    k += (size_t)snprintf(rest + k, cap - k, "%s%llu", j > i + 1 ? "," : "", (unsigned long long)seeds->v[j]);
}

/* Run i of --seeds was interrupted (rank 0, after the line that says how to resume it):
 * a resume continues one run, so say that it goes without --seeds and which seeds did
 * not run. */
static void seeds_interrupted(const struct seed_list *seeds, int i, int checkpointed) {
  if (seeds->n == 0) return;
  /* without --checkpoint there is nothing to resume: that seed runs again from the start */
  char again[96];
  snprintf(again, sizeof again, "run it again with --seed %llu (no --checkpoint: nothing to resume)",
           (unsigned long long)seeds->v[i]);
  const char *how = checkpointed ? "resume it as above, without --seeds" : again;
  char rest[MAX_SEEDS * 22];
  seeds_after(seeds, i, rest, sizeof rest);
  if (i + 1 < seeds->n)
    fprintf(stderr, "capgnn: --seeds: run %d of %d (seed %llu) stopped: %s; seed%s %s did not run (then run "
            "%s with --seeds %s)\n", i + 1, seeds->n, (unsigned long long)seeds->v[i], how,
            i + 2 < seeds->n ? "s" : "", rest, i + 2 < seeds->n ? "them" : "it", rest);
  else
    fprintf(stderr, "capgnn: --seeds: the last run, %d of %d (seed %llu), stopped: %s\n", i + 1, seeds->n,
            (unsigned long long)seeds->v[i], how);
}

/* Run i of --seeds failed (rank 0, after its error): the runs stop there, with no
 * aggregate; say which seeds did not run, so that the sweep is not taken as done. A
 * failure before the run's training began (`trained` 0: the graph, the settings, a
 * file) is not its seed's: the first run's stands alone (its error holds the hint; no
 * seed ran), a later one's names its own seed among those to run again. */
static void seeds_failed(const struct seed_list *seeds, int i, int trained) {
  if (seeds->n == 0 || (i == 0 && !trained)) return;
  char rest[MAX_SEEDS * 22];
  seeds_after(seeds, trained ? i : i - 1, rest, sizeof rest);
  if (!trained) {
    fprintf(stderr, "capgnn: --seeds: run %d of %d (seed %llu) failed at set-up, as above: no mean +- std; seed%s %s "
            "did not run (then run %s with --seeds %s)\n", i + 1, seeds->n, (unsigned long long)seeds->v[i],
            i + 1 < seeds->n ? "s" : "", rest, i + 1 < seeds->n ? "them" : "it", rest);
    return;
  }
  if (i + 1 < seeds->n)
    fprintf(stderr, "capgnn: --seeds: run %d of %d (seed %llu) failed, as above: no mean +- std; seed%s %s did "
            "not run (then run %s with --seeds %s)\n", i + 1, seeds->n, (unsigned long long)seeds->v[i],
            i + 2 < seeds->n ? "s" : "", rest, i + 2 < seeds->n ? "them" : "it", rest);
  else
    fprintf(stderr, "capgnn: --seeds: the last run, %d of %d (seed %llu), failed, as above: no mean +- std\n",
            i + 1, seeds->n, (unsigned long long)seeds->v[i]);
}

/* After the runs of --seeds (rank 0): mean +- std on stdout, the aggregate record. */
static int seeds_report(const struct rt_config *cfg, const struct seed_list *seeds, const struct rt_result *res) {
  struct rt_seeds_summary sum;
  rt_seeds_summarize(res, seeds->n, &sum);
  printf("seeds");
  for (int i = 0; i < seeds->n; i++) printf("%s%llu", i ? "," : " ", (unsigned long long)seeds->v[i]);
  printf(" (%d runs; mean +- std, std of the population):\n", seeds->n);
  printf("  %-8s %20s %14s %16s %12s %12s\n", "seed", "test acc at best val", "best val acc", "final test acc",
         "best epoch", "epochs run");
  for (int i = 0; i < seeds->n; i++)
    printf("  %-8llu %20.4f %14.4f %16.4f %12d %12d\n", (unsigned long long)seeds->v[i], res[i].test_acc_at_best_val,
           res[i].best_val_acc, res[i].final_test_acc, res[i].best_epoch, res[i].epochs_run);
  printf("  test acc at best val   %.2f +- %.2f %%\n", 100.0 * sum.test_acc_at_best_val.mean,
         100.0 * sum.test_acc_at_best_val.std);
  printf("  best val acc           %.2f +- %.2f %%\n", 100.0 * sum.best_val_acc.mean, 100.0 * sum.best_val_acc.std);
  printf("  final test acc         %.2f +- %.2f %%\n", 100.0 * sum.final_test_acc.mean,
         100.0 * sum.final_test_acc.std);
  printf("  epochs run             %.1f +- %.1f\n", sum.epochs.mean, sum.epochs.std);
  fflush(stdout);
  if (rt_seeds_write_aggregate(cfg, seeds->v, res, seeds->n) != CG_OK) {
    fprintf(stderr, "capgnn: error: %s\n", err_text());
    return CAPGNN_EXIT_FAILURE;
  }
  return CAPGNN_EXIT_OK;
}

/* MPI starts for every training run (a singleton without mpiexec). One rank trains
 * exactly as without MPI; P > 1 ranks train one partition each (runtime/dist.h). The
 * run checks its files and reads the checkpoint it resumes from before it loads the
 * graph (runtime.h, "checkpoints in a run"). A set-up error is agreed by all ranks,
 * which leave cleanly; a failure once training has started may leave peers waiting in
 * a collective, so it ends the whole job (comm_abort). With --seeds the runs follow
 * one another in the same job; the first that fails ends it. */
static int run_training(const struct rt_config *cfg, const struct train_par *par, const struct seed_list *seeds) {
  struct rt_result res[MAX_SEEDS];
  memset(res, 0, sizeof res);
  const int runs = seeds->n > 0 ? seeds->n : 1;
  int rc = CAPGNN_EXIT_OK;
  char ck[4200], best[4200];
  struct rt_config one;
#ifdef CAPGNN_HAVE_DIST
  struct comm *c = NULL;
  /* one process: said now, as a bad option. Several: comm_init compares them all and
   * every rank refuses together, rank 0 speaking (a rank that left here alone, before
   * MPI, would leave the others waiting in MPI's start-up under a launcher that does
   * not end a job when one process exits, e.g. srun without --kill-on-bad-exit) */
  if (cli_launch_size() == 1 && comm_emulate_nodes_check() != CG_OK) {
    fprintf(stderr, "capgnn: error: %s\n", cg_err_msg());
    return CAPGNN_EXIT_USAGE;
  }
  if (comm_init(NULL, NULL, &c) != CG_OK) {
    if (cg_err_status() == CG_ERR_ARG) { /* refused by every rank together: said once, before any rank leaves */
      if (cli_speaks()) fprintf(stderr, "capgnn: error: %s\n", err_text());
      return comm_leave(CAPGNN_EXIT_USAGE);
    }
    fprintf(stderr, "capgnn: error: %s\n", err_text());
    comm_abort(NULL, CAPGNN_EXIT_FAILURE);
  }
  struct rt_dist_options o;
  rt_dist_options_defaults(&o);
  enum comm_path path = COMM_PATH_AUTO;
  o.rapa = !strcmp(par->partition, "rapa");
  o.prune_eps = par->prune_eps;
  o.prune_write = par->prune_write;
  o.prune_keep_degrees = par->prune_norm && !strcmp(par->prune_norm, "original");
  if (o.rapa && par->profile && strcmp(par->profile, "auto") != 0) o.rapa_profile = par->profile;
  if ((!o.rapa && part_method_parse(par->partition, &o.method) != CG_OK) || comm_path_parse(par->comm, &path) != CG_OK ||
      comm_allreduce_parse(par->allreduce, &o.allreduce) != CG_OK || rt_load_parse(par->load, &o.load) != CG_OK) {
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
  /* (agreed before anyone leaves: ranks may be given different lists, and one that left
   * alone made the others wait in the settings comparison below for ever) */
  const int bad_threads = cli_first_rank_with(c, par->nthreads > 1 && par->nthreads != size);
  if (bad_threads != -1) {
    if (bad_threads == -2 && rank == 0) fprintf(stderr, "capgnn: error: %s\n", err_text());
    else if (rank == bad_threads) {
      char rank_str[24], shown[1024]; /* (the option's value escaped: core/log.h) */
      snprintf(rank_str, sizeof rank_str, "%d, ", rank);
      fprintf(stderr, "capgnn: error: %s%s--threads %s has %d values but the job has %d rank%s: give one count for "
              "all ranks or one per rank (see capgnn train --help)\n", rank ? "on rank " : "", rank ? rank_str : "",
              cg_text_escape(shown, sizeof shown, par->threads_list),
              par->nthreads, size, size == 1 ? "" : "s");
    }
    comm_finalize(&c);
    return bad_threads == -2 ? CAPGNN_EXIT_FAILURE : CAPGNN_EXIT_USAGE;
  }
  if (check_same_settings(c, cfg, par, seeds) != CG_OK) {
    if (cg_err_status() != CG_ERR_ARG) cli_report_setup_error(c); /* the comparison itself failed */
    comm_finalize(&c);
    return cg_err_status() == CG_ERR_ARG ? CAPGNN_EXIT_USAGE : CAPGNN_EXIT_FAILURE;
  }
  { /* the same CAPGNN_EMULATE_SPEED on every rank now (compared above): refused by all
     * together, before the graph loads (one process: checked at start) */
    int nspeeds = 0;
    if (cg_emulate_speed_check(getenv("CAPGNN_EMULATE_SPEED"), &nspeeds) != CG_OK) {
      if (rank == 0) fprintf(stderr, "capgnn: error: %s\n", err_text());
      comm_finalize(&c);
      return CAPGNN_EXIT_USAGE;
    }
  }
#ifdef CAPGNN_HAVE_RAPA
  if (par->gpu_share) { /* before any CUDA context: the backend, the GPU binding */
    int n = 0;
    (void)share_list_parse(par->gpu_share, &n); /* checked while parsing */
    int sst = CG_OK;
    if (n > 1 && n != size)
      sst = cg_err_set(CG_ERR_ARG, "--gpu-share %s has %d values but the job has %d ranks: give one share for all "
                       "ranks or one per rank", par->gpu_share, n, size);
    else if (!strcmp(cfg->device, "cpu"))
      sst = cg_err_set(CG_ERR_ARG, "--gpu-share applies to GPU ranks: use --device cuda (or auto) with it");
    else if (!cli_nvidia_present())
      sst = cg_err_set(CG_ERR_UNSUPPORTED, "--gpu-share: host %s has no NVIDIA GPU (no /dev/nvidiactl), and MPS "
                       "shares apply to GPU ranks only", cg_hostname());
    else
      sst = rapa_mps_share_set(share_of(par->gpu_share, rank));
    if (comm_agree(c, sst, "setting the MPS share (--gpu-share)") != CG_OK) {
      cli_report_setup_error(c);
      comm_finalize(&c);
      return CAPGNN_EXIT_FAILURE;
    }
  }
#endif
  if (size == 1 && o.halo_cache.policy != JACA_POLICY_NONE)
    LOG_INFO("train", "--cache-policy %s: one rank has no halo rows to cache", par->cache_policy);
  if (size == 1 && cfg->halo_bits < 32) /* APPROXIMATE asked for, and nothing to approximate: say so */
    LOG_INFO("train", "--halo-bits %d: one rank sends no halo rows, so none is coded: the run is exact",
             cfg->halo_bits);
  if (rank != 0) cg_progress_set_mode(CG_PROGRESS_OFF); /* every rank opens the graph: one progress line */
#ifdef CAPGNN_HAVE_RAPA
  if (par->profile) {
    /* (the key's thread count is the one training will run: the setup comes later) */
    const int threads = rt_threads_expected(cfg->threads, comm_host_local_size(c));
    int pst = rapa_train_profile(c, par->profile, cfg->device, threads, par->part_cache,
                                 !strcmp(par->partition, "rapa") && strcmp(par->profile, "auto") != 0);
    if (pst != CG_OK) {
      cli_report_setup_error(c);
      comm_finalize(&c);
      return CAPGNN_EXIT_FAILURE;
    }
  }
#endif
  install_stop_handlers();
  for (int i = 0; i < runs && rc == CAPGNN_EXIT_OK; i++) {
    seed_config(cfg, seeds, i, &one, ck, best, sizeof ck);
    if (seeds->n > 0) LOG_INFO("train", "run %d of %d: --seed %llu", i + 1, runs, (unsigned long long)one.seed);
    int fatal = 0;
    /* each run measures the rates and prunes anew, so each has its own pruned graph */
    char pw[4200];
    o.prune_write = seeds->n > 0 ? seed_path(pw, sizeof pw, par->prune_write, one.seed) : par->prune_write;
    const int st = rt_run_dist(c, &one, &o, path, &res[i], &fatal);
    if (st == CG_ERR_INTERRUPTED) { /* every rank stopped after the same epoch */
      if (rank == 0) {
        fprintf(stderr, "capgnn: %s\n", err_text());
        seeds_interrupted(seeds, i, cfg->checkpoint_path != NULL);
      }
      rc = CAPGNN_EXIT_INTERRUPTED;
    } else if (st != CG_OK) {
      if (fatal && size > 1) {
        LOG_ERROR("train", "rank %d of %d failed during training: %s", rank, size, err_text());
        cg_err_report("capgnn");
        comm_abort(c, CAPGNN_EXIT_FAILURE);
      }
      cli_report_setup_error(c);
      if (rank == 0) seeds_failed(seeds, i, res[i].trained);
      rc = CAPGNN_EXIT_FAILURE;
    }
  }
  if (rc == CAPGNN_EXIT_OK && seeds->n > 0 && rank == 0) rc = seeds_report(cfg, seeds, res);
  for (int i = 0; i < runs; i++) rt_result_free(&res[i]);
  comm_finalize(&c);
  return rc;
#else
  (void)par;
  install_stop_handlers();
  for (int i = 0; i < runs && rc == CAPGNN_EXIT_OK; i++) {
    seed_config(cfg, seeds, i, &one, ck, best, sizeof ck);
    if (seeds->n > 0) LOG_INFO("train", "run %d of %d: --seed %llu", i + 1, runs, (unsigned long long)one.seed);
    const int st = rt_run(&one, &res[i]);
    if (st == CG_ERR_INTERRUPTED) {
      fprintf(stderr, "capgnn: %s\n", err_text());
      seeds_interrupted(seeds, i, cfg->checkpoint_path != NULL);
      rc = CAPGNN_EXIT_INTERRUPTED;
    } else if (st != CG_OK) {
      fprintf(stderr, "capgnn: error: %s\n", err_text());
      seeds_failed(seeds, i, res[i].trained);
      rc = CAPGNN_EXIT_FAILURE;
    }
  }
  if (rc == CAPGNN_EXIT_OK && seeds->n > 0) rc = seeds_report(cfg, seeds, res);
  for (int i = 0; i < runs; i++) rt_result_free(&res[i]);
  return rc;
#endif
}

int cmd_train(int argc, char **argv) {
  static const struct option longopts[] = {
      {"graph", required_argument, NULL, OPT_GRAPH},
      {"feat-norm", required_argument, NULL, OPT_FEAT_NORM},
      {"sparse-features", required_argument, NULL, OPT_SPARSE_FEATURES},
      {"model", required_argument, NULL, OPT_MODEL},
      {"layers", required_argument, NULL, OPT_LAYERS},
      {"hidden", required_argument, NULL, OPT_HIDDEN},
      {"dropout", required_argument, NULL, OPT_DROPOUT},
      {"input-dropout", required_argument, NULL, OPT_INPUT_DROPOUT},
      {"layernorm", no_argument, NULL, OPT_LAYERNORM},
      {"heads", required_argument, NULL, OPT_HEADS},
      {"out-heads", required_argument, NULL, OPT_OUT_HEADS},
      {"attn-dropout", required_argument, NULL, OPT_ATTN_DROPOUT},
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
      {"cache", required_argument, NULL, OPT_PART_CACHE_ALIAS},
      {"no-cache", no_argument, NULL, OPT_NO_PART_CACHE},
      {"comm", required_argument, NULL, OPT_COMM},
      {"allreduce", required_argument, NULL, OPT_ALLREDUCE},
      {"load", required_argument, NULL, OPT_LOAD},
      {"overlap", required_argument, NULL, OPT_OVERLAP},
      {"halo-bits", required_argument, NULL, OPT_HALO_BITS},
      {"cache-preset", required_argument, NULL, OPT_CACHE_PRESET},
      {"layer0-halo", required_argument, NULL, OPT_LAYER0_HALO},
      {"reorder", required_argument, NULL, OPT_REORDER},
#ifdef CAPGNN_HAVE_RAPA
      {"profile", required_argument, NULL, OPT_PROFILE},
      {"prune-halo", required_argument, NULL, OPT_PRUNE_HALO},
      {"prune-write", required_argument, NULL, OPT_PRUNE_WRITE},
      {"prune-norm", required_argument, NULL, OPT_PRUNE_NORM},
      {"gpu-share", required_argument, NULL, OPT_GPU_SHARE},
#endif
      {"norm-degrees", required_argument, NULL, OPT_NORM_DEGREES},
      {"cache-policy", required_argument, NULL, OPT_CACHE_POLICY},
      {"cache-capacity", required_argument, NULL, OPT_CACHE_CAPACITY},
      {"cache-host-mb", required_argument, NULL, OPT_CACHE_HOST_MB},
      {"cache-device-mb", required_argument, NULL, OPT_CACHE_DEVICE_MB},
      {"staleness", required_argument, NULL, OPT_STALENESS},
      {"grad-staleness", required_argument, NULL, OPT_GRAD_STALENESS},
      {"cache-warmup", required_argument, NULL, OPT_CACHE_WARMUP},
      {"cache-prefetch", required_argument, NULL, OPT_CACHE_PREFETCH},
      {"cache-reserve-mb", required_argument, NULL, OPT_CACHE_RESERVE_MB},
      {"momentum", required_argument, NULL, OPT_MOMENTUM},
      {"lr-schedule", required_argument, NULL, OPT_LR_SCHEDULE},
      {"lr-step-size", required_argument, NULL, OPT_LR_STEP_SIZE},
      {"lr-gamma", required_argument, NULL, OPT_LR_GAMMA},
      {"lr-warmup", required_argument, NULL, OPT_LR_WARMUP},
      {"lr-epochs", required_argument, NULL, OPT_LR_EPOCHS},
      {"early-stop", required_argument, NULL, OPT_EARLY_STOP},
      {"early-stop-rule", required_argument, NULL, OPT_EARLY_STOP_RULE},
      {"save-best", required_argument, NULL, OPT_SAVE_BEST},
      {"log-every", required_argument, NULL, OPT_LOG_EVERY},
      {"seeds", required_argument, NULL, OPT_SEEDS},
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
  struct seed_list seeds = {{0}, 0};
  struct train_par par = {"metis", 1, NULL, 0, "auto", "auto", NULL, NULL, 0, 0.0f, NULL, NULL, NULL, "none", 1.0f,
                          MB_AUTO, MB_AUTO, CACHE_RESERVE_MB_DEFAULT, 0, 0, 0, 0, 0.0, 0, 0.0, "auto", 1, NULL, 0, 0, 0, 0};
  /* where the settings that only apply to one model, schedule or kind of run came from:
   * NULL the command line, else the settings file (the check after rt_config_check below) */
  const char *from_heads = NULL, *from_out_heads = NULL, *from_attn = NULL, *from_step = NULL, *from_gamma = NULL,
             *from_lr_epochs = NULL, *from_seed = NULL, *from_seeds = NULL, *from_es_rule = NULL,
             *from_hidden = NULL, *from_layernorm = NULL;
  int seed_on_cli = 0; /* --seed given on the command line (its last word wins) */
  int es_rule_given = 0; /* --early-stop-rule given at all (its default, patience, too) */
  while (rc == 0 && (c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
    const char *name = optind > 0 && optind <= argc ? argv[optind - 1] : "?";
    if ((rc = cli_check_value("train", argc, argv, optind, optarg)) != 0) break;
    { /* (a settings file's words are "--key=value", one each: optind - 1 is the word) */
      const char *from = optind >= 1 ? config_file_origin(optind - 1) : NULL;
      if (c == OPT_HEADS) from_heads = from;
      else if (c == OPT_OUT_HEADS) from_out_heads = from;
      else if (c == OPT_ATTN_DROPOUT) from_attn = from;
      else if (c == OPT_LR_STEP_SIZE) from_step = from;
      else if (c == OPT_LR_GAMMA) from_gamma = from;
      else if (c == OPT_LR_EPOCHS) from_lr_epochs = from;
      else if (c == OPT_SEED) from_seed = from, seed_on_cli = from == NULL;
      else if (c == OPT_SEEDS) from_seeds = from;
      else if (c == OPT_EARLY_STOP_RULE) from_es_rule = from, es_rule_given = 1;
      else if (c == OPT_HIDDEN) from_hidden = from;
      else if (c == OPT_LAYERNORM) from_layernorm = from;
    }
    switch (c) {
      case 'h':
        if (cli_speaks()) cmd_train_usage(stdout); /* once under mpirun */
        return CAPGNN_EXIT_OK;
      case OPT_GRAPH: cfg.graph = optarg; break;
      case OPT_SPARSE_FEATURES:
        if (strcmp(optarg, "auto") == 0) cfg.sparse_features = RT_SPARSE_AUTO;
        else if (strcmp(optarg, "on") == 0) cfg.sparse_features = RT_SPARSE_ON;
        else if (strcmp(optarg, "off") == 0) cfg.sparse_features = RT_SPARSE_OFF;
        else rc = usage_error("--sparse-features '%s': expected auto, on or off", optarg);
        break;
      case OPT_FEAT_NORM:
        if (strcmp(optarg, "row") == 0) cfg.feat_norm_row = 1;
        else if (strcmp(optarg, "none") == 0) cfg.feat_norm_row = 0;
        else rc = usage_error("--feat-norm '%s': expected row or none", optarg);
        break;
      case OPT_MODEL:
        if (strcmp(optarg, "gcn") == 0) cfg.model = RT_MODEL_GCN;
        else if (strcmp(optarg, "sage") == 0 || strcmp(optarg, "graphsage") == 0) cfg.model = RT_MODEL_SAGE;
        else if (strcmp(optarg, "gat") == 0) cfg.model = RT_MODEL_GAT;
        else rc = usage_error("--model '%s': expected gcn, sage or gat", optarg);
        break;
      case OPT_HEADS:
        rc = cli_parse_int("train", "--heads", optarg, &cfg.heads);
        if (rc == 0 && (cfg.heads < 1 || cfg.heads > 1024))
          rc = usage_error("--heads %s: expected an integer in [1, 1024]", optarg);
        break;
      case OPT_OUT_HEADS:
        rc = cli_parse_int("train", "--out-heads", optarg, &cfg.out_heads);
        if (rc == 0 && (cfg.out_heads < 1 || cfg.out_heads > 1024))
          rc = usage_error("--out-heads %s: expected an integer in [1, 1024]", optarg);
        break;
      case OPT_ATTN_DROPOUT:
        rc = cli_parse_float("train", "--attn-dropout", optarg, &cfg.attn_dropout);
        if (rc == 0 && !(cfg.attn_dropout >= 0.0f && cfg.attn_dropout < 1.0f))
          rc = usage_error("--attn-dropout %s: expected a probability in [0, 1)", optarg);
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
        else if (strcmp(optarg, "sgd") == 0) cfg.optimizer = RT_OPT_SGD;
        else rc = usage_error("--optimizer '%s': expected adam, adamw or sgd", optarg);
        break;
      case OPT_MOMENTUM:
        rc = cli_parse_float("train", "--momentum", optarg, &cfg.momentum);
        if (rc == 0 && !(cfg.momentum >= 0.0f && cfg.momentum < 1.0f))
          rc = usage_error("--momentum %s: expected a number in [0, 1)", optarg);
        break;
      case OPT_LR_SCHEDULE:
        if (strcmp(optarg, "none") == 0) cfg.lr_schedule = RT_LR_NONE;
        else if (strcmp(optarg, "step") == 0) cfg.lr_schedule = RT_LR_STEP;
        else if (strcmp(optarg, "cosine") == 0) cfg.lr_schedule = RT_LR_COSINE;
        else rc = usage_error("--lr-schedule '%s': expected none, step or cosine", optarg);
        break;
      case OPT_LR_STEP_SIZE:
        rc = cli_parse_int_in("train", "--lr-step-size", optarg, 1, RT_MAX_EPOCHS, &cfg.lr_step_size);
        break;
      case OPT_LR_GAMMA:
        rc = cli_parse_float("train", "--lr-gamma", optarg, &cfg.lr_gamma);
        if (rc == 0 && !(cfg.lr_gamma > 0.0f && cfg.lr_gamma <= 1.0f))
          rc = usage_error("--lr-gamma %s: expected a factor in (0, 1]", optarg);
        break;
      case OPT_LR_WARMUP: rc = cli_parse_int_in("train", "--lr-warmup", optarg, 0, RT_MAX_EPOCHS, &cfg.lr_warmup); break;
      case OPT_LR_EPOCHS: rc = cli_parse_int_in("train", "--lr-epochs", optarg, 0, RT_MAX_EPOCHS, &cfg.lr_epochs); break;
      case OPT_EARLY_STOP:
        rc = cli_parse_int_in("train", "--early-stop", optarg, 0, RT_MAX_EARLY_STOP, &cfg.early_stop);
        break;
      case OPT_EARLY_STOP_RULE:
        if (strcmp(optarg, "patience") == 0) cfg.early_stop_rule = RT_ES_PATIENCE;
        else if (strcmp(optarg, "window") == 0) cfg.early_stop_rule = RT_ES_WINDOW;
        else if (strcmp(optarg, "gat") == 0) cfg.early_stop_rule = RT_ES_GAT;
        else rc = usage_error("--early-stop-rule '%s': expected patience, window or gat", optarg);
        break;
      case OPT_SAVE_BEST: cfg.save_best_path = optarg; break;
      case OPT_LOG_EVERY: rc = cli_parse_int_in("train", "--log-every", optarg, 0, INT_MAX, &cfg.log_every); break;
      case OPT_SEEDS: rc = parse_seeds(optarg, &seeds); break;
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
        else /* ('--wd 5e-4' is an abbreviation of --wd-scope to getopt) */
          rc = usage_error("--wd-scope '%s': expected all or first%s", optarg,
                           strtod(optarg, NULL) != 0.0 || optarg[0] == '0' ? " (a number: the weight decay itself is "
                                                                              "--weight-decay)" : "");
        break;
      case OPT_EPOCHS: rc = cli_parse_int("train", "--epochs", optarg, &cfg.epochs); break;
      case OPT_EVAL_EVERY: rc = cli_parse_int("train", "--eval-every", optarg, &cfg.eval_every); break;
      case OPT_SEED: rc = cli_parse_u64("train", "--seed", optarg, &cfg.seed); break;
      case OPT_DEVICE: cfg.device = optarg; break;
      case OPT_THREADS:
        par.threads_list = cfg.threads_list = NULL;
        par.nthreads = 0;
        if (strchr(optarg, ',')) {
          rc = threads_list_parse(optarg, cli_launch_rank(), &cfg.threads, &par.nthreads);
          par.threads_list = cfg.threads_list = optarg;
          break;
        }
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
        if (strcmp(optarg, "metis") == 0 || strcmp(optarg, "random") == 0 || strcmp(optarg, "rapa") == 0)
          par.partition = optarg;
        else rc = usage_error("--partition '%s': expected metis, random or rapa", optarg);
        break;
      case OPT_PART_SEED: rc = cli_parse_u64("train", "--part-seed", optarg, &par.part_seed); break;
      case OPT_PART_CACHE_ALIAS:
        rc = cli_part_cache_alias("train", optarg);
        if (rc == 0) par.part_cache = optarg;
        break;
      case OPT_PART_CACHE: par.part_cache = optarg; break;
      case OPT_NO_PART_CACHE: par.no_part_cache = 1; break;
      case OPT_COMM:
        if (!strcmp(optarg, "auto") || !strcmp(optarg, "nccl") || !strcmp(optarg, "mpi-cuda") ||
            !strcmp(optarg, "mpi-staged"))
          par.comm = optarg;
        else rc = usage_error("--comm '%s': expected auto, nccl, mpi-cuda or mpi-staged", optarg);
        break;
      case OPT_ALLREDUCE:
        if (!strcmp(optarg, "auto") || !strcmp(optarg, "mpi") || !strcmp(optarg, "flat") || !strcmp(optarg, "hier"))
          par.allreduce = optarg;
        else rc = usage_error("--allreduce '%s': expected auto, mpi, flat or hier", optarg);
        break;
      case OPT_LOAD:
        if (!strcmp(optarg, "auto") || !strcmp(optarg, "whole") || !strcmp(optarg, "per-rank"))
          par.load = optarg;
        else rc = usage_error("--load '%s': expected auto, whole or per-rank", optarg);
        break;
      case OPT_PROFILE:
        if (!optarg[0]) rc = usage_error("--profile: empty file name (give a file or auto)");
        par.profile = optarg;
        break;
      case OPT_PRUNE_HALO:
        rc = cli_parse_float("train", "--prune-halo", optarg, &par.prune_eps);
        if (rc == 0 && !(par.prune_eps >= 0.0f && par.prune_eps <= 10.0f))
          rc = usage_error("--prune-halo %s: expected a tolerance in [0, 10] (0 = off)", optarg);
        break;
      case OPT_GPU_SHARE: {
        /* '--gpu 0' (DGL's and PyG's examples pick the device so) is an abbreviation of
         * --gpu-share to getopt: an MPS share, not a device. Refused, saying which is which. */
        const char *word = optind >= 2 && optind <= argc && argv[optind - 1] == optarg ? argv[optind - 2]
                                                                                        : argv[optind - 1];
        if (word && strncmp(word, "--gpu-", 6) != 0) {
          rc = usage_error("%.*s: capgnn has no --gpu; --device cuda trains on a GPU (one rank per GPU under "
                           "mpirun; CUDA_VISIBLE_DEVICES chooses them), and --gpu-share P is an MPS share of a GPU "
                           "in %%", (int)strcspn(word, "="), word);
          break;
        }
        int n = 0;
        rc = share_list_parse(optarg, &n);
        par.gpu_share = optarg;
        break;
      }
      case OPT_PRUNE_WRITE:
        if (!optarg[0]) rc = usage_error("--prune-write: empty file name");
        par.prune_write = optarg;
        break;
      case OPT_PRUNE_NORM:
        if (!strcmp(optarg, "pruned") || !strcmp(optarg, "original")) par.prune_norm = optarg;
        else rc = usage_error("--prune-norm '%s': expected pruned or original", optarg);
        break;
      case OPT_NORM_DEGREES:
        if (!optarg[0]) rc = usage_error("--norm-degrees: empty graph name");
        cfg.norm_graph = optarg;
        break;
      case OPT_CACHE_POLICY:
        par.given_policy = 1;
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
        par.given_staleness = 1;
        rc = parse_staleness(optarg, 0, &par.staleness, &par.adaptive, &par.adapt_eps);
        break;
      case OPT_GRAD_STALENESS:
        par.given_grad_staleness = 1;
        rc = parse_staleness(optarg, 1, &par.grad_staleness, &par.grad_adaptive, &par.grad_adapt_eps);
        break;
      case OPT_CACHE_WARMUP: rc = cli_parse_int("train", "--cache-warmup", optarg, &par.cache_warmup); break;
      case OPT_CACHE_PREFETCH:
        if (strcmp(optarg, "on") == 0) par.cache_prefetch = 1;
        else if (strcmp(optarg, "off") == 0) par.cache_prefetch = 0;
        else rc = usage_error("--cache-prefetch '%s': expected on or off", optarg);
        break;
      case OPT_REORDER:
        if (graph_reorder_parse(optarg, &cfg.reorder) != CG_OK) {
          cg_err_clear();
          rc = usage_error("--reorder '%s': expected none, rcm, cluster, metis or auto", optarg);
        }
        break;
      case OPT_CACHE_PRESET:
        if (!strcmp(optarg, "exact") || !strcmp(optarg, "fast")) par.cache_preset = optarg;
        else rc = usage_error("--cache-preset '%s': expected exact or fast", optarg);
        break;
      case OPT_HALO_BITS:
        par.given_halo_bits = 1;
        rc = cli_parse_int("train", "--halo-bits", optarg, &cfg.halo_bits);
        if (rc == 0 && cfg.halo_bits != 32 && cfg.halo_bits != 16 && cfg.halo_bits != 8 && cfg.halo_bits != 4)
          rc = usage_error("--halo-bits %s: expected 32 (exact), 16, 8 or 4", optarg);
        break;
      case OPT_OVERLAP:
        if (strcmp(optarg, "on") == 0) cfg.overlap = 1;
        else if (strcmp(optarg, "off") == 0) cfg.overlap = 0;
        else rc = usage_error("--overlap '%s': expected on or off", optarg);
        break;
      case OPT_LAYER0_HALO:
        if (strcmp(optarg, "auto") == 0) cfg.layer0_halo = RT_L0_AUTO;
        else if (strcmp(optarg, "local") == 0) cfg.layer0_halo = RT_L0_LOCAL;
        else if (strcmp(optarg, "exchange") == 0) cfg.layer0_halo = RT_L0_EXCHANGE;
        else rc = usage_error("--layer0-halo '%s': expected auto, local or exchange", optarg);
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
  /* --seed N on the command line with a settings file's `seeds = ...`: the command line
   * wins over every file, so this is one run of seed N (a rerun of one seed of a sweep's
   * file, or the resume of its FILE.seedN, which --seeds refuses) */
  char shown[4200]; /* (a settings file's name escaped: core/log.h) */
  if (seeds.n > 0 && from_seeds && seed_on_cli) {
    if (cli_speaks())
      fprintf(stderr, "capgnn: note: --seeds from %s left out: the command line's --seed %llu makes this one "
              "run\n", cg_text_escape(shown, sizeof shown, from_seeds), (unsigned long long)cfg.seed);
    seeds.n = 0;
  }
  { /* settings of one model, schedule or kind of run given with another: refused when the
     * command line gave them (not ignored); from a settings file they are left out with a
     * note, since the command line wins over every file (a GAT file run with --model gcn).
     * A file printed by --print-config names them only where they apply. */
    struct rt_config def;
    rt_config_defaults(&def);
    const struct {
      int given;
      const char *opt, *from, *applies;
    } rules[] = {
        {cfg.model != RT_MODEL_GAT && cfg.heads != def.heads, "--heads", from_heads, "--model gat"},
        {cfg.model != RT_MODEL_GAT && cfg.out_heads != def.out_heads, "--out-heads", from_out_heads, "--model gat"},
        {cfg.model != RT_MODEL_GAT && cfg.attn_dropout >= 0.0f, "--attn-dropout", from_attn, "--model gat"},
        {cfg.lr_schedule != RT_LR_STEP && cfg.lr_step_size != def.lr_step_size, "--lr-step-size", from_step,
         "--lr-schedule step"},
        {cfg.lr_schedule != RT_LR_STEP && cfg.lr_gamma != def.lr_gamma, "--lr-gamma", from_gamma, "--lr-schedule step"},
        {cfg.lr_schedule != RT_LR_COSINE && cfg.lr_epochs != def.lr_epochs, "--lr-epochs", from_lr_epochs,
         "--lr-schedule cosine"},
        {seeds.n > 0 && cfg.seed != def.seed, "--seed", from_seed, "a single run (without --seeds)"},
        {cfg.early_stop == 0 && es_rule_given, "--early-stop-rule", from_es_rule,
         "--early-stop N"},
        /* one layer has no hidden layer: no width, nothing to normalise */
        {cfg.layers == 1 && cfg.hidden != def.hidden, "--hidden", from_hidden, "--layers 2 or more"},
        {cfg.layers == 1 && cfg.layernorm, "--layernorm", from_layernorm, "--layers 2 or more"},
    };
    for (size_t k = 0; k < sizeof rules / sizeof rules[0]; k++) {
      if (!rules[k].given) continue;
      char now[64]; /* what this run is instead */
      if (!strcmp(rules[k].applies, "--model gat")) snprintf(now, sizeof now, "--model %s", rt_model_kind_str(cfg.model));
      else if (!strcmp(rules[k].opt, "--seed")) snprintf(now, sizeof now, "--seeds");
      else if (!strcmp(rules[k].opt, "--early-stop-rule")) snprintf(now, sizeof now, "without early stopping");
      else if (!strcmp(rules[k].applies, "--layers 2 or more")) snprintf(now, sizeof now, "--layers 1");
      else snprintf(now, sizeof now, "--lr-schedule %s", rt_lr_schedule_str(cfg.lr_schedule));
      if (!rules[k].from)
        return usage_error("%s applies to %s, and this run is %s (leave it out%s)", rules[k].opt, rules[k].applies, now,
                           !strcmp(rules[k].opt, "--seed") ? ", or give the seed in --seeds" : "");
      if (cli_speaks())
        fprintf(stderr, "capgnn: note: %s from %s applies to %s, and this run is %s: left out\n", rules[k].opt,
                cg_text_escape(shown, sizeof shown, rules[k].from), rules[k].applies, now);
    }
    if (cfg.model != RT_MODEL_GAT) cfg.heads = def.heads, cfg.out_heads = def.out_heads, cfg.attn_dropout = def.attn_dropout;
    if (cfg.lr_schedule != RT_LR_STEP) cfg.lr_step_size = def.lr_step_size, cfg.lr_gamma = def.lr_gamma;
    if (cfg.lr_schedule != RT_LR_COSINE) cfg.lr_epochs = def.lr_epochs;
    if (cfg.early_stop == 0) cfg.early_stop_rule = def.early_stop_rule;
    if (cfg.layers == 1) cfg.hidden = def.hidden, cfg.layernorm = 0;
  }
  if (cfg.metrics_path && !cfg.metrics_path[0]) return usage_error("--metrics: empty file name");
  if (cfg.checkpoint_path && !cfg.checkpoint_path[0]) return usage_error("--checkpoint: empty file name");
  if (cfg.resume_path && !cfg.resume_path[0]) return usage_error("--resume: empty file name");
  if (cfg.save_best_path && !cfg.save_best_path[0]) return usage_error("--save-best: empty file name");
  if (seeds.n > 0 && cfg.resume_path)
    return usage_error("--seeds and --resume exclude each other (a checkpoint continues one run; resume each "
                       "seed's FILE.seedN on its own, with --seed N)");
  if (par.part_cache && par.no_part_cache) return usage_error("--part-cache and --no-part-cache exclude each other");
  if (par.prune_eps > 0 && strcmp(par.partition, "rapa") != 0)
    return usage_error("--prune-halo needs --partition rapa (the cost model it balances comes with it)");
  if (par.prune_write && !(par.prune_eps > 0)) return usage_error("--prune-write needs --prune-halo EPS > 0");
  if (par.prune_norm && !(par.prune_eps > 0)) return usage_error("--prune-norm needs --prune-halo EPS > 0");
  if (cfg.model == RT_MODEL_GAT && (cfg.norm_graph || (par.prune_norm && !strcmp(par.prune_norm, "original"))))
    return usage_error("%s: GAT weighs each neighbour by its attention coefficient, not by degrees, so it has no "
                       "degree normalisation to change", cfg.norm_graph ? "--norm-degrees" : "--prune-norm original");
  if (cfg.norm_graph && par.prune_eps > 0)
    return usage_error("--norm-degrees and --prune-halo exclude each other (--prune-norm original keeps the "
                       "original graph's degrees for the pruned graph)");
  if (par.prune_write && !print) { /* --print-config writes nothing: no output to check */
    /* core/outfile.h's rule 1: never one of the run's inputs, whatever --force says (with
     * --force a pruned copy of the graph replaced the very graph the run was reading) */
    char gpath[4200];
    struct cg_outfile_input in[36];
    int n = 0;
    in[n++] = (struct cg_outfile_input){"--graph", graph_path(cfg.graph, gpath, sizeof gpath)};
    for (int i = 0; files && i < nfiles && n < 32; i++) in[n++] = (struct cg_outfile_input){"--config", files[i]};
    in[n++] = (struct cg_outfile_input){"--resume", cfg.resume_path};
    in[n++] = (struct cg_outfile_input){"--profile", par.profile && strcmp(par.profile, "auto") ? par.profile : NULL};
    /* ... and a path that cannot be written fails now, not after the rates are measured,
     * METIS has run and the halo is pruned (as --metrics does) */
    /* (--seeds: every run's FILE.seedN, as it will be written) */
    for (int i = 0; i < (seeds.n > 0 ? seeds.n : 1); i++) {
      char pw[4200];
      const char *target = seeds.n > 0 ? seed_path(pw, sizeof pw, par.prune_write, seeds.v[i]) : par.prune_write;
      if (cg_outfile_check(target, "--prune-write", graph_outfile_kind(), in, n, cfg.force, 0) != CG_OK ||
          cg_outfile_probe(target, "pruned graph") != CG_OK) {
        if (cli_speaks()) fprintf(stderr, "capgnn: error: %s\n", cg_err_msg());
        return CAPGNN_EXIT_FAILURE;
      }
    }
  }
  if (par.cache_preset) { /* what the command line (or a settings file) gave wins */
    const int fast = !strcmp(par.cache_preset, "fast");
    if (!par.given_policy) par.cache_policy = "jaca";
    if (!par.given_staleness) {
      par.staleness = fast ? PRESET_FAST_STALENESS : 0;
      par.adaptive = 0;
    }
    if (!par.given_grad_staleness) {
      par.grad_staleness = fast ? PRESET_FAST_GRAD_STALENESS : 0;
      par.grad_adaptive = 0;
    }
    if (!par.given_halo_bits) cfg.halo_bits = fast ? PRESET_FAST_HALO_BITS : 32;
  }
  if (cfg.halo_bits < 32 && (par.adaptive || par.grad_adaptive)) /* refused now, not after the set-up */
    return usage_error("%s adaptive sends full-precision %s, so it cannot take %s (%d-bit halo rows): "
                       "use one or the other%s", par.adaptive ? "--staleness" : "--grad-staleness",
                       par.adaptive ? "rows" : "gradients",
                       par.given_halo_bits ? "--halo-bits" : "--cache-preset fast's --halo-bits", cfg.halo_bits,
                       par.given_halo_bits ? "" : " (add --halo-bits 32 to keep the rest of the preset)");
  if (par.cache_preset && !strcmp(par.cache_policy, "none"))
    return usage_error("--cache-preset %s and --cache-policy none exclude each other (the preset sets the halo "
                       "cache; give --cache-policy jaca|lru|fifo with it, or neither)", par.cache_preset);
  if (!strcmp(par.cache_policy, "none") && cache_setting_given(&par))
    return usage_error("%s sets the halo cache, which is off (--cache-policy none, the default): add "
                       "--cache-policy jaca|lru|fifo, or --cache-preset exact|fast", cache_setting_given(&par));
  /* a device-only option on a CPU run is refused, as --gpu-share is (it used to be ignored
   * on one rank and warned about by every rank of several) */
  if (strcmp(par.comm, "auto") != 0 && !strcmp(cfg.device, "cpu"))
    return usage_error("--comm %s applies to GPU ranks (CPU ranks always use plain MPI): use --device cuda (or "
                       "auto) with it, or leave --comm out", par.comm);
  /* (one process has no halo, and trains without the cache: a cluster's settings still run there) */
  const int cache_used = strcmp(par.cache_policy, "none") != 0 && cli_launch_size() > 1;
  if (cache_used && cfg.reorder != GRAPH_REORDER_NONE && cfg.reorder != GRAPH_REORDER_AUTO)
    return usage_error("--reorder %s with --cache-policy %s: the halo cache needs each rank's inner rows in global "
                       "order (use --reorder none or auto, or no halo cache)", graph_reorder_name(cfg.reorder),
                       par.cache_policy);
  if (cache_used && cfg.layers == 1)
    return usage_error("--cache-policy %s with --layers 1: the cache holds hidden layers' halo rows, and a one-layer "
                       "model has none (leave the cache out)", par.cache_policy);
#ifdef CAPGNN_HAVE_DIST
  struct jaca_options jo;
  if (cache_options(&par, &jo) != CG_OK) return usage_error("%s", cg_err_msg());
  if (jo.device_mb > 0 && jo.staleness == 0 && !jo.adaptive && !print && cli_speaks())
    fprintf(stderr, "capgnn: warning: --cache-device-mb %lld has no effect: it bounds the rank tier, which keeps "
            "rows only with --staleness S > 0 or adaptive\n", (long long)jo.device_mb);
#else
  if (strcmp(par.cache_policy, "none") != 0) return usage_error("--cache-policy: parallel training is not built");
#endif
  if (print) {
    if (cli_speaks()) print_config(stdout, &cfg, &par, &seeds, files, nfiles);
    return CAPGNN_EXIT_OK;
  }
  int nspeeds = 0; /* (the syntax now; the count once the ranks are known) */
  /* CAPGNN_EMULATE_SPEED here for one process only: with several, a rank refusing it here
   * would leave before MPI starts, unheard (rank 0 speaks) or leaving the others waiting
   * in MPI's start-up; run_training refuses it on every rank together once the ranks'
   * settings comparison has named a rank whose value differs */
  if (cg_cpu_settings_check() != CG_OK ||
      (cli_launch_size() == 1 && cg_emulate_speed_check(getenv("CAPGNN_EMULATE_SPEED"), &nspeeds) != CG_OK)) {
    /* now, not once the graph has loaded and the backend is made */
    if (cli_speaks()) fprintf(stderr, "capgnn: error: %s\n", cg_err_msg());
    return CAPGNN_EXIT_USAGE;
  }
  if (cfg.quiet) cg_progress_set_mode(CG_PROGRESS_OFF);
  return run_training(&cfg, &par, &seeds);
}
