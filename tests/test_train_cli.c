/* tests/test_train_cli.c — issue #18's training extras through the `capgnn` binary:
 * `capgnn predict` on a --save-best checkpoint writes logits whose accuracy (argmax
 * against the graph's labels, computed here from the .npy by a reader in C) is the
 * training run's test and validation accuracy at its best epoch, exactly; the .npy
 * files follow the output rule; predict refuses several ranks; --seeds runs every seed
 * and appends an aggregate record; --log-every prints the first, every N-th and the
 * last epoch and a closing line naming the files; the new options' usage errors.
 * Usage: test_train_cli PATH_TO_CAPGNN */
#include <fcntl.h>
#include <glob.h>
#include <signal.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "core/status.h"
#include "graph/graph.h"
#include "cli_test_util.h"

static const char *capgnn_path;
static char tmpdir[256];

struct run_out {
  int exit_code;
  char out[65536], err[65536];
};

static void slurp(const char *path, char *buf, size_t cap) {
  buf[0] = '\0';
  FILE *f = fopen(path, "rb");
  if (!f) return;
  size_t n = fread(buf, 1, cap - 1, f);
  buf[n] = '\0';
  fclose(f);
}

/* Runs capgnn with the NULL-terminated arguments; `env` ("NAME=VALUE") may be NULL. */
static void run_env(struct run_out *r, const char *env, const char *const *args) {
  char out_path[300], err_path[300];
  snprintf(out_path, sizeof out_path, "%s/stdout", tmpdir);
  snprintf(err_path, sizeof err_path, "%s/stderr", tmpdir);
  const char *argv[64];
  int argc = 0;
  argv[argc++] = capgnn_path;
  for (int i = 0; args[i]; i++) argv[argc++] = args[i];
  argv[argc] = NULL;
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    int fo = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int fe = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fo < 0 || fe < 0) _exit(126);
    dup2(fo, 1);
    dup2(fe, 2);
    setenv("CAPGNN_LOG_LEVEL", "info", 1);
    if (env) putenv((char *)env);
    execv(capgnn_path, (char *const *)argv);
    _exit(127);
  }
  int status = 0;
  assert_true(waitpid(pid, &status, 0) == pid);
  r->exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  slurp(out_path, r->out, sizeof r->out);
  slurp(err_path, r->err, sizeof r->err);
}
static void run(struct run_out *r, const char *const *args) { run_env(r, NULL, args); }

static int count(const char *s, const char *needle) {
  int n = 0;
  for (const char *p = strstr(s, needle); p; p = strstr(p + 1, needle)) n++;
  return n;
}

/* One error line "capgnn: error: ..." holding `want`, and exit status `code`. */
static void expect_error(int code, const char *want, const char *env, const char *const *args) {
  static struct run_out r;
  run_env(&r, env, args);
  printf("  -> exit %d: %s", r.exit_code, r.err[0] ? r.err : "(no stderr)\n");
  assert_int_equal(r.exit_code, code);
  assert_int_equal(count(r.err, "error:"), 1);
  if (!strstr(r.err, want)) fail_msg("expected '%s' in: %s", want, r.err);
}

/* Every record of a JSON Lines file, as a cJSON array (caller deletes). */
static cJSON *records(const char *path) {
  static char buf[1 << 20];
  slurp(path, buf, sizeof buf);
  cJSON *all = cJSON_CreateArray();
  assert_non_null(all);
  char *save = NULL;
  for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    cJSON *o = cJSON_Parse(line);
    assert_non_null(o);
    cJSON_AddItemToArray(all, o);
  }
  return all;
}

/* The last object of a JSON Lines file with key `key` true. */
static cJSON *record(const char *path, const char *key, int *nrecords) {
  cJSON *all = records(path), *found = NULL;
  int n = 0, i = 0;
  const cJSON *o;
  cJSON_ArrayForEach(o, all) {
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, key))) n++, found = (cJSON *)o;
  }
  if (found) { /* detach the last match from the array */
    cJSON_ArrayForEach(o, all) {
      if (o == found) break;
      i++;
    }
    found = cJSON_DetachItemFromArray(all, i);
  }
  cJSON_Delete(all);
  if (nrecords) *nrecords = n;
  return found;
}

/* A .npy of float32 in C order, version 1.0 (what capgnn writes); *rows x *cols. */
static float *read_npy(const char *path, int64_t *rows, int64_t *cols) {
  FILE *f = fopen(path, "rb");
  if (!f) fail_msg("cannot open %s", path);
  unsigned char pre[10];
  assert_int_equal(fread(pre, 1, 10, f), 10);
  assert_memory_equal(pre, "\x93NUMPY\x01\x00", 8);
  const int hl = pre[8] | (pre[9] << 8);
  assert_int_equal((10 + hl) % 64, 0);
  char h[512];
  assert_true(hl < (int)sizeof h);
  assert_int_equal(fread(h, 1, (size_t)hl, f), (size_t)hl);
  h[hl] = '\0';
  assert_non_null(strstr(h, "'descr': '<f4'"));
  assert_non_null(strstr(h, "'fortran_order': False"));
  long long r = 0, c = 0;
  const char *sh = strstr(h, "'shape': (");
  assert_non_null(sh);
  assert_int_equal(sscanf(sh, "'shape': (%lld, %lld)", &r, &c), 2);
  float *v = malloc((size_t)(r * c) * sizeof(float));
  assert_non_null(v);
  assert_int_equal(fread(v, sizeof(float), (size_t)(r * c), f), (size_t)(r * c));
  char extra;
  assert_int_equal(fread(&extra, 1, 1, f), 0); /* nothing after the data */
  fclose(f);
  *rows = r;
  *cols = c;
  return v;
}

/* Accuracy of the logits' argmax (first maximum) over the vertices of split s. */
static double accuracy(const float *lg, int64_t classes, const struct graph *g, int s) {
  int64_t right = 0, n = 0;
  for (int64_t v = 0; v < g->n; v++) {
    if (g->split[v] != s) continue;
    int64_t best = 0;
    for (int64_t k = 1; k < classes; k++)
      if (lg[v * classes + k] > lg[v * classes + best]) best = k;
    right += best == g->labels[v];
    n++;
  }
  return (double)right / (double)n;
}

static int expect_predict_as_summary(const char *met, const char *best, const char *lg, const char *spec,
                                     const char *what);

/* A GAT with other than the default heads: predict rebuilds the checkpoint's model (its
 * heads, output heads and attention dropout), not the defaults', and reports what training
 * reported at the best epoch. */
static void predict_gat_heads(void **state) {
  (void)state;
  char met[300], best[300], lg[300];
  snprintf(met, sizeof met, "%s/gat.jsonl", tmpdir);
  snprintf(best, sizeof best, "%s/gat.ckpt", tmpdir);
  snprintf(lg, sizeof lg, "%s/gat.npy", tmpdir);
  static struct run_out r;
  run(&r, (const char *const[]){"--graph", "synth:small", "--model", "gat", "--heads", "2", "--out-heads", "2",
                                "--hidden", "4", "--attn-dropout", "0.3", "--epochs", "15", "--seed", "3", "--device",
                                "cpu", "--threads", "1", "--metrics", met, "--save-best", best, NULL});
  if (r.exit_code != 0) fail_msg("train: exit %d: %s", r.exit_code, r.err);
  /* the log and `capgnn info` name the heads and the attention dropout ("hidden 4" alone
   * hides that the layer is 2 x 4 wide) */
  if (!strstr(r.err, "gat: hidden layers 2 heads x 4 (concatenated), output layer 2 heads (averaged), attention "
                     "dropout 0.3"))
    fail_msg("the log does not name the heads:\n%s", r.err);
  expect_predict_as_summary(met, best, lg, "synth:small", "GAT 2 heads, 2 output heads");
  run(&r, (const char *const[]){"info", best, NULL});
  assert_int_equal(r.exit_code, 0);
  if (!strstr(r.out, "gat: hidden layers 2 heads x 4, output layer 2 heads, attention dropout 0.3\n"))
    fail_msg("capgnn info does not name the heads:\n%s", r.out);
}

