/* apps/config_file.c — `--config FILE`: INI settings (inih) turned into the long
 * options they name, placed before the command-line arguments so that those win
 * (a settings-file word that a later file or the command line overrides is left out).
 * Going through the command's own option table and parser means a file accepts
 * exactly what the command line accepts, with the same checks and messages. */
#define _GNU_SOURCE
#include "apps/config_file_internal.h"

#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <strings.h>

#include "core/status.h"

struct argv_buf {
  char **v;
  int n, cap;
};

static int argv_push(struct argv_buf *a, const char *s) {
  if (a->n + 2 > a->cap) {
    int cap = a->cap ? 2 * a->cap : 32;
    char **v = realloc(a->v, (size_t)cap * sizeof *v);
    if (!v) return cg_err_set(CG_ERR_NOMEM, "out of memory for the argument list");
    a->v = v;
    a->cap = cap;
  }
  char *d = strdup(s);
  if (!d) return cg_err_set(CG_ERR_NOMEM, "out of memory for the argument list");
  a->v[a->n++] = d;
  a->v[a->n] = NULL;
  return CG_OK;
}

/* The words of the expanded list, each with the option it sets (an index into the
 * option table; -1: an operand, a short option or a word that names no long option)
 * and its source (the index of its settings file; -1: the command line). A word
 * another one overrides is freed and left NULL (config_file_expand skips it). */
struct words {
  struct argv_buf s;
  int *opt, *src, cap;
};

static int words_push(struct words *w, const char *s, int opt, int src) {
  if (w->s.n + 1 > w->cap) {
    const int cap = w->cap ? 2 * w->cap : 32;
    int *o = realloc(w->opt, (size_t)cap * sizeof *o);
    if (o) w->opt = o;
    int *r = o ? realloc(w->src, (size_t)cap * sizeof *r) : NULL;
    if (r) w->src = r;
    if (!o || !r) return cg_err_set(CG_ERR_NOMEM, "out of memory for the argument list");
    w->cap = cap;
  }
  const int k = w->s.n;
  if (argv_push(&w->s, s) != CG_OK) return CG_ERR_NOMEM;
  w->opt[k] = opt;
  w->src[k] = src;
  return CG_OK;
}

static void words_free(struct words *w) {
  for (int k = 0; k < w->s.n; k++) free(w->s.v[k]);
  free(w->s.v);
  free(w->opt);
  free(w->src);
  *w = (struct words){0};
}

/* ---- which words override which ----------------------------------------------------
 * One setting may have several options: aliases (the same `val` and `flag` in the
 * option table: --no-cache and --no-part-cache) and, for a switch no-X, the option X
 * (--no-part-cache and --part-cache, which the command refuses together). A word for
 * a setting (a value, or a switch on) overrides every earlier settings-file word for
 * any of its options, so that a later file or the command line wins instead of
 * clashing with it; a switch set to false only cancels earlier words for that switch
 * (its aliases included), in the files and on the command line: no-part-cache =
 * false does not drop a part-cache folder. */
struct opt_table {
  const struct option *o;
  int n;
  int *group; /* the setting of each option: options with equal group are one setting */
};

static int same_option(const struct opt_table *t, int a, int b) {
  return t->o[a].val == t->o[b].val && t->o[a].flag == t->o[b].flag && t->o[a].has_arg == t->o[b].has_arg;
}

static int negates(const struct option *sw, const struct option *x) { /* switch no-X and option X */
  return sw->has_arg == no_argument && strncmp(sw->name, "no-", 3) == 0 && strcmp(sw->name + 3, x->name) == 0;
}

static int group_root(int *g, int i) {
  while (g[i] != i) i = g[i] = g[g[i]];
  return i;
}

static int opt_table_init(struct opt_table *t, const struct option *opts) {
  t->o = opts;
  t->n = 0;
  while (opts[t->n].name) t->n++;
  t->group = malloc((size_t)(t->n ? t->n : 1) * sizeof *t->group);
  if (!t->group) return cg_err_set(CG_ERR_NOMEM, "out of memory for the option table");
  for (int i = 0; i < t->n; i++) t->group[i] = i;
  for (int i = 0; i < t->n; i++)
    for (int j = 0; j < i; j++)
      if (same_option(t, i, j) || negates(&opts[i], &opts[j]) || negates(&opts[j], &opts[i]))
        t->group[group_root(t->group, i)] = group_root(t->group, j);
  for (int i = 0; i < t->n; i++) t->group[i] = group_root(t->group, i);
  return CG_OK;
}

/* Frees the words [0, end) that a word for option `opt` overrides: settings-file words
 * of the same setting (`whole`) or of the same option; with `cmdline`, command-line
 * words of the same option too (a switch set to false). */
