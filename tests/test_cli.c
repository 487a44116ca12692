/* tests/test_cli.c — the `capgnn` command as a user meets it.
 * Usage: test_cli PATH_TO_CAPGNN
 * Bad options and bad files: the right exit code (2 usage, 1 runtime failure) and
 * exactly one "error:" line on stderr, never a crash. A 3-epoch synth:tiny run
 * writes a metrics file that parses as JSON Lines with the required keys and ends
 * with a summary object. */
#include <fcntl.h>
#include <glob.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>
#include "cli_test_util.h"


static const char *capgnn_path;
static char tmpdir[256];

struct run_out {
  int exit_code; /* -1 when killed by a signal */
  int signal;
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

/* Runs capgnn with the NULL-terminated argument list, capturing stdout and stderr. */
static void run_capgnn(struct run_out *r, const char *const *args) {
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
    execv(capgnn_path, (char *const *)argv);
    _exit(127);
  }
  int status = 0;
  assert_true(waitpid(pid, &status, 0) == pid);
  r->signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  r->exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  slurp(out_path, r->out, sizeof r->out);
  slurp(err_path, r->err, sizeof r->err);
}

static int count_error_lines(const char *s, const char **first) {
  int n = 0;
  *first = NULL;
  while (*s) {
    const char *eol = strchr(s, '\n');
    size_t len = eol ? (size_t)(eol - s) : strlen(s);
    char line[1024];
    snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line - 1 ? len : sizeof line - 1), s);
    if (strstr(line, "error:")) {
      if (!*first) *first = s;
      n++;
    }
    s += len + (eol ? 1 : 0);
  }
  return n;
}

static void expect_error(int code, const char *const *args) {
  static struct run_out r;
  run_capgnn(&r, args);
  printf("  capgnn");
  for (int i = 0; args[i]; i++) printf(" %s", args[i]);
  printf("  -> exit %d: %s", r.exit_code, r.err[0] ? r.err : "(no stderr)\n");
  if (r.signal) fail_msg("capgnn crashed with signal %d", r.signal);
  assert_int_equal(r.exit_code, code);
  const char *first = NULL;
  int n = count_error_lines(r.err, &first);
  if (n != 1) fail_msg("expected exactly one 'error:' line on stderr, got %d", n);
  assert_true(strncmp(first, "capgnn: error: ", 15) == 0);
}

static void bad_options(void **state) {
  (void)state;
  expect_error(2, (const char *const[]){"--layers", "0", NULL});
  expect_error(2, (const char *const[]){"train", "--layers", "0", NULL});
  expect_error(2, (const char *const[]){"--dropout", "1.5", NULL});
  expect_error(2, (const char *const[]){"--dropout", "-0.1", NULL});
  expect_error(2, (const char *const[]){"--input-dropout", "1", NULL});
  expect_error(2, (const char *const[]){"--input-dropout", "-0.5", NULL});
  expect_error(2, (const char *const[]){"--model", "foo", NULL});
  expect_error(2, (const char *const[]){"--model", "gat", "--heads", "0", NULL});
  expect_error(2, (const char *const[]){"--model", "gat", "--out-heads", "x", NULL});
  expect_error(2, (const char *const[]){"--model", "gat", "--attn-dropout", "1", NULL});
  expect_error(2, (const char *const[]){"--model", "gat", "--layernorm", NULL});
  expect_error(2, (const char *const[]){"--bogus", NULL});
  expect_error(2, (const char *const[]){"--epochs", "abc", NULL});
  expect_error(2, (const char *const[]){"--epochs", "0", NULL});
  expect_error(2, (const char *const[]){"--hidden", NULL});
  expect_error(2, (const char *const[]){"--hidden", "-3", NULL});
  expect_error(2, (const char *const[]){"--lr", "nan", NULL});
  expect_error(2, (const char *const[]){"--lr", "0", NULL});
  expect_error(2, (const char *const[]){"--seed", "-1", NULL});
  expect_error(2, (const char *const[]){"--feat-norm", "col", NULL});
  expect_error(2, (const char *const[]){"--device", "tpu", NULL});
  expect_error(2, (const char *const[]){"--eval-every", "0", NULL});
  expect_error(2, (const char *const[]){"--graph", "synth:tiny", "extra", NULL});
  expect_error(2, (const char *const[]){"frobnicate", NULL});
  expect_error(2, (const char *const[]){"--checkpoint-every", "3", NULL}); /* no --checkpoint */
  expect_error(2, (const char *const[]){"--checkpoint", "x.ckpt", "--checkpoint-every", "-1", NULL});
  expect_error(2, (const char *const[]){"--resume", "", NULL});
}