static void predict_matches_training(void **state) {
  (void)state;
  char met[300], best[300], lg[300], emb[300];
  snprintf(met, sizeof met, "%s/p.jsonl", tmpdir);
  snprintf(best, sizeof best, "%s/best.ckpt", tmpdir);
  snprintf(lg, sizeof lg, "%s/logits.npy", tmpdir);
  snprintf(emb, sizeof emb, "%s/emb.npy", tmpdir);
  static struct run_out r;
  /* lr 0.05 without dropout overfits: the best epoch comes before the last */
  run(&r, (const char *const[]){"--graph", "synth:small", "--epochs", "60", "--seed", "5", "--lr", "0.05", "--dropout", "0",
                                "--weight-decay", "0", "--device", "cpu", "--threads", "1", "--metrics", met,
                                "--save-best", best, NULL});
  if (r.exit_code != 0) fail_msg("train: exit %d: %s", r.exit_code, r.err);
  assert_non_null(strstr(r.err, "training wrote: metrics"));
  assert_non_null(strstr(r.err, "best weights"));
  cJSON *sum = record(met, "summary", NULL);
  assert_non_null(sum);
  const double want_test = cJSON_GetObjectItemCaseSensitive(sum, "test_acc_at_best_val")->valuedouble;
  const double want_val = cJSON_GetObjectItemCaseSensitive(sum, "best_val_acc")->valuedouble;
  const int best_epoch = cJSON_GetObjectItemCaseSensitive(sum, "best_epoch")->valueint;
  cJSON_Delete(sum);
  assert_true(best_epoch < 60);
  run(&r, (const char *const[]){"predict", "--checkpoint", best, "--graph", "synth:small", "--output", lg,
                                "--embeddings", emb, "--device", "cpu", "--threads", "1", NULL});
  if (r.exit_code != 0) fail_msg("predict: exit %d: %s", r.exit_code, r.err);
  assert_non_null(strstr(r.err, "predict wrote: logits"));
  /* its lines under its own subsystem (the threads line said "train") */
  assert_non_null(strstr(r.err, " predict] CPU threads: 1"));
  if (strstr(r.err, " train]")) fail_msg("predict logged under the train subsystem: %s", r.err);
  /* ... and what --device auto chose (a CUDA build: "device auto: no GPU found ...") */
  char lg_auto[320];
  snprintf(lg_auto, sizeof lg_auto, "%s/logits_auto.npy", tmpdir);
  run(&r, (const char *const[]){"predict", "--checkpoint", best, "--graph", "synth:small", "--output", lg_auto,
                                "--device", "auto", "--threads", "1", NULL});
  if (r.exit_code != 0) fail_msg("predict --device auto: exit %d: %s", r.exit_code, r.err);
  if (strstr(r.err, " train]")) fail_msg("predict --device auto logged under the train subsystem: %s", r.err);
  struct graph g;
  memset(&g, 0, sizeof g);
  assert_int_equal(graph_open("synth:small", &g), 0);
  int64_t rows, cols, er, ec;
  float *l = read_npy(lg, &rows, &cols);
  float *e = read_npy(emb, &er, &ec);
  assert_int_equal(rows, g.n);
  assert_int_equal(cols, g.num_classes);
  assert_int_equal(er, g.n);
  assert_int_equal(ec, 16); /* the hidden width */
  int nonneg = 1;
  for (int64_t i = 0; i < er * ec; i++) nonneg &= e[i] >= 0.0f; /* after the ReLU */
  assert_true(nonneg);
  const double test = accuracy(l, cols, &g, GRAPH_SPLIT_TEST), val = accuracy(l, cols, &g, GRAPH_SPLIT_VAL);
  printf("  best epoch %d: training reported test %.6f val %.6f; from the written logits test %.6f val %.6f\n",
         best_epoch, want_test, want_val, test, val);
  assert_true(test == want_test);
  assert_true(val == want_val);
  free(l);
  free(e);
  graph_free(&g);
  /* the output rule: an existing .npy only with --force; never the checkpoint */
  expect_error(1, "--force", NULL,
               (const char *const[]){"predict", "--checkpoint", best, "--graph", "synth:small", "--output", lg,
                                     "--threads", "1", NULL});
  run(&r, (const char *const[]){"predict", "--checkpoint", best, "--graph", "synth:small", "--output", lg,
                                "--threads", "1", "--force", "--quiet", NULL});
  assert_int_equal(r.exit_code, 0);
  expect_error(2, "predict writes NumPy .npy files", NULL,
               (const char *const[]){"predict", "--checkpoint", best, "--graph", "synth:small", "--output", best,
                                     "--force", NULL});
  { /* never the checkpoint, even one named .npy */
    char ck_npy[320], cmd[700];
    snprintf(ck_npy, sizeof ck_npy, "%s/ck.npy", tmpdir);
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", best, ck_npy);
    assert_int_equal(system(cmd), 0);
    expect_error(1, "--checkpoint", NULL,
                 (const char *const[]){"predict", "--checkpoint", ck_npy, "--graph", "synth:small", "--output", ck_npy,
                                       "--force", NULL});
  }
  /* another graph than the checkpoint's */
  char other[300];
  snprintf(other, sizeof other, "%s/other.npy", tmpdir);
  expect_error(1, "was trained on graph", NULL,
               (const char *const[]){"predict", "--checkpoint", best, "--graph", "synth:tiny", "--output", other, NULL});
  /* one process only */
  expect_error(2, "one process", "OMPI_COMM_WORLD_SIZE=2",
               (const char *const[]){"predict", "--checkpoint", best, "--output", other, NULL});
  expect_error(2, "--output FILE is required", NULL, (const char *const[]){"predict", "--checkpoint", best, NULL});
}

/* On a multi-label graph predict names its figures as training does (micro-F1: "f1",
 * not "acc"), and its validation figure is the summary's best_val_acc. */
static void predict_multilabel_f1(void **state) {
  (void)state;
  char met[300], best[300], lg[300], want[64];
  snprintf(met, sizeof met, "%s/ml.jsonl", tmpdir);
  snprintf(best, sizeof best, "%s/ml.ckpt", tmpdir);
  snprintf(lg, sizeof lg, "%s/ml.npy", tmpdir);
  static struct run_out r;
  run(&r, (const char *const[]){"--graph", "synth:tiny:multilabel=1", "--epochs", "4", "--device", "cpu", "--threads",
                                "1", "--metrics", met, "--save-best", best, NULL});
  if (r.exit_code != 0) fail_msg("train: exit %d: %s", r.exit_code, r.err);
  assert_non_null(strstr(r.err, "best val f1 "));
  cJSON *sum = record(met, "summary", NULL);
  assert_non_null(sum);
  snprintf(want, sizeof want, "val f1 %.4f,", cJSON_GetObjectItemCaseSensitive(sum, "best_val_acc")->valuedouble);
  cJSON_Delete(sum);
  run(&r, (const char *const[]){"predict", "--checkpoint", best, "--output", lg, "--device", "cpu", "--threads", "1",
                                NULL});
  if (r.exit_code != 0) fail_msg("predict: exit %d: %s", r.exit_code, r.err);
  if (!strstr(r.err, want) || strstr(r.err, " acc ")) fail_msg("predict: no '%s' (or an 'acc') in:\n%s", want, r.err);
}

/* `capgnn predict` (without --graph: the checkpoint names it) on the --save-best file
 * `best` writes logits whose test and validation accuracies on graph `spec` are the
 * summary's (metrics file `met`) at the best epoch, exactly. Returns the best epoch. */
static int expect_predict_as_summary(const char *met, const char *best, const char *lg, const char *spec,
                                     const char *what) {
  static struct run_out r;
  cJSON *sum = record(met, "summary", NULL);
  assert_non_null(sum);
  const int best_epoch = cJSON_GetObjectItemCaseSensitive(sum, "best_epoch")->valueint;
  const double want_test = cJSON_GetObjectItemCaseSensitive(sum, "test_acc_at_best_val")->valuedouble;
  const double want_val = cJSON_GetObjectItemCaseSensitive(sum, "best_val_acc")->valuedouble;
  cJSON_Delete(sum);
  run(&r, (const char *const[]){"predict", "--checkpoint", best, "--output", lg, "--device", "cpu", "--threads", "1",
                                NULL});
  if (r.exit_code != 0) fail_msg("%s: predict: exit %d: %s", what, r.exit_code, r.err);
  struct graph g;
  memset(&g, 0, sizeof g);
  assert_int_equal(graph_open(spec, &g), 0);
  int64_t rows, cols;
  float *l = read_npy(lg, &rows, &cols);
  assert_int_equal(rows, g.n);
  assert_int_equal(cols, g.num_classes);
  const double test = accuracy(l, cols, &g, GRAPH_SPLIT_TEST), val = accuracy(l, cols, &g, GRAPH_SPLIT_VAL);
  printf("  %s: best epoch %d, summary test %.6f val %.6f; --save-best's logits test %.6f val %.6f\n", what,
         best_epoch, want_test, want_val, test, val);
  assert_true(test == want_test);
  assert_true(val == want_val);
  free(l);
  graph_free(&g);
  return best_epoch;
}

/* --save-best holds the epoch the summary names, also when that is the evaluation after
 * the last epoch off the --eval-every schedule (seed 1: epochs 3, 6, 9 and the final 10,
 * the best); and it is written when the last epoch diverges (it was not: "the run ended
 * early" was told by last < E). */