static void words_override(struct words *w, const struct opt_table *t, int opt, int end, int whole, int cmdline) {
  for (int k = 0; k < end; k++) {
    const int o = w->opt[k];
    if (!w->s.v[k] || o < 0 || (w->src[k] < 0 && !cmdline)) continue;
    if (whole ? t->group[o] == t->group[opt] : same_option(t, o, opt)) {
      free(w->s.v[k]);
      w->s.v[k] = NULL;
    }
  }
}

struct parse_ctx {
  const char *path;
  const struct opt_table *table;
  struct words *out;
  int src; /* the file's index */
  char err[512]; /* first problem found (inih gives its line) */
  /* values of lines too long for inih (long_line_reader), by their placeholder index */
  char **long_values;
  int nlong;
};

/* Edit distance, for "did you mean". */
static int distance(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  if (la > 63 || lb > 63) return 99;
  int d[64][64];
  for (size_t i = 0; i <= la; i++) d[i][0] = (int)i;
  for (size_t j = 0; j <= lb; j++) d[0][j] = (int)j;
  for (size_t i = 1; i <= la; i++)
    for (size_t j = 1; j <= lb; j++) {
      int sub = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
      int del = d[i - 1][j] + 1, ins = d[i][j - 1] + 1;
      d[i][j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
    }
  return d[la][lb];
}

/* The names DGL's and PyG's example scripts give these settings (underscores or
 * hyphens), too far from capgnn's for the edit distance: the option of longopts they
 * mean, or NULL. */
static const char *foreign_name(const char *bare, const struct option *longopts) {
  static const char *const names[][2] = {
      {"dataset", "graph"},        {"num-epochs", "epochs"},       {"max-epochs", "epochs"},
      {"num-layers", "layers"},    {"n-layers", "layers"},         {"num-hidden", "hidden"},
      {"hidden-dim", "hidden"},    {"hidden-channels", "hidden"},  {"hidden-size", "hidden"},
      {"num-heads", "heads"},      {"n-heads", "heads"},           {"num-out-heads", "out-heads"},
      {"in-drop", "input-dropout"}, {"feat-drop", "input-dropout"}, {"patience", "early-stop"},
      {"learning-rate", "lr"},     {"log-interval", "log-every"}};
  char norm[128];
  snprintf(norm, sizeof norm, "%s", bare);
  for (char *q = norm; *q; q++)
    if (*q == '_') *q = '-';
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    if (strcmp(norm, names[i][0])) continue;
    for (const struct option *o = longopts; o->name; o++)
      if (!strcmp(o->name, names[i][1])) return o->name;
  }
  return NULL;
}

const char *config_option_suggest(const char *name, const struct option *opts) {
  /* (a DGL or PyG name first: 'num-heads' is two edits from 'out-heads') */
  const char *best = foreign_name(name, opts);
  if (best) return best;
  int bd = 3; /* at most two edits away */
  for (const struct option *q = opts; q->name; q++) {
    if (strcmp(q->name, "help") == 0) continue;
    const int d = distance(name, q->name);
    if (d < bd) bd = d, best = q->name;
  }
  return best;
}

static int parse_bool(const char *v, int *out) {
  static const char *const yes[] = {"true", "yes", "on", "1"}, *const no[] = {"false", "no", "off", "0"};
  for (int i = 0; i < 4; i++) {
    if (strcasecmp(v, yes[i]) == 0) return *out = 1, 0;
    if (strcasecmp(v, no[i]) == 0) return *out = 0, 0;
  }
  return -1;
}

/* ---- lines longer than inih reads ------------------------------------------------
 * The Debian build of inih reads lines of at most INI_MAX_LINE (200) bytes and takes
 * the rest of a longer line as a line of its own: a long metrics path became a
 * "syntax error" on the next line. inih reads through long_line_reader instead of
 * fgets: a line that fits is passed as it is; a longer "key = value" line is passed
 * as "key = PLACEHOLDER" and its value kept aside (inih's rules for it applied here:
 * white space trimmed, an inline comment ' ;...' removed), which on_setting puts back.
 * A longer comment is passed as an empty comment; a longer section or key is an error
 * that names the limit (option names and section names are short). */

#define LONG_MARK '\x01' /* placeholder: LONG_MARK and the index; never in a real value */

struct line_reader {
  FILE *fp;
  struct parse_ctx *ctx;
  char *buf;
  size_t cap;
  int lineno;
};

static char *skip_space(char *p) {
  while (*p && isspace((unsigned char)*p)) p++;
  return p;
}

