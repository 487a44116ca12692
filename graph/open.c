/* graph/open.c — resolve a graph name (synth spec, path, or dataset name). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/outfile.h"
#include "core/status.h"
#include "graph/graph.h"
#include "core/progress.h"

/* Loading (or generating) a large graph takes seconds: show it (core/progress.h;
 * silent for short steps unless on a terminal, and off with --quiet). */
static int load_with_progress(const char *path, struct graph *g) {
  struct stat sb;
  struct cg_progress pr;
  char what[4200];
  snprintf(what, sizeof what, "loading %s", path);
  cg_progress_begin(&pr, what, stat(path, &sb) == 0 ? (int64_t)sb.st_size : 0, "B");
  cg_progress_update(&pr, 0);
  int st = graph_load_cgr(path, g);
  if (st == CG_OK) cg_progress_end(&pr);
  else cg_progress_cancel(&pr);
  return st;
}

static int synth_with_progress(const char *spec, struct graph *g) {
  struct cg_progress pr;
  char what[4200];
  snprintf(what, sizeof what, "generating %s", spec);
  cg_progress_begin(&pr, what, 0, "edges");
  cg_progress_update(&pr, 0);
  int st = graph_synth(spec, g);
  /* The size is known only at the end: report the edges made ("done, 0 in ..." before). */
  pr.done = g->m;
  if (st == CG_OK) cg_progress_end(&pr);
  else cg_progress_cancel(&pr);
  return st;
}

static int ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && strcmp(s + a - b, suffix) == 0;
}

static int path_exists(const char *p) {
  struct stat sb;
  return stat(p, &sb) == 0;
}

const struct cg_outfile_kind *graph_outfile_kind(void) {
  static const char *const sig[] = {"CAPGNN01", NULL};
  static const struct cg_outfile_kind kind = {"graph (.cgr)", sig, 1, NULL};
  return &kind;
}

const char *graph_path(const char *name, char *buf, size_t len) {
  if (!name || !*name || strncmp(name, "synth:", 6) == 0 || len == 0) return NULL;
  if (path_exists(name)) {
    snprintf(buf, len, "%s", name);
    return buf;
  }
  if (strchr(name, '/')) { /* a path given without its .cgr */
    const int k = snprintf(buf, len, "%s.cgr", name);
    return !ends_with(name, ".cgr") && k > 0 && (size_t)k < len && path_exists(buf) ? buf : NULL;
  }
  const int k = snprintf(buf, len, "%s/%s%s", graph_data_dir(), name, ends_with(name, ".cgr") ? "" : ".cgr");
  return k > 0 && (size_t)k < len && path_exists(buf) ? buf : NULL;
}

int graph_open(const char *name, struct graph *g) {
  memset(g, 0, sizeof *g);
  if (!name || !*name)
    return cg_err_set(CG_ERR_ARG, "no graph given: pass a dataset name (e.g. cora), a .cgr file "
                                  "or a synthetic spec (e.g. synth:small)");
  if (strncmp(name, "synth:", 6) == 0) {
    TRY(synth_with_progress(name, g));
    return CG_OK;
  }
  if (path_exists(name)) {
    TRY(load_with_progress(name, g));
    return CG_OK;
  }
  char with_ext[4096]; /* a path given without its .cgr (data/cora for data/cora.cgr) */
  if (strchr(name, '/') && !ends_with(name, ".cgr") &&
      graph_path(name, with_ext, sizeof with_ext) == with_ext) {
    TRY(load_with_progress(with_ext, g));
    return CG_OK;
  }

  /* A bare name (no directory part) is looked up in the data folder, with ".cgr"
   * appended unless it is already there. */
  const char *env = getenv("CAPGNN_DATA");
  const char *dir = env && *env ? env : GRAPH_DEFAULT_DATA_DIR;
  char cand[4096];
  int have_cand = 0;
  if (!strchr(name, '/')) {
    int len = snprintf(cand, sizeof cand, "%s/%s%s", dir, name, ends_with(name, ".cgr") ? "" : ".cgr");
    if (len > 0 && (size_t)len < sizeof cand) {
      have_cand = 1;
      if (path_exists(cand)) {
        TRY(load_with_progress(cand, g));
        return CG_OK;
      }
    }
  }
  /* Say exactly how to get the dataset: per known name, the files to download and
   * the convert command; otherwise the generic ways to supply a graph. */
  char hint[768];
  graph_dataset_hint(have_cand ? name : "", dir, hint, sizeof hint);
  /* NAME.cgr in the current folder: a bare name is a dataset name, looked up in the data
   * folder only; say so, and what to write instead */
  char here[4096] = "", here_say[4300] = "";
  if (!strchr(name, '/')) {
    const int k = snprintf(here, sizeof here, "%s.cgr", name);
    if (k > 0 && (size_t)k < sizeof here && path_exists(here))
      snprintf(here_say, sizeof here_say, "'%.1024s' is in the current folder, but a name without a folder is "
               "looked up in CAPGNN_DATA: give the file's path ('%.1024s' or './%.1024s'). ", here, here, name);
  }
  struct stat dsb; /* a CAPGNN_DATA that names no folder (a typo, another machine's path): say so */
  const char *no_dir = have_cand && stat(dir, &dsb) != 0 ? ", a folder that does not exist"
                       : have_cand && !S_ISDIR(dsb.st_mode) ? ", which is not a folder" : "";
  return cg_err_set(CG_ERR_NOT_FOUND, "graph '%s' not found (tried '%s'%s%s%s; CAPGNN_DATA %s%s'%s). %s%s", name,
                    name, have_cand ? ", '" : "", have_cand ? cand : "", have_cand ? "'" : "",
                    env && *env ? "is '" : "is unset, default '", dir, no_dir, here_say, hint);
}