/* expect_error, and the error line contains `want`. */
static void expect_error_text(int code, const char *want, const char *const *args) {
  static struct run_out r;
  expect_error(code, args);
  run_capgnn(&r, args);
  if (!strstr(r.err, want)) fail_msg("the error does not contain \"%s\": %s", want, r.err);
}

/* Messages that say what the user wrote and what was meant (issue #18, item 7): the
 * closest option for a typo, as settings files already did; a value that a float
 * cannot hold as written, not the "inf" or "0" it would become. */
static void option_messages(void **state) {
  (void)state;
  expect_error_text(2, "unknown option '--epohcs'; did you mean '--epochs'?",
                    (const char *const[]){"--epohcs", "3", NULL});
  expect_error_text(2, "did you mean '--metrics'?", (const char *const[]){"--metrcs=m.jsonl", NULL});
  expect_error_text(2, "option '--lay' is ambiguous: it is the start of --layers, --layernorm, --layer0-halo",
                    (const char *const[]){"--lay", "3", NULL});
  expect_error_text(2, "did you mean '--quiet'?", (const char *const[]){"info", "--quite", "x", NULL});
  expect_error_text(2, "unknown command 'trian'; did you mean 'train'?", (const char *const[]){"trian", NULL});
  /* a control byte typed is shown escaped, not sent raw to the terminal */
  expect_error_text(2, "unknown command 'tr\\x1bain'; did you mean 'train'?",
                    (const char *const[]){"tr\x1b" "ain", NULL});
  expect_error_text(2, "unexpected argument 'x\\x1by'", (const char *const[]){"version", "x\x1by", NULL});
  /* the names of DGL's and PyG's example scripts get capgnn's */
  expect_error_text(2, "unknown option '--dataset'; did you mean '--graph'?",
                    (const char *const[]){"--dataset", "cora", NULL});
  expect_error_text(2, "unknown option '--num_layers'; did you mean '--layers'?",
                    (const char *const[]){"--num_layers", "3", NULL});
  expect_error_text(2, "unknown option '--num-heads'; did you mean '--heads'?",
                    (const char *const[]){"--num-heads", "4", NULL});
  expect_error_text(2, "unknown option '--patience'; did you mean '--early-stop'?",
                    (const char *const[]){"--patience", "10", NULL});
  expect_error_text(2, "unknown option '--dataset'; did you mean '--graph'?",
                    (const char *const[]){"partition", "--dataset", "cora", NULL});
  /* ... and their abbreviations of capgnn's options (getopt takes a unique prefix) say
   * what they became: --gpu is not --gpu-share, --wd not --wd-scope */
  expect_error_text(2, "--gpu: capgnn has no --gpu; --device cuda trains on a GPU",
                    (const char *const[]){"--gpu", "0", NULL});
  expect_error_text(2, "--gpu: capgnn has no --gpu", (const char *const[]){"--gpu=1", NULL});
  expect_error_text(2, "--wd-scope '5e-4': expected all or first (a number: the weight decay itself is "
                       "--weight-decay)", (const char *const[]){"--wd", "5e-4", NULL});
  expect_error_text(2, "--lr '1e300': out of range", (const char *const[]){"--lr", "1e300", NULL});
  expect_error_text(2, "--lr '1e-50': too close to 0", (const char *const[]){"--lr", "1e-50", NULL});
  expect_error_text(2, "--dropout 0.99999999999: expected a probability",
                    (const char *const[]){"--dropout", "0.99999999999", NULL});
  expect_error_text(2, "--weight-decay '1e39': out of range", (const char *const[]){"--weight-decay", "1e39", NULL});
  static struct run_out r;
  run_capgnn(&r, (const char *const[]){"--lr", "1e300", NULL});
  assert_null(strstr(r.err, "inf"));
  /* the partitioning options have the same names in train and partition (item 8) */
  run_capgnn(&r, (const char *const[]){"--method", "random", "--cache", "/tmp/pc", "--print-config", NULL});
  assert_int_equal(r.exit_code, 0);
  assert_non_null(strstr(r.out, "partition = random\n"));
  assert_non_null(strstr(r.out, "part-cache = /tmp/pc\n"));
  run_capgnn(&r, (const char *const[]){"--no-cache", "--part-seed", "4", "--print-config", NULL});
  assert_int_equal(r.exit_code, 0);
  assert_non_null(strstr(r.out, "part-seed = 4\n"));
  assert_non_null(strstr(r.out, "no-part-cache = true\n"));
  run_capgnn(&r, (const char *const[]){"train", "--help", NULL});
  assert_non_null(strstr(r.out, "alias --method"));
  assert_non_null(strstr(r.out, "alias --cache"));
  /* partition: the canonical and the alias names give the same partition */
  static char canon[65536];
  run_capgnn(&r, (const char *const[]){"partition", "--graph", "synth:tiny", "--parts", "3", "--partition", "random",
                                       "--part-seed", "7", "--no-part-cache", "--quiet", NULL});
  assert_int_equal(r.exit_code, 0);
  snprintf(canon, sizeof canon, "%s", r.out);
  run_capgnn(&r, (const char *const[]){"partition", "--graph", "synth:tiny", "--parts", "3", "--method", "random",
                                       "--seed", "7", "--no-cache", "--quiet", NULL});
  assert_int_equal(r.exit_code, 0);
  assert_string_equal(canon, r.out);
  assert_non_null(strstr(canon, "random"));
  run_capgnn(&r, (const char *const[]){"partition", "--help", NULL});
  assert_non_null(strstr(r.out, "--part-seed N"));
  assert_non_null(strstr(r.out, "alias --seed"));
  expect_error_text(2, "--part-cache and --no-part-cache exclude each other",
                    (const char *const[]){"partition", "--graph", "synth:tiny", "--parts", "2", "--cache", "x",
                                          "--no-part-cache", NULL});
  /* partition's model options price the prediction (--profile, --partition rapa): without
   * one they would change nothing, so they are refused, not ignored */
  expect_error_text(2, "--hidden sets the model the predicted epoch prices, and there is no prediction without "
                       "--profile FILE or --partition rapa",
                    (const char *const[]){"partition", "--graph", "synth:tiny", "--parts", "2", "--hidden", "32",
                                          NULL});
  expect_error_text(2, "--model sets the model",
                    (const char *const[]){"partition", "--graph", "synth:tiny", "--parts", "2", "--model", "sage",
                                          NULL});
}

