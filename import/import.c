/* import/import.c — the importer dispatcher, import_convert and the change report. */
#define _GNU_SOURCE
#include "import/import.h"

#include <ctype.h>
#include <errno.h>
#include <libgen.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "core/status.h"
#include "core/timer.h"
#include "import/import_internal.h"
#include "core/progress.h"

const char *const import_sources[] = {"dgl-reddit", "ogb", "saint", "edgelist", NULL};

typedef int (*importer_fn)(const struct import_opts *, struct graph *, struct import_stats *);
static const importer_fn importers[] = {import_dgl_reddit, import_ogb, import_saint,
                                        import_edgelist};

/* The last path component without trailing slashes and, for files, extensions
 * such as .cgr, .txt, .gz (so "data/flickr/" -> "flickr", "out/cora.cgr" -> "cora"). */
static void stem_of(const char *path, int strip_ext, char *out, size_t len) {
  char buf[4096];
  snprintf(buf, sizeof buf, "%s", path);
  size_t l = strlen(buf);
  while (l > 1 && buf[l - 1] == '/') buf[--l] = '\0';
  const char *base = strrchr(buf, '/');
  base = base ? base + 1 : buf;
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s", base);
  if (strip_ext) {
    static const char *const exts[] = {".gz", ".cgr", ".txt", ".csv", ".tsv", ".edges", ".edgelist", ".el"};
    for (int again = 1; again;) {
      again = 0;
      for (size_t i = 0; i < sizeof exts / sizeof exts[0]; i++) {
        size_t tl = strlen(tmp), el = strlen(exts[i]);
        if (tl > el && strcmp(tmp + tl - el, exts[i]) == 0) {
          tmp[tl - el] = '\0';
          again = 1;
        }
      }
    }
  }
  snprintf(out, len, "%s", tmp);
}

static int set_name(struct graph *g, const char *name, int explicit_name) {
  size_t len = strlen(name);
  if (explicit_name && (len == 0 || len > 15))
    return cg_err_set(CG_ERR_ARG, "--name '%s': a dataset name has 1 to 15 characters", name);
  for (size_t i = 0; i < len; i++)
    if (!isprint((unsigned char)name[i]) || (unsigned char)name[i] > 126)
      return cg_err_set(CG_ERR_ARG, "dataset name '%s': only printable ASCII characters are allowed", name);
  memset(g->name, 0, sizeof g->name);
  memcpy(g->name, name, len > 15 ? 15 : len); /* derived names are cut to the 15 the format holds */
  return CG_OK;
}

static int source_index(const char *from) {
  for (int i = 0; import_sources[i]; i++)
    if (from && strcmp(from, import_sources[i]) == 0) return i;
  return -1;
}

