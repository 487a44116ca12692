/* apps/cmd_info.c — `capgnn info FILE|NAME|synth:SPEC`: a dataset's sizes, split,
 * label and degree statistics, and whether it passes every check of FORMAT.md
 * (header and section CRCs, CSR invariants, symmetry, ranges). When the file fails
 * a check, the header is still shown, then the failed check; exit status 1.
 * A training checkpoint (runtime.h) gets its summary instead: what was trained,
 * where it stands, and whether its CRC checks. */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "apps/commands_internal.h"
#include "core/log.h"
#include "core/status.h"
#include "core/timer.h"
#include "graph/graph.h"
#include "core/progress.h"
#include "runtime/runtime.h"

static void cmd_info_usage(FILE *out) {
  fprintf(out,
          "usage: capgnn info FILE.cgr|NAME|synth:SPEC [--quiet]\n"
          "\n"
          "Prints a dataset's sizes (vertices, edges, features, classes), its train/val/test split,\n"
          "label counts, degree statistics and checksum status: the header CRC, the seven section\n"
          "CRCs and every invariant of FORMAT.md are checked. NAME reads $CAPGNN_DATA/NAME.cgr\n"
          "(default folder %s). Exit status 1 when the file fails a check.\n"
          "Given a training checkpoint (capgnn train --checkpoint FILE), prints what it holds:\n"
          "graph, model, optimizer, the epoch reached, the best validation accuracy so far.\n",
          GRAPH_DEFAULT_DATA_DIR);
}

static const char *num(char *buf, size_t len, int64_t v) {
  cg_progress_amount(buf, len, (double)v, "");
  return buf;
}

static uint64_t le64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

/* What a file that is not a .cgr looks like, from its first bytes (NULL: a .cgr). */
static const char *not_cgr_kind(const char *path) {
  unsigned char h[8] = {0};
  FILE *fp = fopen(path, "rb");
  if (!fp) return NULL;
  const size_t got = fread(h, 1, sizeof h, fp);
  fclose(fp);
  if (got >= 8 && memcmp(h, "CAPGNN0", 7) == 0) return NULL;
  if (got >= 8 && memcmp(h, "CGPART", 6) == 0)
    return "a partition set from the partition cache (capgnn partition and train write these; `capgnn partition "
           "--graph G --parts P` prints its statistics)";
  if (got >= 6 && memcmp(h, "\x93NUMPY", 6) == 0) return "a NumPy array (.npy)";
  if (got >= 4 && memcmp(h, "PK\x03\x04", 4) == 0) return "a zip archive (.npz?)";
  if (got >= 2 && h[0] == 0x1f && h[1] == 0x8b) return "gzip-compressed";
  if (got >= 1 && (h[0] == '{' || h[0] == '[')) return "JSON text (a metrics or profile file?)";
  return "an unknown kind of file";
}