static void trim_end(char *p) {
  size_t n = strlen(p);
  while (n > 0 && isspace((unsigned char)p[n - 1])) p[--n] = '\0';
}

static char *long_line_reader(char *str, int num, void *stream) {
  struct line_reader *r = stream;
  const ssize_t got = getline(&r->buf, &r->cap, r->fp);
  if (got < 0) return NULL;
  r->lineno++;
  if (got < num) { /* fits: what fgets would have given */
    memcpy(str, r->buf, (size_t)got + 1);
    return str;
  }
  struct parse_ctx *c = r->ctx;
  const ssize_t len = got - (r->buf[got - 1] == '\n');
  char *line = r->buf;
  if (r->lineno == 1 && strncmp(line, "\xEF\xBB\xBF", 3) == 0) line += 3; /* UTF-8 BOM, as inih */
  trim_end(line);
  char *t = skip_space(line);
  if (*t == ';' || *t == '#') { /* a comment: its text does not matter */
    snprintf(str, (size_t)num, "#\n");
    return str;
  }
  /* the key: up to '=' or ':', as inih splits (a key never holds either) */
  char *sep = t == line ? strpbrk(t, "=:") : NULL; /* indented: a continuation line */
  if (*t == '[' || (t == line && !sep) || (sep && (size_t)(sep - t) + 8 >= (size_t)num / 2)) {
    if (!c->err[0])
      snprintf(c->err, sizeof c->err, "line of %zd characters: a section name or key must fit in %d "
               "(only values may be longer)", len, num / 2 - 8);
    snprintf(str, (size_t)num, "%c\n", LONG_MARK); /* a line inih reports as an error */
    return str;
  }
  char *value = sep ? skip_space(sep + 1) : t;
  for (char *p = value; *p; p++) /* inih's inline comment: ';' after white space */
    if (*p == ';' && p > value && isspace((unsigned char)p[-1])) {
      *p = '\0';
      break;
    }
  trim_end(value);
  char **v = realloc(c->long_values, (size_t)(c->nlong + 1) * sizeof *v);
  if (v) c->long_values = v;
  char *copy = v ? strdup(value) : NULL;
  if (!copy) {
    if (!c->err[0]) snprintf(c->err, sizeof c->err, "out of memory for a long line");
    snprintf(str, (size_t)num, "%c\n", LONG_MARK);
    return str;
  }
  c->long_values[c->nlong] = copy;
  if (sep)
    snprintf(str, (size_t)num, "%.*s%c %c%d\n", (int)(sep - line), line, *sep, LONG_MARK, c->nlong);
  else
    snprintf(str, (size_t)num, "  %c%d\n", LONG_MARK, c->nlong);
  c->nlong++;
  return str;
}

static int on_setting_value(struct parse_ctx *c, const char *name, const char *value);

static int on_setting(void *user, const char *section, const char *name, const char *value) {
  (void)section;
  struct parse_ctx *c = user;
  if (value[0] == LONG_MARK) { /* a long value kept aside by long_line_reader */
    const int k = atoi(value + 1);
    if (k >= 0 && k < c->nlong) value = c->long_values[k];
  }
  /* '#' after white space starts a comment too (inih knows only ';'), and one pair of
   * matching quotes around the whole value is not part of it (graph = "cora") */
  char *val = strdup(value);
  if (!val) return 0;
  char *close = val[0] == '"' || val[0] == '\'' ? strchr(val + 1, val[0]) : NULL;
  if ((val[0] == '"' || val[0] == '\'') && !close) { /* inih cut it at a ' ;' inside the quotes */
    if (!c->err[0])
      snprintf(c->err, sizeof c->err, "'%s = %s': the quote is not closed (a ';' after white space ends the line "
               "even inside quotes: a settings file cannot hold a value with ' ;'; give it on the command line)",
               name, value);
    free(val);
    return 0;
  }
  const char *rest = close ? close + 1 : NULL;
  while (rest && isspace((unsigned char)*rest)) rest++;
  if (rest && (*rest == '\0' || (*rest == '#' && isspace((unsigned char)rest[-1])))) {
    /* quoted: the text between the quotes, a '#' in it included */
    *close = '\0';
    memmove(val, val + 1, strlen(val + 1) + 1);
  } else {
    for (char *p = val; *p; p++)
      if (*p == '#' && p > val && isspace((unsigned char)p[-1])) {
        *p = '\0';
        break;
      }
    trim_end(val);
  }
  const int ok = on_setting_value(c, name, val);
  free(val);
  return ok;
}

