/* tests/test_cache_cli.c — the halo cache through the `capgnn` binary.
 *
 *   test_cache_cli CAPGNN MPIEXEC
 *
 * 1. `mpiexec -n 4` on 2 emulated nodes (CAPGNN_EMULATE_NODES=2), GCN 3 layers on
 *    synth:small: without the cache, with --cache-policy jaca (the whole node halo) and
 *    with --cache-policy lru --cache-capacity 0.1. The cached runs' losses equal the
 *    plain run's bit for bit (the cache is exact). Every epoch record of a cached run has
 *    cache_hit_rate = (rank_hits + node_hits) / lookups and a "cache" object whose
 *    counts add up (hits + misses = lookups, per layer summing to the total), whose
 *    bytes_saved = bytes_exact - bytes_intra_node - bytes_inter_node + grad_bytes_exact -
 *    grad_bytes (forward rows and gradients), and whose saving
 *    is exactly the difference of halo_bytes against the plain run; with the whole node
 *    halo in the tier nothing is sent between ranks of a node. Beside the hit rate,
 *    cache_oracle_hit_rate is in [0, 1]. The summary names the settings (policy,
 *    capacity, staleness 0, exact), holds the run's totals, and policy_hit_rate <=
 *    oracle_hit_rate (Belady's MIN), equal when the tier holds the whole node halo.
 *    With --staleness 2 --cache-warmup 1 (lru, half of the rows): epoch 1 (warm-up) and
 *    epoch 2 (the cache's first exchange refreshes every row) equal the plain run bit
 *    for bit; every epoch's oldest row is at most 2 epochs old; rows are reused (hits)
 *    and fewer bytes travel; the log says APPROXIMATE and the summary names staleness 2
 *    and exact false.
 *    --staleness adaptive:0:3 (jaca, half of the rows) equals the plain run bit for bit
 *    and says exact; --staleness adaptive:1:2 --cache-warmup 1 is exact for its first
 *    two epochs, then skips rows (hits, fewer bytes than the exact cache), no row older
 *    than 2, the loss finite and within 2 % of the exact one, the log naming the drift.
 *    --grad-staleness adaptive:0:3 equals the plain run bit for bit and says exact (every
 *    gradient sent every epoch, none skipped); --grad-staleness adaptive:2:2
 *    --cache-warmup 1 is exact for its first two epochs, then skips gradients (fewer bytes
 *    than the exact cache), none older than 2, the loss finite and within 2 % of the
 *    exact one, the log naming the drift.
 * 2. A usage error (exit 2) naming the option: a bad --staleness or --grad-staleness
 *    adaptive syntax, a bad policy, a capacity outside (0, 1] and a staleness or
 *    gradient staleness above the limit.
 *    So are MiB budgets that are neither auto nor >= 0, and a negative reserve, and a
 *    cache setting (staleness, capacity, prefetch off...) without a cache policy, and
 *    --cache (the partition cache folder's short name) given a halo-cache word (jaca,
 *    none, fast...); a folder name is taken.
 * 3. --print-config shows the [cache] settings (adaptive gradients as given; the MiB budgets auto by default:
 *    Algorithm 1). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include "cli_test_util.h"

static char g_dir[] = "/tmp/capgnn_cache_cli_XXXXXX";
static int g_fail = 0;

#define CHECK(cond, ...)                                              \
  do {                                                                \
    if (!(cond)) {                                                    \
      fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                   \
      fprintf(stderr, "\n");                                          \
      g_fail = 1;                                                     \
    }                                                                 \
  } while (0)

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
    free(s);
    s = NULL;
  }
  if (s) s[n] = '\0';
  fclose(f);
  return s;
}

/* Runs a command line (blank-separated words, cli_run), output to `log`; returns the exit
 * status, -1 when it did not exit or spun through 120 s of CPU time. Not system(): its
 * shell and job would outlive the test when ctest's TIMEOUT kills it. */
static int run(const char *cmd, const char *log) { return cli_run(cmd, log, 120.0); }

