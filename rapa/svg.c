/* rapa/svg.c — the SVG writer of svg_internal.h.
 *
 * Design notes (the why): charts are drawn by hand in plain SVG so the report needs
 * no script and no library, and opens offline in any browser; the layout is fixed
 * (width 560) so that charts line up in a grid, and each value mark says which
 * number it shows (data-value, data-path), which is what the browser test reads. */
#include "rapa/svg_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define W 560.0
#define H 300.0
#define ML 64.0 /* margins: left (y labels), right, top (title), bottom (x labels, legend) */
#define MR 16.0
#define MT 34.0
#define MB 70.0

static const char *palette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
                                "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
#define NPAL (sizeof palette / sizeof palette[0])

void svg_init(struct svg *s) { memset(s, 0, sizeof *s); }

void svg_free(struct svg *s) {
  free(s->buf);
  memset(s, 0, sizeof *s);
}

static int reserve(struct svg *s, size_t more) {
  if (s->failed) return 0;
  if (s->len + more + 1 <= s->cap) return 1;
  size_t cap = s->cap ? s->cap : 4096;
  while (cap < s->len + more + 1) cap *= 2;
  char *b = realloc(s->buf, cap);
  if (!b) {
    s->failed = 1;
    return 0;
  }
  s->buf = b;
  s->cap = cap;
  return 1;
}

void svg_printf(struct svg *s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  va_list aq;
  va_copy(aq, ap);
  int n = vsnprintf(NULL, 0, fmt, aq);
  va_end(aq);
  if (n >= 0 && reserve(s, (size_t)n)) {
    vsnprintf(s->buf + s->len, (size_t)n + 1, fmt, ap);
    s->len += (size_t)n;
  }
  va_end(ap);
}

void svg_escape(struct svg *s, const char *t) {
  for (; t && *t; t++) {
    switch (*t) {
      case '&': svg_printf(s, "&amp;"); break;
      case '<': svg_printf(s, "&lt;"); break;
      case '>': svg_printf(s, "&gt;"); break;
      case '"': svg_printf(s, "&quot;"); break;
      case '\'': svg_printf(s, "&#39;"); break;
      default:
        if (reserve(s, 1)) {
          s->buf[s->len++] = *t;
          s->buf[s->len] = '\0';
        }
    }
  }
}

double svg_nice_step(double range, int target) {
  if (!(range > 0) || target < 1) return 1.0;
  double raw = range / target, p = pow(10.0, floor(log10(raw))), f = raw / p;
  double m = f <= 1.0 ? 1.0 : f <= 2.0 ? 2.0 : f <= 5.0 ? 5.0 : 10.0;
  return m * p;
}

void svg_bytes_label(double b, char *buf, size_t len) {
  static const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int i = 0;
  while (b >= 1024.0 && i < 4) {
    b /= 1024.0;
    i++;
  }
  if (b == floor(b)) snprintf(buf, len, "%.0f %s", b, u[i]);
  else snprintf(buf, len, "%.1f %s", b, u[i]);
}

/* a tick label: at most 4 significant digits, no trailing zeros */
static void num_label(double v, char *buf, size_t len) {
  if (fabs(v) >= 1e4 || (fabs(v) < 1e-2 && v != 0)) snprintf(buf, len, "%.2g", v);
  else snprintf(buf, len, "%.4g", v);
}

static void open_chart(struct svg *s, const char *id, const char *title, const char *kind) {
  svg_printf(s, "<svg class=\"chart %s\" id=\"", kind);
  svg_escape(s, id);
  svg_printf(s, "\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
                "role=\"img\" aria-label=\"", W, H, W, H);
  svg_escape(s, title);
  svg_printf(s, "\"><title>");
  svg_escape(s, title);
  svg_printf(s, "</title><rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"#fff\"/>"
                "<text class=\"ctitle\" x=\"%.0f\" y=\"20\" text-anchor=\"middle\" font-size=\"14\" font-weight=\"600\">",
             W, H, W / 2);
  svg_escape(s, title);
  svg_printf(s, "</text>");
}

/* y axis from 0 to ymax with gridlines; returns the scale's top value */
static double y_axis(struct svg *s, double ymax, const char *unit) {
  if (!(ymax > 0)) ymax = 1.0;
  double step = svg_nice_step(ymax, 5), top = ceil(ymax / step) * step;
  for (double v = 0; v <= top + step * 0.5; v += step) {
    double y = MT + (H - MT - MB) * (1.0 - v / top);
    char lab[32];
    num_label(v, lab, sizeof lab);
    svg_printf(s, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e3e3e3\"/>"
                  "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" font-size=\"11\" fill=\"#555\">%s</text>",
               ML, y, W - MR, y, ML - 6, y + 4, lab);
  }
  svg_printf(s, "<text x=\"14\" y=\"%.1f\" font-size=\"11\" fill=\"#555\" transform=\"rotate(-90 14 %.1f)\" "
                "text-anchor=\"middle\">", (MT + H - MB) / 2, (MT + H - MB) / 2);
  svg_escape(s, unit);
  svg_printf(s, "</text><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#888\"/>", ML, H - MB,
             W - MR, H - MB);
  return top;
}

