/* apps/cli.c — the error lines every subcommand prints (one line, then an exit status),
 * and the parsers of numeric option values that all subcommands share. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "apps/commands_internal.h"
#include "apps/config_file_internal.h"
#include "core/hash.h"
#include "core/log.h"
#include "core/status.h"
#ifdef CAPGNN_HAVE_DIST
#include "mpi/comm.h"
#endif

/* The argument word being parsed (cli_check_value), -1 outside the option loop. */
static int cli_word = -1;

void cli_options_done(void) { cli_word = -1; }

int cli_launch_rank(void) {
  /* what the launchers export to each process (Open MPI, PMIx, MPICH/Hydra, MVAPICH,
   * Slurm's srun); none: a process started alone */
  static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK",
                                     "MV2_COMM_WORLD_RANK", "SLURM_PROCID"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
    const char *v = getenv(vars[i]);
    char *end = NULL;
    if (!v || !*v) continue;
    const long r = strtol(v, &end, 10);
    if (*end == '\0' && r >= 0 && r <= INT_MAX) return (int)r;
  }
  return 0;
}

int cli_speaks(void) { return cli_launch_rank() == 0; }

int cli_launch_size(void) {
  /* (SLURM_STEP_NUM_TASKS, not SLURM_NTASKS: the allocation's shell has the latter too, and a
   * one-process command run there, before srun, is one process) */
  static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE",
                                     "SLURM_STEP_NUM_TASKS"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
    const char *v = getenv(vars[i]);
    char *end = NULL;
    if (!v || !*v) continue;
    const long n = strtol(v, &end, 10);
    if (*end == '\0' && n >= 1 && n <= INT_MAX) return (int)n;
  }
  return 1;
}

int cli_nvidia_present(void) {
  struct stat sb;
  return stat("/dev/nvidiactl", &sb) == 0;
}

int cli_usage_error(const char *cmd, const char *fmt, ...) {
  if (!cli_speaks()) return CAPGNN_EXIT_USAGE; /* rank 0 says it for the job */
  /* one line, the option's value escaped (core/log.h, cg_text_escape): no raw control
   * byte of what the user typed reaches the terminal */
  char text[4096], shown[4096], where[4400] = "";
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  const char *from = cli_word >= 0 ? config_file_origin(cli_word) : NULL;
  if (from) snprintf(where, sizeof where, " (set in %s)", from);
  fprintf(stderr, "capgnn: error: %s", cg_text_escape(shown, sizeof shown, text));
  fprintf(stderr, "%s (see capgnn %s --help)\n", cg_text_escape(shown, sizeof shown, where), cmd);
  return CAPGNN_EXIT_USAGE;
}

int cli_runtime_error(void) {
  if (!cli_speaks()) return CAPGNN_EXIT_FAILURE;
  fprintf(stderr, "capgnn: error: %s\n", cg_err_msg()[0] ? cg_err_msg() : cg_status_str(cg_err_status()));
  return CAPGNN_EXIT_FAILURE;
}

int cli_check_value(const char *cmd, int argc, char **argv, int ind, const char *arg) {
  cli_word = arg && ind >= 1 ? ind - 1 : -1; /* the word that holds the value */
  /* separate form: "--opt VALUE" leaves VALUE at argv[ind - 1], the option before it */
  if (!arg || ind < 2 || ind > argc || argv[ind - 1] != arg) return 0;
  if (arg[0] != '-' || arg[1] != '-' || arg[2] == '\0') return 0;
  const char *opt = argv[ind - 2];
  if (opt[0] == '-' && opt[1] == '-')
    return cli_usage_error(cmd, "option '%s' needs a value, got the option '%s' (write %s=%s if that "
                           "is the value)", opt, arg, opt, arg);
  return cli_usage_error(cmd, "option '%s' needs a value, got the option '%s'", opt, arg);
}

int cli_part_cache_alias(const char *cmd, const char *dir) {
  static const char *const halo_words[] = {"none", "jaca", "lru", "fifo", "exact", "fast"};
  /* (refused even where such a folder exists: run from a capgnn checkout, ./jaca is
   * the module's source folder) */
  for (size_t i = 0; i < sizeof halo_words / sizeof halo_words[0]; i++) {
    if (strcmp(dir, halo_words[i])) continue;
    const int preset = !strcmp(dir, "exact") || !strcmp(dir, "fast");
    /* (only train has the halo cache: partition names it there) */
    return cli_usage_error(cmd, "--cache '%s': --cache is the partition cache folder (alias of --part-cache), "
                           "not the halo cache; for the halo cache write %s%s %s (or --part-cache %s for a "
                           "folder of that name)", dir, strcmp(cmd, "train") ? "capgnn train " : "",
                           preset ? "--cache-preset" : "--cache-policy", dir, dir);
  }
  return 0;
}