static void bad_files(void **state) {
  (void)state;
  expect_error(1, (const char *const[]){"--graph", "/nonexistent/dir/x.cgr", "--epochs", "1", NULL});
  char junk[300];
  snprintf(junk, sizeof junk, "%s/junk.cgr", tmpdir);
  FILE *f = fopen(junk, "wb");
  assert_non_null(f);
  fputs("this is not a CGR file, just some text that is long enough to be read", f);
  fclose(f);
  expect_error(1, (const char *const[]){"--graph", junk, "--epochs", "1", NULL});
  expect_error(1, (const char *const[]){"--graph", "synth:nosuchpreset", "--epochs", "1", NULL});
  expect_error(1, (const char *const[]){"--graph", "synth:tiny", "--epochs", "2", "--resume",
                                        "/nonexistent/dir/x.ckpt", NULL});
  expect_error(1, (const char *const[]){"--graph", "synth:tiny", "--epochs", "2", "--resume", junk, NULL});
  expect_error(1, (const char *const[]){"--graph", "synth:tiny", "--epochs", "1", "--metrics",
                                        "/nonexistent/dir/m.jsonl", NULL});
  /* '-' means standard output to a user (and to plan --json): refused, not a file named '-' */
  expect_error_text(1, "--metrics -: '-' is not standard output here; write /dev/stdout",
                    (const char *const[]){"--graph", "synth:tiny", "--epochs", "1", "--metrics", "-", NULL});
  expect_error_text(1, "--json -: '-' is not standard output here",
                    (const char *const[]){"partition", "--graph", "synth:tiny", "--parts", "2", "--json", "-", NULL});
}