static void best_off_schedule_and_diverged(void **state) {
  (void)state;
  char met[300], best[300], lg[300];
  snprintf(met, sizeof met, "%s/off.jsonl", tmpdir);
  snprintf(best, sizeof best, "%s/off.ckpt", tmpdir);
  snprintf(lg, sizeof lg, "%s/off.npy", tmpdir);
  static struct run_out r;
  run(&r, (const char *const[]){"--graph", "synth:small", "--eval-every", "3", "--epochs", "10", "--seed", "1",
                                "--device", "cpu", "--threads", "1", "--metrics", met, "--save-best", best, NULL});
  if (r.exit_code != 0) fail_msg("train: exit %d: %s", r.exit_code, r.err);
  /* the off-schedule final evaluation is the best */
  assert_int_equal(expect_predict_as_summary(met, best, lg, "synth:small", "off-schedule"), 10);
  /* divergence at the last epoch (2 of 2): the best epoch before it is written */
  char div[300];
  snprintf(div, sizeof div, "%s/div.ckpt", tmpdir);
  run(&r, (const char *const[]){"--graph", "synth:tiny", "--lr", "1e30", "--epochs", "2", "--device", "cpu",
                                "--threads", "1", "--save-best", div, NULL});
  assert_int_equal(r.exit_code, 1);
  assert_non_null(strstr(r.err, "diverged"));
  struct stat st;
  if (stat(div, &st) != 0) fail_msg("--save-best %s was not written when the last epoch diverged: %s", div, r.err);
}

/* A checkpoint of a synth: graph records the spec as given: predict needs no --graph,
 * and its accuracies are the training run's. Another graph of the same name (the
 * default scale's synth:small) is named as such, and a file graph that is not found
 * says to pass --graph FILE. */
static void predict_synth_spec(void **state) {
  (void)state;
  char met[300], best[300], lg[300], ck[300];
  snprintf(met, sizeof met, "%s/spec.jsonl", tmpdir);
  snprintf(best, sizeof best, "%s/spec.ckpt", tmpdir);
  snprintf(lg, sizeof lg, "%s/spec.npy", tmpdir);
  snprintf(ck, sizeof ck, "%s/file.ckpt", tmpdir);
  static struct run_out r;
  run(&r, (const char *const[]){"--graph", "synth:small:scale=0.5", "--epochs", "12", "--device", "cpu", "--threads",
                                "1", "--metrics", met, "--save-best", best, NULL});
  if (r.exit_code != 0) fail_msg("train: exit %d: %s", r.exit_code, r.err);
  expect_predict_as_summary(met, best, lg, "synth:small:scale=0.5", "synth:small:scale=0.5 without --graph");
  run(&r, (const char *const[]){"info", best, NULL});
  assert_int_equal(r.exit_code, 0);
  if (!strstr(r.out, "(synth:small:scale=0.5)")) fail_msg("info does not show the spec:\n%s", r.out);
  /* synth:small is another graph named small */
  char other[300];
  snprintf(other, sizeof other, "%s/spec-other.npy", tmpdir);
  expect_error(1, "was trained on another graph named small", NULL,
               (const char *const[]){"predict", "--checkpoint", best, "--graph", "synth:small", "--output", other,
                                     NULL});
  /* so is a resume on it */
  char ck2[300];
  snprintf(ck2, sizeof ck2, "%s/spec-resumed.ckpt", tmpdir);
  expect_error(1, "another graph of the same name", NULL,
               (const char *const[]){"--graph", "synth:small", "--epochs", "20", "--resume", best, "--checkpoint",
                                     ck2, NULL});
  /* a file's checkpoint keeps the graph's name only: not found by it, it says to pass the file */
  char file[300];
  snprintf(file, sizeof file, "%s/t.cgr", tmpdir);
  run(&r, (const char *const[]){"gen", "synth:tiny", "--output", file, "--quiet", NULL});
  if (r.exit_code != 0) fail_msg("gen: exit %d: %s", r.exit_code, r.err);
  run(&r, (const char *const[]){"--graph", file, "--epochs", "3", "--device", "cpu", "--threads", "1",
                                "--checkpoint", ck, NULL});
  if (r.exit_code != 0) fail_msg("train on a file: exit %d: %s", r.exit_code, r.err);
  static char env[320];
  snprintf(env, sizeof env, "CAPGNN_DATA=%s/none", tmpdir);
  expect_error(1, "pass that graph with --graph FILE", env,
               (const char *const[]){"predict", "--checkpoint", ck, "--output", other, NULL});
}

/* The resume warnings name each setting with its values in both runs (they read
 * "other ... these" once). */
static void resume_warnings(void **state) {
  (void)state;
  char ck[300], ck2[300];
  snprintf(ck, sizeof ck, "%s/warn.ckpt", tmpdir);
  snprintf(ck2, sizeof ck2, "%s/warn2.ckpt", tmpdir);
  static struct run_out r;
  run(&r, (const char *const[]){"--graph", "synth:tiny", "--epochs", "3", "--lr", "0.01", "--lr-schedule", "step",
                                "--lr-step-size", "10", "--device", "cpu", "--threads", "1", "--checkpoint", ck, NULL});
  if (r.exit_code != 0) fail_msg("train: exit %d: %s", r.exit_code, r.err);
  run(&r, (const char *const[]){"--graph", "synth:tiny", "--epochs", "5", "--lr", "0.02", "--lr-schedule", "step",
                                "--lr-step-size", "5", "--lr-gamma", "0.5", "--early-stop", "4", "--seed", "3",
                                "--device", "cpu", "--threads", "1", "--resume", ck, "--checkpoint", ck2, NULL});
  if (r.exit_code != 0) fail_msg("resume: exit %d: %s", r.exit_code, r.err);
  printf("%s", r.err);
  static const char *want[] = {
      "--lr is 0.02 in this run, 0.01 in the checkpoint's: the continuation differs",
      "--seed is 3 in this run, 1 in the checkpoint's",
      "the step schedule is --lr-step-size 5 --lr-gamma 0.5 in this run, --lr-step-size 10 --lr-gamma 0.1 in the "
      "checkpoint's",
      "early stopping is --early-stop 4 (rule patience) in this run, off in the checkpoint's: its rule starts afresh "
      "here, and the continuation differs"};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
    if (!strstr(r.err, want[i])) fail_msg("expected '%s' in:\n%s", want[i], r.err);
  assert_null(strstr(r.err, " other "));
  assert_null(strstr(r.err, " these "));
  assert_int_equal(count(r.err, "in the checkpoint's"), 4);
}

/* The checkpoint records the CPU GEMM library (oneDNN or OpenBLAS round differently): a
 * resume under the other one warns, under the same one does not. Where oneDNN does not
 * load (a sanitizer build, no libdnnl2) only the same-library resume is checked. */
static void resume_gemm(void **state) {
  (void)state;
  char ck[300], ck2[300];
  snprintf(ck, sizeof ck, "%s/gemm.ckpt", tmpdir);
  snprintf(ck2, sizeof ck2, "%s/gemm2.ckpt", tmpdir);
  static struct run_out r;
  const char *const first[] = {"--graph", "synth:tiny", "--epochs", "3", "--device", "cpu", "--threads", "1",
                               "--checkpoint", ck, NULL};
  run_env(&r, "CAPGNN_CPU_GEMM=openblas", first);
  if (r.exit_code != 0) fail_msg("train: exit %d: %s", r.exit_code, r.err);
  const char *const again[] = {"--graph", "synth:tiny", "--epochs", "5", "--device", "cpu", "--threads", "1",
                               "--resume", ck, "--checkpoint", ck2, NULL};
  run_env(&r, "CAPGNN_CPU_GEMM=openblas", again);
  if (r.exit_code != 0) fail_msg("resume: exit %d: %s", r.exit_code, r.err);
  assert_null(strstr(r.err, "GEMM"));
  run_env(&r, "CAPGNN_CPU_GEMM=onednn", again);
  if (r.exit_code == 1 && strstr(r.err, "oneDNN cannot be used")) {
    printf("  oneDNN does not load here: the warning is not checked\n");
    return;
  }
  if (r.exit_code != 0) fail_msg("resume: exit %d: %s", r.exit_code, r.err);
  if (!strstr(r.err, "the checkpoint was made with the openblas GEMM, this run uses onednn"))
    fail_msg("expected the GEMM warning in:\n%s", r.err);
}

/* A resumed run whose best epoch is one of the run it resumed holds no weights of it:
 * when its --save-best file does not exist, it says that nothing was written (it used to
 * say "the file keeps what that run wrote there" of a file that was never written, e.g.
 * FILE where the interrupted run of --seeds wrote FILE.seedN). lr 1e-20 keeps the
 * weights, so no epoch of the resumed run beats the best (ties go to the earlier). */
static void resume_best_missing(void **state) {
  (void)state;
  char ck[300], best[300];
  snprintf(ck, sizeof ck, "%s/rb.ckpt", tmpdir);
  snprintf(best, sizeof best, "%s/rb-best.ckpt", tmpdir);
  static struct run_out r;
  run(&r, (const char *const[]){"--graph", "synth:tiny", "--epochs", "3", "--device", "cpu", "--threads", "1",
                                "--checkpoint", ck, NULL});
  if (r.exit_code != 0) fail_msg("train: exit %d: %s", r.exit_code, r.err);
  run(&r, (const char *const[]){"--graph", "synth:tiny", "--epochs", "5", "--lr", "1e-20", "--device", "cpu",
                                "--threads", "1", "--resume", ck, "--save-best", best, NULL});
  if (r.exit_code != 0) fail_msg("resume: exit %d: %s", r.exit_code, r.err);
  printf("%s", r.err);
  struct stat st;
  assert_int_not_equal(stat(best, &st), 0);
  if (strstr(r.err, "the file keeps what that run wrote there"))
    fail_msg("claims a file that does not exist keeps the best weights:\n%s", r.err);
  if (!strstr(r.err, "nothing written: no epoch of this run beat the best of the run it resumed"))
    fail_msg("no word that --save-best wrote nothing:\n%s", r.err);
}

