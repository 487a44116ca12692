/* import/import_dgl.c — DGL's RedditDataset files (reddit_data.npz with feature,
 * label, node_types; reddit_graph.npz with the SciPy adjacency). Node order is the
 * order of the arrays; node_types 1/2/3 are train/val/test as in DGL's loader. */
#include <stdio.h>
#include <string.h>

#include "core/status.h"
#include "import/import_internal.h"
#include "import/npy_internal.h"

static int need_file(char *buf, size_t len, const char *dir, const char *name) {
  TRY(import_path_join(buf, len, dir, name));
  if (!import_path_is_file(buf))
    return cg_err_set(CG_ERR_NOT_FOUND,
                      "%s: missing %s (expected DGL's RedditDataset files reddit_data.npz and "
                      "reddit_graph.npz in this folder; they come in DGL's reddit.zip)",
                      dir, name);
  return CG_OK;
}

int import_dgl_reddit(const struct import_opts *o, struct graph *g, struct import_stats *stats) {
  const char *dir = o->input;
  TRY(import_input_expect(dir, 1, "--from dgl-reddit expects the folder holding reddit_data.npz and "
                          "reddit_graph.npz"));
  char data_path[4096], graph_path[4096];
  TRY(need_file(data_path, sizeof data_path, dir, "reddit_data.npz"));
  TRY(need_file(graph_path, sizeof graph_path, dir, "reddit_graph.npz"));

  struct import_npz z;
  struct import_npy a;
  memset(&a, 0, sizeof a);
  int st = CG_OK;
  TRY(import_npz_open(&z, data_path));
  /* The vertex count comes from the feature rows: open the header only. */
  static const char *const keys[] = {"feature", "label", "node_types"};
  for (int i = 0; i < 3; i++)
    if (!import_npz_has(&z, keys[i])) {
      char have[512];
      st = cg_err_set(CG_ERR_FORMAT, "%s: the array '%s' is missing (expected feature, label and node_types; it "
                      "holds %s)", data_path, keys[i], import_npz_list(&z, have, sizeof have));
      goto fail;
    }
  TRY_GOTO(import_npy_open_npz(&a, &z, "feature"), fail);
  TRY_GOTO(import_npy_expect_shape(&a, 2, (int64_t[]){-1, -1}, "(vertices x features)"), fail);
  const int64_t n = a.shape[0];
  import_npy_close(&a);

  /* Graph first: its edge list is the largest temporary, freed before features. */
  struct import_edges e;
  int64_t n_adj = 0;
  TRY_GOTO(import_scipy_npz(graph_path, &n_adj, &e), fail);
  if (n_adj != n) {
    import_edges_free(&e);
    st = cg_err_set(CG_ERR_FORMAT, "%s: the adjacency matrix is %lld x %lld but %s has %lld feature rows; "
                   "both must describe the same vertices",
                   graph_path, (long long)n_adj, (long long)n_adj, data_path, (long long)n);
    goto fail;
  }
  TRY_GOTO(import_edges_to_csr(&e, n, graph_path, g, stats), fail);

  TRY_GOTO(import_npy_open_npz(&a, &z, "feature"), fail);
  TRY_GOTO(import_npy_features(&a, g, stats), fail);
  import_npy_close(&a);
  TRY_GOTO(import_npy_open_npz(&a, &z, "label"), fail);
  TRY_GOTO(import_npy_labels(&a, g, o->num_classes), fail);
  import_npy_close(&a);
  TRY_GOTO(import_npy_open_npz(&a, &z, "node_types"), fail);
  TRY_GOTO(import_npy_split(&a, g), fail);
  import_npy_close(&a);
  char split_name[4200], label_name[4200];
  snprintf(split_name, sizeof split_name, "%s (array 'node_types')", data_path);
  snprintf(label_name, sizeof label_name, "array 'label'");
  TRY_GOTO(import_check_split(g, split_name, label_name), fail);
  import_npz_close(&z);
  return CG_OK;
fail:
  import_npy_close(&a);
  import_npz_close(&z);
  return st;
}