static int on_setting_value(struct parse_ctx *c, const char *name, const char *value) {
  const struct option *opts = c->table->o;
  char key[128];
  snprintf(key, sizeof key, "%s", name);
  for (char *p = key; *p; p++)
    if (*p == '_') *p = '-';
  if (strcmp(key, "config") == 0 || strcmp(key, "help") == 0 || strcmp(key, "print-config") == 0) {
    if (!c->err[0]) snprintf(c->err, sizeof c->err, "'%s' cannot be set in a settings file", key);
    return 0;
  }
  int oi = -1;
  for (int q = 0; q < c->table->n; q++)
    if (strcmp(opts[q].name, key) == 0) oi = q;
  if (oi < 0) {
    if (!c->err[0]) {
      const char *best = config_option_suggest(key, opts);
      snprintf(c->err, sizeof c->err, "unknown key '%s'%s%s%s (keys are the command's long options without --)",
               name, best ? "; did you mean '" : "", best ? best : "", best ? "'?" : "");
    }
    return 0;
  }
  const struct option *o = &opts[oi];
  char opt[140];
  snprintf(opt, sizeof opt, "--%s", o->name);
  if (o->has_arg == no_argument) {
    int on;
    if (parse_bool(value, &on) != 0) {
      if (!c->err[0])
        snprintf(c->err, sizeof c->err, "'%s = %s': expected true or false (also yes/no, on/off, 1/0)", name, value);
      return 0;
    }
    /* false: no word, and an earlier file's true (or this file's) is cancelled */
    words_override(c->out, c->table, oi, c->out->s.n, on, 0);
    return !on || words_push(c->out, opt, oi, c->src) == CG_OK;
  }
  /* one word, "--key=value": a value that starts with "--" stays a value */
  char *word = malloc(strlen(opt) + strlen(value) + 2);
  if (!word) return 0;
  sprintf(word, "%s=%s", opt, value);
  words_override(c->out, c->table, oi, c->out->s.n, 1, 0);
  const int ok = words_push(c->out, word, oi, c->src) == CG_OK;
  free(word);
  return ok;
}

/* Words [first, end) of the expanded list came from `path` (config_file_origin). */
#define CONFIG_MAX_ORIGINS 64
struct config_origin {
  int first, end;
  const char *path;
};
static struct config_origin origins[CONFIG_MAX_ORIGINS];
static int norigins;

const char *config_file_origin(int index) {
  for (int k = 0; k < norigins; k++)
    if (index >= origins[k].first && index < origins[k].end) return origins[k].path;
  return NULL;
}

static int load_file(const char *path, const struct opt_table *table, int src, struct words *out) {
  struct parse_ctx c = {.path = path, .table = table, .out = out, .src = src};
  struct stat sb;
  if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode))
    return cg_err_set(CG_ERR_ARG, "--config %s: not a regular file (expected an INI settings file, "
                      "e.g. configs/cora.ini)", path);
  errno = 0;
  struct line_reader r = {.fp = fopen(path, "r"), .ctx = &c};
  if (!r.fp) return cg_err_set(CG_ERR_IO, "--config %s: cannot open: %s", path, strerror(errno ? errno : ENOENT));
  int rc = ini_parse_stream(long_line_reader, &r, on_setting, &c);
  fclose(r.fp);
  free(r.buf);
  for (int k = 0; k < c.nlong; k++) free(c.long_values[k]);
  free(c.long_values);
  if (rc == -2) return cg_err_set(CG_ERR_NOMEM, "--config %s: out of memory while reading it", path);
  if (rc > 0)
    return cg_err_set(CG_ERR_ARG, "%s:%d: %s", path, rc,
                      c.err[0] ? c.err : "syntax error (expected 'key = value', '[section]' or a comment)");
  return CG_OK;
}

/* The long option a command-line word "--NAME[=VALUE]" names, as getopt_long finds it:
 * the whole name, or a prefix of one option only (aliases count as one); -1 if none
 * (getopt_long then reports it). */
static int find_option(const struct opt_table *t, const char *name, size_t len) {
  int found = -1;
  for (int i = 0; i < t->n; i++)
    if (strlen(t->o[i].name) == len && strncmp(t->o[i].name, name, len) == 0) return i;
  for (int i = 0; i < t->n; i++)
    if (strncmp(t->o[i].name, name, len) == 0) {
      if (found >= 0 && !same_option(t, found, i)) return -1; /* ambiguous */
      if (found < 0) found = i;
    }
  return found;
}

/* The command line's words after the settings files': each option overrides the files'
 * words for its setting; "--SWITCH=true" becomes "--SWITCH", "--SWITCH=false" cancels
 * the switch (from the files and from earlier on the command line) and is dropped. */