static double num(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

#define EPOCHS 4
#define LAYERS 3
struct run_out {
  double loss[EPOCHS], halo[EPOCHS], saved[EPOCHS], age_max[EPOCHS], hits[EPOCHS], lookups[EPOCHS];
  double grad_sent[EPOCHS], grad_skipped[EPOCHS], grad_age_max[EPOCHS];
  int n, summary_ok;
};

/* Reads a metrics file; checks the cache fields of a cached run (`cached`). */
static void read_run(const char *path, int cached, int whole_halo, const char *policy, int staleness, int gstale,
                     int gadapt, int exact, struct run_out *r) {
  memset(r, 0, sizeof *r);
  char *s = slurp(path);
  CHECK(s != NULL, "cannot read %s", path);
  if (!s) return;
  for (char *line = strtok(s, "\n"); line; line = strtok(NULL, "\n")) {
    cJSON *o = cJSON_Parse(line);
    CHECK(o != NULL, "%s: unparsable line", path);
    if (!o) continue;
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(o, "cache");
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "summary"))) {
      double halo_sum = 0; /* (the records come before the summary) */
      for (int e = 0; e < r->n; e++) halo_sum += r->halo[e];
      CHECK(num(o, "halo_bytes_total") == halo_sum && halo_sum > 0, "%s: summary's halo_bytes_total %.0f, the epochs "
            "%.0f", path, num(o, "halo_bytes_total"), halo_sum);
      if (cached) {
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(c, "policy");
        CHECK(c && cJSON_IsString(p) && !strcmp(p->valuestring, policy) && num(c, "staleness") == staleness &&
                  num(c, "grad_staleness") == gstale &&
                  cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "grad_adaptive")) == gadapt &&
                  cJSON_IsBool(cJSON_GetObjectItemCaseSensitive(c, "exact")) &&
                  cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "exact")) == exact,
              "%s: the summary does not name the cache's settings", path);
        double tot = 0;
        for (int e = 0; e < r->n; e++) tot += r->saved[e];
        CHECK(c && num(c, "bytes_saved") == tot, "%s: summary saves %.0f bytes, the epochs %.0f", path,
              num(c, "bytes_saved"), tot);
        /* the window's rates: the tiers' own, and Belady's MIN with the same slots, which
         * no policy beats; with the whole node halo held and nothing kept across steps,
         * they are equal */
        const double prate = num(c, "policy_hit_rate"), orate = num(c, "oracle_hit_rate");
        CHECK(prate >= 0 && prate <= orate && orate <= 1, "%s: policy hit rate %g, Belady's MIN %g", path, prate,
              orate);
        if (whole_halo && staleness == 0)
          CHECK(prate == orate, "%s: the whole node halo held, yet MIN %g beats the tiers' %g", path, orate, prate);
        r->summary_ok = c != NULL;
      } else {
        CHECK(c == NULL, "%s: a cache object without a cache", path);
        r->summary_ok = 1;
      }
    } else if (r->n < EPOCHS) {
      const int e = r->n++;
      r->loss[e] = num(o, "loss");
      r->halo[e] = num(o, "halo_bytes");
      const cJSON *hr = cJSON_GetObjectItemCaseSensitive(o, "cache_hit_rate");
      if (!cached) {
        CHECK(cJSON_IsNull(hr) && cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(o, "cache_oracle_hit_rate")) &&
                  c == NULL,
              "%s epoch %d: cache fields without a cache", path, e + 1);
      } else {
        CHECK(c != NULL, "%s epoch %d: no cache object", path, e + 1);
        if (c && num(c, "lookups") == 0) { /* warm-up: the plain exchange */
          CHECK(cJSON_IsNull(hr), "%s epoch %d: a hit rate without lookups", path, e + 1);
          r->saved[e] = num(c, "bytes_saved");
          r->lookups[e] = 0;
        } else if (c && cJSON_IsNumber(hr)) {
          const double look = num(c, "lookups"), rh = num(c, "rank_hits"), nh = num(c, "node_hits"),
                       mi = num(c, "misses");
          CHECK(look > 0 && rh + nh + mi == look, "%s epoch %d: %g + %g + %g != %g lookups", path, e + 1, rh, nh, mi,
                look);
          CHECK(fabs(hr->valuedouble - (rh + nh) / look) < 1e-12, "%s epoch %d: hit rate %g", path, e + 1,
                hr->valuedouble);
          const cJSON *orate = cJSON_GetObjectItemCaseSensitive(o, "cache_oracle_hit_rate");
          CHECK(cJSON_IsNumber(orate) && orate->valuedouble >= 0 && orate->valuedouble <= 1,
                "%s epoch %d: no Belady MIN hit rate beside the hit rate", path, e + 1);
          const double saved = num(c, "bytes_saved");
          CHECK(saved == num(c, "bytes_exact") - num(c, "bytes_intra_node") - num(c, "bytes_inter_node") +
                             num(c, "grad_bytes_exact") - num(c, "grad_bytes"),
                "%s epoch %d: bytes_saved %.0f", path, e + 1, saved);
          if (whole_halo) CHECK(num(c, "bytes_intra_node") == 0, "%s: bytes sent within a node", path);
          CHECK(num(c, "age_max") <= staleness, "%s epoch %d: a row %g epochs old (staleness %d)", path, e + 1,
                num(c, "age_max"), staleness);
          CHECK(num(c, "grad_age_max") <= gstale, "%s epoch %d: a gradient %g epochs old (bound %d)", path, e + 1,
                num(c, "grad_age_max"), gstale);
          if (!gadapt)
            CHECK(num(c, "grad_sent") == 0 && num(c, "grad_skipped") == 0, "%s epoch %d: adaptive gradient counts",
                  path, e + 1);
          r->saved[e] = saved;
          r->age_max[e] = num(c, "age_max");
          r->grad_sent[e] = num(c, "grad_sent");
          r->grad_skipped[e] = num(c, "grad_skipped");
          r->grad_age_max[e] = num(c, "grad_age_max");
          r->hits[e] = rh + nh;
          r->lookups[e] = look;
          const cJSON *layers = cJSON_GetObjectItemCaseSensitive(c, "layers");
          double sum = 0;
          int nl = 0;
          for (const cJSON *x = layers ? layers->child : NULL; x; x = x->next, nl++) sum += num(x, "lookups");
          CHECK(nl == LAYERS - 1 && sum == look, "%s epoch %d: %d layers summing to %g lookups", path, e + 1, nl, sum);
        }
      }
    }
    cJSON_Delete(o);
  }
  free(s);
  CHECK(r->n == EPOCHS && r->summary_ok, "%s: %d epochs, summary %d", path, r->n, r->summary_ok);
}