/* A settings file of a sweep (`seeds = 1,2`) with --seed N on the command line: the
 * command line wins, so it is one run of seed N, with a note; so one seed is rerun, or
 * its FILE.seedN resumed, without editing the file (it used to be refused: "--seed
 * applies to a single run" and "--seeds and --resume exclude each other", the latter
 * after following its own advice "resume FILE.seedN with --seed N"). */
static void seeds_file_seed_cli(void **state) {
  (void)state;
  char ini[300], ck[300], ck2[320];
  snprintf(ini, sizeof ini, "%s/sweep.ini", tmpdir);
  snprintf(ck, sizeof ck, "%s/sweep.ckpt", tmpdir);
  snprintf(ck2, sizeof ck2, "%s.seed2", ck);
  FILE *f = fopen(ini, "w");
  assert_non_null(f);
  fprintf(f, "[data]\ngraph = synth:tiny\n[training]\nseeds = 1,2\nepochs = 3\n[execution]\ndevice = cpu\n"
             "threads = 1\n");
  fclose(f);
  static struct run_out r;
  run(&r, (const char *const[]){"--config", ini, "--seed", "2", "--print-config", NULL});
  if (r.exit_code != 0) fail_msg("--seed 2 with a file's seeds: exit %d: %s", r.exit_code, r.err);
  assert_non_null(strstr(r.err, "--seeds from "));
  assert_non_null(strstr(r.err, "left out: the command line's --seed 2 makes this one run"));
  assert_non_null(strstr(r.out, "\nseed = 2\n"));
  assert_null(strstr(r.out, "seeds ="));
  run(&r, (const char *const[]){"--config", ini, "--checkpoint", ck, NULL});
  if (r.exit_code != 0) fail_msg("the sweep: exit %d: %s", r.exit_code, r.err);
  run(&r, (const char *const[]){"--config", ini, "--epochs", "5", "--resume", ck2, "--seed", "2", NULL});
  if (r.exit_code != 0) fail_msg("resume of one seed's file: exit %d: %s", r.exit_code, r.err);
  assert_non_null(strstr(r.err, "resuming from"));
  if (strstr(r.err, "in the checkpoint's")) fail_msg("the resume of seed 2 warns:\n%s", r.err);
  /* "1, 2, 3" as Python prints a list: blanks around the seeds are dropped */
  run(&r, (const char *const[]){"--config", ini, "--seeds", " 4, 5 ,6", "--print-config", NULL});
  if (r.exit_code != 0) fail_msg("--seeds ' 4, 5 ,6': exit %d: %s", r.exit_code, r.err);
  assert_non_null(strstr(r.out, "\nseeds = 4,5,6\n"));
  expect_error(2, "expected seeds separated by commas", NULL, (const char *const[]){"--seeds", "4, ,6", NULL});
  /* both on the command line still exclude each other */
  expect_error(2, "--seed applies to a single run", NULL, (const char *const[]){"--config", ini, "--seeds", "1,2",
                                                                                 "--seed", "5", NULL});
}

/* A resumed run appends to its --metrics file: when the file already holds epochs past
 * the checkpoint's (a run resumed from an earlier checkpoint, or from --save-best's,
 * with the file of the run that went on), the appended epochs repeat them; it says so
 * (it used to say nothing, and the file held two records of epochs 4-6). Appending to
 * the file of the run that wrote the checkpoint says nothing. */
static void resume_metrics_repeat(void **state) {
  (void)state;
  char ck[300], met[300], met2[300];
  snprintf(ck, sizeof ck, "%s/rm3.ckpt", tmpdir);
  snprintf(met, sizeof met, "%s/rm6.jsonl", tmpdir);
  snprintf(met2, sizeof met2, "%s/rm3.jsonl", tmpdir);
  static struct run_out r;
  run(&r, (const char *const[]){"--graph", "synth:tiny", "--epochs", "3", "--device", "cpu", "--threads", "1",
                                "--checkpoint", ck, "--metrics", met2, NULL});
  if (r.exit_code != 0) fail_msg("3 epochs: exit %d: %s", r.exit_code, r.err);
  run(&r, (const char *const[]){"--graph", "synth:tiny", "--epochs", "6", "--device", "cpu", "--threads", "1",
                                "--metrics", met, NULL});
  if (r.exit_code != 0) fail_msg("6 epochs: exit %d: %s", r.exit_code, r.err);
  run(&r, (const char *const[]){"--graph", "synth:tiny", "--epochs", "8", "--device", "cpu", "--threads", "1",
                                "--resume", ck, "--metrics", met, NULL});
  if (r.exit_code != 0) fail_msg("resume into the 6 epochs' file: exit %d: %s", r.exit_code, r.err);
  printf("%s", r.err);
  if (!strstr(r.err, "already holds epochs up to 6, past epoch 3 of --resume ") ||
      !strstr(r.err, "this run appends epochs 4-8 after them, so the file repeats epochs 4-6"))
    fail_msg("no word that the metrics file now repeats epochs 4-6:\n%s", r.err);
  run(&r, (const char *const[]){"--graph", "synth:tiny", "--epochs", "5", "--device", "cpu", "--threads", "1",
                                "--resume", ck, "--metrics", met2, NULL});
  if (r.exit_code != 0) fail_msg("resume into its own file: exit %d: %s", r.exit_code, r.err);
  if (strstr(r.err, "already holds")) fail_msg("warns of its own run's file:\n%s", r.err);
}

/* A run killed outright (kill -9, a lost rank of its job) leaves its records in the
 * metrics file's temporary (MET.tmp.XXXXXX), not in MET: the run that resumes its
 * checkpoint into MET names that temporary and the epochs it holds; a temporary that is
 * not capgnn's and a run without one say nothing. */
static void resume_metrics_leftover(void **state) {
  (void)state;
  char ck[300], met[300], done_met[300], left[320], other[320];
  snprintf(ck, sizeof ck, "%s/lo.ckpt", tmpdir);
  snprintf(met, sizeof met, "%s/lo.jsonl", tmpdir);
  snprintf(done_met, sizeof done_met, "%s/lo3.jsonl", tmpdir);
  snprintf(left, sizeof left, "%s.tmp.Ab12Cd", met);
  snprintf(other, sizeof other, "%s.tmp.Zz99Yy", met);
  static struct run_out r;
  run(&r, (const char *const[]){"--graph", "synth:tiny", "--epochs", "3", "--device", "cpu", "--threads", "1",
                                "--checkpoint", ck, "--metrics", done_met, NULL});
  if (r.exit_code != 0) fail_msg("3 epochs: exit %d: %s", r.exit_code, r.err);
  static char text[1 << 16];
  slurp(done_met, text, sizeof text);
  char *summary = strstr(text, "{\"summary\"");
  if (summary) *summary = '\0'; /* what a killed run leaves: its epoch records */
  FILE *f = fopen(left, "wb");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
  f = fopen(other, "wb");
  assert_non_null(f);
  fputs("{\"epoch\": 1, \"loss\": 0.5}\n", f); /* someone else's log */
  fclose(f);
  run(&r, (const char *const[]){"--graph", "synth:tiny", "--epochs", "5", "--device", "cpu", "--threads", "1",
                                "--resume", ck, "--checkpoint", ck, "--metrics", met, NULL});
  if (r.exit_code != 0) fail_msg("resume: exit %d: %s", r.exit_code, r.err);
  printf("%s", r.err);
  char want[800];
  snprintf(want, sizeof want, "--metrics %s: %s holds the records up to epoch 3 of an earlier run that did not "
           "finish the file", met, left);
  if (!strstr(r.err, want)) fail_msg("expected '%s' in:\n%s", want, r.err);
  if (strstr(r.err, "Zz99Yy")) fail_msg("warns of a temporary that is not capgnn's:\n%s", r.err);
  /* the temporary is still there, but older than the file the resumed run wrote: moving it
   * over that file would lose newer records, so no more warning (it repeated on every run) */
  run(&r, (const char *const[]){"--graph", "synth:tiny", "--epochs", "6", "--device", "cpu", "--threads", "1",
                                "--resume", ck, "--checkpoint", ck, "--metrics", met, NULL});
  if (r.exit_code != 0) fail_msg("resume again: exit %d: %s", r.exit_code, r.err);
  if (strstr(r.err, "did not finish the file")) fail_msg("warns of a temporary older than the file:\n%s", r.err);
  remove(left);
  remove(other);
}