int cli_bad_option(const char *cmd, const char *name, const struct option *longopts) {
  const char *eq = strchr(name, '=');
  if (strncmp(name, "--", 2) == 0 && eq)
    for (const struct option *o = longopts; o->name; o++)
      if (o->has_arg == no_argument && strlen(o->name) == (size_t)(eq - name - 2) &&
          strncmp(o->name, name + 2, (size_t)(eq - name - 2)) == 0)
        return cli_usage_error(cmd, "option '--%s' takes no value: it is a switch (give it to turn "
                               "it on, leave it out to keep it off)", o->name);
  /* "did you mean": the settings files' suggestion, on the name without "--" and "=VALUE" */
  char bare[128];
  const char *b = name;
  while (*b == '-') b++;
  snprintf(bare, sizeof bare, "%.*s", (int)(eq ? (size_t)(eq - b) : strlen(b)), b);
  /* a prefix of several options (getopt_long takes a unique prefix as the option, and
   * refuses an ambiguous one): name them all */
  if (strncmp(name, "--", 2) == 0 && bare[0]) {
    char list[512] = "";
    size_t k = 0;
    int n = 0;
    for (const struct option *o = longopts; o->name; o++)
      if (strncmp(o->name, bare, strlen(bare)) == 0 && k < sizeof list) {
        k += (size_t)snprintf(list + k, sizeof list - k, "%s--%s", n ? ", " : "", o->name);
        n++;
      }
    if (n > 1)
      return cli_usage_error(cmd, "option '%s' is ambiguous: it is the start of %s (give the whole name)", name,
                             list);
  }
  const char *best = strncmp(name, "--", 2) == 0 && bare[0] ? config_option_suggest(bare, longopts) : NULL;
  if (best) return cli_usage_error(cmd, "unknown option '%s'; did you mean '--%s'?", name, best);
  return cli_usage_error(cmd, "unknown option '%s'", name);
}

FILE *cli_report_stream(const char *output) {
  struct stat out, std;
  if (stat(output, &out) == 0 && fstat(STDOUT_FILENO, &std) == 0 && out.st_dev == std.st_dev &&
      out.st_ino == std.st_ino)
    return stderr;
  return stdout;
}

/* Option values are parsed whole: strtoll/strtoull/strtod skip leading white space
 * (trailing white space was always refused), and strtoull takes "-1" and " -1" as
 * 2^64 - 1. So a value may not start with white space, nor an unsigned one with '-'. */
static int value_starts_ok(const char *s) { return s[0] != '\0' && !isspace((unsigned char)s[0]); }

