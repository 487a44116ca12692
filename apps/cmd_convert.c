/* apps/cmd_convert.c — `capgnn convert`: a dataset in a format users already have
 * -> a .cgr file, with a report of what was changed to satisfy FORMAT.md. Usage
 * errors return 2, failures 1, each with one line "capgnn: error: ..." on stderr. */
#define _GNU_SOURCE /* realpath */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "apps/commands_internal.h"
#include "core/log.h"
#include "core/outfile.h"
#include "core/status.h"
#include "core/timer.h"
#include "graph/graph.h"
#include "import/import.h"
#include "core/progress.h"
#include "runtime/runtime.h" /* rt_reorder_order (metis through partition/) */

static void cmd_convert_usage(FILE *out) {
  fprintf(out,
          "usage: capgnn convert --from FORMAT --input PATH --output FILE.cgr [options]\n"
          "\n"
          "Converts a dataset into capgnn's .cgr format: edges symmetrised, duplicate edges merged,\n"
          "self-loops removed (each change is counted and printed), features stored as in the\n"
          "source (float64 rounded to float32). The output is written to a temporary file beside\n"
          "FILE.cgr and renamed over it, so a failed conversion leaves nothing behind (a symbolic\n"
          "link is followed; a device such as /dev/stdout is written in place).\n"
          "\n"
          "  --from FORMAT         dgl-reddit | ogb | saint | edgelist | cgr (see below)\n"
          "  --input PATH          the dataset folder; for edgelist, the edge file\n"
          "  -o, --output FILE     the .cgr file to write: never one of the inputs, and an existing\n"
          "                        file (a dataset above all) is replaced only with --force\n"
          "  --features X.npy      edgelist: node features, shape (n, f); or identity: X = I, one-hot\n"
          "                        vertex ids (n x n, stored sparse), for a graph without features\n"
          "  --labels Y.npy        edgelist: class ids (n,) with -1 = unlabelled, or (n, c) of 0/1\n"
          "                        (multi-label)\n"
          "  --split S.npy         edgelist: (n,) of 0 none / 1 train / 2 val / 3 test; without it a\n"
          "                        seeded random 60/20/20 split of the labelled vertices\n"
          "  --seed N              edgelist: seed of that split (default 1)\n"
          "  --classes C           number of classes (default: largest label + 1); a label >= C is\n"
          "                        an error\n"
          "  --ogb-split NAME      ogb: the folder under split/ (default: the only one there)\n"
          "  --name NAME           dataset name stored in the file, <= 15 characters (default: the\n"
          "                        output file name without .cgr; --from cgr keeps the input's\n"
          "                        name and takes no --name)\n"
          "  --feat-storage MODE   auto | dense | sparse (default auto: sparse when that at least\n"
          "                        halves the size)\n"
          "  --force               replace an existing file at --output (never an input)\n"
          "  --cgr-version N       1 (default, ../shared/datasets/FORMAT.md) or 2 (the same plus a\n"
          "                        CRC-32 per block, so that each rank verifies the rows it reads:\n"
          "                        docs/cgr-v2.md); --from cgr: default the input file's version\n"
          "  --block-shift S       version 2 (implies it): blocks of 2^S bytes, 6 <= S <= 30\n"
          "                        (default 16: 64 KiB)\n"
          "  --reorder METHOD      none (default) | rcm | cluster | metis | auto: write the graph\n"
          "                        with its vertices in that locality order (capgnn train\n"
          "                        --reorder does the same at load; see README, \"Locality\n"
          "                        reordering\"); row v of the file is then another vertex\n"
          "  --order-out FILE      with --reorder: write the map back to the input's ids, as\n"
          "                        text: after a '#' line, line v holds the input id of vertex\n"
          "                        v of the output (numpy.loadtxt(FILE, dtype=int) reads it)\n"
          "  --quiet               no progress and no INFO lines (warnings and errors stay)\n"
          "  -h, --help            this help\n"
          "\n"
          "formats (PATH):\n"
          "  dgl-reddit  folder with DGL's reddit_data.npz (feature, label, node_types 1/2/3 =\n"
          "              train/val/test) and reddit_graph.npz (scipy.sparse.save_npz: csr, csc or coo)\n"
          "  ogb         an OGB node-property-prediction folder as downloaded: raw/edge.csv.gz,\n"
          "              raw/node-feat.csv.gz, raw/node-label.csv.gz, split/NAME/{train,valid,test}.csv.gz\n"
          "  saint       a GraphSAINT folder: adj_full.npz, feats.npy, class_map.json (class ids, or\n"
          "              0/1 lists = multi-label), role.json (tr/va/te)\n"
          "  edgelist    a text file with one edge \"u v\" per line (# comments; may be gzip'ed),\n"
          "              with --features and --labels\n"          "  cgr         a .cgr file, a dataset NAME or a synth:SPEC (as --graph takes them), e.g.\n"
          "              to write it reordered (--reorder) or in another layout (--cgr-version)\n"
          "\n"
          "known datasets (capgnn --graph NAME looks for NAME.cgr in $CAPGNN_DATA, default %s):\n",
          GRAPH_DEFAULT_DATA_DIR);
  graph_dataset_list(out);
}