/* Ctrl-C during run 1 of --seeds 5,6,7: the message gives the command that continues
 * that run (its seed and its --save-best FILE.seedN included) and says that seeds 6 and 7 did not run; following it
 * resumes with no warning of another seed. */
static void seeds_interrupted(void **state) {
  (void)state;
  char ck[300], met[300], err_path[300], ck5[320], best[300], best5[320];
  snprintf(ck, sizeof ck, "%s/ms.ckpt", tmpdir);
  snprintf(ck5, sizeof ck5, "%s.seed5", ck);
  snprintf(best, sizeof best, "%s/ms-best.ckpt", tmpdir);
  snprintf(best5, sizeof best5, "%s.seed5", best);
  snprintf(met, sizeof met, "%s/ms.jsonl", tmpdir);
  snprintf(err_path, sizeof err_path, "%s/ms.err", tmpdir);
  const char *const args[] = {capgnn_path, "--graph", "synth:tiny", "--epochs", "10000000", "--threads", "1", "--quiet",
          "--seeds", "5,6,7", "--checkpoint", ck, "--metrics", met, "--save-best", best, NULL};
  pid_t pid = cli_spawn(capgnn_path, args, err_path);
  assert_true(pid >= 0);
  int status = 0;
  static char err[8192];
  /* bounded by the child's CPU time, not the clock, as in test_cli's interrupt_and_resume */
  if (!cli_wait_metrics_started(pid, met, 60.0, &status)) {
    slurp(err_path, err, sizeof err);
    fail_msg("the run never started training; its stderr:\n%s", err);
  }
  kill(pid, SIGINT);
  assert_true(waitpid(pid, &status, 0) == pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 130);
  slurp(err_path, err, sizeof err);
  printf("%s", err);
  char want[1400];
  snprintf(want, sizeof want, "continue with --resume %s --checkpoint %s --seed 5 --save-best %s\n", ck5, ck5, best5);
  if (!strstr(err, want)) fail_msg("expected '%s' in:\n%s", want, err);
  if (!strstr(err, "run 1 of 3 (seed 5) stopped: resume it as above, without --seeds; seeds 6,7 did not run "
                   "(then run them with --seeds 6,7)"))
    fail_msg("no word of the seeds that did not run:\n%s", err);
  const char *at = strstr(err, "interrupted after epoch ");
  assert_non_null(at);
  char epochs[32];
  snprintf(epochs, sizeof epochs, "%d", atoi(at + strlen("interrupted after epoch ")) + 2);
  static struct run_out r;
  run(&r, (const char *const[]){"--graph", "synth:tiny", "--epochs", epochs, "--threads", "1", "--resume", ck5, "--seed", "5", "--checkpoint", ck5,
                                "--save-best", best5, NULL});
  if (r.exit_code != 0) fail_msg("resume as told: exit %d: %s", r.exit_code, r.err);
  if (strstr(r.err, "nothing written")) fail_msg("the resume as told loses the best weights:\n%s", r.err);
  if (strstr(r.err, "in the checkpoint's")) fail_msg("the resume as told warns:\n%s", r.err);
}

/* FILE.seedN is found for any seed, not only N < 1000: --seeds 1000,1001 writes
 * c.ckpt.seed1000 and c.ckpt.seed1001, and info, predict and --resume given c.ckpt name
 * one of them (the search had tried .seed0 to .seed999 only). */
static void seeds_large_hint(void **state) {
  (void)state;
  char ck[300], seed[320], out[320];
  snprintf(ck, sizeof ck, "%s/large.ckpt", tmpdir);
  snprintf(seed, sizeof seed, "%s.seed1000", ck);
  snprintf(out, sizeof out, "%s/large.npy", tmpdir);
  static struct run_out r;
  run(&r, (const char *const[]){"--graph", "synth:tiny", "--epochs", "1", "--device", "cpu", "--threads", "1",
                                "--quiet", "--seeds", "1000,1001", "--checkpoint", ck, NULL});
  if (r.exit_code != 0) fail_msg("train: exit %d: %s", r.exit_code, r.err);
  struct stat sb;
  assert_int_equal(stat(seed, &sb), 0);
  char want[400];
  snprintf(want, sizeof want, "a --seeds run writes one checkpoint per seed: %s, ...", seed);
  expect_error(1, want, NULL, (const char *const[]){"info", ck, NULL});
  snprintf(want, sizeof want, "a --seeds run writes one file per seed: %s, ...", seed);
  expect_error(1, want, NULL, (const char *const[]){"predict", "--checkpoint", ck, "--output", out, NULL});
  expect_error(1, want, NULL,
               (const char *const[]){"--graph", "synth:tiny", "--epochs", "2", "--threads", "1", "--resume", ck, NULL});
}

static void seeds_and_lines(void **state) {
  (void)state;
  char met[300], best[300], b1[320], b2[320];
  snprintf(met, sizeof met, "%s/s.jsonl", tmpdir);
  snprintf(best, sizeof best, "%s/sb.ckpt", tmpdir);
  snprintf(b1, sizeof b1, "%s.seed4", best);
  snprintf(b2, sizeof b2, "%s.seed9", best);
  static struct run_out r;
  run(&r, (const char *const[]){"--graph", "synth:tiny", "--epochs", "7", "--log-every", "3", "--device", "cpu",
                                "--threads", "1", "--seeds", "4,9", "--metrics", met, "--save-best", best, NULL});
  if (r.exit_code != 0) fail_msg("train: exit %d: %s", r.exit_code, r.err);
  /* per run: epochs 1, 3, 6 and 7 (the last), the closing "done" and "wrote" lines */
  assert_int_equal(count(r.err, "[vm:0 progress] training  ") + count(r.err, "progress] training  "), 2 * 2 * 4);
  assert_int_equal(count(r.err, "1 / 7 epochs"), 2);
  assert_int_equal(count(r.err, "3 / 7 epochs"), 2);
  assert_int_equal(count(r.err, "6 / 7 epochs"), 2);
  assert_int_equal(count(r.err, "7 / 7 epochs"), 2);
  assert_int_equal(count(r.err, "2 / 7 epochs"), 0);
  assert_int_equal(count(r.err, "training wrote: metrics"), 2);
  assert_non_null(strstr(r.out, "test acc at best val"));
  struct stat sb;
  assert_int_equal(stat(b1, &sb), 0);
  assert_int_equal(stat(b2, &sb), 0);
  { /* predict given the name without its seed: says which files there are */
    char out[320];
    snprintf(out, sizeof out, "%s.npy", best);
    expect_error(1, "a --seeds run writes one file per seed", NULL,
                 (const char *const[]){"predict", "--checkpoint", best, "--output", out, NULL});
    expect_error(2, "predict writes NumPy .npy files", NULL,
                 (const char *const[]){"predict", "--checkpoint", b1, "--output", "x.csv", NULL});
    /* ... and so does info (not how to get a dataset of that name) */
    expect_error(1, "no such file (a --seeds run writes one checkpoint per seed: ", NULL,
                 (const char *const[]){"info", best, NULL});
  }
  int nsum = 0, nagg = 0;
  cJSON *s = record(met, "summary", &nsum);
  cJSON *a = record(met, "aggregate", &nagg);
  assert_int_equal(nsum, 2);
  assert_int_equal(nagg, 1);
  assert_non_null(a);
  assert_int_equal(cJSON_GetObjectItemCaseSensitive(a, "runs")->valueint, 2);
  cJSON *t = cJSON_GetObjectItemCaseSensitive(a, "test_acc_at_best_val");
  assert_non_null(t);
  cJSON *vals = cJSON_GetObjectItemCaseSensitive(t, "values");
  assert_int_equal(cJSON_GetArraySize(vals), 2);
  const double x = cJSON_GetArrayItem(vals, 0)->valuedouble, y = cJSON_GetArrayItem(vals, 1)->valuedouble;
  const double mean = cJSON_GetObjectItemCaseSensitive(t, "mean")->valuedouble;
  const double sd = cJSON_GetObjectItemCaseSensitive(t, "std")->valuedouble;
  assert_true(fabs(mean - 0.5 * (x + y)) < 1e-12);
  assert_true(fabs(sd - 0.5 * fabs(x - y)) < 1e-12); /* population std of two values */
  /* the last summary is seed 9's, with its own result */
  assert_int_equal(cJSON_GetObjectItemCaseSensitive(s, "seed")->valueint, 9);
  assert_true(cJSON_GetObjectItemCaseSensitive(s, "test_acc_at_best_val")->valuedouble == y);
  printf("  --seeds 4,9: test acc %.4f, %.4f: mean %.4f std %.4f\n", x, y, mean, sd);
  cJSON_Delete(s);
  cJSON_Delete(a);
  { /* every epoch record names its run's seed: 7 of seed 4, then 7 of seed 9 */
    cJSON *all = records(met);
    int n = 0;
    const cJSON *o;
    cJSON_ArrayForEach(o, all) {
      if (!cJSON_GetObjectItemCaseSensitive(o, "epoch") || cJSON_GetObjectItemCaseSensitive(o, "summary")) continue;
      const cJSON *seed = cJSON_GetObjectItemCaseSensitive(o, "seed");
      assert_true(cJSON_IsNumber(seed));
      assert_int_equal(seed->valueint, n < 7 ? 4 : 9);
      n++;
    }
    cJSON_Delete(all);
    assert_int_equal(n, 14);
  }
  /* --quiet: no progress lines at all */
  run(&r, (const char *const[]){"--graph", "synth:tiny", "--epochs", "3", "--device", "cpu", "--threads", "1",
                                "--quiet", NULL});
  assert_int_equal(r.exit_code, 0);
  assert_int_equal(count(r.err, "progress]"), 0);
}