static int command_line_words(struct words *w, int first, const struct opt_table *t) {
  for (int k = first; k < w->s.n; k++) {
    const char *a = w->s.v[k];
    if (strcmp(a, "--") == 0) break; /* the rest are operands */
    if (strncmp(a, "--", 2) != 0 || a[2] == '\0') continue; /* an operand or a short option */
    const char *eq = strchr(a + 2, '=');
    const int oi = find_option(t, a + 2, eq ? (size_t)(eq - a - 2) : strlen(a + 2));
    if (oi < 0) continue;
    const struct option *o = &t->o[oi];
    if (o->has_arg == required_argument && !eq) k++; /* the next word is its value (getopt_long's rule) */
    if (o->has_arg == no_argument && eq) {
      int on;
      if (parse_bool(eq + 1, &on) != 0)
        return cg_err_set(CG_ERR_ARG, "option '%s': a switch takes true or false (also yes/no, on/off, 1/0), "
                          "or no value for true; --%s=false turns it off", a, o->name);
      char word[140];
      snprintf(word, sizeof word, "--%s", o->name);
      free(w->s.v[k]);
      w->s.v[k] = on ? strdup(word) : NULL;
      if (on && !w->s.v[k]) return cg_err_set(CG_ERR_NOMEM, "out of memory for the argument list");
      if (!on) {
        words_override(w, t, oi, k, 0, 1);
        continue;
      }
    }
    w->opt[k] = oi;
    words_override(w, t, oi, first, 1, 0);
  }
  return CG_OK;
}

int config_file_expand(int argc, char **argv, const struct option *longopts, int *out_argc, char ***out_argv) {
  struct words w = {0};
  struct argv_buf rest = {0}, all = {0};
  struct opt_table table;
  const char *paths[CONFIG_MAX_ORIGINS];
  int nfiles = 0;
  *out_argc = 0;
  *out_argv = NULL;
  norigins = 0;
  int st = opt_table_init(&table, longopts);
  int i;
  for (i = 1; i < argc && st == CG_OK; i++) {
    const char *a = argv[i], *path = NULL;
    if (strcmp(a, "--") == 0) break; /* the rest are operands */
    if (strcmp(a, "--config") == 0) {
      if (i + 1 >= argc || strncmp(argv[i + 1], "--", 2) == 0) {
        st = cg_err_set(CG_ERR_ARG, "option '--config' needs a value (a settings file, e.g. configs/reddit.ini)");
        break;
      }
      path = argv[++i];
    } else if (strncmp(a, "--config=", 9) == 0) {
      path = a + 9;
    } else {
      st = argv_push(&rest, a);
      continue;
    }
    if (nfiles < CONFIG_MAX_ORIGINS) paths[nfiles] = path;
    st = load_file(path, &table, nfiles++, &w);
  }
  for (; i < argc && st == CG_OK; i++) st = argv_push(&rest, argv[i]);
  /* the files' words, then the command line's */
  const int first = w.s.n;
  for (int k = 0; k < rest.n && st == CG_OK; k++) st = words_push(&w, rest.v[k], -1, -1);
  if (st == CG_OK) st = command_line_words(&w, first, &table);
  if (st == CG_OK) st = argv_push(&all, argc > 0 ? argv[0] : "capgnn");
  for (int k = 0, last = -1; k < w.s.n && st == CG_OK; k++) {
    if (!w.s.v[k]) continue; /* overridden */
    const int src = w.src[k];
    if (src >= 0 && src < CONFIG_MAX_ORIGINS) { /* a file's words stay together, in file order */
      if (src != last) origins[norigins++] = (struct config_origin){all.n, all.n, paths[src]};
      origins[norigins - 1].end = all.n + 1;
      last = src;
    }
    st = argv_push(&all, w.s.v[k]);
  }
  words_free(&w);
  config_file_argv_free(rest.n, rest.v);
  free(table.group);
  if (st != CG_OK) {
    config_file_argv_free(all.n, all.v);
    norigins = 0;
    return st;
  }
  *out_argc = all.n;
  *out_argv = all.v;
  return CG_OK;
}

void config_file_argv_free(int argc, char **argv) {
  if (!argv) return;
  for (int i = 0; i < argc; i++) free(argv[i]);
  free(argv);
}

int config_file_names(int argc, char **argv, const char **names, int max) {
  int k = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--") == 0) break;
    const char *f = NULL;
    if (strcmp(argv[i], "--config") == 0 && i + 1 < argc) f = argv[++i];
    else if (strncmp(argv[i], "--config=", 9) == 0) f = argv[i] + 9;
    if (f && k < max) names[k++] = f;
  }
  return k;
}
