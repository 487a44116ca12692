/* rapa/report.c — the profile as a plain-text table (nccl-tests style) and as a
 * self-contained HTML report with inline SVG charts.
 *
 * Design notes (the why):
 * - Both read the profile's JSON and nothing else, so they show exactly what is kept.
 * - The HTML has no script and loads nothing (a Content-Security-Policy that forbids
 *   every fetch says so to the browser): it opens offline, from an e-mail, anywhere.
 * - Every number shown carries its JSON path and exact value (data-path,
 *   data-value), and is displayed with one rule (fmt_num), so a test can check that
 *   the page shows the JSON's numbers. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/outfile.h"
#include "core/status.h"
#include "rapa/balance.h"
#include "rapa/rapa_internal.h"
#include "rapa/svg_internal.h"

/* ---- helpers ---------------------------------------------------------------------- */

static const cJSON *get(const cJSON *o, const char *k) { return cJSON_GetObjectItemCaseSensitive(o, k); }
static const cJSON *at(const cJSON *a, int i) { return cJSON_GetArrayItem(a, i); }
static double num(const cJSON *o, const char *k) {
  const cJSON *x = get(o, k);
  return cJSON_IsNumber(x) ? x->valuedouble : NAN;
}
static const char *str(const cJSON *o, const char *k) {
  const char *s = cJSON_GetStringValue(get(o, k));
  return s ? s : "";
}

/* The one display rule of the HTML numbers: 4 significant digits below 10,000, whole
 * numbers above (the browser test formats the JSON value the same way). */
static void fmt_num(double v, char *buf, size_t len) {
  if (!isfinite(v)) snprintf(buf, len, "n/a");
  else if (fabs(v) >= 1e4) snprintf(buf, len, "%.0f", v);
  else snprintf(buf, len, "%.4g", v);
}

/* index of the entry with the largest "bytes" in an array of curve points (the
 * sustained rate; the summary's figure), -1 if none */
static int peak_index(const cJSON *arr) {
  int best = -1;
  double bv = -1;
  for (int i = 0; i < cJSON_GetArraySize(arr); i++) {
    double v = num(at(arr, i), "bytes");
    if (v > bv) {
      bv = v;
      best = i;
    }
  }
  return best;
}

/* ---- text ---------------------------------------------------------------------------- */