static void usage_errors(void **state) {
  (void)state;
  expect_error(2, "expected adam, adamw or sgd", NULL, (const char *const[]){"--optimizer", "sgdd", NULL});
  expect_error(2, "--momentum", NULL, (const char *const[]){"--optimizer", "sgd", "--momentum", "1", NULL});
  expect_error(2, "--optimizer sgd only", NULL, (const char *const[]){"--momentum", "0.9", NULL});
  expect_error(2, "expected none, step or cosine", NULL, (const char *const[]){"--lr-schedule", "linear", NULL});
  expect_error(2, "--lr-step-size", NULL, (const char *const[]){"--lr-schedule", "step", NULL});
  expect_error(2, "--lr-gamma", NULL, (const char *const[]){"--lr-gamma", "0", NULL});
  expect_error(2, "--lr-warmup", NULL, (const char *const[]){"--lr-warmup", "300", NULL});
  /* one schedule's or model's settings with another: refused, not ignored */
  expect_error(2, "--lr-gamma applies to --lr-schedule step, and this run is --lr-schedule none", NULL, (const char *const[]){"--lr-gamma", "0.5", NULL});
  expect_error(2, "--lr-step-size applies to --lr-schedule step, and this run is --lr-schedule cosine", NULL,
               (const char *const[]){"--lr-schedule", "cosine", "--lr-step-size", "3", NULL});
  expect_error(2, "--lr-epochs applies to --lr-schedule cosine", NULL,
               (const char *const[]){"--lr-schedule", "step", "--lr-step-size", "3", "--lr-epochs", "50", NULL});
  expect_error(2, "--heads applies to --model gat, and this run is --model sage", NULL,
               (const char *const[]){"--model", "sage", "--heads", "4", NULL});
  expect_error(2, "--attn-dropout applies to --model gat", NULL, (const char *const[]){"--attn-dropout", "0.2", NULL});
  expect_error(2, "--seed applies to a single run (without --seeds), and this run is --seeds", NULL, (const char *const[]){"--seed", "5", "--seeds", "1,2", NULL});
  /* (under a launcher: one process trains without the cache, and is let run) */
  expect_error(2, "--reorder cluster with --cache-policy jaca", "OMPI_COMM_WORLD_SIZE=2",
               (const char *const[]){"--reorder", "cluster", "--cache-policy", "jaca", NULL});
  expect_error(2, "a one-layer model has none", "OMPI_COMM_WORLD_SIZE=2",
               (const char *const[]){"--layers", "1", "--cache-policy", "jaca", NULL});
  expect_error(2, "full-precision rows, so it cannot take --cache-preset fast's --halo-bits", NULL,
               (const char *const[]){"--cache-preset", "fast", "--staleness", "adaptive", NULL});
  expect_error(2, "--grad-staleness adaptive sends full-precision gradients", NULL,
               (const char *const[]){"--cache-policy", "jaca", "--halo-bits", "8", "--grad-staleness", "adaptive",
                                     NULL});
  /* control bytes a user typed are shown escaped, never raw on the terminal: an option's
   * value in a usage error, a file name in an error of the run */
  static struct run_out e;
  run(&e, (const char *const[]){"--optimizer", "ad\x1b" "am", NULL});
  assert_int_equal(e.exit_code, 2);
  assert_non_null(strstr(e.err, "capgnn: error: --optimizer 'ad\\x1bam': expected adam"));
  assert_null(strpbrk(e.err, "\x1b\x07"));
  run(&e, (const char *const[]){"--graph", "no\x1b[31mRED\x07such", "--epochs", "1", NULL});
  assert_int_equal(e.exit_code, 1);
  assert_non_null(strstr(e.err, "capgnn: error: graph 'no\\x1b[31mRED\\x07such' not found"));
  assert_null(strpbrk(e.err, "\x1b\x07"));
  /* a device-only option on a CPU run: refused, as --gpu-share is (it was ignored on one rank) */
  expect_error(2, "--comm nccl applies to GPU ranks", NULL,
               (const char *const[]){"--device", "cpu", "--comm", "nccl", "--graph", "synth:tiny", NULL});
  expect_error(2, "--early-stop", NULL, (const char *const[]){"--early-stop", "-1", NULL});
  expect_error(2, "expected patience, window or gat", NULL, (const char *const[]){"--early-stop-rule", "mean", NULL});
  /* a bad CAPGNN_CPU_GEMM (or other CPU backend setting) is refused at start, before the
   * graph opens (it was named only once the graph had loaded and the backend was made, and
   * an unknown CAPGNN_CPU_KERNELS was read as auto: here, a graph that is not there) */
  expect_error(2, "CAPGNN_CPU_KERNELS=foo: expected auto or generic", "CAPGNN_CPU_KERNELS=foo",
               (const char *const[]){"--graph", "/nonexistent/none.cgr", "--epochs", "1", NULL});
  expect_error(2, "CAPGNN_CPU_SPMM=foo: expected auto, csr or tiled", "CAPGNN_CPU_SPMM=foo",
               (const char *const[]){"--graph", "/nonexistent/none.cgr", "--epochs", "1", NULL});
  expect_error(2, "CAPGNN_CPU_SPMM_PANEL=64: expected 16 or 32", "CAPGNN_CPU_SPMM_PANEL=64",
               (const char *const[]){"--graph", "/nonexistent/none.cgr", "--epochs", "1", NULL});
  expect_error(2, "CAPGNN_CPU_GEMM=foo: expected auto, openblas or onednn", "CAPGNN_CPU_GEMM=foo",
               (const char *const[]){"--graph", "/nonexistent/none.cgr", "--epochs", "1", NULL});
  expect_error(2, "CAPGNN_CPU_GEMM=foo: expected auto, openblas or onednn", "CAPGNN_CPU_GEMM=foo",
               (const char *const[]){"predict", "--checkpoint", "/nonexistent/none.ckpt", "--graph",
                                     "/nonexistent/none.cgr", "-o", "/nonexistent/out.npy", NULL});
  /* a bad CAPGNN_EMULATE_SPEED is refused at start too (it was named only once the graph
   * had loaded and the backend was made); the number of values waits for the ranks */
  expect_error(2, "CAPGNN_EMULATE_SPEED='foo': value number 1 in the list, 'foo', is not a speed",
               "CAPGNN_EMULATE_SPEED=foo", (const char *const[]){"--graph", "/nonexistent/none.cgr", "--epochs", "1", NULL});
  expect_error(2, "CAPGNN_EMULATE_SPEED='1,': value number 2 in the list, '', is not a speed",
               "CAPGNN_EMULATE_SPEED=1,", (const char *const[]){"--graph", "/nonexistent/none.cgr", "--epochs", "1", NULL});
  /* a rule without --early-stop N stops nothing: refused, not ignored (from a settings
   * file, run with --early-stop 0: left out with a note, below) */
  expect_error(2, "--early-stop-rule applies to --early-stop N, and this run is without early stopping", NULL,
               (const char *const[]){"--early-stop-rule", "gat", NULL});
  { /* a schedule longer than the run (kept for a --resume): allowed, and its end said once
     * (it ended below --lr silently) */
    static struct run_out w;
    run(&w, (const char *const[]){"--graph", "synth:tiny", "--epochs", "3", "--lr-warmup", "4", "--lr-schedule",
                                  "cosine", "--lr-epochs", "6", "--device", "cpu", "--threads", "1", "--quiet", NULL});
    assert_int_equal(w.exit_code, 0);
    if (count(w.err, "note: the warm-up (4 epochs) is longer than this run (--epochs 3): the learning rate ends at "
                     "0.0075 of --lr 0.01") != 1)
      fail_msg("no note on the warm-up longer than the run: %s", w.err);
    run(&w, (const char *const[]){"--graph", "synth:tiny", "--epochs", "3", "--lr-warmup", "3", "--lr-schedule",
                                  "cosine", "--lr-epochs", "6", "--device", "cpu", "--threads", "1", "--quiet", NULL});
    assert_int_equal(w.exit_code, 0);
    if (count(w.err, "note: the warm-up (3 epochs) is as long as this run (--epochs 3): the learning rate ends at "
                     "0.01 of --lr 0.01") != 1) /* (it said 'longer than') */
      fail_msg("no note on the warm-up as long as the run: %s", w.err);
    run(&w, (const char *const[]){"--graph", "synth:tiny", "--epochs", "3", "--lr-schedule", "cosine", "--lr-epochs",
                                  "5", "--device", "cpu", "--threads", "1", "--quiet", NULL});
    assert_int_equal(w.exit_code, 0);
    if (count(w.err, "note: the schedule spans 5 epochs (--lr-epochs) and this run 3 (--epochs): the learning rate "
                     "ends at 0.00654508 of --lr 0.01") != 1)
      fail_msg("no note on the schedule longer than the run: %s", w.err);
    run(&w, (const char *const[]){"--graph", "synth:tiny", "--epochs", "3", "--lr-warmup", "1", "--lr-schedule",
                                  "cosine", "--device", "cpu", "--threads", "1", "--quiet", NULL});
    assert_int_equal(w.exit_code, 0);
    if (strstr(w.err, "note: the")) fail_msg("a note on a schedule that fits the run: %s", w.err);
  }
  { /* early stopping that can never act (its patience counts evaluations): warned */
    static struct run_out w;
    run(&w, (const char *const[]){"--graph", "synth:tiny", "--epochs", "6", "--eval-every", "4", "--early-stop", "2",
                                  "--device", "cpu", "--threads", "1", "--quiet", NULL});
    assert_int_equal(w.exit_code, 0);
    if (!strstr(w.err, "--early-stop 2 counts evaluations, and --epochs 6 with --eval-every 4 makes 2: early "
                       "stopping cannot end this run"))
      fail_msg("no warning that early stopping cannot act:\n%s", w.err);
    run(&w, (const char *const[]){"--graph", "synth:tiny", "--epochs", "12", "--eval-every", "4", "--early-stop", "2",
                                  "--device", "cpu", "--threads", "1", "--quiet", NULL});
    assert_int_equal(w.exit_code, 0);
    assert_null(strstr(w.err, "counts evaluations"));
  }
  /* the default rule named explicitly is no different: it still has nothing to stop */
  expect_error(2, "--early-stop-rule applies to --early-stop N, and this run is without early stopping", NULL,
               (const char *const[]){"--early-stop-rule", "patience", NULL});
  /* one layer has no hidden layer: its width and LayerNorm are refused, not shown and ignored */
  expect_error(2, "--hidden applies to --layers 2 or more, and this run is --layers 1", NULL,
               (const char *const[]){"--layers", "1", "--hidden", "64", NULL});
  expect_error(2, "--layernorm applies to --layers 2 or more, and this run is --layers 1", NULL,
               (const char *const[]){"--layers", "1", "--layernorm", NULL});
  expect_error(2, "did you mean '--early-stop'", NULL, (const char *const[]){"--early-stp", "3", NULL});
  expect_error(2, "--seeds", NULL, (const char *const[]){"--seeds", "1,,2", NULL});
  expect_error(2, "given twice", NULL, (const char *const[]){"--seeds", "1,2,1", NULL});
  expect_error(2, "exclude each other", NULL, (const char *const[]){"--seeds", "1,2", "--resume", "x.ckpt", NULL});
  expect_error(2, "--log-every", NULL, (const char *const[]){"--log-every", "-2", NULL});
  /* --save-best follows the output rule, before anything trains */
  char same[300];
  snprintf(same, sizeof same, "%s/same.out", tmpdir);
  expect_error(1, "name the same file", NULL,
               (const char *const[]){"--graph", "synth:tiny", "--metrics", same, "--save-best", same, NULL});
  FILE *o = fopen(same, "w");
  assert_non_null(o);
  fputs("someone's notes\n", o);
  fclose(o);
  expect_error(1, "--save-best", NULL, (const char *const[]){"--graph", "synth:tiny", "--save-best", same, NULL});
  /* a settings file takes the new keys as the command line does */
  char ini[300];
  snprintf(ini, sizeof ini, "%s/es.ini", tmpdir);
  FILE *f = fopen(ini, "w");
  assert_non_null(f);
  fprintf(f, "[training]\noptimizer = sgd\nmomentum = 0.9\nlr-schedule = cosine\nearly-stop = 7\n"
             "early-stop-rule = window\nseeds = 1,2\n[output]\nlog-every = 5\nsave-best = b.ckpt\n");
  fclose(f);
  static struct run_out r;
  run(&r, (const char *const[]){"--config", ini, "--print-config", NULL});
  assert_int_equal(r.exit_code, 0);
  static const char *want[] = {"optimizer = sgd", "momentum = 0.9", "lr-schedule = cosine", "early-stop = 7",
                               "early-stop-rule = window", "seeds = 1,2", "log-every = 5", "save-best = b.ckpt"};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
    if (!strstr(r.out, want[i])) fail_msg("--print-config lacks '%s':\n%s", want[i], r.out);
  /* a GAT settings file run with --model gcn: the command line wins, the file's GAT and
   * step-schedule settings are left out with a note (given on the command line they are
   * refused, above) */
  char gat_ini[300];
  snprintf(gat_ini, sizeof gat_ini, "%s/gat.ini", tmpdir);
  f = fopen(gat_ini, "w");
  assert_non_null(f);
  fprintf(f, "[model]\nmodel = gat\nheads = 4\nattn-dropout = 0.3\n[training]\nlr-schedule = step\n"
             "lr-step-size = 5\nlr-gamma = 0.5\nseed = 7\n");
  fclose(f);
  run(&r, (const char *const[]){"--config", gat_ini, "--model", "gcn", "--lr-schedule", "none", "--seeds", "1,2",
                                "--print-config", NULL});
  if (r.exit_code != 0) fail_msg("a GAT file with --model gcn: exit %d: %s", r.exit_code, r.err);
  assert_non_null(strstr(r.err, "--heads from "));
  assert_non_null(strstr(r.err, "applies to --model gat, and this run is --model gcn: left out"));
  assert_non_null(strstr(r.err, "--lr-gamma from "));
  assert_non_null(strstr(r.err, "--seed from "));
  assert_null(strstr(r.out, "heads = 4"));
  assert_null(strstr(r.out, "lr-gamma"));
  /* configs/cora.ini's early stopping turned off on the command line: its rule goes too */
  run(&r, (const char *const[]){"--config", ini, "--early-stop", "0", "--print-config", NULL});
  if (r.exit_code != 0) fail_msg("--early-stop 0 with a file's rule: exit %d: %s", r.exit_code, r.err);
  assert_non_null(strstr(r.err, "--early-stop-rule from "));
  assert_null(strstr(r.out, "early-stop-rule"));
  /* a value a settings file would cut at " #" is written quoted, so the file reads back */
  run(&r, (const char *const[]){"--graph", "data/a #b.cgr", "--print-config", NULL});
  assert_int_equal(r.exit_code, 0);
  assert_non_null(strstr(r.out, "graph = \"data/a #b.cgr\"\n"));
  /* a newline in a value would start another setting in the file: written escaped */
  run(&r, (const char *const[]){"--graph", "x\nepochs = 999", "--print-config", NULL});
  assert_int_equal(r.exit_code, 0);
  if (strstr(r.out, "\nepochs = 999")) fail_msg("a value's newline started a line:\n%s", r.out);
  assert_non_null(strstr(r.out, "graph = \"x\\x0aepochs = 999\"\n"));
  assert_non_null(strstr(r.err, "holds control characters"));
  /* switches: a later file's false turns off an earlier file's true, the command line's
   * --SWITCH=false a file's true, and the command line's --part-cache a file's
   * no-part-cache (not "exclude each other"); a false no-part-cache keeps the folder */
  char sw_a[300], sw_b[300], sw_pc[300];
  snprintf(sw_a, sizeof sw_a, "%s/sw_a.ini", tmpdir);
  snprintf(sw_b, sizeof sw_b, "%s/sw_b.ini", tmpdir);
  snprintf(sw_pc, sizeof sw_pc, "%s/sw_pc.ini", tmpdir);
  f = fopen(sw_a, "w");
  assert_non_null(f);
  fprintf(f, "[model]\nlayernorm = true\n[output]\nquiet = true\n[parallel]\nno-part-cache = true\n");
  fclose(f);
  f = fopen(sw_b, "w");
  assert_non_null(f);
  fprintf(f, "[model]\nlayernorm = false\n");
  fclose(f);
  f = fopen(sw_pc, "w");
  assert_non_null(f);
  fprintf(f, "part-cache = pc-dir\nno-part-cache = false\n");
  fclose(f);
  run(&r, (const char *const[]){"--config", sw_a, "--config", sw_b, "--print-config", NULL});
  if (r.exit_code != 0) fail_msg("a.ini then b.ini: exit %d: %s", r.exit_code, r.err);
  assert_non_null(strstr(r.out, "layernorm = false\n"));
  assert_non_null(strstr(r.out, "quiet = true\n"));
  assert_non_null(strstr(r.out, "no-part-cache = true\n"));
  run(&r, (const char *const[]){"--config", sw_a, "--layernorm=false", "--quiet=off", "--part-cache", "cli-dir",
                                "--print-config", NULL});
  if (r.exit_code != 0) fail_msg("a.ini with the command line's switches: exit %d: %s", r.exit_code, r.err);
  assert_non_null(strstr(r.out, "layernorm = false\n"));
  assert_non_null(strstr(r.out, "quiet = false\n"));
  assert_non_null(strstr(r.out, "part-cache = cli-dir\n"));
  assert_null(strstr(r.out, "no-part-cache"));
  run(&r, (const char *const[]){"--config", sw_b, "--layernorm=true", "--print-config", NULL});
  assert_int_equal(r.exit_code, 0);
  assert_non_null(strstr(r.out, "layernorm = true\n"));
  run(&r, (const char *const[]){"--config", sw_a, "--config", sw_pc, "--print-config", NULL});
  if (r.exit_code != 0) fail_msg("a.ini then pc.ini: exit %d: %s", r.exit_code, r.err);
  assert_non_null(strstr(r.out, "part-cache = pc-dir\n"));
  assert_null(strstr(r.out, "no-part-cache"));
  /* both on the command line still exclude each other */
  expect_error(2, "exclude each other", NULL, (const char *const[]){"--part-cache", "d", "--no-part-cache", NULL});
}