static void help(void **state) {
  (void)state;
  static struct run_out r;
  run_capgnn(&r, (const char *const[]){"--help", NULL});
  assert_int_equal(r.exit_code, 0);
  assert_non_null(strstr(r.out, "--graph"));
  assert_non_null(strstr(r.out, "train"));
  run_capgnn(&r, (const char *const[]){"train", "--help", NULL});
  assert_int_equal(r.exit_code, 0);
  assert_non_null(strstr(r.out, "--eval-every"));
}

static const char *epoch_keys[] = {"epoch", "loss", "train_acc", "val_acc", "test_acc", "epoch_s",
                                   "compute_s", "comm_s", "comm_exposed_s", "comm_hidden_s",
                                   "halo_bytes", "cache_hit_rate"};
static const char *summary_keys[] = {"best_val_acc", "test_acc_at_best_val", "best_epoch", "epochs",
                                     "median_epoch_s", "median_comm_exposed_s", "median_comm_hidden_s",
                                     "peak_rss_bytes", "device", "model", "layers", "hidden", "seed",
                                     "overlap", "reorder", "reorder_applied", "reorder_ranks"};

static void train_metrics(void **state) {
  (void)state;
  char metrics[300];
  snprintf(metrics, sizeof metrics, "%s/metrics.jsonl", tmpdir);
  static struct run_out r;
  /* eval every 2 epochs: epoch 1 has nulls, 2 and 3 (the last) are evaluated */
  run_capgnn(&r, (const char *const[]){"train", "--graph", "synth:tiny", "--epochs", "3", "--seed", "3",
                                       "--device", "cpu", "--threads", "1", "--eval-every", "2",
                                       "--metrics", metrics, NULL});
  if (r.exit_code != 0) fail_msg("capgnn exited %d: %s", r.exit_code, r.err);
  const char *first = NULL;
  assert_int_equal(count_error_lines(r.err, &first), 0);
  static char buf[65536];
  slurp(metrics, buf, sizeof buf);
  int nlines = 0, nsummary = 0;
  char *save = NULL;
  for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    cJSON *o = cJSON_Parse(line);
    if (!o || !cJSON_IsObject(o)) fail_msg("line %d is not a JSON object: %s", nlines + 1, line);
    nlines++;
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "summary"))) {
      nsummary++;
      assert_int_equal(nlines, 4); /* the summary comes last */
      for (size_t k = 0; k < sizeof summary_keys / sizeof summary_keys[0]; k++)
        if (!cJSON_GetObjectItemCaseSensitive(o, summary_keys[k]))
          fail_msg("summary lacks key %s", summary_keys[k]);
      assert_int_equal(cJSON_GetObjectItemCaseSensitive(o, "epochs")->valueint, 3);
      assert_true(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(o, "best_val_acc")));
      assert_true(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(o, "test_acc_at_best_val")));
      assert_string_equal(cJSON_GetObjectItemCaseSensitive(o, "device")->valuestring, "cpu");
      assert_string_equal(cJSON_GetObjectItemCaseSensitive(o, "outcome")->valuestring, "completed");
      assert_string_equal(cJSON_GetObjectItemCaseSensitive(o, "reorder")->valuestring, "none");
      assert_string_equal(cJSON_GetObjectItemCaseSensitive(o, "reorder_applied")->valuestring, "none");
      assert_int_equal(cJSON_GetObjectItemCaseSensitive(o, "reorder_ranks")->valueint, 0);
    } else {
      for (size_t k = 0; k < sizeof epoch_keys / sizeof epoch_keys[0]; k++)
        if (!cJSON_GetObjectItemCaseSensitive(o, epoch_keys[k]))
          fail_msg("epoch line %d lacks key %s", nlines, epoch_keys[k]);
      assert_int_equal(cJSON_GetObjectItemCaseSensitive(o, "epoch")->valueint, nlines);
      assert_true(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(o, "loss")));
      assert_true(cJSON_GetObjectItemCaseSensitive(o, "epoch_s")->valuedouble > 0.0);
      const int evaluated = nlines >= 2;
      cJSON *acc = cJSON_GetObjectItemCaseSensitive(o, "val_acc");
      if (evaluated) {
        assert_true(cJSON_IsNumber(acc));
        assert_true(acc->valuedouble >= 0.0 && acc->valuedouble <= 1.0);
      } else {
        assert_true(cJSON_IsNull(acc));
      }
      assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(o, "cache_hit_rate")));
      assert_int_equal(cJSON_GetObjectItemCaseSensitive(o, "halo_bytes")->valueint, 0);
    }
    cJSON_Delete(o);
  }
  assert_int_equal(nlines, 4);
  assert_int_equal(nsummary, 1);
  /* the default command is train, and the same seed gives the same metrics values */
  char metrics2[300];
  snprintf(metrics2, sizeof metrics2, "%s/metrics2.jsonl", tmpdir);
  run_capgnn(&r, (const char *const[]){"--graph", "synth:tiny", "--epochs", "3", "--seed", "3",
                                       "--device", "cpu", "--threads", "1", "--eval-every", "2",
                                       "--quiet", "--metrics", metrics2, NULL});
  assert_int_equal(r.exit_code, 0);
  static char a[65536], b[65536];
  slurp(metrics, a, sizeof a);
  slurp(metrics2, b, sizeof b);
  char *sa = NULL, *sb = NULL;
  char *la = strtok_r(a, "\n", &sa), *lb = strtok_r(b, "\n", &sb);
  for (; la && lb; la = strtok_r(NULL, "\n", &sa), lb = strtok_r(NULL, "\n", &sb)) {
    cJSON *oa = cJSON_Parse(la), *ob = cJSON_Parse(lb);
    assert_non_null(oa);
    assert_non_null(ob);
    static const char *same[] = {"loss", "train_acc", "val_acc", "test_acc", "best_val_acc"};
    for (size_t k = 0; k < sizeof same / sizeof same[0]; k++) {
      cJSON *x = cJSON_GetObjectItemCaseSensitive(oa, same[k]);
      cJSON *y = cJSON_GetObjectItemCaseSensitive(ob, same[k]);
      if (!x) continue;
      assert_non_null(y);
      if (cJSON_IsNumber(x)) assert_true(x->valuedouble == y->valuedouble);
      else assert_true(cJSON_IsNull(y));
    }
    cJSON_Delete(oa);
    cJSON_Delete(ob);
  }
  assert_null(la);
  assert_null(lb);
}