/* --layer0-halo auto with the cache keeps a layer 0 of sparse features local (transforming
 * a sparse halo row costs its few stored entries; the cache does not carry layer 0's rows):
 * synth:small with identity features, 2 ranks, the metrics summary says what it chose. */
static void expect_sparse_local(const char *capgnn, const char *mpiexec) {
  char cmd[2048], log[512], path[512];
  snprintf(path, sizeof path, "%s/sparse.jsonl", g_dir);
  snprintf(log, sizeof log, "%s/sparse.log", g_dir);
  snprintf(cmd, sizeof cmd,
           "%s -n 2 --oversubscribe --allow-run-as-root %s --graph synth:small:identity=1 --epochs 1 --device cpu "
           "--threads 1 --no-part-cache --quiet --cache-policy jaca --cache-host-mb 0 --cache-device-mb 0 "
           "--metrics %s",
           mpiexec, capgnn, path);
  const int rc = run(cmd, log);
  char *out = slurp(log), *met = slurp(path);
  CHECK(rc == 0, "`%s` exited %d:\n%s", cmd, rc, out ? out : "");
  CHECK(met && strstr(met, "\"layer0_halo_chosen\":\"local\""), "sparse features with the cache: layer 0 not "
        "local:\n%s", met ? met : "");
  free(out);
  free(met);
}