static void legend(struct svg *s, int nseries, const struct svg_series *series) {
  double x = ML, y = H - 14;
  for (int i = 0; i < nseries; i++) {
    svg_printf(s, "<rect x=\"%.1f\" y=\"%.1f\" width=\"10\" height=\"10\" fill=\"%s\"/>"
                  "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">", x, y - 9, palette[i % NPAL], x + 14, y);
    svg_escape(s, series[i].name);
    svg_printf(s, "</text>");
    x += 24 + 6.5 * (double)strlen(series[i].name ? series[i].name : "");
    if (x > W - 120) {
      x = ML;
      y -= 14;
    }
  }
}

static void mark_attrs(struct svg *s, double v, const struct svg_series *se, int i) {
  svg_printf(s, " class=\"mark\" data-value=\"%.17g\"", v);
  if (se->paths && se->paths[i]) {
    svg_printf(s, " data-path=\"");
    svg_escape(s, se->paths[i]);
    svg_printf(s, "\"");
  }
}

void svg_bar_chart(struct svg *s, const char *id, const char *title, const char *unit, int ngroups,
                   const char *const *groups, int nseries, const struct svg_series *series) {
  open_chart(s, id, title, "bars");
  double ymax = 0;
  for (int k = 0; k < nseries; k++)
    for (int g = 0; g < ngroups && g < series[k].n; g++)
      if (series[k].v[g] > ymax) ymax = series[k].v[g];
  double top = y_axis(s, ymax, unit);
  const double gw = (W - ML - MR) / (ngroups > 0 ? ngroups : 1);
  const double bw = gw * 0.8 / (nseries > 0 ? nseries : 1);
  for (int g = 0; g < ngroups; g++) {
    const double gx = ML + g * gw;
    int drawn = 0;
    for (int k = 0; k < nseries; k++) {
      if (g >= series[k].n || !isfinite(series[k].v[g])) continue;
      const double v = series[k].v[g], h = (H - MT - MB) * (v / top);
      char lab[32];
      num_label(v, lab, sizeof lab);
      svg_printf(s, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.2f\" fill=\"%s\"", gx + gw * 0.1 + k * bw,
                 H - MB - h, bw * 0.92, h, palette[k % NPAL]);
      mark_attrs(s, v, &series[k], g);
      svg_printf(s, "><title>");
      svg_escape(s, series[k].name);
      svg_printf(s, ": %s %s</title></rect>", lab, unit);
      drawn = 1;
    }
    svg_printf(s, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"11\">", gx + gw / 2, H - MB + 15);
    svg_escape(s, drawn ? groups[g] : "n/a");
    if (!drawn) {
      svg_printf(s, " (");
      svg_escape(s, groups[g]);
      svg_printf(s, ")");
    }
    svg_printf(s, "</text>");
  }
  legend(s, nseries, series);
  svg_printf(s, "</svg>\n");
}

void svg_line_chart(struct svg *s, const char *id, const char *title, const char *xlabel, const char *unit,
                    int x_is_bytes, int nseries, const struct svg_series *series) {
  open_chart(s, id, title, "lines");
  double ymax = 0, xmin = INFINITY, xmax = -INFINITY;
  for (int k = 0; k < nseries; k++)
    for (int i = 0; i < series[k].n; i++) {
      if (!isfinite(series[k].v[i]) || !(series[k].x[i] > 0)) continue;
      if (series[k].v[i] > ymax) ymax = series[k].v[i];
      xmin = fmin(xmin, series[k].x[i]);
      xmax = fmax(xmax, series[k].x[i]);
    }
  double top = y_axis(s, ymax, unit);
  if (!(xmax > xmin)) {
    xmin = isfinite(xmin) ? xmin / 2 : 1;
    xmax = xmin * 4;
  }
  const double lx0 = log2(xmin), lx1 = log2(xmax);
#define XP(x) (ML + (W - ML - MR) * (log2(x) - lx0) / (lx1 - lx0))
#define YP(v) (MT + (H - MT - MB) * (1.0 - (v) / top))
  /* x ticks at powers of 4 (bytes) or 2 */
  const int stepx = x_is_bytes ? 2 : 1;
  for (int e = (int)ceil(lx0); e <= (int)floor(lx1); e += 1) {
    if (e % stepx) continue;
    double x = pow(2.0, e), px = XP(x);
    char lab[32];
    if (x_is_bytes) svg_bytes_label(x, lab, sizeof lab);
    else num_label(x, lab, sizeof lab);
    svg_printf(s, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#f0f0f0\"/>"
                  "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"10\" fill=\"#555\">%s</text>",
               px, MT, px, H - MB, px, H - MB + 14, lab);
  }
  svg_printf(s, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"11\" fill=\"#555\">", (ML + W - MR) / 2,
             H - MB + 30);
  svg_escape(s, xlabel);
  svg_printf(s, "</text>");
  for (int k = 0; k < nseries; k++) {
    const char *col = palette[k % NPAL];
    svg_printf(s, "<polyline class=\"line\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", col);
    for (int i = 0; i < series[k].n; i++)
      if (isfinite(series[k].v[i]) && series[k].x[i] > 0)
        svg_printf(s, "%.1f,%.1f ", XP(series[k].x[i]), YP(series[k].v[i]));
    svg_printf(s, "\"/>");
    for (int i = 0; i < series[k].n; i++) {
      if (!isfinite(series[k].v[i]) || !(series[k].x[i] > 0)) continue;
      char lab[32], xl[32];
      num_label(series[k].v[i], lab, sizeof lab);
      if (x_is_bytes) svg_bytes_label(series[k].x[i], xl, sizeof xl);
      else num_label(series[k].x[i], xl, sizeof xl);
      svg_printf(s, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"", XP(series[k].x[i]), YP(series[k].v[i]), col);
      mark_attrs(s, series[k].v[i], &series[k], i);
      svg_printf(s, "><title>");
      svg_escape(s, series[k].name);
      svg_printf(s, ", %s: %s %s</title></circle>", xl, lab, unit);
    }
  }
#undef XP
#undef YP
  legend(s, nseries, series);
  svg_printf(s, "</svg>\n");
}

void svg_heatmap(struct svg *s, const char *id, const char *title, const char *unit, int n,
                 const char *const *labels, const double *m, const char *const *paths) {
  open_chart(s, id, title, "heatmap");
  double lo = INFINITY, hi = -INFINITY;
  for (int i = 0; i < n * n; i++)
    if (isfinite(m[i])) {
      lo = fmin(lo, m[i]);
      hi = fmax(hi, m[i]);
    }
  const double side = fmin(W - 2 * ML, H - MT - 40), cell = n > 0 ? side / n : side;
  const double x0 = ML + 20, y0 = MT + 10;
  for (int i = 0; i < n; i++) {
    svg_printf(s, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" font-size=\"11\">", x0 - 4, y0 + (i + 0.5) * cell + 4);
    svg_escape(s, labels[i]);
    svg_printf(s, "</text><text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"11\">", x0 + (i + 0.5) * cell,
               y0 - 3);
    svg_escape(s, labels[i]);
    svg_printf(s, "</text>");
    for (int j = 0; j < n; j++) {
      const double v = m[i * n + j];
      const double x = x0 + j * cell, y = y0 + i * cell;
      if (!isfinite(v)) {
        svg_printf(s, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#eeeeee\" stroke=\"#fff\"/>", x, y,
                   cell, cell);
        continue;
      }
      const double t = hi > lo ? (v - lo) / (hi - lo) : 1.0;
      /* light yellow to dark blue */
      const int r = (int)(255 - t * (255 - 33)), g = (int)(247 - t * (247 - 102)), b = (int)(188 + t * (172 - 188));
      char lab[32];
      num_label(v, lab, sizeof lab);
      svg_printf(s, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"rgb(%d,%d,%d)\" stroke=\"#fff\"",
                 x, y, cell, cell, r, g, b);
      struct svg_series one = {NULL, NULL, NULL, 0, paths};
      mark_attrs(s, v, &one, i * n + j);
      svg_printf(s, "><title>");
      svg_escape(s, labels[i]);
      svg_printf(s, " - ");
      svg_escape(s, labels[j]);
      svg_printf(s, ": %s %s</title></rect><text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"%.0f\" "
                    "fill=\"%s\">%s</text>", lab, unit, x + cell / 2, y + cell / 2 + 4, cell > 60 ? 12.0 : 9.0,
                 t > 0.5 ? "#fff" : "#222", lab);
    }
  }
  svg_printf(s, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#555\">", x0 + side + 10, y0 + 12);
  svg_escape(s, unit);
  char a[32], b2[32];
  num_label(isfinite(lo) ? lo : 0, a, sizeof a);
  num_label(isfinite(hi) ? hi : 0, b2, sizeof b2);
  svg_printf(s, "</text><text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#555\">light %s .. dark %s</text></svg>\n",
             x0 + side + 10, y0 + 28, a, b2);
}