/* The summary object (the last line) of a metrics file; NULL when there is none. */
static cJSON *last_summary(const char *path) {
  static char buf[1 << 20];
  slurp(path, buf, sizeof buf);
  cJSON *found = NULL;
  char *save = NULL;
  for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    cJSON *o = cJSON_Parse(line);
    if (o && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "summary"))) {
      cJSON_Delete(found);
      found = o;
    } else {
      cJSON_Delete(o);
    }
  }
  return found;
}

/* The summary says what --reorder applied: the method given, or what auto chose. */
static void train_reorder_metrics(void **state) {
  (void)state;
  char metrics[300];
  snprintf(metrics, sizeof metrics, "%s/metrics_reorder.jsonl", tmpdir);
  static struct run_out r;
  const char *methods[2] = {"cluster", "auto"};
  for (int k = 0; k < 2; k++) {
    run_capgnn(&r, (const char *const[]){"--graph", "synth:small:shuffle=1", "--epochs", "1", "--threads", "1",
                                         "--reorder", methods[k], "--quiet", "--force", "--metrics", metrics, NULL});
    if (r.exit_code != 0) fail_msg("capgnn --reorder %s exited %d: %s", methods[k], r.exit_code, r.err);
    cJSON *o = last_summary(metrics);
    if (!o) fail_msg("no summary in %s", metrics);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(o, "reorder")->valuestring, methods[k]);
    /* synth:small in a random order: auto applies the cluster order (its tiles' reuse gains) */
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(o, "reorder_applied")->valuestring, "cluster");
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(o, "reorder_ranks")->valueint, 1);
    cJSON_Delete(o);
  }
}