#define usage_error(...) cli_usage_error("convert", __VA_ARGS__)

/* The output rule (core/outfile.h) before the conversion, which can take many minutes:
 * never one of the source files, an existing file only with --force. A folder --input
 * (dgl-reddit, ogb, saint) holds the source files: an existing file inside it that is
 * not a graph may be one of them, so --force does not replace it either. */
static int check_output(const char *output, const char *opt, const struct cg_outfile_kind *kind, const char *what,
                        const struct import_opts *o, int is_cgr, const char *other, int force) {
  /* (--from cgr: the input as graph_open finds it, "data/g" for data/g.cgr, as
   * convert_cgr checks it) */
  char gpath[4200];
  const char *src = is_cgr && graph_path(o->input, gpath, sizeof gpath) ? gpath : o->input;
  const struct cg_outfile_input inputs[] = {{"--input", src},
                                            {"--features", o->features && strcmp(o->features, "identity") != 0
                                                               ? o->features : NULL},
                                            {"--labels", o->labels},
                                            {"--split", o->split},
                                            {"--output", other}};
  /* (the --force warning waits for the write: the conversion may still fail on its inputs) */
  TRY(cg_outfile_check(output, opt, kind, inputs, 5, force, CG_OUTFILE_FORCE_LATER));
  struct stat in, out;
  if (stat(o->input, &in) == 0 && S_ISDIR(in.st_mode) && stat(output, &out) == 0 && S_ISREG(out.st_mode) &&
      !cg_outfile_is_kind(output, kind)) {
    char *folder = realpath(o->input, NULL), *file = realpath(output, NULL);
    const size_t k = folder ? strlen(folder) : 0;
    const int inside = folder && file && strncmp(file, folder, k) == 0 && file[k] == '/';
    free(folder);
    free(file);
    if (inside)
      return cg_err_set(CG_ERR_ARG, "%s %s: an existing file inside the --input folder %s may be one "
                        "of its source files: choose a new file name (or a path outside it)", opt, output, o->input);
  }
  return cg_outfile_probe(output, what);
}

/* The --order-out file: text, so that any tool reads it; the '#' line is its signature
 * (an existing order file is replaced without --force, anything else needs it). */
#define ORDER_HEADER "# capgnn vertex order"
static const struct cg_outfile_kind *order_kind(void) {
  static const char *const sig[] = {ORDER_HEADER, NULL};
  static const struct cg_outfile_kind kind = {"vertex order file", sig, 0, NULL};
  return &kind;
}