/* The raw header, to show what a damaged file claims to be. */
static void print_raw_header(const char *path) {
  unsigned char h[256];
  FILE *fp = fopen(path, "rb");
  if (!fp) return;
  size_t got = fread(h, 1, sizeof h, fp);
  fclose(fp);
  if (got < sizeof h || memcmp(h, "CAPGNN01", 8) != 0) return;
  char name[17];
  memcpy(name, h + 232, 16);
  name[16] = '\0';
  for (int i = 0; i < 16; i++)
    if (name[i] && (name[i] < 32 || name[i] > 126)) name[i] = '?';
  char a[48], b[48];
  printf("header (unverified): name '%s', %s vertices, %s directed entries, %llu features, %llu classes, "
         "flags 0x%x\n",
         name, num(a, sizeof a, (int64_t)le64(h + 16)), num(b, sizeof b, (int64_t)le64(h + 24)),
         (unsigned long long)le64(h + 32), (unsigned long long)le64(h + 40),
         (unsigned)(h[56] | h[57] << 8 | h[58] << 16 | (unsigned)h[59] << 24));
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

static void print_info(const struct graph *g) {
  char a[48], b[48], c[48], d[48], e[48];
  const int64_t n = g->n, nc = g->num_classes;
  char shown[512]; /* (a name of a file written elsewhere: escaped, core/log.h) */
  printf("name:       %s\n", cg_text_escape(shown, sizeof shown, g->name));
  printf("vertices:   %s\n", num(a, sizeof a, n));
  printf("edges:      %s undirected (%s directed CSR entries)\n", num(a, sizeof a, g->m / 2), num(b, sizeof b, g->m));
  if (g->sparse_feat)
    printf("features:   %lld per vertex, sparse (%s nonzeros, density %.2f%%)\n", (long long)g->feat_dim,
           num(a, sizeof a, g->feat_nnz),
           n * g->feat_dim > 0 ? 100.0 * (double)g->feat_nnz / ((double)n * (double)g->feat_dim) : 0.0);
  else
    printf("features:   %lld per vertex, dense (%s values)\n", (long long)g->feat_dim, num(a, sizeof a, g->feat_nnz));

  int64_t unl = 0, assigned = 0;
  int64_t *per_class = calloc((size_t)nc, sizeof *per_class);
  for (int64_t u = 0; u < n; u++) {
    int64_t k = 0;
    if (g->multilabel) {
      for (int64_t j = 0; j < nc; j++)
        if (g->mlabels[u * nc + j]) {
          k++;
          if (per_class) per_class[j]++;
        }
    } else if (g->labels[u] >= 0) {
      k = 1;
      if (per_class) per_class[g->labels[u]]++;
    }
    unl += k == 0;
    assigned += k;
  }
  int64_t cmin = INT64_MAX, cmax = 0;
  for (int64_t j = 0; per_class && j < nc; j++) {
    if (per_class[j] < cmin) cmin = per_class[j];
    if (per_class[j] > cmax) cmax = per_class[j];
  }
  free(per_class);
  if (g->multilabel)
    printf("labels:     %lld class%s, multi-label, %.2f labels per labelled vertex; %s %s without a label\n",
           (long long)nc, nc == 1 ? "" : "es", n - unl > 0 ? (double)assigned / (double)(n - unl) : 0.0, num(a, sizeof a, unl),
           unl == 1 ? "vertex" : "vertices");
  else
    printf("labels:     %lld class%s, single-label; %s %s unlabelled\n", (long long)nc, nc == 1 ? "" : "es",
           num(a, sizeof a, unl), unl == 1 ? "vertex" : "vertices");
  printf("            vertices per class: min %s, max %s\n", num(a, sizeof a, cmin == INT64_MAX ? 0 : cmin),
         num(b, sizeof b, cmax));

  int64_t sc[4] = {0, 0, 0, 0};
  for (int64_t u = 0; u < n; u++) sc[g->split[u] & 3]++;
  printf("split:      train %s (%.1f%%), val %s (%.1f%%), test %s (%.1f%%), none %s\n", num(a, sizeof a, sc[1]),
         100.0 * (double)sc[1] / (double)n, num(b, sizeof b, sc[2]), 100.0 * (double)sc[2] / (double)n,
         num(c, sizeof c, sc[3]), 100.0 * (double)sc[3] / (double)n, num(d, sizeof d, sc[0]));

  int64_t *deg = malloc((size_t)n * sizeof *deg);
  if (deg) {
    int64_t iso = 0;
    for (int64_t u = 0; u < n; u++) {
      deg[u] = g->rowptr[u + 1] - g->rowptr[u];
      iso += deg[u] == 0;
    }
    qsort(deg, (size_t)n, sizeof *deg, cmp_i64);
    printf("degree:     min %s, median %s, mean %.2f, p99 %s, max %s; %s isolated vertices\n", num(a, sizeof a, deg[0]),
           num(b, sizeof b, deg[n / 2]), (double)g->m / (double)n, num(c, sizeof c, deg[(n - 1) * 99 / 100]),
           num(d, sizeof d, deg[n - 1]), num(e, sizeof e, iso));
    free(deg);
  }
  double bytes = 8.0 * (double)(n + 1) + 4.0 * (double)g->m + 4.0 * (double)g->feat_nnz +
                 (g->sparse_feat ? 8.0 * (double)(n + 1) + 4.0 * (double)g->feat_nnz : 0) +
                 (g->multilabel ? (double)n * (double)nc : 4.0 * (double)n) + (double)n;
  cg_progress_amount(a, sizeof a, bytes, "B");
  printf("memory:     %s when loaded\n", a);
}

/* A checkpoint written by `capgnn train --checkpoint`: its magic, then its summary. */
static int is_checkpoint(const char *path) {
  char magic[12] = {0};
  struct stat sb;
  if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) return 0; /* (never opens a FIFO) */
  FILE *fp = fopen(path, "rb");
  if (!fp) return 0;
  size_t got = fread(magic, 1, sizeof magic, fp);
  fclose(fp);
  return got == sizeof magic && memcmp(magic, "CAPGNN-CKPT", sizeof magic) == 0;
}