/* A run that diverges still writes its summary, saying so (issue #18, item 7). */
static void diverged_summary(void **state) {
  (void)state;
  char met[300];
  snprintf(met, sizeof met, "%s/diverged.jsonl", tmpdir);
  expect_error(1, (const char *const[]){"--graph", "synth:tiny", "--epochs", "50", "--lr", "1e30", "--threads",
                                        "1", "--quiet", "--metrics", met, NULL});
  cJSON *o = last_summary(met);
  assert_non_null(o);
  assert_string_equal(cJSON_GetObjectItemCaseSensitive(o, "outcome")->valuestring, "diverged");
  const int e = cJSON_GetObjectItemCaseSensitive(o, "epochs")->valueint;
  assert_true(e >= 1 && e < 50);
  assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(o, "final_loss")));
  printf("  diverged at epoch %d: summary written, outcome \"diverged\"\n", e);
  cJSON_Delete(o);
}

/* `capgnn partition` whose cache file cannot be saved (a folder in its place): it warns
 * and says "computed, not saved", not "computed". */
static void partition_not_saved(void **state) {
  (void)state;
  char cache[300];
  snprintf(cache, sizeof cache, "%s/pcache", tmpdir);
  static struct run_out r;
  run_capgnn(&r, (const char *const[]){"partition", "--graph", "synth:tiny", "--parts", "2", "--part-cache", cache,
                                       NULL});
  assert_int_equal(r.exit_code, 0);
  const char *at = strstr(r.out, "partition set: ");
  assert_non_null(at);
  char path[600];
  assert_int_equal(sscanf(at, "partition set: %599s", path), 1);
  assert_non_null(strstr(at, "(computed)"));
  run_capgnn(&r, (const char *const[]){"info", path, NULL}); /* info names the kind */
  assert_int_equal(r.exit_code, 1);
  assert_non_null(strstr(r.err, "a partition set from the partition cache"));
  assert_int_equal(unlink(path), 0);
  assert_int_equal(mkdir(path, 0755), 0); /* the file's place taken */
  run_capgnn(&r, (const char *const[]){"partition", "--graph", "synth:tiny", "--parts", "2", "--part-cache", cache,
                                       NULL});
  assert_int_equal(r.exit_code, 0);
  assert_non_null(strstr(r.err, "could not save the partition"));
  assert_non_null(strstr(r.err, "(--part-cache DIR or CAPGNN_CACHE puts the cache elsewhere)"));
  assert_non_null(strstr(r.out, "(computed, not saved)"));
  assert_int_equal(rmdir(path), 0);
}

/* `capgnn info` on a training checkpoint: its summary, exit 0; damaged: exit 1. */
static void checkpoint_info(void **state) {
  (void)state;
  char ck[300];
  snprintf(ck, sizeof ck, "%s/run.ckpt", tmpdir);
  struct run_out *r = malloc(sizeof *r);
  assert_non_null(r);
  run_capgnn(r, (const char *const[]){"--graph", "synth:tiny", "--epochs", "3", "--threads", "1",
                                      "--quiet", "--checkpoint", ck, NULL});
  assert_int_equal(r->exit_code, 0);
  run_capgnn(r, (const char *const[]){"info", ck, NULL});
  assert_int_equal(r->exit_code, 0);
  assert_non_null(strstr(r->out, "training checkpoint"));
  assert_non_null(strstr(r->out, "progress:   epoch 3 (3 optimizer steps)"));
  assert_non_null(strstr(r->out, "checksum:   OK"));
  assert_null(strstr(r->out, "schedule:")); /* none, and no warm-up */
  run_capgnn(r, (const char *const[]){"--graph", "synth:tiny", "--epochs", "3", "--threads", "1", "--lr-warmup", "2",
                                      "--quiet", "--checkpoint", ck, "--force", NULL});
  assert_int_equal(r->exit_code, 0);
  run_capgnn(r, (const char *const[]){"info", ck, NULL});
  assert_int_equal(r->exit_code, 0);
  if (!strstr(r->out, "schedule:   warm-up 2 epochs up to lr 0.01, then constant\n")) fail_msg("info: %s", r->out);
  run_capgnn(r, (const char *const[]){"--graph", "synth:tiny", "--epochs", "3", "--threads", "1", "--quiet",
                                      "--checkpoint", ck, "--force", NULL});
  assert_int_equal(r->exit_code, 0);
  FILE *f = fopen(ck, "r+b");
  assert_non_null(f);
  fseek(f, 100, SEEK_SET);
  fputc('#', f);
  fclose(f);
  run_capgnn(r, (const char *const[]){"info", ck, NULL});
  assert_int_equal(r->exit_code, 1);
  assert_non_null(strstr(r->out, "checksum:   FAILED"));
  free(r);
}