/* order[v] = the input id of vertex v of `output` (NULL: the identity, nothing moved). */
static int write_order(const char *path, const char *input, const char *output, const int32_t *order,
                       int64_t n, enum graph_reorder chosen) {
  /* the file names escaped (core/log.h, cg_text_escape; whole: at most 4 bytes a byte): a
   * newline in one would end the '#' line early, and the map would not start on line 2 */
  const size_t ni = 4 * strlen(input) + 1, no = 4 * strlen(output) + 1;
  char *shown = cg_malloc(ni + no, "escaped file names");
  if (!shown) return CG_ERR_NOMEM;
  struct cg_outfile f;
  int st = CG_OK;
  TRY_GOTO(cg_outfile_open(&f, path, "vertex order"), done);
  fprintf(f.fp, ORDER_HEADER ": line v after this one holds the id in %s of vertex v of %s (order %s)\n",
          cg_text_escape(shown, ni, input), cg_text_escape(shown + ni, no, output), graph_reorder_name(chosen));
  for (int64_t v = 0; v < n; v++) fprintf(f.fp, "%d\n", order ? order[v] : (int)v);
  if (ferror(f.fp)) {
    cg_outfile_abort(&f);
    st = cg_err_set(CG_ERR_IO, "--order-out %s: write failed", path);
    goto done;
  }
  st = cg_outfile_commit(&f);
done:
  cg_free(shown);
  return st;
}

/* --from cgr, and --reorder after an import: read the graph whole (graph_open: a
 * .cgr, a name, a synth: spec), lay it out in the order `method` gives, write it. The
 * order is computed on the graph's own structure (rt_reorder_order); the written graph
 * is the same graph with renamed vertices, so its checksum differs: it is stored in
 * *checksum (when not NULL) for the import's report. */
static int convert_cgr(const char *input, const char *output, enum graph_reorder method, unsigned version,
                       unsigned shift, int force, int quiet, const char *order_out, const char *order_input,
                       uint32_t *checksum) {
  const double t0 = cg_time_now();
  char gpath[4200];
  const struct cg_outfile_input in[1] = {{"--input", graph_path(input, gpath, sizeof gpath)}};
  /* the file an import just wrote is replaced in place (input == output) */
  if (strcmp(input, output) != 0 &&
      (cg_outfile_check(output, "--output", graph_outfile_kind(), in, 1, force, CG_OUTFILE_FORCE_LATER) != CG_OK ||
       cg_outfile_probe(output, "graph") != CG_OK))
    return cli_runtime_error();
  struct graph g, r;
  memset(&g, 0, sizeof g);
  memset(&r, 0, sizeof r);
  int32_t *order = NULL;
  enum graph_reorder chosen = GRAPH_REORDER_NONE;
  int st = graph_open(input, &g);
  if (st == CG_OK) {
    order = cg_malloc((size_t)(g.n > 0 ? g.n : 1) * sizeof *order, "vertex order");
    st = order ? CG_OK : CG_ERR_NOMEM;
  }
  if (st == CG_OK) st = rt_reorder_order(method, g.n, g.rowptr, g.colidx, g.name, order, &chosen);
  if (st == CG_OK && chosen != GRAPH_REORDER_NONE) {
    st = graph_permute(&g, order, &r);
    if (st == CG_OK) {
      graph_free(&g);
      g = r;
      memset(&r, 0, sizeof r);
    }
  }
  if (st == CG_OK && (!version || (version == 2 && !shift))) {
    /* not given: the input file's version, and a version 2 input's block size (version 1
     * for a name or synth: spec) */
    struct graph_cgr *f = NULL;
    unsigned in_version = 1, in_shift = 0;
    if (in[0].path && graph_cgr_open(in[0].path, &f) == CG_OK) {
      in_version = graph_cgr_version(f);
      in_shift = graph_cgr_block_shift(f);
    } else {
      cg_err_clear();
    }
    graph_cgr_close(&f);
    if (!version) version = in_version;
    if (version == 2 && !shift) shift = in_shift;
  }
  char note[4300];
  if (st == CG_OK && strcmp(input, output) != 0) { /* the input read: what --force replaces, said now */
    cg_outfile_force_note(output, "--output", graph_outfile_kind(), force, note, sizeof note);
    if (note[0]) LOG_WARN_COMMON("core", "%s", note);
  }
  if (st == CG_OK) st = graph_save_cgr_version(output, &g, version, shift);
  /* (after the graph: a failed conversion leaves no map of a file that was not written) */
  if (st == CG_OK && order_out) {
    /* (force: without it, cmd_convert refused any file here that would need it) */
    cg_outfile_force_note(order_out, "--order-out", order_kind(), 1, note, sizeof note);
    if (note[0]) LOG_WARN_COMMON("core", "%s", note);
    st = write_order(order_out, order_input, output, chosen != GRAPH_REORDER_NONE ? order : NULL, g.n, chosen);
  }
  if (st == CG_OK && checksum) *checksum = g.checksum;
  if (st == CG_OK && !quiet) {
    FILE *rep = cli_report_stream(output);
    char shown[4200], shown2[4200]; /* (file names escaped: core/log.h) */
    fprintf(rep, "%s -> %s in %.1f s: %lld vertices, order %s%s, checksum 0x%08x\n",
            cg_text_escape(shown, sizeof shown, input), cg_text_escape(shown2, sizeof shown2, output),
            cg_time_now() - t0, (long long)g.n, graph_reorder_name(chosen),
            method == GRAPH_REORDER_AUTO ? " (auto)" : "", g.checksum);
  }
  cg_free(order);
  graph_free(&g);
  graph_free(&r);
  if (st != CG_OK) return cli_runtime_error();
  return CAPGNN_EXIT_OK;
}

