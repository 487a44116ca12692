/* graph/open.c — resolve a graph name (synth spec, path, or dataset name). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/status.h"
#include "graph/graph.h"

#define GRAPH_DEFAULT_DATA_DIR "./data"

static int ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && strcmp(s + a - b, suffix) == 0;
}

static int path_exists(const char *p) {
  struct stat sb;
  return stat(p, &sb) == 0;
}

int graph_open(const char *name, struct graph *g) {
  memset(g, 0, sizeof *g);
  if (!name || !*name)
    return cg_err_set(CG_ERR_ARG, "no graph given: pass a dataset name (e.g. cora), a .cgr file "
                                  "or a synthetic spec (e.g. synth:small)");
  if (strncmp(name, "synth:", 6) == 0) {
    TRY(graph_synth(name, g));
    return CG_OK;
  }
  if (path_exists(name)) {
    TRY(graph_load_cgr(name, g));
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
        TRY(graph_load_cgr(cand, g));
        return CG_OK;
      }
    }
  }
  return cg_err_set(CG_ERR_NOT_FOUND,
                    "graph '%s' not found (tried '%s'%s%s%s; CAPGNN_DATA %s%s%s). Set CAPGNN_DATA "
                    "to the folder that holds %s%s, pass the path of a .cgr file, use a synthetic "
                    "graph (synth:tiny|small|reddit|products), or convert your dataset to .cgr with "
                    "`capgnn convert`.",
                    name, name, have_cand ? ", '" : "", have_cand ? cand : "", have_cand ? "'" : "",
                    env && *env ? "is '" : "is unset, default '", dir, "'", name,
                    ends_with(name, ".cgr") ? "" : ".cgr");
}