static int cmp_i32(const void *a, const void *b) {
  const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

/* Classes no labelled vertex has, when the class count came from the labels (no
 * --classes): ids used as given, so gaps in them (ids 1..C, ids from a hash) become
 * output columns no vertex trains. Notes it with the numpy call that packs the ids. */
static void note_empty_classes(const struct graph *g, int64_t want_classes, struct import_stats *stats) {
  const int64_t n = g->n, c = g->num_classes;
  if (want_classes > 0 || g->multilabel || c < 2) return;
  int32_t *l = malloc((size_t)n * sizeof *l);
  if (!l) return; /* only a note */
  memcpy(l, g->labels, (size_t)n * sizeof *l);
  qsort(l, (size_t)n, sizeof *l, cmp_i32);
  int64_t used = 0;
  for (int64_t u = 0; u < n; u++) used += l[u] >= 0 && (u == 0 || l[u] != l[u - 1]);
  free(l);
  if (used < c)
    import_note(stats, "%lld of the %lld classes (largest label + 1) have no vertex; class ids are used as given: "
                "to number them 0..K-1, Y[Y >= 0] = numpy.unique(Y[Y >= 0], return_inverse=True)[1]",
                (long long)(c - used), (long long)c);
}

/* A multi-label matrix in which every labelled vertex has exactly one class is most
 * likely one-hot single-label data (an n x C array of 0/1 is taken as multi-label):
 * noted, with the numpy line that gives class ids, since the two train differently. */
static void note_one_hot(const struct graph *g, struct import_stats *stats) {
  const int64_t n = g->n, c = g->num_classes;
  if (!g->multilabel || c < 2) return;
  int64_t labelled = 0;
  for (int64_t u = 0; u < n; u++) {
    int64_t k = 0;
    for (int64_t j = 0; j < c; j++) k += g->mlabels[u * c + j] != 0;
    if (k > 1) return;
    labelled += k;
  }
  if (labelled > 0)
    import_note(stats, "every labelled vertex has exactly one class: taken as multi-label (a sigmoid per class, "
                "micro-F1); for one-hot single labels give numpy.where(Y.any(1), Y.argmax(1), -1)");
}

int import_graph(const char *from, const struct import_opts *o, struct graph *out,
                 struct import_stats *stats) {
  memset(out, 0, sizeof *out);
  struct import_stats local;
  if (!stats) stats = &local;
  memset(stats, 0, sizeof *stats);
  int idx = source_index(from);
  if (idx < 0)
    return cg_err_set(CG_ERR_ARG, "unknown source format '%s' (expected dgl-reddit, ogb, saint or edgelist)",
                      from ? from : "(none)");
  if (!o || !o->input || !*o->input) return cg_err_set(CG_ERR_ARG, "no input given (--input PATH)");
  if (o->num_classes < 0 || o->num_classes >= ((int64_t)1 << 31))
    return cg_err_set(CG_ERR_ARG, "--classes %lld: expected 1 <= c < 2^31 (or 0: from the labels)",
                      (long long)o->num_classes);
  if (strcmp(from, "edgelist") != 0 && (o->features || o->labels || o->split))
    return cg_err_set(CG_ERR_ARG, "--features, --labels and --split belong to --from edgelist; %s reads them "
                      "from its input folder",
                      from);
  double t0 = cg_time_now();
  int st = CG_OK;
  TRY_GOTO(importers[idx](o, out, stats), fail);
  TRY_GOTO(import_feat_store(out, o->feat_storage, stats), fail);
  if (o->name) {
    TRY_GOTO(set_name(out, o->name, 1), fail);
  } else {
    char stem[4096];
    stem_of(o->input, strcmp(from, "edgelist") == 0, stem, sizeof stem);
    TRY_GOTO(set_name(out, stem, 0), fail);
  }
  const int64_t n = out->n, c = out->num_classes;
  for (int64_t u = 0; u < n; u++) {
    int labelled = 0;
    if (out->multilabel)
      for (int64_t k = 0; k < c && !labelled; k++) labelled = out->mlabels[u * c + k] != 0;
    else
      labelled = out->labels[u] >= 0;
    stats->unlabelled += !labelled;
    stats->split_count[out->split[u] & 3]++;
  }
  note_empty_classes(out, o->num_classes, stats);
  note_one_hot(out, stats);
  /* Every FORMAT.md rule, on the graph as it will be written. */
  TRY_GOTO(graph_check(out, out->name), fail);
  graph_checksum_update(out);
  memcpy(stats->name, out->name, sizeof stats->name);
  stats->n = out->n;
  stats->m = out->m;
  stats->feat_dim = out->feat_dim;
  stats->feat_nnz = out->feat_nnz;
  stats->num_classes = out->num_classes;
  stats->sparse_feat = out->sparse_feat;
  stats->multilabel = out->multilabel;
  stats->checksum = out->checksum;
  stats->seconds = cg_time_now() - t0;
  return CG_OK;
fail:
  graph_free(out);
  return st;
}

int import_convert(const char *from, const struct import_opts *o, const char *output,
                   struct import_stats *stats) {
  if (!output || !*output) return cg_err_set(CG_ERR_ARG, "no output file given (--output FILE.cgr)");
  /* Fail before a long import when the output cannot be written. */
  char dirbuf[4096];
  snprintf(dirbuf, sizeof dirbuf, "%s", output);
  const char *dir = dirname(dirbuf);
  if (access(dir, W_OK) != 0)
    return cg_err_set(CG_ERR_IO, "%s: cannot write into the folder %s: %s", output, dir, strerror(errno));
  struct import_opts opts = *o;
  char stem[4096];
  if (!opts.name) {
    stem_of(output, 1, stem, sizeof stem);
    stem[15] = '\0';
    opts.name = stem;
  }
  struct graph g;
  TRY(import_graph(from, &opts, &g, stats));
  if (o->write_note && *o->write_note) LOG_WARN_COMMON("core", "%s", o->write_note);
  struct cg_progress pr;
  char what[4200];
  snprintf(what, sizeof what, "writing %s", output);
  cg_progress_begin(&pr, what, (int64_t)graph_cgr_data_bytes(&g), "B");
  int st = graph_save_cgr_version(output, &g, o->cgr_version ? o->cgr_version : 1, o->block_shift);
  if (st == CG_OK) cg_progress_end(&pr);
  else cg_progress_cancel(&pr);
  graph_free(&g);
  TRY(st);
  return CG_OK;
}

static const char *num(char *buf, size_t len, int64_t v) {
  cg_progress_amount(buf, len, (double)v, "");
  return buf;
}

void import_stats_print(FILE *out, const struct import_stats *s, const char *ind) {
  char a[48], b[48], c[48], d[48];
  if (!ind) ind = "";
  fprintf(out, "%sedges:    read %s entries\n", ind, num(a, sizeof a, s->edges_read));
  fprintf(out, "%s          removed %s self-loops\n", ind, num(a, sizeof a, s->self_loops));
  fprintf(out, "%s          merged %s duplicate entries\n", ind, num(a, sizeof a, s->duplicates));
  fprintf(out, "%s          added %s reverse entries to make the graph symmetric\n", ind,
          num(a, sizeof a, s->reverse_added));
  fprintf(out, "%s          result: %s directed entries (%s undirected edges), %s isolated vertices\n", ind,
          num(a, sizeof a, s->m), num(b, sizeof b, s->m / 2), num(c, sizeof c, s->isolated));
  if (s->sparse_feat)
    fprintf(out, "%sfeatures: %lld per vertex from %s%s, stored sparse (%s nonzeros, density %.2f%%)\n", ind,
            (long long)s->feat_dim, s->feat_dtype, s->feat_converted ? " (converted to float32)" : "",
            num(a, sizeof a, s->feat_nnz),
            s->n * s->feat_dim > 0 ? 100.0 * (double)s->feat_nnz / ((double)s->n * (double)s->feat_dim) : 0.0);
  else
    fprintf(out, "%sfeatures: %lld per vertex from %s%s, stored dense (%s values, %s nonzero)\n", ind,
            (long long)s->feat_dim, s->feat_dtype, s->feat_converted ? " (converted to float32)" : "",
            num(a, sizeof a, s->feat_nnz), num(b, sizeof b, s->nonzero_feats));
  fprintf(out, "%slabels:   %lld class%s, %s; %s %s unlabelled\n", ind, (long long)s->num_classes,
          s->num_classes == 1 ? "" : "es", s->multilabel ? "multi-label" : "single-label",
          num(a, sizeof a, s->unlabelled), s->unlabelled == 1 ? "vertex" : "vertices");
  fprintf(out, "%ssplit:    train %s, val %s, test %s, in no split %s", ind, num(a, sizeof a, s->split_count[1]),
          num(b, sizeof b, s->split_count[2]), num(c, sizeof c, s->split_count[3]),
          num(d, sizeof d, s->split_count[0]));
  if (s->random_split)
    fprintf(out, " (drawn: 60/20/20 of the labelled vertices, seed %llu)", (unsigned long long)s->seed);
  fprintf(out, "\n");
  for (int i = 0; i < s->nnotes; i++) fprintf(out, "%snote:     %s\n", ind, s->notes[i]);
}