void rapa_report_text(const struct rapa_profile *p, FILE *out) {
  const cJSON *root = p->root, *ranks = get(root, "ranks"), *links = get(root, "links");
  const int n = cJSON_GetArraySize(ranks);
  /* the file's strings (the command's arguments, host names) shown with their control
   * bytes escaped (core/log.h): the report is read on a terminal */
  char e1[16384], e2[1024], e3[1024], e4[1024];
  fprintf(out, "# capgnn profile: %d rank%s%s, created %s\n", n, n == 1 ? "" : "s",
          cJSON_IsTrue(get(root, "quick")) ? " (--quick)" : "", cg_text_escape(e2, sizeof e2, str(root, "created")));
  fprintf(out, "# command: %s\n#\n", cg_text_escape(e1, sizeof e1, str(root, "command")));
  for (int r = 0; r < n; r++) {
    const cJSON *d = at(ranks, r);
    fprintf(out, "#  Rank %2d Host %-12s Node %d Key %-24s %s [%s %s]\n", r,
            cg_text_escape(e1, sizeof e1, str(d, "host")), (int)num(d, "node"),
            cg_text_escape(e2, sizeof e2, str(d, "key")), cg_text_escape(e3, sizeof e3, rapa_profile_describe(p, r)),
            cJSON_IsTrue(get(d, "reused")) ? "reused, measured" : "measured",
            cg_text_escape(e4, sizeof e4, str(d, "measured")));
  }
  fprintf(out, "#\n# MM (GEMM, fp32): GFLOP/s\n# %9s %9s %9s", "m", "n", "k");
  for (int r = 0; r < n; r++) fprintf(out, "   rank %-3d", r);
  fprintf(out, "\n");
  const cJSON *mm0 = get(get(at(ranks, 0), "mm"), "model"), *sw0 = get(get(at(ranks, 0), "mm"), "sweep");
  for (int part = 0; part < 2; part++) {
    const cJSON *ref = part ? sw0 : mm0;
    for (int i = 0; i < cJSON_GetArraySize(ref); i++) {
      fprintf(out, "  %9.0f %9.0f %9.0f", num(at(ref, i), "m"), num(at(ref, i), "n"), num(at(ref, i), "k"));
      for (int r = 0; r < n; r++)
        fprintf(out, " %10.2f", num(at(get(get(at(ranks, r), "mm"), part ? "sweep" : "model"), i), "gflops"));
      fprintf(out, "\n");
    }
  }
  for (int r = 0; r < n; r++) {
    double t = rapa_json_num(at(ranks, r), "summary.mm_tf32_gflops");
    if (isfinite(t)) fprintf(out, "#  rank %d TF32 at the hidden shape: %.2f GFLOP/s\n", r, t);
  }
  const cJSON *sp0 = get(at(ranks, 0), "spmm");
  fprintf(out, "#\n# SpMM (%s: %.0f rows, %.0f nonzeros): gathered GB/s (G nonzero-columns/s)\n# %9s",
          cg_text_escape(e1, sizeof e1, str(sp0, "graph")), num(sp0, "rows"), num(sp0, "nnz"), "width");
  for (int r = 0; r < n; r++) fprintf(out, "          rank %-3d", r);
  fprintf(out, "\n");
  for (int i = 0; i < cJSON_GetArraySize(get(sp0, "results")); i++) {
    fprintf(out, "  %9.0f", num(at(get(sp0, "results"), i), "f"));
    for (int r = 0; r < n; r++) {
      const cJSON *e = at(get(get(at(ranks, r), "spmm"), "results"), i);
      fprintf(out, "   %8.2f (%6.3f)", num(e, "gathered_gbs"), num(e, "gnnz_s"));
    }
    fprintf(out, "\n");
  }
  static const char *kinds[][3] = {{"h2d", "pageable", "H2D pageable"}, {"h2d", "pinned", "H2D pinned"},
                                   {"d2h", "pageable", "D2H pageable"}, {"d2h", "pinned", "D2H pinned"},
                                   {"idt", "d2d", "IDT (copy inside the device)"}};
  for (int k = 0; k < 5; k++) {
    const cJSON *c0 = get(get(at(ranks, 0), kinds[k][0]), kinds[k][1]);
    if (cJSON_GetArraySize(c0) == 0) continue;
    fprintf(out, "#\n# %s: GB/s (time in us)\n# %12s", kinds[k][2], "size");
    for (int r = 0; r < n; r++) fprintf(out, "           rank %-3d", r);
    fprintf(out, "\n");
    for (int i = 0; i < cJSON_GetArraySize(c0); i++) {
      fprintf(out, "  %12.0f", num(at(c0, i), "bytes"));
      for (int r = 0; r < n; r++) {
        const cJSON *e = at(get(get(at(ranks, r), kinds[k][0]), kinds[k][1]), i);
        fprintf(out, "   %7.2f (%9.2f)", num(e, "gbs"), num(e, "median_s") * 1e6);
      }
      fprintf(out, "\n");
    }
  }
  for (int r = 0; r < n; r++) {
    const cJSON *pe = get(get(at(ranks, r), "idt"), "peer");
    fprintf(out, "#  rank %d GPU-to-GPU peer copies: %s\n", r, cg_text_escape(e1, sizeof e1, str(pe, "note")));
    for (int i = 0; i < cJSON_GetArraySize(get(pe, "results")); i++) {
      const cJSON *e = at(get(pe, "results"), i);
      fprintf(out, "#    to device %.0f: %.2f GB/s\n", num(e, "peer"), num(e, "gbs"));
    }
  }
  fprintf(out, "#\n# Links (MPI ping-pong; one-way latency = half the 8-byte round trip, bandwidth = bytes / half "
               "the round trip)\n");
  fprintf(out, "# %4s %4s %-10s %-7s %12s %12s\n", "a", "b", "where", "buffers", "latency(us)", "peak(GB/s)");
  const cJSON *pairs = get(links, "pairs");
  for (int i = 0; i < cJSON_GetArraySize(pairs); i++) {
    const cJSON *pr = at(pairs, i);
    static const char *paths[] = {"host", "device", "nccl"};
    for (int q = 0; q < 3; q++) {
      const cJSON *l = get(pr, paths[q]);
      if (!cJSON_IsObject(l)) continue;
      fprintf(out, "  %4.0f %4.0f %-10s %-7s %12.2f %12.3f\n", num(pr, "a"), num(pr, "b"),
              cJSON_IsTrue(get(pr, "same_node")) ? "intra-node" : "inter-node", paths[q], num(l, "latency_us"),
              num(l, "peak_gbs"));
    }
  }
  if (n < 2) fprintf(out, "  (one rank: no links)\n");
  fprintf(out, "#  device buffers: %s\n#  NCCL: %s\n", str(links, "device_note"), str(links, "nccl_note"));
  const cJSON *ar = get(links, "allreduce");
  if (cJSON_IsObject(ar)) {
    fprintf(out, "#  gradient all-reduce: %.0f floats (%.2f MB) over %s: %.3f ms median, %.3f ms min\n", num(ar, "floats"),
            num(ar, "bytes") / 1e6, str(ar, "path"), num(ar, "median_s") * 1e3, num(ar, "min_s") * 1e3);
    const cJSON *curve = get(ar, "curve"), *pt;
    if (cJSON_IsArray(curve)) {
      fprintf(out, "#  all-reduce by size (%s, %.0f node(s); capgnn plan prices a job of this layout from it):", str(ar, "algorithm"),
              num(ar, "nodes"));
      cJSON_ArrayForEach(pt, curve) fprintf(out, " %.0f KB %.3f ms;", num(pt, "bytes") / 1e3, num(pt, "median_s") * 1e3);
      fprintf(out, "\n");
    }
  }
  const cJSON *cap = get(root, "capability");
  fprintf(out, "#\n# Relative capability (%s)\n# %4s %14s %10s %11s\n", str(cap, "definition"), "rank", "layer time(ms)",
          "relative", "vs fastest");
  for (int r = 0; r < n; r++)
    fprintf(out, "  %4d %14.2f %10.4f %11.4f\n", r, at(get(cap, "layer_s"), r)->valuedouble * 1e3, at(get(cap, "relative"), r)->valuedouble,
            at(get(cap, "vs_fastest"), r)->valuedouble);
}

