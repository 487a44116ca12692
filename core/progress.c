/* core/progress.c — progress lines on stderr (see progress.h). */
#include "core/progress.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "core/timer.h"

#define PROGRESS_SUBSYS "progress"
#define PROGRESS_REDRAW_S 0.1   /* TTY: at most 10 redraws a second */
#define PROGRESS_LOG_MIN_S 1.0  /* log mode: steps shorter than this print nothing */
#define PROGRESS_LOG_EVERY_S 10.0

static enum cg_progress_mode progress_mode = CG_PROGRESS_AUTO;

void cg_progress_set_mode(enum cg_progress_mode mode) { progress_mode = mode; }
enum cg_progress_mode cg_progress_get_mode(void) { return progress_mode; }

enum cg_progress_mode cg_progress_effective_mode(void) {
  if (progress_mode == CG_PROGRESS_OFF || !cg_log_enabled(CG_LOG_INFO, PROGRESS_SUBSYS))
    return CG_PROGRESS_OFF;
  if (progress_mode == CG_PROGRESS_AUTO)
    return isatty(STDERR_FILENO) ? CG_PROGRESS_TTY : CG_PROGRESS_LOG;
  return progress_mode;
}

static size_t clamp_len(int k, size_t len) {
  if (k < 0) return 0;
  return (size_t)k < len ? (size_t)k : len - 1;
}

/* 1234567 -> "1,234,567" */
static size_t group_digits(char *buf, size_t len, long long v) {
  char tmp[32];
  int k = snprintf(tmp, sizeof tmp, "%lld", v < 0 ? -v : v);
  char out[48];
  size_t o = 0;
  if (v < 0) out[o++] = '-';
  for (int i = 0; i < k; i++) {
    if (i > 0 && (k - i) % 3 == 0) out[o++] = ',';
    out[o++] = tmp[i];
  }
  out[o] = '\0';
  return clamp_len(snprintf(buf, len, "%s", out), len);
}

size_t cg_progress_amount(char *buf, size_t len, double amount, const char *unit) {
  if (len == 0) return 0;
  if (unit && strcmp(unit, "B") == 0) {
    static const char *const suffix[] = {"B", "kB", "MB", "GB", "TB"};
    int s = 0;
    while (amount >= 1000.0 && s < 4) {
      amount /= 1000.0;
      s++;
    }
    if (s == 0) return clamp_len(snprintf(buf, len, "%.0f B", amount), len);
    return clamp_len(snprintf(buf, len, amount < 10.0 ? "%.2f %s" : amount < 100.0 ? "%.1f %s" : "%.0f %s",
                              amount, suffix[s]),
                     len);
  }
  const long long n = llround(amount);
  size_t k = group_digits(buf, len, n);
  if (unit && *unit && k + 1 < len) {
    /* one of a plural unit in the singular: "1 epoch", not "1 epochs" (the units passed
     * are plurals in -s: epochs, edges, entries -> entry) */
    const size_t u = strlen(unit);
    if (n == 1 && u > 3 && strcmp(unit + u - 3, "ies") == 0)
      k += clamp_len(snprintf(buf + k, len - k, " %.*sy", (int)(u - 3), unit), len - k);
    else if (n == 1 && u > 1 && unit[u - 1] == 's')
      k += clamp_len(snprintf(buf + k, len - k, " %.*s", (int)(u - 1), unit), len - k);
    else
      k += clamp_len(snprintf(buf + k, len - k, " %s", unit), len - k);
  }
  return k;
}

size_t cg_progress_duration(char *buf, size_t len, double seconds) {
  if (len == 0) return 0;
  if (!isfinite(seconds) || seconds < 0) return clamp_len(snprintf(buf, len, "?"), len);
  long long s = llround(seconds);
  if (s >= 3600)
    return clamp_len(snprintf(buf, len, "%lld:%02lld:%02lld", s / 3600, (s / 60) % 60, s % 60), len);
  return clamp_len(snprintf(buf, len, "%lld:%02lld", s / 60, s % 60), len);
}