static int info_checkpoint(const char *path) {
  struct rt_checkpoint c;
  char shown[4200], shown2[4200]; /* (the user's strings escaped: core/log.h, cg_text_escape) */
  if (rt_checkpoint_read(path, &c) != CG_OK) {
    printf("file:       %s (a capgnn checkpoint)\n", cg_text_escape(shown, sizeof shown, path));
    printf("checksum:   FAILED: %s\n", cg_err_msg());
    return CAPGNN_EXIT_FAILURE;
  }
  char in[32] = "as dropout";
  if (c.input_dropout >= 0.0f) snprintf(in, sizeof in, "%g", (double)c.input_dropout);
  char att[32] = "as dropout";
  if (c.attn_dropout >= 0.0f) snprintf(att, sizeof att, "%g", (double)c.attn_dropout);
  printf("file:       %s (training checkpoint)\n", cg_text_escape(shown, sizeof shown, path));
  printf("graph:      %s%s%s%s, %lld vertices, %lld feature%s, %lld class%s, checksum 0x%08x, feat-norm %s\n",
         cg_text_escape(shown, sizeof shown, c.graph), c.graph_spec[0] ? " (" : "",
         cg_text_escape(shown2, sizeof shown2, c.graph_spec), c.graph_spec[0] ? ")" : "", (long long)c.nodes,
         (long long)c.features, c.features == 1 ? "" : "s", (long long)c.classes, c.classes == 1 ? "" : "es",
         c.graph_checksum, c.feat_norm_row ? "row" : "none");
  printf("model:      %s, %d layer%s, hidden %lld%s, dropout %g (input %s), %lld parameters\n",
         rt_model_kind_str(c.model), c.layers, c.layers == 1 ? "" : "s", (long long)c.hidden, c.layernorm ? ", layernorm" : "",
         (double)c.dropout, in, (long long)c.num_params);
  if (c.model == RT_MODEL_GAT)
    printf("            gat: hidden layers %d heads x %lld, output layer %d head%s, attention dropout %s\n", c.heads,
           (long long)c.hidden, c.out_heads, c.out_heads == 1 ? "" : "s", att);
  printf("optimizer:  %s, lr %g, weight decay %g (%s), seed %llu, eval every %d\n",
         rt_optimizer_str(c.optimizer), (double)c.lr, (double)c.weight_decay, rt_wd_scope_str(c.wd_scope),
         (unsigned long long)c.seed, c.eval_every);
  if (c.optimizer == RT_OPT_SGD) printf("            momentum %g\n", (double)c.momentum);
  if (c.lr_schedule == RT_LR_STEP)
    printf("schedule:   step, x %g every %d epochs, warm-up %d\n", (double)c.lr_gamma, c.lr_step_size, c.lr_warmup);
  else if (c.lr_schedule == RT_LR_COSINE)
    printf("schedule:   %s over %d epochs, warm-up %d\n", rt_lr_schedule_str(c.lr_schedule), c.lr_epochs, c.lr_warmup);
  else if (c.lr_warmup > 0) /* (no schedule spans epochs: "none over N epochs" said nothing) */
    printf("schedule:   warm-up %d epoch%s up to lr %g, then constant\n", c.lr_warmup, c.lr_warmup == 1 ? "" : "s",
           (double)c.lr);
  if (c.early_stop > 0)
    printf("early stop: %d evaluations, rule %s%s\n", c.early_stop, rt_early_stop_rule_str(c.early_stop_rule),
           c.stopped_early ? "; the run stopped here by it" : "");
  printf("progress:   epoch %d (%lld optimizer steps), last training loss %.6f\n", c.epoch,
         (long long)c.steps, c.loss[c.epoch - 1]);
  if (c.best_epoch > 0)
    printf("best:       val acc %.4f at epoch %d, test acc there %.4f\n", c.best_val_acc, c.best_epoch,
           c.test_acc_at_best_val);
  else
    printf("best:       none yet (no scheduled evaluation with validation vertices)\n");
  printf("checksum:   OK: CRC-32 and every header field check pass\n");
  rt_checkpoint_free(&c);
  return CAPGNN_EXIT_OK;
}