/* The whole of `s` as a base-10 integer in [lo, hi]. */
static int parse_signed(const char *s, long long lo, long long hi, long long *out) {
  if (!value_starts_ok(s)) return -1;
  char *end = NULL;
  errno = 0;
  const long long v = strtoll(s, &end, 10);
  if (errno || end == s || *end != '\0' || v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

int cli_parse_int(const char *cmd, const char *opt, const char *s, int *out) {
  long long v;
  if (parse_signed(s, INT_MIN, INT_MAX, &v) != 0)
    return cli_usage_error(cmd, "%s '%s': expected an integer", opt, s);
  *out = (int)v;
  return 0;
}

int cli_parse_int_in(const char *cmd, const char *opt, const char *s, int lo, int hi, int *out) {
  long long v;
  if (parse_signed(s, lo, hi, &v) != 0)
    return cli_usage_error(cmd, "%s '%s': expected an integer in [%d, %d]", opt, s, lo, hi);
  *out = (int)v;
  return 0;
}

int cli_parse_i64(const char *cmd, const char *opt, const char *s, int64_t *out) {
  long long v;
  if (parse_signed(s, INT64_MIN, INT64_MAX, &v) != 0)
    return cli_usage_error(cmd, "%s '%s': expected an integer", opt, s);
  *out = (int64_t)v;
  return 0;
}

int cli_parse_u64(const char *cmd, const char *opt, const char *s, uint64_t *out) {
  char *end = NULL;
  unsigned long long v = 0;
  errno = 0;
  /* no '-' at all: strtoull negates "-1" into 2^64 - 1 instead of failing */
  if (value_starts_ok(s) && s[0] != '-') v = strtoull(s, &end, 10);
  if (!end || errno || end == s || *end != '\0')
    return cli_usage_error(cmd, "%s '%s': expected a non-negative integer", opt, s);
  *out = (uint64_t)v;
  return 0;
}

int cli_parse_float(const char *cmd, const char *opt, const char *s, float *out) {
  char *end = NULL;
  double v = 0.0;
  errno = 0;
  if (value_starts_ok(s)) v = strtod(s, &end);
  const int range = errno == ERANGE;
  if (!end || end == s || *end != '\0' || isnan(v) || (errno && !range) || (isinf(v) && !range))
    return cli_usage_error(cmd, "%s '%s': expected a%s number", opt, s, isinf(v) ? " finite" : "");
  /* The value is kept as a float: one that becomes inf ("1e39", "1e300") or 0 ("1e-50")
   * there is refused here, as written, rather than reported later as "inf" or "0". */
  if (range && v == 0.0)
    return cli_usage_error(cmd, "%s '%s': too close to 0 for a single-precision float (smallest "
                           "about 1.4e-45): write 0 if that is meant", opt, s);
  if (isinf(v) || isinf((float)v))
    return cli_usage_error(cmd, "%s '%s': out of range (values are single-precision floats, at "
                           "most about 3.4e38 in magnitude)", opt, s);
  if (v != 0.0 && (float)v == 0.0f)
    return cli_usage_error(cmd, "%s '%s': too close to 0 for a single-precision float (smallest "
                           "about 1.4e-45): write 0 if that is meant", opt, s);
  *out = (float)v;
  return 0;
}

#ifdef CAPGNN_HAVE_DIST
/* The length of a "key = value" line's key (the whole line when it has no " = "). */
static size_t line_key(const char *line, size_t n) {
  for (size_t i = 0; i + 2 < n; i++)
    if (line[i] == ' ' && line[i + 1] == '=' && line[i + 2] == ' ') return i;
  return n;
}

/* The line of text t whose key is k (kn bytes), *ln its length; NULL when none is. */
static const char *find_key(const char *t, const char *k, size_t kn, size_t *ln) {
  while (*t) {
    const size_t n = strcspn(t, "\n");
    if (line_key(t, n) == kn && !strncmp(t, k, kn)) {
      *ln = n;
      return t;
    }
    t += n + (t[n] ? 1 : 0);
  }
  return NULL;
}

static void quote_line(char *out, size_t len, const char *line, size_t n) {
  if (line) snprintf(out, len, "'%.*s'", (int)n, line);
  else snprintf(out, len, "(nothing)");
}

/* The first setting (by key, so that a line given on one rank only does not shift the
 * comparison onto unrelated lines) whose line differs between a and b, quoted into la /
 * lb ("(nothing)": the key is absent there). */
static void first_difference(const char *a, const char *b, char *la, char *lb, size_t len) {
  for (const char *p = a; *p;) {
    const size_t n = strcspn(p, "\n");
    size_t m = 0;
    const char *q = find_key(b, p, line_key(p, n), &m);
    if (!q || m != n || strncmp(p, q, n) != 0) {
      quote_line(la, len, p, n);
      quote_line(lb, len, q, m);
      return;
    }
    p += n + (p[n] ? 1 : 0);
  }
  for (const char *q = b; *q;) {
    const size_t m = strcspn(q, "\n");
    size_t n = 0;
    if (!find_key(a, q, line_key(q, m), &n)) {
      quote_line(la, len, NULL, 0);
      quote_line(lb, len, q, m);
      return;
    }
    q += m + (q[m] ? 1 : 0);
  }
  snprintf(la, len, "(the same)");
  snprintf(lb, len, "(the same)");
}

void cli_report_setup_error(struct comm *c) {
  const int rank = comm_rank(c), size = comm_size(c);
  const char *msg = cg_err_msg()[0] ? cg_err_msg() : cg_status_str(cg_err_status());
  if (size == 1) {
    fprintf(stderr, "capgnn: error: %s\n", msg);
    return;
  }
  /* the message's hash, and whether it is a relay */
  const uint64_t h = cg_fnv1a_str(msg);
  const int relay = comm_err_is_relay(c);
  const int64_t mine = (int64_t)((h >> 2) << 1) | relay;
  int64_t *all = malloc((size_t)size * sizeof *all);
  char saved[2048];
  snprintf(saved, sizeof saved, "%s", msg); /* the all-gather may record its own error */
  if (!all || comm_allgather_i64(c, mine, all) != CG_OK) { /* cannot compare: every rank prints */
    fprintf(stderr, "capgnn: error: rank %d: %s\n", rank, saved);
    free(all);
    return;
  }
  int own = 0, same = 1; /* some rank has a message of its own; every rank has this one */
  for (int r = 0; r < size; r++) {
    own |= !(all[r] & 1);
    if (all[r] != mine) same = 0;
  }
  /* the lines: the own messages (the relays, "rank R failed during ... (see that rank's
   * log)", only when no rank has one), each by the lowest rank that holds it, naming every
   * rank that holds it (the first 8) */
  int lower = 0; /* a lower rank holds this message: it prints it */
  for (int r = 0; r < rank; r++) lower |= all[r] == mine;
  char who[160] = "";
  int holders = 0;
  for (int r = 0; r < size; r++) holders += all[r] == mine;
  for (int r = 0, k = 0; r < size && !lower && !same; r++) {
    if (all[r] != mine) continue;
    const size_t at = strlen(who);
    if (k == 8) {
      snprintf(who + at, sizeof who - at, " and %d more", holders - k);
      break;
    }
    snprintf(who + at, sizeof who - at, "%s%d", k == 0 ? "" : k == holders - 1 ? " and " : ", ", r);
    k++;
  }
  free(all);
  if (lower || (own && relay)) return;
  if (same) fprintf(stderr, "capgnn: error: %s\n", saved); /* every rank's: no one rank to name */
  else fprintf(stderr, "capgnn: error: rank%s %s: %s\n", holders > 1 ? "s" : "", who, saved);
}

int cli_first_rank_with(struct comm *c, int flag) {
  const int size = comm_size(c);
  int64_t *all = cg_calloc((size_t)size, sizeof *all, "every rank's check");
  const int st = comm_agree(c, all ? CG_OK : CG_ERR_NOMEM, "checking the ranks' options");
  if (st == CG_OK && comm_allgather_i64(c, flag ? 1 : 0, all) == CG_OK) {
    int first = -1;
    for (int r = size - 1; r >= 0; r--)
      if (all[r]) first = r;
    cg_free(all);
    return first;
  }
  cg_free(all);
  return -2;
}

int cli_ranks_agree(struct comm *c, const char *text, const char *hint) {
  const int rank = comm_rank(c), size = comm_size(c);
  if (size == 1) return CG_OK;
  int st = text ? CG_OK : cg_err_set(CG_ERR_NOMEM, "cannot hold this rank's settings to compare them");
  int64_t *hashes = cg_calloc((size_t)size, sizeof *hashes, "the settings' hash of every rank");
  if (!hashes && st == CG_OK) st = CG_ERR_NOMEM;
  if ((st = comm_agree(c, st, "comparing the ranks' settings")) != CG_OK) goto done;
  if ((st = comm_allgather_i64(c, (int64_t)(cg_fnv1a_str(text) >> 1), hashes)) != CG_OK) goto done;
  int differ = 0, first = 0;
  for (int r = size - 1; r > 0; r--)
    if (hashes[r] != hashes[0]) differ++, first = r;
  if (differ == 0) goto done;
  char **texts = NULL;
  if ((st = comm_gather_text(c, text, 0, &texts)) != CG_OK) goto done;
  if (rank == 0) {
    char l0[320], lr[320], shown0[1280], shownr[1280]; /* (the values escaped: core/log.h) */
    first_difference(texts[0], texts[first], l0, lr, sizeof l0);
    fprintf(stderr, "capgnn: error: the ranks were not given the same settings: rank %d has %s where rank 0 has %s "
            "(%d of %d ranks differ from rank 0): %s\n", first, cg_text_escape(shownr, sizeof shownr, lr),
            cg_text_escape(shown0, sizeof shown0, l0), differ, size, hint);
  }
  comm_texts_free(texts, size);
  st = cg_err_set(CG_ERR_ARG, "the ranks were not given the same settings");
done:
  cg_free(hashes);
  return st;
}
#endif