static size_t rate_text(char *buf, size_t len, double amount, const char *unit, double elapsed_s) {
  if (elapsed_s <= 0) return clamp_len(snprintf(buf, len, "-"), len);
  double r = amount / elapsed_s;
  if (unit && strcmp(unit, "B") == 0) {
    size_t k = cg_progress_amount(buf, len, r, "B");
    return k + clamp_len(snprintf(buf + k, len - k, "/s"), len - k);
  }
  /* Counts: 3 significant figures with k/M/G, the noun after. */
  static const char *const suffix[] = {"", "k", "M", "G"};
  int s = 0;
  while (r >= 1000.0 && s < 3) {
    r /= 1000.0;
    s++;
  }
  const char *noun = unit && *unit ? unit : "items";
  return clamp_len(snprintf(buf, len, r < 10.0 ? "%.2f%s %s/s" : r < 100.0 ? "%.1f%s %s/s" : "%.0f%s %s/s",
                            r, suffix[s], noun),
                   len);
}

size_t cg_progress_format(char *buf, size_t len, const char *what, int64_t done, int64_t total,
                             const char *unit, const char *detail, double elapsed_s) {
  if (len == 0) return 0;
  char a[48], b[48], r[48], eta[24];
  size_t k;
  if (total > 0) {
    double frac = (double)done / (double)total;
    if (frac > 1.0) frac = 1.0;
    cg_progress_amount(a, sizeof a, (double)done, unit && strcmp(unit, "B") == 0 ? "B" : "");
    cg_progress_amount(b, sizeof b, (double)total, unit);
    rate_text(r, sizeof r, (double)done, unit, elapsed_s);
    double left = done > 0 ? elapsed_s * (double)(total - done) / (double)done : -1.0;
    cg_progress_duration(eta, sizeof eta, done >= total ? 0.0 : left);
    k = clamp_len(snprintf(buf, len, "%s  %5.1f%%  %s / %s  %s%s%s  ETA %s", what, 100.0 * frac, a, b,
                           detail && *detail ? detail : "", detail && *detail ? "  " : "", r, eta),
                  len);
  } else {
    cg_progress_amount(a, sizeof a, (double)done, unit);
    rate_text(r, sizeof r, (double)done, unit, elapsed_s);
    cg_progress_duration(eta, sizeof eta, elapsed_s);
    k = clamp_len(snprintf(buf, len, "%s  %s  %s%s%s  elapsed %s", what, a, detail && *detail ? detail : "",
                           detail && *detail ? "  " : "", r, eta),
                  len);
  }
  return k;
}

void cg_progress_begin(struct cg_progress *p, const char *what, int64_t total, const char *unit) {
  memset(p, 0, sizeof *p);
  /* escaped (core/log.h): a file name in it brings no raw control byte to the line that
   * this file redraws with its own \r and erase codes */
  cg_text_escape(p->what, sizeof p->what, what ? what : "");
  snprintf(p->unit, sizeof p->unit, "%s", unit ? unit : "");
  p->total = total;
  p->mode = (int)cg_progress_effective_mode();
  p->t0 = cg_time_now();
  p->t_draw = p->t0;
  p->next_decile = 1;
}

static void draw_tty(struct cg_progress *p, double now) {
  char line[512];
  cg_progress_format(line, sizeof line, p->what, p->done, p->total, p->unit, p->detail, now - p->t0);
  fprintf(stderr, "\r%s\033[K", line);
  fflush(stderr);
  p->drawn = 1;
  p->t_draw = now;
}