enum {
  OPT_FROM = 256, OPT_INPUT, OPT_OUTPUT, OPT_FEATURES, OPT_LABELS, OPT_SPLIT, OPT_SEED, OPT_CLASSES,
  OPT_OGB_SPLIT, OPT_NAME, OPT_FEAT_STORAGE, OPT_QUIET, OPT_FORCE, OPT_CGR_VERSION, OPT_BLOCK_SHIFT, OPT_REORDER,
  OPT_ORDER_OUT
};

int cmd_convert(int argc, char **argv) {
  static const struct option longopts[] = {
      {"from", required_argument, NULL, OPT_FROM},         {"input", required_argument, NULL, OPT_INPUT},
      {"output", required_argument, NULL, OPT_OUTPUT},     {"features", required_argument, NULL, OPT_FEATURES},
      {"labels", required_argument, NULL, OPT_LABELS},     {"split", required_argument, NULL, OPT_SPLIT},
      {"seed", required_argument, NULL, OPT_SEED},         {"classes", required_argument, NULL, OPT_CLASSES},
      {"ogb-split", required_argument, NULL, OPT_OGB_SPLIT}, {"name", required_argument, NULL, OPT_NAME},
      {"feat-storage", required_argument, NULL, OPT_FEAT_STORAGE}, {"quiet", no_argument, NULL, OPT_QUIET},
      {"force", no_argument, NULL, OPT_FORCE},
      {"cgr-version", required_argument, NULL, OPT_CGR_VERSION},
      {"block-shift", required_argument, NULL, OPT_BLOCK_SHIFT},
      {"reorder", required_argument, NULL, OPT_REORDER},
      {"order-out", required_argument, NULL, OPT_ORDER_OUT},
      {"help", no_argument, NULL, 'h'},                    {NULL, 0, NULL, 0}};
  struct import_opts o;
  memset(&o, 0, sizeof o);
  o.seed = 1;
  const char *from = NULL, *output = NULL;
  int quiet = 0, force = 0, c, rc = 0;
  const char *order_out = NULL;
  enum graph_reorder reorder = GRAPH_REORDER_NONE;
  uint64_t classes = 0;
  opterr = 0;
  optind = 1;
  while (rc == 0 && (c = getopt_long(argc, argv, ":ho:", longopts, NULL)) != -1) {
    const char *name = optind > 0 && optind <= argc ? argv[optind - 1] : "?";
    if ((rc = cli_check_value("convert", argc, argv, optind, optarg)) != 0) break;
    switch (c) {
      case 'h': cmd_convert_usage(stdout); return CAPGNN_EXIT_OK;
      case OPT_FROM: from = optarg; break;
      case OPT_INPUT: o.input = optarg; break;
      case 'o': /* -o as in capgnn gen and predict */
      case OPT_OUTPUT: output = optarg; break;
      case OPT_FEATURES: o.features = optarg; break;
      case OPT_LABELS: o.labels = optarg; break;
      case OPT_SPLIT: o.split = optarg; break;
      case OPT_SEED: rc = cli_parse_u64("convert", "--seed", optarg, &o.seed); break;
      case OPT_CLASSES:
        rc = cli_parse_u64("convert", "--classes", optarg, &classes);
        if (!rc && (classes < 1 || classes >= ((uint64_t)1 << 31)))
          rc = usage_error("--classes '%s': expected 1 <= C < 2^31", optarg);
        o.num_classes = (int64_t)classes;
        break;
      case OPT_OGB_SPLIT: o.ogb_split = optarg; break;
      case OPT_NAME: o.name = optarg; break;
      case OPT_FEAT_STORAGE:
        if (strcmp(optarg, "auto") == 0) o.feat_storage = IMPORT_FEAT_AUTO;
        else if (strcmp(optarg, "dense") == 0) o.feat_storage = IMPORT_FEAT_DENSE;
        else if (strcmp(optarg, "sparse") == 0) o.feat_storage = IMPORT_FEAT_SPARSE;
        else rc = usage_error("--feat-storage '%s': expected auto, dense or sparse", optarg);
        break;
      case OPT_QUIET: quiet = 1; break;
      case OPT_FORCE: force = 1; break;
      case OPT_CGR_VERSION: {
        int v = 1;
        rc = cli_parse_int_in("convert", "--cgr-version", optarg, 1, 2, &v);
        o.cgr_version = (unsigned)v;
        break;
      }
      case OPT_BLOCK_SHIFT: {
        int v = 16;
        rc = cli_parse_int_in("convert", "--block-shift", optarg, 6, 30, &v);
        o.block_shift = (unsigned)v;
        break;
      }
      case OPT_ORDER_OUT: order_out = optarg; break;
      case OPT_REORDER:
        if (graph_reorder_parse(optarg, &reorder) != CG_OK) {
          cg_err_clear();
          rc = usage_error("--reorder '%s': expected none, rcm, cluster, metis or auto", optarg);
        }
        break;
      case ':': rc = usage_error("option '%s' needs a value", name); break;
      default: rc = cli_bad_option("convert", name, longopts); break;
    }
  }
  if (rc) return rc;
  if (optind < argc) return usage_error("unexpected argument '%s'", argv[optind]);
  if (!from) return usage_error("--from is required (dgl-reddit, ogb, saint or edgelist)");
  const int is_cgr = strcmp(from, "cgr") == 0;
  int known = is_cgr;
  for (int i = 0; import_sources[i]; i++) known |= strcmp(from, import_sources[i]) == 0;
  if (!known) /* (PyG and DGL users look for their own format: say the way there) */
    return usage_error("--from '%s': expected dgl-reddit, ogb, saint, edgelist or cgr (a PyG Data or a DGL graph: "
                       "save its edges as text and its arrays with numpy, then --from edgelist; docs/datasets.md, "
                       "\"From a PyG Data or a DGL graph\")", from);
  if (!o.input) return usage_error("--input is required");
  if (o.block_shift && o.cgr_version == 1)
    return usage_error("--block-shift sets version 2's blocks: it does not apply to --cgr-version 1");
  if (o.block_shift) o.cgr_version = 2;
  if (!output) return usage_error("--output is required");
  int is_edgelist = strcmp(from, "edgelist") == 0;
  if (is_edgelist && (!o.features || !o.labels))
    return usage_error("--from edgelist needs --features X.npy (or identity) and --labels Y.npy");
  if (!is_edgelist && (o.features || o.labels || o.split))
    return usage_error("--features, --labels and --split are for --from edgelist; %s reads them from --input",
                       from);
  if (o.ogb_split && strcmp(from, "ogb") != 0) return usage_error("--ogb-split is for --from ogb");
  if (quiet) { /* no progress and no INFO lines (the reorder report); CAPGNN_LOG_LEVEL still rules */
    cg_progress_set_mode(CG_PROGRESS_OFF);
    if (!getenv("CAPGNN_LOG_LEVEL")) cg_log_set_level(CG_LOG_WARN);
  }
  if (order_out && reorder == GRAPH_REORDER_NONE)
    return usage_error("--order-out writes the map of --reorder: give --reorder rcm, cluster, metis or auto");
  if (check_output(output, "--output", graph_outfile_kind(), "graph", &o, is_cgr, NULL, force) != CG_OK)
    return cli_runtime_error();
  if (order_out) {
    if (cg_outfile_same(order_out, output))
      return usage_error("--order-out and --output name the same file (%s): use two files", output);
    /* never a source file either, --force or not: the map is written after they were read */
    if (check_output(order_out, "--order-out", order_kind(), "vertex order", &o, is_cgr, output, force) != CG_OK)
      return cli_runtime_error();
  }

  if (is_cgr) {
    if (o.name || o.num_classes || o.feat_storage != IMPORT_FEAT_AUTO)
      return usage_error("--from cgr copies the graph as it is: --name, --classes and --feat-storage are for the "
                         "importers");
    return convert_cgr(o.input, output, reorder, o.cgr_version, o.block_shift, force, quiet, order_out, o.input,
                       NULL);
  }
  struct import_stats s;
  double t0 = cg_time_now();
  char note[4300];
  cg_outfile_force_note(output, "--output", graph_outfile_kind(), force, note, sizeof note);
  o.write_note = note;
  if (import_convert(from, &o, output, &s) != CG_OK) {
    fprintf(stderr, "capgnn: error: %s\n", cg_err_msg()[0] ? cg_err_msg() : cg_status_str(cg_err_status()));
    /* an option the importer refused (--name, a missing companion file option) is a
     * usage error like the ones found here */
    return cg_err_status() == CG_ERR_ARG ? CAPGNN_EXIT_USAGE : CAPGNN_EXIT_FAILURE;
  }
  if (reorder != GRAPH_REORDER_NONE) { /* the written file, reordered in place; the report
                                         * below gives the checksum of the file as written */
    const int rr = convert_cgr(output, output, reorder, o.cgr_version, o.block_shift, 1, quiet, order_out,
                               o.input, &s.checksum);
    if (rr != CAPGNN_EXIT_OK) return rr;
  }
  /* No read-back: it would double the peak memory; `capgnn info` re-checks a file. */
  struct stat sb;
  char size[48] = "?";
  if (stat(output, &sb) == 0) cg_progress_amount(size, sizeof size, (double)sb.st_size, "B");
  char nv[48];
  cg_progress_amount(nv, sizeof nv, (double)s.n, "");
  FILE *rep = cli_report_stream(output);
  char shown[4200], shown2[4200]; /* (file names escaped: core/log.h) */
  cg_text_escape(shown2, sizeof shown2, output);
  fprintf(rep, "converted %s (%s) -> %s in %.1f s\n", cg_text_escape(shown, sizeof shown, o.input), from, shown2,
          cg_time_now() - t0);
  fprintf(rep, "  name:     %s\n  vertices: %s\n", s.name, nv);
  import_stats_print(rep, &s, "  ");
  fprintf(rep, "  file:     %s, checksum 0x%08x (capgnn info %s re-checks it)\n", size, s.checksum, shown2);
  return CAPGNN_EXIT_OK;
}
