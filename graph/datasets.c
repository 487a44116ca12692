/* graph/datasets.c — the datasets capgnn knows by name: where they come from and
 * the exact command that turns the download into NAME.cgr (graph_dataset_hint),
 * used by graph_open's "not found" message and by `capgnn convert --help`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"

struct known_dataset {
  const char *name;
  const char *from;     /* capgnn convert --from; NULL: shipped as .cgr */
  const char *download; /* what to download, by project name */
  const char *input;    /* the --input placeholder */
  const char *needs;    /* size of the result and memory to convert */
};

static const struct known_dataset known[] = {
    {"reddit", "dgl-reddit",
     "DGL's RedditDataset files reddit_data.npz and reddit_graph.npz (unpacked from DGL's reddit.zip) into one "
     "folder REDDIT_DIR",
     "REDDIT_DIR", "a 1.0 GB .cgr; converting needs about 1.8 GB of memory"},
    {"ogbn-arxiv", "ogb",
     "OGB's ogbn-arxiv dataset folder as the ogb package saves it (ogbn_arxiv/, or arxiv/ unpacked from OGB's "
     "arxiv.zip) with raw/ and split/",
     "ogbn_arxiv", "a 0.1 GB .cgr; converting needs about 0.2 GB of memory"},
    {"ogbn-products", "ogb",
     "OGB's ogbn-products dataset folder as the ogb package saves it (ogbn_products/, or products/ unpacked from "
     "OGB's products.zip) with raw/ and split/",
     "ogbn_products", "a 1.5 GB .cgr; converting needs about 1.5 GB of memory"},
    {"flickr", "saint",
     "GraphSAINT's Flickr data folder FLICKR_DIR (adj_full.npz, feats.npy, class_map.json, role.json from the GraphSAINT "
     "project's shared data)",
     "FLICKR_DIR", "a 0.2 GB .cgr; converting needs about 0.3 GB of memory"},
    {"yelp", "saint",
     "GraphSAINT's Yelp data folder YELP_DIR (adj_full.npz, feats.npy, class_map.json, role.json from the GraphSAINT "
     "project's shared data)",
     "YELP_DIR", "a 1.0 GB .cgr; converting needs about 1.3 GB of memory"},
    {"amazon-products", "saint",
     "GraphSAINT's Amazon data folder AMAZON_DIR (adj_full.npz, feats.npy, class_map.json, role.json from the GraphSAINT "
     "project's shared data)",
     "AMAZON_DIR", "a 2.5 GB .cgr; converting needs about 5 GB of memory"},
    {"cora", NULL,
     "cora.cgr, distributed with capgnn's datasets (the folder with FORMAT.md, README.md and SHA256SUMS; built "
     "from Planetoid's ind.cora.* files)",
     NULL, "0.5 MB"},
    {"citeseer", NULL,
     "citeseer.cgr, distributed with capgnn's datasets (the folder with FORMAT.md, README.md and SHA256SUMS; "
     "built from Planetoid's ind.citeseer.* files)",
     NULL, "1 MB"},
    {"karate", NULL,
     "karate.cgr, distributed with capgnn's datasets (Zachary's karate club, 34 vertices: a toy graph for "
     "smoke tests)",
     NULL, "6 kB"},
};

const char *graph_data_dir(void) {
  const char *env = getenv("CAPGNN_DATA");
  return env && *env ? env : GRAPH_DEFAULT_DATA_DIR;
}

int graph_dataset_hint(const char *name, const char *dir, char *buf, size_t len) {
  if (!dir) dir = graph_data_dir();
  char base[64];
  snprintf(base, sizeof base, "%s", name ? name : "");
  size_t bl = strlen(base);
  if (bl > 4 && strcmp(base + bl - 4, ".cgr") == 0) base[bl - 4] = '\0';
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
    const struct known_dataset *k = &known[i];
    if (strcmp(base, k->name) != 0) continue;
    if (!k->from)
      snprintf(buf, len, "To get it: copy %s into %s/ (%s), or set CAPGNN_DATA to the folder that holds it.",
               k->download, dir, k->needs);
    else
      snprintf(buf, len,
               "To get it: download %s, then run\n  capgnn convert --from %s --input %s --output %s/%s.cgr\n"
               "(%s), or set CAPGNN_DATA to a folder that already holds %s.cgr.",
               k->download, k->from, k->input, dir, k->name, k->needs, k->name);
    return 1;
  }
  const char *b = base[0] ? base : "NAME";
  snprintf(buf, len,
           "Set CAPGNN_DATA to the folder that holds %s.cgr, convert your dataset with `capgnn convert --from "
           "dgl-reddit|ogb|saint|edgelist --input PATH --output %s/%s.cgr` (see capgnn convert --help; known "
           "names: reddit, ogbn-arxiv, ogbn-products, flickr, yelp, amazon-products, cora, citeseer, karate), pass the "
           "path of a .cgr file, or use a synthetic graph (synth:tiny|small|reddit|products).",
           b, dir, b);
  return 0;
}

void graph_dataset_list(FILE *out) {
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
    const struct known_dataset *k = &known[i];
    if (k->from)
      fprintf(out, "  %-16s --from %s\n  %16s download %s\n", k->name, k->from, "", k->download);
    else
      fprintf(out, "  %-16s shipped: %s\n", k->name, k->download);
  }
}
