/* apps/config_file.c — `--config FILE`: INI settings (inih) turned into the long
 * options they name, placed before the command-line arguments so that those win.
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

struct parse_ctx {
  const char *path;
  const struct option *opts;
  struct argv_buf *out;
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

const char *config_option_suggest(const char *name, const struct option *opts) {
  const char *best = NULL;
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
  char key[128];
  snprintf(key, sizeof key, "%s", name);
  for (char *p = key; *p; p++)
    if (*p == '_') *p = '-';
  if (strcmp(key, "config") == 0 || strcmp(key, "help") == 0 || strcmp(key, "print-config") == 0) {
    if (!c->err[0]) snprintf(c->err, sizeof c->err, "'%s' cannot be set in a settings file", key);
    return 0;
  }
  const struct option *o = NULL;
  for (const struct option *q = c->opts; q->name; q++)
    if (strcmp(q->name, key) == 0) o = q;
  if (!o) {
    if (!c->err[0]) {
      const char *best = config_option_suggest(key, c->opts);
      snprintf(c->err, sizeof c->err, "unknown key '%s'%s%s%s (keys are the command's long options without --)",
               name, best ? "; did you mean '" : "", best ? best : "", best ? "'?" : "");
    }
    return 0;
  }
  char opt[140];
  snprintf(opt, sizeof opt, "--%s", o->name);
  if (o->has_arg == no_argument) {
    int on;
    if (parse_bool(value, &on) != 0) {
      if (!c->err[0])
        snprintf(c->err, sizeof c->err, "'%s = %s': expected true or false (also yes/no, on/off, 1/0)", name, value);
      return 0;
    }
    if (on && argv_push(c->out, opt) != CG_OK) return 0;
    return 1;
  }
  /* one word, "--key=value": a value that starts with "--" stays a value */
  char *word = malloc(strlen(opt) + strlen(value) + 2);
  if (!word) return 0;
  sprintf(word, "%s=%s", opt, value);
  const int ok = argv_push(c->out, word) == CG_OK;
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

static int load_file(const char *path, const struct option *opts, struct argv_buf *out) {
  struct parse_ctx c = {.path = path, .opts = opts, .out = out};
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

int config_file_expand(int argc, char **argv, const struct option *longopts, int *out_argc, char ***out_argv) {
  struct argv_buf files = {0}, rest = {0}, all = {0};
  int st = CG_OK;
  *out_argc = 0;
  *out_argv = NULL;
  norigins = 0;
  int i;
  for (i = 1; i < argc && st == CG_OK; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--") == 0) break; /* the rest are operands */
    if (strcmp(a, "--config") == 0) {
      if (i + 1 >= argc || strncmp(argv[i + 1], "--", 2) == 0) {
        st = cg_err_set(CG_ERR_ARG, "option '--config' needs a value (a settings file, e.g. configs/reddit.ini)");
        break;
      }
      const int before = files.n;
      st = load_file(argv[++i], longopts, &files);
      if (st == CG_OK && norigins < CONFIG_MAX_ORIGINS) /* + 1: argv[0] comes first */
        origins[norigins++] = (struct config_origin){1 + before, 1 + files.n, argv[i]};
    } else if (strncmp(a, "--config=", 9) == 0) {
      const int before = files.n;
      st = load_file(a + 9, longopts, &files);
      if (st == CG_OK && norigins < CONFIG_MAX_ORIGINS)
        origins[norigins++] = (struct config_origin){1 + before, 1 + files.n, a + 9};
    } else {
      st = argv_push(&rest, a);
    }
  }
  for (; i < argc && st == CG_OK; i++) st = argv_push(&rest, argv[i]);
  if (st == CG_OK) st = argv_push(&all, argc > 0 ? argv[0] : "capgnn");
  for (int k = 0; k < files.n && st == CG_OK; k++) st = argv_push(&all, files.v[k]);
  for (int k = 0; k < rest.n && st == CG_OK; k++) st = argv_push(&all, rest.v[k]);
  config_file_argv_free(files.n, files.v);
  config_file_argv_free(rest.n, rest.v);
  if (st != CG_OK) {
    config_file_argv_free(all.n, all.v);
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
