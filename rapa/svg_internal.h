/* rapa/svg_internal.h — a small SVG writer for the profile report: a growing text
 * buffer, escaped text, and three charts (grouped bars, lines over a log2 x axis, a
 * heat map). Every data mark carries class "mark", data-value (%.17g) and, when
 * given, data-path (the JSON path of the value), so a test can compare what is drawn
 * with the data. Values that are NaN are not drawn (a bar group shows "n/a").
 * Pure string building: no I/O, no allocation failure reaches the caller except as
 * svg.failed (then the output must be discarded). */
#ifndef CAPGNN_RAPA_SVG_INTERNAL_H
#define CAPGNN_RAPA_SVG_INTERNAL_H

#include <stddef.h>

struct svg {
  char *buf;
  size_t len, cap;
  int failed; /* an allocation failed: buf is incomplete */
};

void svg_init(struct svg *s);
void svg_free(struct svg *s); /* leaves s empty and reusable */
void svg_printf(struct svg *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* text with &, <, >, " and ' escaped */
void svg_escape(struct svg *s, const char *text);

/* 1, 2 or 5 times a power of ten, close to range / target (range > 0). */
double svg_nice_step(double range, int target);
/* "1.5 KiB"-style byte labels: 4096 -> "4 KiB", 1 << 30 -> "1 GiB", 8 -> "8 B". */
void svg_bytes_label(double bytes, char *buf, size_t len);

struct svg_series {
  const char *name;
  const double *v;          /* one value per group (bars) or per point (lines) */
  const double *x;          /* lines: x of each point (> 0, log2 axis) */
  int n;
  const char *const *paths; /* optional: JSON path of each value */
};

/* Grouped bars: ngroups groups (labels), one bar per series in each, y from 0. */
void svg_bar_chart(struct svg *s, const char *id, const char *title, const char *unit, int ngroups,
                   const char *const *groups, int nseries, const struct svg_series *series);
/* Lines over a log2 x axis (x_is_bytes: tick labels as sizes), y from 0. */
void svg_line_chart(struct svg *s, const char *id, const char *title, const char *xlabel,
                    const char *unit, int x_is_bytes, int nseries, const struct svg_series *series);
/* n x n cells m[i * n + j] (NaN: empty, drawn grey), colour from the smallest to the
 * largest value; labels name rows and columns; paths (n * n, optional). */
void svg_heatmap(struct svg *s, const char *id, const char *title, const char *unit, int n,
                 const char *const *labels, const double *m, const char *const *paths);

#endif