static void expect_usage(const char *capgnn, const char *opts, const char *text) {
  char cmd[2048], log[512];
  snprintf(log, sizeof log, "%s/usage.log", g_dir);
  snprintf(cmd, sizeof cmd, "%s --graph synth:tiny --epochs 1 %s", capgnn, opts);
  int rc = run(cmd, log);
  char *out = slurp(log);
  CHECK(rc == 2 && out && strstr(out, text), "`%s` exited %d (expected 2) with:\n%s(expected '%s')", cmd, rc,
        out ? out : "", text);
  free(out);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s CAPGNN MPIEXEC\n", argv[0]);
    return 2;
  }
  const char *capgnn = argv[1], *mpiexec = argv[2];
  if (!mkdtemp(g_dir)) {
    perror("mkdtemp");
    return 1;
  }
  const char *opts = "--graph synth:small --model gcn --layers 3 --hidden 16 --epochs 4 --device cpu --threads 1 "
                     "--no-part-cache --partition metis --quiet";
#define NRUNS 8
  const char *names[NRUNS] = {"plain", "jaca", "lru10", "stale2", "adapt0", "adapt", "gadapt0", "gadapt"};
  /* no MiB budget (--cache-host-mb 0 --cache-device-mb 0): the tiers must not depend on
   * the memory other jobs leave free while the test runs */
  /* the plain run exchanges layer 0 explicitly; the cached runs' --layer0-halo auto must
   * choose the same (synth:small's dense features: exchanged beside the cache), else no
   * bit matches */
  const char *extra[NRUNS] = {"--layer0-halo exchange", "--cache-policy jaca --cache-host-mb 0 --cache-device-mb 0",
                          "--cache-policy lru --cache-capacity 0.1 --cache-host-mb 0 --cache-device-mb 0",
                          "--cache-policy lru --cache-capacity 0.5 --staleness 2 --cache-warmup 1 --cache-host-mb 0 "
                          "--cache-device-mb 0",
                          "--cache-policy jaca --cache-capacity 0.5 --staleness adaptive:0:3 --cache-host-mb 0 "
                          "--cache-device-mb 0",
                          "--cache-policy jaca --staleness adaptive:1:2 --cache-warmup 1 --cache-host-mb 0 "
                          "--cache-device-mb 0",
                          "--cache-policy jaca --grad-staleness adaptive:0:3 --cache-host-mb 0 --cache-device-mb 0",
                          "--cache-policy jaca --grad-staleness adaptive:2:2 --cache-warmup 1 --cache-host-mb 0 "
                          "--cache-device-mb 0"};
  const char *said[NRUNS] = {"", "exact (staleness 0", "exact (staleness 0", "APPROXIMATE: hidden halo rows up to 2 epochs old",
                             "relative drift exceeds 0, up to 3 epochs old", "relative drift exceeds 1, up to 2 epochs old",
                             "halo gradients resent only when their relative drift exceeds 0, up to 3 epochs old",
                             "halo gradients resent only when their relative drift exceeds 2, up to 2 epochs old"};
  const int stale[NRUNS] = {0, 0, 0, 2, 3, 2, 0, 0}, gstale[NRUNS] = {0, 0, 0, 0, 0, 0, 3, 2};
  const int exact[NRUNS] = {1, 1, 1, 0, 1, 0, 1, 0};
  struct run_out r[NRUNS];
  for (int k = 0; k < NRUNS; k++) {
    char cmd[4096], log[512], path[512];
    snprintf(path, sizeof path, "%s/%s.jsonl", g_dir, names[k]);
    snprintf(log, sizeof log, "%s/%s.log", g_dir, names[k]);
    snprintf(cmd, sizeof cmd,
             "CAPGNN_EMULATE_NODES=2 %s -n 4 --oversubscribe --allow-run-as-root %s %s %s --metrics %s", mpiexec,
             capgnn, opts, extra[k], path);
    int rc = run(cmd, log);
    char *out = slurp(log);
    CHECK(rc == 0, "`%s` exited %d:\n%s", cmd, rc, out ? out : "");
    if (k > 0)
      CHECK(out && strstr(out, said[k]), "the log does not name the cache's settings ('%s'):\n%s", said[k],
            out ? out : "");
    free(out);
    /* --layer0-halo auto with the cache on dense features: exchanged (the summary says) */
    char *met = slurp(path);
    CHECK(met && strstr(met, "\"layer0_halo_chosen\":\"exchange\""), "%s: layer 0 not exchanged:\n%s", names[k],
          met ? met : "");
    free(met);
    read_run(path, k > 0, k == 1 || k == 6, k == 1 || k >= 4 ? "jaca" : "lru", stale[k], gstale[k], k >= 6,
             exact[k], &r[k]);
  }
  expect_sparse_local(capgnn, mpiexec);
  /* the exact cached runs, adaptive rows and gradients at EPS 0 among them: bit for bit
   * the plain run */
  for (int k = 1; k < 7; k++) {
    if (k == 3 || k == 5) continue;
    for (int e = 0; e < EPOCHS; e++) {
      CHECK(memcmp(&r[k].loss[e], &r[0].loss[e], sizeof(double)) == 0, "%s epoch %d: loss %.17g, plain %.17g",
            names[k], e + 1, r[k].loss[e], r[0].loss[e]);
      CHECK(r[k].halo[e] == r[0].halo[e] - r[k].saved[e], "%s epoch %d: %.0f halo bytes, plain %.0f minus saved %.0f",
            names[k], e + 1, r[k].halo[e], r[0].halo[e], r[k].saved[e]);
    }
  }
  /* adaptive at EPS 1 after a warm-up epoch (the rows exchanged here are transformed after
   * dropout, so a fresh mask alone moves a row by a relative drift near 1): exact in its first two epochs (the
   * warm-up, then every row sent), rows skipped after, none older than 2 (read_run),
   * fewer bytes, a finite loss close to the exact one */
  for (int e = 0; e < 2; e++)
    CHECK(memcmp(&r[5].loss[e], &r[0].loss[e], sizeof(double)) == 0, "adapt epoch %d: loss %.17g, plain %.17g", e + 1,
          r[5].loss[e], r[0].loss[e]);
  for (int e = 2; e < EPOCHS; e++)
    CHECK(isfinite(r[5].loss[e]) && fabs(r[5].loss[e] - r[0].loss[e]) <= 0.02 * fabs(r[0].loss[e]) &&
              r[5].halo[e] < r[1].halo[e] && r[5].hits[e] > 0,
          "adapt epoch %d: loss %.6f (exact %.6f), %.0f halo bytes (exact cache %.0f), %.0f hits", e + 1, r[5].loss[e],
          r[0].loss[e], r[5].halo[e], r[1].halo[e], r[5].hits[e]);
  /* adaptive gradients at EPS 0: every gradient every step, none kept */
  for (int e = 0; e < EPOCHS; e++)
    CHECK(r[6].grad_sent[e] > 0 && r[6].grad_skipped[e] == 0 && r[6].grad_age_max[e] == 0,
          "gadapt0 epoch %d: %.0f gradients sent, %.0f skipped, the oldest %g epochs", e + 1, r[6].grad_sent[e],
          r[6].grad_skipped[e], r[6].grad_age_max[e]);
  /* adaptive gradients at EPS 2 after a warm-up epoch: exact in the first two epochs (the
   * warm-up, then every gradient sent), then gradients skipped (kept by their owners, none
   * older than 2: read_run), fewer bytes than the exact cache, the loss finite and close */
  for (int e = 0; e < 2; e++)
    CHECK(memcmp(&r[7].loss[e], &r[0].loss[e], sizeof(double)) == 0, "gadapt epoch %d: loss %.17g, plain %.17g",
          e + 1, r[7].loss[e], r[0].loss[e]);
  CHECK(r[7].grad_skipped[1] == 0 && r[7].grad_sent[1] > 0, "gadapt: the cache's first epoch skipped gradients");
  for (int e = 2; e < EPOCHS; e++)
    CHECK(isfinite(r[7].loss[e]) && fabs(r[7].loss[e] - r[0].loss[e]) <= 0.02 * fabs(r[0].loss[e]) &&
              r[7].halo[e] < r[1].halo[e] && r[7].grad_skipped[e] > 0,
          "gadapt epoch %d: loss %.6f (exact %.6f), %.0f halo bytes (exact cache %.0f), %.0f gradients skipped", e + 1,
          r[7].loss[e], r[0].loss[e], r[7].halo[e], r[1].halo[e], r[7].grad_skipped[e]);
  /* staleness 2 after a warm-up epoch: exact until rows are reused, then approximate */
  for (int e = 0; e < 2; e++)
    CHECK(memcmp(&r[3].loss[e], &r[0].loss[e], sizeof(double)) == 0, "stale2 epoch %d: loss %.17g, plain %.17g", e + 1,
          r[3].loss[e], r[0].loss[e]);
  CHECK(r[3].lookups[0] == 0 && r[3].halo[0] == r[0].halo[0], "the warm-up epoch used the cache");
  CHECK(r[3].age_max[1] == 0, "the cache's first epoch used old rows");
  double stale_hits = 0;
  for (int e = 2; e < EPOCHS; e++) {
    stale_hits += r[3].hits[e];
    CHECK(r[3].halo[e] < r[2].halo[e] && r[3].age_max[e] >= 1,
          "stale2 epoch %d: %.0f halo bytes (lru 10 %% exact: %.0f), oldest row %g", e + 1, r[3].halo[e], r[2].halo[e],
          r[3].age_max[e]);
  }
  CHECK(stale_hits > 0, "no row was reused under staleness 2");
  if (!g_fail)
    printf("4 ranks on 2 emulated nodes: the exact cached runs equal the plain one bit for bit; halo bytes/epoch "
           "%.0f plain, %.0f with jaca (whole node halo), %.0f with lru at 10 %%; staleness 2 (lru 50 %%): %.0f, "
           "%.0f, %.0f at epochs 2-4, loss %.6f vs %.6f exact at epoch 4\n",
           r[0].halo[0], r[1].halo[0], r[2].halo[0], r[3].halo[1], r[3].halo[2], r[3].halo[3], r[3].loss[3],
           r[0].loss[3]);

  expect_usage(capgnn, "--cache-policy jaca --staleness 1001", "--staleness 1001");
  expect_usage(capgnn, "--cache-policy jaca --staleness adaptive:x", "--staleness adaptive:x");
  expect_usage(capgnn, "--cache-policy jaca --staleness adaptive:0.01:0", "adaptive:0.01:0");
  expect_usage(capgnn, "--cache-policy jaca --grad-staleness adaptive:x", "--grad-staleness adaptive:x");
  expect_usage(capgnn, "--cache-policy jaca --grad-staleness adaptive:0.01:0", "--grad-staleness adaptive:0.01:0");
  expect_usage(capgnn, "--cache-policy jaca --grad-staleness adaptive:-1", "--grad-staleness adaptive:-1");
  expect_usage(capgnn, "--cache-policy jaca --grad-staleness 1001", "--grad-staleness 1001");
  expect_usage(capgnn, "--cache-policy belady", "--cache-policy 'belady'");
  expect_usage(capgnn, "--cache-policy jaca --cache-capacity 0", "--cache-capacity 0");
  expect_usage(capgnn, "--cache-policy jaca --cache-capacity 1.5", "--cache-capacity 1.5");
  expect_usage(capgnn, "--cache-policy jaca --cache-host-mb -3", "--cache-host-mb -3");
  expect_usage(capgnn, "--cache-policy jaca --cache-device-mb lots", "--cache-device-mb");
  expect_usage(capgnn, "--cache-policy jaca --cache-reserve-mb -1", "--cache-reserve-mb -1");
  expect_usage(capgnn, "--cache-policy jaca --cache-prefetch maybe", "--cache-prefetch 'maybe'");
  /* a cache setting without a cache changes nothing: refused, not ignored */
  expect_usage(capgnn, "--staleness 3", "--staleness sets the halo cache, which is off");
  expect_usage(capgnn, "--cache-policy none --grad-staleness adaptive", "--grad-staleness sets the halo cache");
  expect_usage(capgnn, "--cache-capacity 0.5", "--cache-capacity sets the halo cache");
  expect_usage(capgnn, "--cache-prefetch off", "--cache-prefetch off sets the halo cache");
  expect_usage(capgnn, "--cache-preset fast --cache-policy none", "exclude each other");
  /* --cache is the partition cache folder's short name (`capgnn plan --cache jaca` is the
   * halo cache): a policy or preset word is refused, naming the option meant */
  expect_usage(capgnn, "--cache jaca", "not the halo cache; for the halo cache write --cache-policy jaca");
  expect_usage(capgnn, "--cache=none", "--cache-policy none");
  expect_usage(capgnn, "--cache fast", "write --cache-preset fast");
  {
    char cmd[2048], log[512];
    snprintf(log, sizeof log, "%s/partcache.log", g_dir);
    snprintf(cmd, sizeof cmd, "%s --graph synth:tiny --epochs 1 --device cpu --quiet --cache %s/pc", capgnn, g_dir);
    CHECK(run(cmd, log) == 0, "`%s`: a folder name for --cache is taken", cmd);
  }
  { /* coded halo rows on one rank, which sends none: said (not APPROXIMATE), the run goes on */
    char cmd[2048], log[512];
    snprintf(log, sizeof log, "%s/bits1.log", g_dir);
    snprintf(cmd, sizeof cmd, "%s --graph synth:tiny --epochs 1 --device cpu --threads 1 --quiet --halo-bits 4",
             capgnn);
    const int rc = run(cmd, log);
    char *out = slurp(log);
    CHECK(rc == 0 && out && strstr(out, "--halo-bits 4: one rank sends no halo rows, so none is coded: the run is "
                                        "exact"),
          "`%s` exited %d with:\n%s", cmd, rc, out ? out : "");
    free(out);
  }
  { /* a rank-tier budget without a rank tier (staleness 0): said, the run goes on */
    char cmd[2048], log[512];
    snprintf(log, sizeof log, "%s/devmb.log", g_dir);
    snprintf(cmd, sizeof cmd, "%s --graph synth:tiny --epochs 1 --layers 2 --device cpu --threads 1 --quiet "
             "--cache-policy jaca --cache-device-mb 5", capgnn);
    const int rc = run(cmd, log);
    char *out = slurp(log);
    CHECK(rc == 0 && out && strstr(out, "--cache-device-mb 5 has no effect"), "`%s` exited %d with:\n%s", cmd, rc,
          out ? out : "");
    free(out);
  }
  {
    char cmd[2048], log[512];
    snprintf(log, sizeof log, "%s/print.log", g_dir);
    snprintf(cmd, sizeof cmd, "%s --cache-policy fifo --cache-capacity 0.25 --cache-device-mb 12 --cache-prefetch off "
             "--grad-staleness adaptive:0.05:4 --print-config",
             capgnn);
    CHECK(run(cmd, log) == 0, "`%s` failed", cmd);
    char *out = slurp(log);
    CHECK(out && strstr(out, "[cache]") && strstr(out, "cache-policy = fifo") && strstr(out, "cache-capacity = 0.25") &&
              strstr(out, "staleness = 0") && strstr(out, "cache-host-mb = auto") &&
              strstr(out, "cache-device-mb = 12") && strstr(out, "cache-reserve-mb = 1024") && strstr(out, "cache-prefetch = off") &&
              strstr(out, "grad-staleness = adaptive:0.05:4"),
          "--print-config lacks the cache settings:\n%s", out ? out : "");
    free(out);
  }
  if (!g_fail) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
    if (system(cmd) != 0) fprintf(stderr, "note: could not remove %s\n", g_dir);
    printf("ok\n");
  }
  return g_fail;
}