void cg_progress_update(struct cg_progress *p, int64_t done) {
  p->done = done;
  if (p->mode == CG_PROGRESS_OFF) return;
  double now = cg_time_now();
  if (p->mode == CG_PROGRESS_TTY) {
    if (now - p->t_draw >= PROGRESS_REDRAW_S || !p->drawn) draw_tty(p, now);
    return;
  }
  if (p->every > 0) { /* a fixed schedule: first, every n-th, last */
    if ((done == 1 || done % p->every == 0 || done == p->total) && done != p->logged) cg_progress_log_now(p);
    return;
  }
  /* Log mode: a line at each new 10 % mark or every 10 s, once the step has run a
   * second (short steps stay silent). */
  if (now - p->t0 < PROGRESS_LOG_MIN_S) return;
  int decile = p->total > 0 ? (int)(10 * (double)done / (double)p->total) : 0;
  int due = (p->total > 0 && decile >= p->next_decile) || now - p->t_draw >= PROGRESS_LOG_EVERY_S;
  if (!due) return;
  if (decile >= p->next_decile) p->next_decile = decile + 1;
  char line[512];
  cg_progress_format(line, sizeof line, p->what, done, p->total, p->unit, p->detail, now - p->t0);
  LOG_INFO(PROGRESS_SUBSYS, "%s", line);
  p->drawn = 1;
  p->t_draw = now;
  p->logged = done;
}

void cg_progress_set_every(struct cg_progress *p, int64_t n) {
  p->every = n > 0 ? n : 0;
  p->logged = -1;
}

void cg_progress_log_now(struct cg_progress *p) {
  if (p->mode != CG_PROGRESS_LOG || p->done == p->logged) return;
  const double now = cg_time_now();
  char line[512];
  cg_progress_format(line, sizeof line, p->what, p->done, p->total, p->unit, p->detail, now - p->t0);
  LOG_INFO(PROGRESS_SUBSYS, "%s", line);
  p->drawn = 1;
  p->t_draw = now;
  p->logged = p->done;
}

void cg_progress_files(const char *what, const char *const *labels, const char *const *paths, int n) {
  if (cg_progress_effective_mode() == CG_PROGRESS_OFF) return;
  char line[4096];
  size_t k = 0;
  int shown = 0;
  for (int i = 0; i < n; i++) {
    if (!paths[i]) continue;
    k += clamp_len(snprintf(line + k, sizeof line - k, "%s%s %s", shown ? ", " : "", labels[i], paths[i]),
                   sizeof line - k);
    shown++;
  }
  if (shown) LOG_INFO(PROGRESS_SUBSYS, "%s wrote: %s", what, line);
}

void cg_progress_update_detail(struct cg_progress *p, int64_t done, const char *detail) {
  snprintf(p->detail, sizeof p->detail, "%s", detail ? detail : "");
  cg_progress_update(p, done);
}

void cg_progress_end(struct cg_progress *p) {
  if (p->mode == CG_PROGRESS_OFF) return;
  double el = cg_time_now() - p->t0;
  if (p->mode == CG_PROGRESS_LOG && !p->drawn && el < PROGRESS_LOG_MIN_S) return;
  char a[48], r[48], t[24];
  /* A finished step did all of its work, even if the last update lagged behind. */
  int64_t amount = p->total > 0 ? p->total : p->done;
  cg_progress_amount(a, sizeof a, (double)amount, p->unit);
  rate_text(r, sizeof r, (double)amount, p->unit, el);
  snprintf(t, sizeof t, el < 10 ? "%.2f s" : "%.1f s", el);
  if (p->mode == CG_PROGRESS_TTY) {
    fprintf(stderr, "\r%s: done, %s in %s (%s)\033[K\n", p->what, a, t, r);
    fflush(stderr);
  } else {
    LOG_INFO(PROGRESS_SUBSYS, "%s: done, %s in %s (%s)", p->what, a, t, r);
  }
  p->mode = CG_PROGRESS_OFF; /* _end twice prints once */
}

void cg_progress_cancel(struct cg_progress *p) {
  if (p->mode == CG_PROGRESS_TTY && p->drawn) {
    fprintf(stderr, "\r\033[K");
    fflush(stderr);
  }
  p->mode = CG_PROGRESS_OFF;
}