/* A graph of one class, or a train split of one class, trains to a trivial model: one
 * warning at set-up naming the class count and the split; none for a graph whose train
 * vertices have several classes. Multi-label: train targets all 0 the same way. */
static void one_class_warned(void **state) {
  (void)state;
  struct graph g;
  assert_int_equal(graph_synth("synth:tiny", &g), CG_OK);
  char one[300], train1[300], ml0[300];
  snprintf(one, sizeof one, "%s/one-class.cgr", tmpdir);
  snprintf(train1, sizeof train1, "%s/train-one-class.cgr", tmpdir);
  snprintf(ml0, sizeof ml0, "%s/ml-zero.cgr", tmpdir);
  for (int64_t i = 0; i < g.n; i++) /* the train split: class 1 only */
    if (g.split[i] == GRAPH_SPLIT_TRAIN) g.labels[i] = 1;
  graph_checksum_update(&g);
  assert_int_equal(graph_save_cgr(train1, &g), CG_OK);
  for (int64_t i = 0; i < g.n; i++)
    if (g.labels[i] >= 0) g.labels[i] = 0;
  g.num_classes = 1;
  graph_checksum_update(&g);
  assert_int_equal(graph_save_cgr(one, &g), CG_OK);
  graph_free(&g);
  assert_int_equal(graph_synth("synth:tiny:multilabel=1", &g), CG_OK);
  for (int64_t i = 0; i < g.n; i++)
    if (g.split[i] == GRAPH_SPLIT_TRAIN) memset(g.mlabels + i * g.num_classes, 0, (size_t)g.num_classes);
  graph_checksum_update(&g);
  assert_int_equal(graph_save_cgr(ml0, &g), CG_OK);
  graph_free(&g);
  static const struct {
    const char *graph, *want; /* want NULL: no warning */
  } cases[] = {{NULL, "has a single class (num_classes 1): its "},
               {NULL, "train vertices (split == 1) all have class 1, one of its "},
               {NULL, "train vertices (split == 1) is 0, in each of its "},
               {"synth:tiny", NULL}};
  const char *paths[3] = {one, train1, ml0};
  static struct run_out r;
  for (int k = 0; k < 4; k++) {
    const char *graph = k < 3 ? paths[k] : cases[k].graph;
    run(&r, (const char *const[]){"--graph", graph, "--epochs", "2", "--device", "cpu", "--threads", "1", NULL});
    printf("  %s -> exit %d\n%s", graph, r.exit_code, r.err);
    if (r.exit_code != 0) fail_msg("train --graph %s: exit %d: %s", graph, r.exit_code, r.err);
    if (cases[k].want) {
      if (count(r.err, cases[k].want) != 1) fail_msg("no one warning '%s' for %s:\n%s", cases[k].want, graph, r.err);
    } else if (strstr(r.err, "trivial") || strstr(r.err, "split == 1)")) {
      fail_msg("a warning for %s:\n%s", graph, r.err);
    }
  }
  /* --seeds trains the graph again in the same process: still one warning */
  run(&r, (const char *const[]){"--graph", one, "--epochs", "2", "--device", "cpu", "--threads", "1", "--seeds", "1,2,3",
                                NULL});
  if (r.exit_code != 0) fail_msg("train --graph %s --seeds 1,2,3: exit %d: %s", one, r.exit_code, r.err);
  if (count(r.err, cases[0].want) != 1) fail_msg("not one warning for three seeds:\n%s", r.err);
}