/* Counts of one say it in the singular: "1 class", "1 feature", not "1 classes". */
static void singular_counts(void **state) {
  (void)state;
  char path[300];
  snprintf(path, sizeof path, "%s/one.cgr", tmpdir);
  struct run_out *r = malloc(sizeof *r);
  assert_non_null(r);
  run_capgnn(r, (const char *const[]){"gen", "synth:tiny:classes=1,feats=1", "-o", path, "--quiet", NULL});
  assert_int_equal(r->exit_code, 0);
  if (!strstr(r->out, ", 1 feature, 1 class;")) fail_msg("gen: %s", r->out);
  run_capgnn(r, (const char *const[]){"info", path, NULL});
  assert_int_equal(r->exit_code, 0);
  if (!strstr(r->out, "labels:     1 class, single-label; 0 vertices unlabelled")) fail_msg("info: %s", r->out);
  run_capgnn(r, (const char *const[]){"--graph", path, "--epochs", "1", "--threads", "1", NULL});
  assert_int_equal(r->exit_code, 0);
  if (!strstr(r->err, ", 1 feature, 1 class;")) fail_msg("train: %s", r->err);
  assert_int_equal(unlink(path), 0);
  /* one vertex: no validation or test vertex; the closing line says so, not "test acc nan" */
  run_capgnn(r, (const char *const[]){"--graph", "synth:tiny:nodes=1", "--epochs", "1", "--threads", "1", NULL});
  assert_int_equal(r->exit_code, 0);
  if (!strstr(r->err, "no best epoch; final train acc ") || !strstr(r->err, ", no test vertices; median epoch"))
    fail_msg("train: %s", r->err);
  free(r);
}

/* Starts a training run (args[0] is capgnn) and returns once its metrics file has a
 * record: the training loop is running. The first record takes about 0.3 s of the child's
 * CPU; it is allowed 60 s of CPU, however long a loaded machine makes it wait for them
 * (the 30 s of wall clock waited before ran out on a loaded machine, and the child, left
 * running, kept ctest waiting on its output pipe until the TIMEOUT). */
static pid_t spawn_training(const char *const *args, const char *met, const char *err_path) {
  const pid_t pid = cli_spawn(capgnn_path, args, err_path);
  assert_true(pid >= 0);
  int status = 0;
  if (!cli_wait_metrics_started(pid, met, 60.0, &status)) {
    static char err[4096];
    slurp(err_path, err, sizeof err);
    fail_msg("the run never started training; its stderr:\n%s", err);
  }
  return pid;
}

/* A one-process run starts no MPI daemon: without a launcher Open MPI forks an orted of its
 * own (0.1 s of every small run) unless told not to (mpi/comm.c, singleton_without_daemon).
 * While the run trains, none of its descendants may be an orted. */
static void one_process_no_daemon(void **state) {
  (void)state;
  char met[300], err_path[300];
  snprintf(met, sizeof met, "%s/nodaemon.jsonl", tmpdir);
  snprintf(err_path, sizeof err_path, "%s/nodaemon.err", tmpdir);
  unsetenv("OMPI_MCA_ess_singleton_isolated"); /* the default, whatever ctest's environment says */
  const char *const args[] = {capgnn_path, "--graph", "synth:tiny", "--epochs", "10000000", "--threads", "1",
                              "--quiet", "--metrics", met, NULL};
  const pid_t pid = spawn_training(args, met, err_path);
  int status = 0;
  struct cli_proc tree[64];
  int n = 0;
  const double cpu = cli_tree_cpu_seconds(pid, tree, 64, &n);
  char daemon[64] = "";
  for (int i = 1; i < n; i++) { /* tree[0] is the run itself */
    char path[64], comm[64] = "";
    snprintf(path, sizeof path, "/proc/%d/comm", (int)tree[i].pid);
    FILE *f = fopen(path, "r");
    if (f && fgets(comm, sizeof comm, f)) comm[strcspn(comm, "\n")] = '\0';
    if (f) fclose(f);
    if (strcmp(comm, "orted") == 0) snprintf(daemon, sizeof daemon, "pid %d", (int)tree[i].pid);
  }
  kill(pid, SIGINT);
  assert_true(waitpid(pid, &status, 0) == pid);
  assert_true(cpu >= 0.0);
  if (daemon[0]) fail_msg("a one-process run started an MPI daemon (orted, %s)", daemon);
}