/* ---- HTML ---------------------------------------------------------------------------- */

static void td_num(struct svg *s, const char *path, double v) {
  char b[48];
  fmt_num(v, b, sizeof b);
  if (!isfinite(v)) {
    svg_printf(s, "<td class=\"num na\">n/a</td>");
    return;
  }
  svg_printf(s, "<td class=\"num\" data-path=\"");
  svg_escape(s, path);
  svg_printf(s, "\" data-value=\"%.17g\">%s</td>", v, b);
}

static void td_text(struct svg *s, const char *t) {
  svg_printf(s, "<td>");
  svg_escape(s, t);
  svg_printf(s, "</td>");
}

/* path strings kept alive until the chart is written */
struct paths {
  char **p;
  int n, cap;
};
static const char *pth(struct paths *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static const char *pth(struct paths *ps, const char *fmt, ...) {
  if (ps->n == ps->cap) {
    int cap = ps->cap ? 2 * ps->cap : 256;
    char **np = realloc(ps->p, sizeof(char *) * (size_t)cap);
    if (!np) return NULL;
    ps->p = np;
    ps->cap = cap;
  }
  char buf[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  ps->p[ps->n] = strdup(buf);
  return ps->p[ps->n++];
}
static void paths_free(struct paths *ps) {
  for (int i = 0; i < ps->n; i++) free(ps->p[i]);
  free(ps->p);
  memset(ps, 0, sizeof *ps);
}

#define MAXR 64  /* ranks drawn in charts (the tables list all) */
#define MAXG 16  /* groups / points per series */

static void chart_mm(struct svg *s, const cJSON *ranks, int n, struct paths *ps) {
  const cJSON *mm0 = get(at(ranks, 0), "mm");
  const int nm = cJSON_GetArraySize(get(mm0, "model")), nsw = cJSON_GetArraySize(get(mm0, "sweep"));
  const char *groups[MAXG];
  char lab[MAXG][48];
  int ng = 0;
  for (int i = 0; i < nm && ng < MAXG; i++, ng++) {
    const char *l = str(at(get(mm0, "model"), i), "label");
    snprintf(lab[ng], sizeof lab[ng], "%.*s", (int)strcspn(l, ":"), l);
    groups[ng] = lab[ng];
  }
  for (int i = 0; i < nsw && ng < MAXG; i++, ng++) {
    snprintf(lab[ng], sizeof lab[ng], "%.0f^3", num(at(get(mm0, "sweep"), i), "m"));
    groups[ng] = lab[ng];
  }
  static double v[MAXR][MAXG];
  const char *pp[MAXR][MAXG];
  struct svg_series se[MAXR];
  char names[MAXR][32];
  for (int r = 0; r < n && r < MAXR; r++) {
    const cJSON *mm = get(at(ranks, r), "mm");
    for (int g = 0; g < ng; g++) {
      const int sweep = g >= nm;
      const cJSON *e = at(get(mm, sweep ? "sweep" : "model"), sweep ? g - nm : g);
      v[r][g] = num(e, "gflops");
      pp[r][g] = pth(ps, "ranks[%d].mm.%s[%d].gflops", r, sweep ? "sweep" : "model", sweep ? g - nm : g);
    }
    snprintf(names[r], sizeof names[r], "rank %d", r);
    se[r] = (struct svg_series){names[r], v[r], NULL, ng, pp[r]};
  }
  svg_bar_chart(s, "chart-mm", "MM: GEMM fp32 (model shapes, then n^3)", "GFLOP/s", ng, groups, n < MAXR ? n : MAXR, se);
}

static void chart_spmm(struct svg *s, const cJSON *ranks, int n, struct paths *ps) {
  const cJSON *res0 = get(get(at(ranks, 0), "spmm"), "results");
  const int ng = cJSON_GetArraySize(res0) < MAXG ? cJSON_GetArraySize(res0) : MAXG;
  const char *groups[MAXG];
  char lab[MAXG][32];
  for (int g = 0; g < ng; g++) {
    snprintf(lab[g], sizeof lab[g], "f = %.0f", num(at(res0, g), "f"));
    groups[g] = lab[g];
  }
  static double v[MAXR][MAXG];
  const char *pp[MAXR][MAXG];
  struct svg_series se[MAXR];
  char names[MAXR][32];
  for (int r = 0; r < n && r < MAXR; r++) {
    for (int g = 0; g < ng; g++) {
      v[r][g] = num(at(get(get(at(ranks, r), "spmm"), "results"), g), "gathered_gbs");
      pp[r][g] = pth(ps, "ranks[%d].spmm.results[%d].gathered_gbs", r, g);
    }
    snprintf(names[r], sizeof names[r], "rank %d", r);
    se[r] = (struct svg_series){names[r], v[r], NULL, ng, pp[r]};
  }
  char title[160];
  snprintf(title, sizeof title, "SpMM: gathered rows (%s)", str(get(at(ranks, 0), "spmm"), "graph"));
  svg_bar_chart(s, "chart-spmm", title, "GB/s", ng, groups, n < MAXR ? n : MAXR, se);
}

/* peaks of two curves per rank as bars (H2D, D2H: pageable/pinned; IDT: d2d/peer) */
static void chart_peaks(struct svg *s, const cJSON *ranks, int n, struct paths *ps, const char *id, const char *title,
                        const char *kind) {
  const int idt = !strcmp(kind, "idt");
  const char *groups[2] = {idt ? "inside the device" : "pageable", idt ? "GPU to GPU (peer)" : "pinned"};
  static double v[MAXR][2];
  const char *pp[MAXR][2];
  struct svg_series se[MAXR];
  char names[MAXR][32];
  for (int r = 0; r < n && r < MAXR; r++) {
    const cJSON *k = get(at(ranks, r), kind);
    for (int g = 0; g < 2; g++) {
      const char *sub = idt ? (g ? "peer" : "d2d") : (g ? "pinned" : "pageable");
      const cJSON *arr = idt && g ? get(get(k, "peer"), "results") : get(k, sub);
      int i = peak_index(arr);
      v[r][g] = i >= 0 ? num(at(arr, i), "gbs") : NAN;
      pp[r][g] = i >= 0 ? (idt && g ? pth(ps, "ranks[%d].idt.peer.results[%d].gbs", r, i)
                                    : pth(ps, "ranks[%d].%s.%s[%d].gbs", r, kind, sub, i))
                        : NULL;
    }
    snprintf(names[r], sizeof names[r], "rank %d", r);
    se[r] = (struct svg_series){names[r], v[r], NULL, 2, pp[r]};
  }
  svg_bar_chart(s, id, title, "GB/s at the largest size", 2, groups, n < MAXR ? n : MAXR, se);
}

static void curve_copies(struct svg *s, const cJSON *ranks, int n, struct paths *ps, const char *id, const char *title,
                         const char *kind) {
  static double v[2 * MAXR][MAXG], x[2 * MAXR][MAXG];
  const char *pp[2 * MAXR][MAXG];
  struct svg_series se[2 * MAXR];
  char names[2 * MAXR][40];
  int ns = 0;
  const int idt = !strcmp(kind, "idt");
  for (int r = 0; r < n && r < MAXR; r++)
    for (int q = 0; q < (idt ? 1 : 2); q++) {
      const char *sub = idt ? "d2d" : q ? "pinned" : "pageable";
      const cJSON *arr = get(get(at(ranks, r), kind), sub);
      const int np = cJSON_GetArraySize(arr) < MAXG ? cJSON_GetArraySize(arr) : MAXG;
      if (np == 0) continue;
      for (int i = 0; i < np; i++) {
        v[ns][i] = num(at(arr, i), "gbs");
        x[ns][i] = num(at(arr, i), "bytes");
        pp[ns][i] = pth(ps, "ranks[%d].%s.%s[%d].gbs", r, kind, sub, i);
      }
      snprintf(names[ns], sizeof names[ns], "rank %d %s", r, sub);
      se[ns] = (struct svg_series){names[ns], v[ns], x[ns], np, pp[ns]};
      ns++;
    }
  svg_line_chart(s, id, title, "transfer size", "GB/s", 1, ns, se);
}

static void curve_links(struct svg *s, const cJSON *links, struct paths *ps) {
  static double v[3 * MAXR][MAXG], x[3 * MAXR][MAXG];
  const char *pp[3 * MAXR][MAXG];
  struct svg_series se[3 * MAXR];
  char names[3 * MAXR][48];
  int ns = 0;
  const cJSON *pairs = get(links, "pairs");
  static const char *bufs[] = {"host", "device", "nccl"};
  for (int i = 0; i < cJSON_GetArraySize(pairs) && ns < 3 * MAXR; i++)
    for (int q = 0; q < 3 && ns < 3 * MAXR; q++) {
      const cJSON *l = get(at(pairs, i), bufs[q]);
      if (!cJSON_IsObject(l)) continue;
      const cJSON *cv = get(l, "curve");
      const int np = cJSON_GetArraySize(cv) < MAXG ? cJSON_GetArraySize(cv) : MAXG;
      for (int k = 0; k < np; k++) {
        v[ns][k] = num(at(cv, k), "gbs");
        x[ns][k] = num(at(cv, k), "bytes");
        pp[ns][k] = pth(ps, "links.pairs[%d].%s.curve[%d].gbs", i, bufs[q], k);
      }
      snprintf(names[ns], sizeof names[ns], "%.0f-%.0f %s", num(at(pairs, i), "a"), num(at(pairs, i), "b"), bufs[q]);
      se[ns] = (struct svg_series){names[ns], v[ns], x[ns], np, pp[ns]};
      ns++;
    }
  svg_line_chart(s, "curve-links", "Links: MPI / NCCL ping-pong bandwidth", "message size", "GB/s (one way)", 1, ns, se);
}

static void heat(struct svg *s, const cJSON *links, int n, struct paths *ps, const char *id, const char *title,
                 const char *field, const char *unit) {
  double *m = malloc(sizeof(double) * (size_t)n * (size_t)n);
  const char **pp = calloc((size_t)n * (size_t)n, sizeof(char *));
  const char **labels = calloc((size_t)n, sizeof(char *));
  char (*lab)[24] = calloc((size_t)n, 24);
  if (!m || !pp || !labels || !lab) {
    s->failed = 1;
    goto done;
  }
  const cJSON *mat = get(get(links, "matrix"), field);
  for (int i = 0; i < n; i++) {
    snprintf(lab[i], 24, "rank %d", i);
    labels[i] = lab[i];
    for (int j = 0; j < n; j++) {
      const cJSON *e = at(at(mat, i), j);
      m[i * n + j] = cJSON_IsNumber(e) ? e->valuedouble : NAN;
      pp[i * n + j] = cJSON_IsNumber(e) ? pth(ps, "links.matrix.%s[%d][%d]", field, i, j) : NULL;
    }
  }
  svg_heatmap(s, id, title, unit, n, labels, m, pp);
done:
  free(m);
  free(pp);
  free(labels);
  free(lab);
}

static void chart_cap(struct svg *s, const cJSON *cap, int n, struct paths *ps) {
  static double v[MAXR];
  const char *pp[MAXR], *groups[MAXR];
  char lab[MAXR][16];
  const int ng = n < MAXR ? n : MAXR;
  for (int r = 0; r < ng; r++) {
    v[r] = at(get(cap, "relative"), r)->valuedouble;
    pp[r] = pth(ps, "capability.relative[%d]", r);
    snprintf(lab[r], sizeof lab[r], "rank %d", r);
    groups[r] = lab[r];
  }
  struct svg_series se = {"relative capability", v, NULL, ng, pp};
  svg_bar_chart(s, "chart-cap", "Relative capability (sums to 1)", "share", ng, groups, 1, &se);
}

static const char *css =
    "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px;color:#222;max-width:1200px}"
    "h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}"
    ".meta{color:#555;font-size:13px}table{border-collapse:collapse;font-size:13px;margin:6px 0}"
    "th,td{border:1px solid #ddd;padding:3px 8px;text-align:left}th{background:#f5f5f5}"
    "td.num{text-align:right;font-variant-numeric:tabular-nums}.grid{display:flex;flex-wrap:wrap;gap:12px}"
    "svg.chart{border:1px solid #e5e5e5;border-radius:4px}.note{color:#555;font-size:13px}code{font-size:12px}";

/* The "Chosen split" section: the partition priced with this profile (rapa.h). */
static void section_split(struct svg *s, const struct rapa_split *sp, const char *label, struct paths *ps) {
  const int n = sp->P < MAXR ? sp->P : MAXR;
  char b[128];
  svg_printf(s, "\n<h2>Chosen split</h2><p class=\"note\">");
  svg_escape(s, label ? label : "");
  svg_printf(s, " &middot; %d METIS run%s%s. Capability: each rank's share of the summed speed; target: the "
                "vertex-weight share METIS was asked for; share: what it received. Predicted times are the cost "
                "model's (rapa/balance.h) for one epoch.</p>\n", sp->passes, sp->passes == 1 ? "" : "s",
             sp->corrected ? ", the correction pass's split kept" : "");
  svg_printf(s, "<table id=\"split\"><tr><th>rank</th><th>capability</th><th>target</th><th>share</th>"
                "<th>compute ms</th><th>communication ms</th><th>lambda ms</th><th>memory MiB</th><th>fits</th></tr>\n");
  static const char *keys[] = {"capability", "target", "share"};
  for (int r = 0; r < sp->P; r++) {
    const double v3[3] = {sp->capability[r], sp->target[r], sp->share[r]};
    svg_printf(s, "<tr><td>%d</td>", r);
    for (int k = 0; k < 3; k++) {
      snprintf(b, sizeof b, "split.partitions[%d].%s", r, keys[k]);
      td_num(s, b, v3[k]);
    }
    static const char *tk[] = {"predicted_compute_s", "predicted_comm_s", "predicted_lambda_s"};
    const double t3[3] = {sp->cost[r].comp_s, sp->cost[r].comm_s, sp->cost[r].lambda_s};
    for (int k = 0; k < 3; k++) {
      char t[48];
      fmt_num(t3[k] * 1e3, t, sizeof t);
      svg_printf(s, "<td class=\"num\" data-path=\"split.partitions[%d].%s\" data-value=\"%.17g\" "
                    "data-scale=\"1000\">%s</td>", r, tk[k], t3[k], t);
    }
    char t[48];
    fmt_num(sp->cost[r].memory_bytes / 1048576.0, t, sizeof t);
    svg_printf(s, "<td class=\"num\" data-path=\"split.partitions[%d].memory_bytes\" data-value=\"%.17g\" "
                  "data-scale=\"9.5367431640625e-07\">%s</td><td>%s</td></tr>\n", r, sp->cost[r].memory_bytes, t,
               sp->cost[r].fits ? "yes" : "<b>no</b>");
  }
  svg_printf(s, "</table>\n<div class=\"grid\">");
  static double sh[3][MAXR], tm[2][MAXR];
  const char *groups[MAXR], *pp[5][MAXR];
  static char lab[MAXR][16];
  for (int r = 0; r < n; r++) {
    snprintf(lab[r], sizeof lab[r], "rank %d", r);
    groups[r] = lab[r];
    sh[0][r] = sp->capability[r];
    sh[1][r] = sp->target[r];
    sh[2][r] = sp->share[r];
    tm[0][r] = sp->cost[r].comp_s;
    tm[1][r] = sp->cost[r].comm_s;
    for (int k = 0; k < 3; k++) pp[k][r] = pth(ps, "split.partitions[%d].%s", r, keys[k]);
    pp[3][r] = pth(ps, "split.partitions[%d].predicted_compute_s", r);
    pp[4][r] = pth(ps, "split.partitions[%d].predicted_comm_s", r);
  }
  const struct svg_series se[3] = {{"capability", sh[0], NULL, n, pp[0]},
                                   {"target", sh[1], NULL, n, pp[1]},
                                   {"share", sh[2], NULL, n, pp[2]}};
  svg_bar_chart(s, "chart-split-share", "Capability, target and received share per rank", "share", n, groups, 3, se);
  const struct svg_series st[2] = {{"compute", tm[0], NULL, n, pp[3]}, {"communication", tm[1], NULL, n, pp[4]}};
  svg_bar_chart(s, "chart-split-time", "Predicted time per epoch", "s", n, groups, 2, st);
  svg_printf(s, "</div>\n");
}

/* The report's first bytes: what tells an earlier report from any other file
 * (rapa_report_outfile_kind). */
#define REPORT_HEAD                                                                                      \
  "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"                                     \
  "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">" \
  "<title>capgnn profile</title>"

const struct cg_outfile_kind *rapa_report_outfile_kind(void) {
  static const char *const sig[] = {REPORT_HEAD, NULL};
  static const struct cg_outfile_kind kind = {"capgnn HTML report", sig, 0, NULL};
  return &kind;
}

int rapa_report_html(const struct rapa_profile *p, const struct rapa_split *split, const char *split_label,
                     const char *path) {
  const cJSON *root = p->root, *ranks = get(root, "ranks"), *links = get(root, "links"), *cap = get(root, "capability");
  const int n = cJSON_GetArraySize(ranks);
  struct svg s;
  struct paths ps = {0};
  svg_init(&s);
  char b[256];
  svg_printf(&s, REPORT_HEAD "<style>%s</style></head><body>\n", css);
  svg_printf(&s, "<h1>capgnn device profile</h1><p class=\"meta\">%d rank%s on %d node%s%s &middot; created ", n,
             n == 1 ? "" : "s", (int)rapa_json_num(root, "mpi.nodes"), rapa_json_num(root, "mpi.nodes") == 1 ? "" : "s",
             cJSON_IsTrue(get(root, "quick")) ? " &middot; <b>--quick</b>" : "");
  svg_escape(&s, str(root, "created"));
  svg_printf(&s, " &middot; capgnn ");
  svg_escape(&s, str(root, "capgnn_version"));
  svg_printf(&s, "<br><code>");
  svg_escape(&s, str(root, "command"));
  svg_printf(&s, "</code></p>\n");

  /* summary table */
  svg_printf(&s, "<h2>Summary per device</h2><table id=\"summary\"><tr><th>rank</th><th>host</th><th>node</th>"
                 "<th>device</th><th>MM GFLOP/s</th><th>MM TF32 GFLOP/s</th><th>SpMM G nnz-col/s (f=256)</th>"
                 "<th>SpMM GB/s (f=256)</th><th>H2D GB/s</th><th>D2H GB/s</th><th>IDT GB/s</th><th>H2D 4 KiB &micro;s</th>"
                 "<th>layer ms</th><th>relative capability</th><th>vs fastest</th><th>source</th></tr>\n");
  static const char *sum_fields[] = {"mm_gflops", "mm_tf32_gflops", "spmm_gnnz_s", "spmm_gbs", "h2d_gbs",
                                     "d2h_gbs", "idt_gbs", "h2d_latency_us"};
  for (int r = 0; r < n; r++) {
    const cJSON *d = at(ranks, r);
    svg_printf(&s, "<tr><td>%d</td>", r);
    td_text(&s, str(d, "host"));
    svg_printf(&s, "<td>%d</td>", (int)num(d, "node"));
    td_text(&s, rapa_profile_describe(p, r));
    for (size_t f = 0; f < sizeof sum_fields / sizeof sum_fields[0]; f++) {
      snprintf(b, sizeof b, "ranks[%d].summary.%s", r, sum_fields[f]);
      td_num(&s, b, num(get(d, "summary"), sum_fields[f]));
    }
    snprintf(b, sizeof b, "capability.layer_s[%d]", r);
    svg_printf(&s, "<td class=\"num\" data-path=\"%s\" data-value=\"%.17g\" data-scale=\"1000\">", b,
               at(get(cap, "layer_s"), r)->valuedouble);
    char t[48];
    fmt_num(at(get(cap, "layer_s"), r)->valuedouble * 1e3, t, sizeof t);
    svg_printf(&s, "%s</td>", t);
    snprintf(b, sizeof b, "capability.relative[%d]", r);
    td_num(&s, b, at(get(cap, "relative"), r)->valuedouble);
    snprintf(b, sizeof b, "capability.vs_fastest[%d]", r);
    td_num(&s, b, at(get(cap, "vs_fastest"), r)->valuedouble);
    svg_printf(&s, "<td>%s ", cJSON_IsTrue(get(d, "reused")) ? "cache, measured" : "measured");
    svg_escape(&s, str(d, "measured"));
    svg_printf(&s, "</td></tr>\n");
  }
  svg_printf(&s, "</table><p class=\"note\">MM at the model's hidden shape (rows x 256 x 256); H2D/D2H: the better of "
                 "pageable and pinned at the largest size; IDT: copies inside the device, largest size. ");
  const char *cn = str(at(ranks, 0), "copy_note");
  if (cn[0]) svg_escape(&s, cn);
  svg_printf(&s, "</p>\n");

  svg_printf(&s, "<h2>Devices side by side</h2><div class=\"grid\">\n");
  chart_mm(&s, ranks, n, &ps);
  chart_spmm(&s, ranks, n, &ps);
  chart_peaks(&s, ranks, n, &ps, "chart-h2d", "H2D: host to device", "h2d");
  chart_peaks(&s, ranks, n, &ps, "chart-d2h", "D2H: device to host", "d2h");
  chart_peaks(&s, ranks, n, &ps, "chart-idt", "IDT: device to device", "idt");
  chart_cap(&s, cap, n, &ps);
  svg_printf(&s, "</div>\n<h2>Bandwidth versus size</h2><div class=\"grid\">\n");
  curve_copies(&s, ranks, n, &ps, "curve-h2d", "H2D bandwidth", "h2d");
  curve_copies(&s, ranks, n, &ps, "curve-d2h", "D2H bandwidth", "d2h");
  curve_copies(&s, ranks, n, &ps, "curve-idt", "IDT bandwidth (inside the device)", "idt");
  if (n > 1) curve_links(&s, links, &ps);
  svg_printf(&s, "</div>\n<h2>Links between ranks</h2>");
  if (n > 1) {
    svg_printf(&s, "<div class=\"grid\">");
    heat(&s, links, n, &ps, "heat-bw", "Link bandwidth (host buffers, peak)", "bandwidth_gbs", "GB/s");
    heat(&s, links, n, &ps, "heat-lat", "Link latency (host buffers, 8 B)", "latency_us", "us");
    svg_printf(&s, "</div>");
  } else {
    svg_printf(&s, "<p class=\"note\">One rank: no links.</p>");
  }
  svg_printf(&s, "<table id=\"links\"><tr><th>a</th><th>b</th><th>where</th><th>buffers</th><th>latency &micro;s</th>"
                 "<th>peak GB/s</th></tr>");
  const cJSON *pairs = get(links, "pairs");
  for (int i = 0; i < cJSON_GetArraySize(pairs); i++) {
    static const char *bufs[] = {"host", "device", "nccl"};
    for (int q = 0; q < 3; q++) {
      const cJSON *l = get(at(pairs, i), bufs[q]);
      if (!cJSON_IsObject(l)) continue;
      svg_printf(&s, "<tr><td>%.0f</td><td>%.0f</td><td>%s</td><td>%s</td>", num(at(pairs, i), "a"),
                 num(at(pairs, i), "b"), cJSON_IsTrue(get(at(pairs, i), "same_node")) ? "intra-node" : "inter-node",
                 bufs[q]);
      snprintf(b, sizeof b, "links.pairs[%d].%s.latency_us", i, bufs[q]);
      td_num(&s, b, num(l, "latency_us"));
      snprintf(b, sizeof b, "links.pairs[%d].%s.peak_gbs", i, bufs[q]);
      td_num(&s, b, num(l, "peak_gbs"));
      svg_printf(&s, "</tr>");
    }
  }
  svg_printf(&s, "</table><p class=\"note\">Device buffers: ");
  svg_escape(&s, str(links, "device_note"));
  svg_printf(&s, ". NCCL: ");
  svg_escape(&s, str(links, "nccl_note"));
  svg_printf(&s, ".</p>");
  const cJSON *ar = get(links, "allreduce");
  if (cJSON_IsObject(ar)) {
    svg_printf(&s, "<table id=\"allreduce\"><tr><th>gradient all-reduce</th><th>floats</th><th>path</th>"
                   "<th>median ms</th><th>min ms</th></tr><tr><td>one flat buffer</td>");
    td_num(&s, "links.allreduce.floats", num(ar, "floats"));
    td_text(&s, str(ar, "path"));
    svg_printf(&s, "<td class=\"num\" data-path=\"links.allreduce.median_s\" data-value=\"%.17g\" data-scale=\"1000\">",
               num(ar, "median_s"));
    char t[48];
    fmt_num(num(ar, "median_s") * 1e3, t, sizeof t);
    svg_printf(&s, "%s</td><td class=\"num\" data-path=\"links.allreduce.min_s\" data-value=\"%.17g\" "
                   "data-scale=\"1000\">", t, num(ar, "min_s"));
    fmt_num(num(ar, "min_s") * 1e3, t, sizeof t);
    svg_printf(&s, "%s</td></tr>", t);
    /* the same all-reduce by size (since 2026-11-29): `capgnn plan` prices a job of this
     * layout (ranks, nodes, algorithm) from it */
    const cJSON *curve = get(ar, "curve");
    for (int k = 0; k < cJSON_GetArraySize(curve); k++) {
      const cJSON *pt = cJSON_GetArrayItem(curve, k);
      char dp[80];
      svg_printf(&s, "<tr><td>by size (capgnn plan)</td>");
      snprintf(dp, sizeof dp, "links.allreduce.curve[%d].floats", k);
      td_num(&s, dp, num(pt, "floats"));
      td_text(&s, str(ar, "algorithm"));
      for (int m = 0; m < 2; m++) {
        const char *f = m ? "min_s" : "median_s";
        snprintf(dp, sizeof dp, "links.allreduce.curve[%d].%s", k, f);
        svg_printf(&s, "<td class=\"num\" data-path=\"%s\" data-value=\"%.17g\" data-scale=\"1000\">", dp, num(pt, f));
        fmt_num(num(pt, f) * 1e3, t, sizeof t);
        svg_printf(&s, "%s</td>", t);
      }
      svg_printf(&s, "</tr>");
    }
    svg_printf(&s, "</table>");
  }

  svg_printf(&s, "\n<h2>Relative capability</h2><p class=\"note\">");
  svg_escape(&s, str(cap, "definition"));
  svg_printf(&s, ". <code>capgnn train --partition rapa --profile FILE</code> and <code>capgnn partition --partition rapa --profile FILE</code> size each rank's part by the profile's rates (rapa/balance.h's cost model).</p>\n");
  if (split) section_split(&s, split, split_label, &ps);

  /* context */
  svg_printf(&s, "<h2>Machine context</h2><table id=\"context\"><tr><th>rank</th><th>host</th><th>OS</th><th>CPU</th>"
                 "<th>packages / cores / PUs / NUMA</th><th>memory GiB</th><th>bound PUs</th><th>device</th>"
                 "<th>libraries</th></tr>\n");
  for (int r = 0; r < n; r++) {
    const cJSON *d = at(ranks, r), *cx = get(d, "context"), *dv = get(d, "device");
    svg_printf(&s, "<tr><td>%d</td>", r);
    td_text(&s, str(cx, "hostname"));
    td_text(&s, str(cx, "os"));
    td_text(&s, str(cx, "cpu_model"));
    snprintf(b, sizeof b, "%.0f / %.0f / %.0f / %.0f", num(cx, "packages"), num(cx, "cores"), num(cx, "pus"),
             num(cx, "numa_nodes"));
    td_text(&s, b);
    snprintf(b, sizeof b, "%.1f", num(cx, "memory_bytes") / 1073741824.0);
    td_text(&s, b);
    snprintf(b, sizeof b, "%.0f (%s)", num(cx, "bound_pus"), str(cx, "bound_cpuset"));
    td_text(&s, b);
    if (!strcmp(str(dv, "kind"), "cuda"))
      snprintf(b, sizeof b, "%s, %s, %.1f GiB, %.0f SMs at %.0f MHz, memory %.0f MHz, CC %s, PCIe %s (%s)%s",
               str(dv, "name"), str(dv, "uuid"), num(dv, "memory_bytes") / 1073741824.0, num(dv, "sms"),
               num(dv, "clock_mhz"), num(dv, "mem_clock_mhz"), str(dv, "compute_capability"), str(dv, "pcie_bus"),
               str(dv, "pcie_locality"), num(dv, "share_pct") > 0 ? ", MPS share" : "");
    else
      snprintf(b, sizeof b, "CPU backend, %.0f thread%s", num(dv, "threads"), num(dv, "threads") == 1 ? "" : "s");
    td_text(&s, b);
    if (!strcmp(str(dv, "kind"), "cuda"))
      snprintf(b, sizeof b, "CUDA driver %s, runtime %s, cuBLAS %s; hwloc %s", str(dv, "driver_cuda_version"),
               str(dv, "runtime_version"), str(dv, "cublas_version"), str(cx, "hwloc_version"));
    else
      snprintf(b, sizeof b, "%s; hwloc %s", str(dv, "blas"), str(cx, "hwloc_version"));
    td_text(&s, b);
    svg_printf(&s, "</tr>\n");
  }
  const cJSON *mp = get(root, "mpi");
  svg_printf(&s, "</table><table id=\"mpi\"><tr><th>MPI library</th><td>");
  svg_escape(&s, str(mp, "library"));
  svg_printf(&s, "</td></tr><tr><th>MPI standard</th><td>");
  svg_escape(&s, str(mp, "standard"));
  svg_printf(&s, "</td></tr><tr><th>transport</th><td>");
  svg_escape(&s, str(mp, "transport"));
  svg_printf(&s, "</td></tr><tr><th>CUDA-aware</th><td>%s (", cJSON_IsTrue(get(mp, "cuda_aware")) ? "yes" : "no");
  svg_escape(&s, str(mp, "cuda_aware_how"));
  svg_printf(&s, ")</td></tr><tr><th>NCCL</th><td>%s</td></tr><tr><th>emulated nodes</th><td>",
             num(mp, "nccl_version") > 0 ? "built in" : "not in this build");
  svg_escape(&s, str(mp, "emulate_nodes")[0] ? str(mp, "emulate_nodes") : "no");
  svg_printf(&s, "</td></tr></table>\n</body></html>\n");

  int st = CG_OK;
  if (s.failed) st = cg_err_set(CG_ERR_NOMEM, "out of memory writing the HTML report");
  struct cg_outfile of;
  if (st == CG_OK) st = cg_outfile_open(&of, path, "HTML report");
  if (st == CG_OK) {
    if (fwrite(s.buf, 1, s.len, of.fp) != s.len) {
      cg_outfile_abort(&of);
      st = cg_err_set(CG_ERR_IO, "cannot write the HTML report '%s'", path);
    } else {
      st = cg_outfile_commit(&of);
    }
  }
  paths_free(&ps);
  svg_free(&s);
  return st;
}