/* --seeds on data that cannot train (a missing graph, a truncated file): the data's
 * error and its hint alone, not a hint to run the other seeds, which would fail the
 * same way (it used to say "seeds 2,3 did not run (then run them with --seeds 2,3)"). */
static void seeds_data_error(void **state) {
  (void)state;
  struct graph g;
  assert_int_equal(graph_synth("synth:tiny", &g), CG_OK);
  char full[300], cut[300];
  snprintf(full, sizeof full, "%s/seeds-full.cgr", tmpdir);
  snprintf(cut, sizeof cut, "%s/seeds-cut.cgr", tmpdir);
  assert_int_equal(graph_save_cgr(full, &g), CG_OK);
  graph_free(&g);
  static char bytes[1 << 20];
  slurp(full, bytes, sizeof bytes); /* (binary: only its first half is written back) */
  struct stat sb;
  assert_int_equal(stat(full, &sb), 0);
  FILE *f = fopen(cut, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(bytes, 1, (size_t)sb.st_size / 2, f), (size_t)sb.st_size / 2);
  fclose(f);
  const char *graphs[2] = {"no-such-graph", cut};
  const char *want[2] = {"not found", "truncated or corrupt"};
  for (int k = 0; k < 2; k++) {
    static struct run_out r;
    run(&r, (const char *const[]){"--graph", graphs[k], "--seeds", "1,2,3", "--epochs", "2", "--device", "cpu",
                                  "--threads", "1", NULL});
    printf("  --graph %s --seeds 1,2,3 -> exit %d\n%s", graphs[k], r.exit_code, r.err);
    assert_int_equal(r.exit_code, 1);
    assert_int_equal(count(r.err, "error:"), 1);
    if (!strstr(r.err, want[k])) fail_msg("expected '%s' in: %s", want[k], r.err);
    if (strstr(r.err, "--seeds 2,3") || strstr(r.err, "did not run"))
      fail_msg("a hint about the seeds for a data error:\n%s", r.err);
  }
  /* a later run's set-up failure (its own --checkpoint FILE.seed2 is a folder): its seed
   * is among those to run again */
  char ck[300], ck2[310];
  snprintf(ck, sizeof ck, "%s/seeds-ck", tmpdir);
  snprintf(ck2, sizeof ck2, "%s.seed2", ck);
  assert_int_equal(mkdir(ck2, 0755), 0);
  static struct run_out r;
  run(&r, (const char *const[]){"--graph", "synth:tiny", "--seeds", "1,2", "--epochs", "2", "--device", "cpu",
                                "--threads", "1", "--checkpoint", ck, "--quiet", NULL});
  printf("  --seeds 1,2, FILE.seed2 a folder -> exit %d\n%s", r.exit_code, r.err);
  assert_int_equal(r.exit_code, 1);
  if (!strstr(r.err, "run 2 of 2 (seed 2) failed at set-up, as above: no mean +- std; seed 2 did not run (then run "
                     "it with --seeds 2)"))
    fail_msg("no word of seed 2 to run again:\n%s", r.err);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: test_train_cli PATH_TO_CAPGNN\n");
    return 2;
  }
  capgnn_path = argv[1];
  setvbuf(stdout, NULL, _IOLBF, 0); /* as test_cli: what a TIMEOUT kill would lose */
  const char *t = getenv("TMPDIR");
  snprintf(tmpdir, sizeof tmpdir, "%s/capgnn_test_train_cli_XXXXXX", t && t[0] ? t : "/tmp");
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    return 1;
  }
  const struct CMUnitTest tests[] = {cmocka_unit_test(predict_matches_training), cmocka_unit_test(best_off_schedule_and_diverged),
                                     cmocka_unit_test(predict_gat_heads), cmocka_unit_test(predict_multilabel_f1),
                                     cmocka_unit_test(predict_synth_spec), cmocka_unit_test(resume_warnings),
                                     cmocka_unit_test(resume_best_missing), cmocka_unit_test(resume_gemm),
                                     cmocka_unit_test(resume_metrics_repeat),
                                     cmocka_unit_test(resume_metrics_leftover),
                                     cmocka_unit_test(seeds_file_seed_cli),
                                     cmocka_unit_test(seeds_interrupted), cmocka_unit_test(seeds_and_lines),
                                     cmocka_unit_test(seeds_large_hint),
                                     cmocka_unit_test(one_class_warned), cmocka_unit_test(seeds_data_error),
                                     cmocka_unit_test(usage_errors)};
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
  return rc;
}