/* Ctrl-C during training: the run stops after the current epoch, writes its
 * checkpoint, says so and exits 130; resumed to 3 more epochs it equals the run that
 * went straight there, byte for byte. (The signal is sent once the metrics file has
 * a record: the training loop is running, where the signal is honoured.) */
static void interrupt_and_resume(void **state) {
  (void)state;
  char ck[300], met[300], straight[300], resumed[300], err_path[300];
  snprintf(ck, sizeof ck, "%s/int.ckpt", tmpdir);
  snprintf(met, sizeof met, "%s/int.jsonl", tmpdir);
  snprintf(straight, sizeof straight, "%s/straight.ckpt", tmpdir);
  snprintf(resumed, sizeof resumed, "%s/resumed.ckpt", tmpdir);
  snprintf(err_path, sizeof err_path, "%s/int.err", tmpdir);
  const char *const args[] = {capgnn_path, "--graph", "synth:tiny", "--epochs", "10000000", "--threads", "1",
          "--quiet", "--checkpoint", ck, "--metrics", met, NULL};
  const pid_t pid = spawn_training(args, met, err_path);
  int status = 0;
  char err[4096];
  kill(pid, SIGINT);
  assert_true(waitpid(pid, &status, 0) == pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 130);
  slurp(err_path, err, sizeof err);
  const char *at = strstr(err, "interrupted after epoch ");
  assert_non_null(at);
  const int k = atoi(at + strlen("interrupted after epoch "));
  assert_true(k >= 1);
  /* the stopped run wrote its summary, saying how it ended (issue #18, item 7) */
  cJSON *sum = last_summary(met);
  assert_non_null(sum);
  assert_string_equal(cJSON_GetObjectItemCaseSensitive(sum, "outcome")->valuestring, "interrupted");
  assert_int_equal(cJSON_GetObjectItemCaseSensitive(sum, "epochs")->valueint, k);
  cJSON_Delete(sum);
  char epochs[32];
  snprintf(epochs, sizeof epochs, "%d", k + 3);
  struct run_out *r = malloc(sizeof *r);
  assert_non_null(r);
  run_capgnn(r, (const char *const[]){"--graph", "synth:tiny", "--epochs", epochs, "--threads", "1", "--quiet",
                                      "--checkpoint", straight, NULL});
  assert_int_equal(r->exit_code, 0);
  run_capgnn(r, (const char *const[]){"--graph", "synth:tiny", "--epochs", epochs, "--threads", "1", "--quiet",
                                      "--resume", ck, "--checkpoint", resumed, NULL});
  assert_int_equal(r->exit_code, 0);
  free(r);
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "cmp -s %s %s", straight, resumed);
  assert_int_equal(system(cmd), 0);
  printf("  interrupted after epoch %d (exit 130), resumed to %d: checkpoint identical to the straight run\n", k,
         k + 3);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: test_cli PATH_TO_CAPGNN\n");
    return 2;
  }
  capgnn_path = argv[1];
  /* line by line into ctest's pipe: a test that ctest's TIMEOUT kills still shows the
   * case it was in and what it waited for, not the last 4 KiB lost in a buffer */
  setvbuf(stdout, NULL, _IOLBF, 0);
  const char *t = getenv("TMPDIR");
  snprintf(tmpdir, sizeof tmpdir, "%s/capgnn_test_cli_XXXXXX", t && t[0] ? t : "/tmp");
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    return 1;
  }
  const struct CMUnitTest tests[] = {cmocka_unit_test(help), cmocka_unit_test(bad_options),
                                     cmocka_unit_test(option_messages),
                                     cmocka_unit_test(bad_files), cmocka_unit_test(train_metrics),
                                     cmocka_unit_test(train_reorder_metrics),
                                     cmocka_unit_test(diverged_summary), cmocka_unit_test(partition_not_saved),
                                     cmocka_unit_test(checkpoint_info), cmocka_unit_test(singular_counts),
                                     cmocka_unit_test(interrupt_and_resume),
                                     cmocka_unit_test(one_process_no_daemon)};
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
  return rc;
}