int cmd_info(int argc, char **argv) {
  static const struct option longopts[] = {
      {"quiet", no_argument, NULL, 'q'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
  int c;
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, ":hq", longopts, NULL)) != -1) {
    if (c == 'h') {
      cmd_info_usage(stdout);
      return CAPGNN_EXIT_OK;
    }
    if (c == 'q') {
      cg_progress_set_mode(CG_PROGRESS_OFF);
      continue;
    }
    return cli_bad_option("info", argv[optind - 1], longopts);
  }
  if (optind != argc - 1) {
    fprintf(stderr, "capgnn: error: capgnn info takes one dataset (a .cgr file, a name or synth:SPEC)\n");
    return CAPGNN_EXIT_USAGE;
  }
  const char *what = argv[optind];
  if (is_checkpoint(what)) return info_checkpoint(what);
  char shown[4200], shown2[4200]; /* (file names escaped: core/log.h, cg_text_escape) */
  struct graph g;
  double t0 = cg_time_now();
  int st = graph_open(what, &g);
  double dt = cg_time_now() - t0;
  if (st != CG_OK) {
    if (st == CG_ERR_FORMAT) {
      /* graph_open resolved a file that fails a check: show what it claims, then why. */
      char path[4200];
      if (!graph_path(what, path, sizeof path)) snprintf(path, sizeof path, "%s", what); /* (as graph_open found it) */
      const char *kind = not_cgr_kind(path);
      if (kind) { /* not a damaged graph: another kind of file */
        fprintf(stderr, "capgnn: error: %s: %s, not a capgnn graph (.cgr) or checkpoint; capgnn info reads those "
                "(capgnn convert makes a .cgr from other formats)\n", cg_text_escape(shown, sizeof shown, path), kind);
        return CAPGNN_EXIT_FAILURE;
      }
      printf("file:       %s\n", cg_text_escape(shown, sizeof shown, path));
      print_raw_header(path);
      printf("checksum:   FAILED: %s\n", cg_err_msg());
    } else {
      /* a --seeds run's checkpoint FILE is FILE.seedN, one per seed: say so rather than
       * how to get a dataset of that name (as predict and --resume do) */
      char seed[4200];
      struct stat ss;
      const int found = st == CG_ERR_NOT_FOUND && stat(what, &ss) != 0 &&
                        rt_checkpoint_seed_file(what, seed, sizeof seed) && is_checkpoint(seed);
      if (found)
        fprintf(stderr, "capgnn: error: %s: no such file (a --seeds run writes one checkpoint per seed: %s, ...)\n",
                cg_text_escape(shown, sizeof shown, what), cg_text_escape(shown2, sizeof shown2, seed));
      else
        fprintf(stderr, "capgnn: error: %s\n", cg_err_msg()[0] ? cg_err_msg() : cg_status_str(cg_err_status()));
    }
    return CAPGNN_EXIT_FAILURE;
  }
  if (strncmp(what, "synth:", 6) == 0) {
    printf("source:     generated from '%s' in %.2f s (no file)\n", cg_text_escape(shown, sizeof shown, what), dt);
  } else {
    struct stat sb;
    char path[4200], size[48] = "?";
    if (!graph_path(what, path, sizeof path)) snprintf(path, sizeof path, "%s", what); /* (as graph_open found it) */
    if (stat(path, &sb) == 0) cg_progress_amount(size, sizeof size, (double)sb.st_size, "B");
    printf("file:       %s (%s, read and checked in %.2f s)\n", cg_text_escape(shown, sizeof shown, path), size, dt);
    struct graph_cgr *f = NULL;
    if (graph_cgr_open(path, &f) == CG_OK) {
      if (graph_cgr_version(f) == 1) {
        printf("format:     .cgr version 1 (a CRC-32 per section)\n");
      } else {
        const unsigned sh = graph_cgr_block_shift(f);
        const char *unit = sh >= 30 ? "GiB" : sh >= 20 ? "MiB" : sh >= 10 ? "KiB" : "B";
        printf("format:     .cgr version %u (a CRC-32 per block of %llu %s, block shift %u: each rank verifies "
               "the rows it reads)\n", graph_cgr_version(f), 1ULL << (sh - (sh >= 30 ? 30 : sh >= 20 ? 20 : sh >= 10 ? 10 : 0)),
               unit, sh);
      }
    } else {
      cg_err_clear();
    }
    graph_cgr_close(&f);
  }
  print_info(&g);
  if (strncmp(what, "synth:", 6) == 0) {
    if (graph_check(&g, what) != CG_OK) {
      printf("checksum:   FAILED: %s\n", cg_err_msg());
      graph_free(&g);
      return CAPGNN_EXIT_FAILURE;
    }
    printf("checksum:   OK: every FORMAT.md check passes; graph checksum 0x%08x\n", g.checksum);
  } else {
    printf("checksum:   OK: header CRC, 7 section CRCs and every FORMAT.md check pass; graph checksum 0x%08x\n",
           g.checksum);
  }
  graph_free(&g);
  return CAPGNN_EXIT_OK;
}
