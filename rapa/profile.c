/* rapa/profile.c — the profile as a JSON document: validation (the rules of
 * docs/profile.schema.json, checked here without a schema library), capabilities,
 * load / save, and the cache files of device and link measurements.
 *
 * Design notes (the why):
 * - The document is the data structure: the report, the text table and training read
 *   the same cJSON tree that is saved, so nothing can drift between what is shown
 *   and what is kept.
 * - Validation is strict (every field the consumers read, with its type and range),
 *   because a cache that is silently wrong would mis-balance every later run; a file
 *   that fails is re-measured, never half-used.
 * - The capabilities in a document are recomputed on load and must agree with what
 *   it says: a hand-edited number is caught. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "core/log.h"
#include "core/outfile.h"
#include "core/status.h"
#include "rapa/rapa_internal.h"

/* The reference GCN layer of rapa_profile_capabilities. */
#define REF_ROWS 232965.0
#define REF_NNZ 114577213.0
#define REF_HIDDEN 256.0

void rapa_now_iso(char *buf, size_t len) {
  time_t t = time(NULL);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

double rapa_json_num(const cJSON *obj, const char *path) {
  char part[64];
  const cJSON *cur = obj;
  while (cur && *path) {
    size_t n = strcspn(path, ".");
    if (n >= sizeof part) return NAN;
    memcpy(part, path, n);
    part[n] = '\0';
    cur = cJSON_GetObjectItemCaseSensitive(cur, part);
    path += n + (path[n] == '.');
  }
  return cur && cJSON_IsNumber(cur) ? cur->valuedouble : NAN;
}

/* ---- validation -------------------------------------------------------------------- */

struct vctx {
  const char *what;
  char path[256];
};

static int vfail(const struct vctx *v, const char *field, const char *expected, const cJSON *got) {
  const char *kind = !got ? "nothing (missing)" : cJSON_IsNumber(got) ? "a number" : cJSON_IsString(got) ? "a string"
                   : cJSON_IsBool(got) ? "a boolean" : cJSON_IsNull(got) ? "null" : cJSON_IsArray(got) ? "an array"
                   : "an object";
  char extra[64] = "";
  if (got && cJSON_IsNumber(got)) snprintf(extra, sizeof extra, " %g", got->valuedouble);
  return cg_err_set(CG_ERR_FORMAT, "%s: %s%s%s: expected %s, got %s%s", v->what, v->path,
                    v->path[0] ? "." : "", field, expected, kind, extra);
}

static const cJSON *vget(const cJSON *o, const char *f) { return cJSON_GetObjectItemCaseSensitive(o, f); }

static int vnum(const struct vctx *v, const cJSON *o, const char *f, double lo, double hi, int positive) {
  const cJSON *x = vget(o, f);
  char exp[96];
  if (positive) snprintf(exp, sizeof exp, "a number > 0");
  else snprintf(exp, sizeof exp, "a number in [%g, %g]", lo, hi);
  if (!cJSON_IsNumber(x) || !isfinite(x->valuedouble)) return vfail(v, f, exp, x);
  if (positive ? !(x->valuedouble > 0) : (x->valuedouble < lo || x->valuedouble > hi)) return vfail(v, f, exp, x);
  return CG_OK;
}
static int vpos(const struct vctx *v, const cJSON *o, const char *f) { return vnum(v, o, f, 0, 0, 1); }
static int vnonneg(const struct vctx *v, const cJSON *o, const char *f) { return vnum(v, o, f, 0, 1e300, 0); }
static int vint(const struct vctx *v, const cJSON *o, const char *f, double lo, double hi) {
  TRY(vnum(v, o, f, lo, hi, 0));
  const cJSON *x = vget(o, f);
  if (x->valuedouble != floor(x->valuedouble)) return vfail(v, f, "an integer", x);
  return CG_OK;
}
static int vstr(const struct vctx *v, const cJSON *o, const char *f) {
  const cJSON *x = vget(o, f);
  return cJSON_IsString(x) ? CG_OK : vfail(v, f, "a string", x);
}
static int vbool(const struct vctx *v, const cJSON *o, const char *f) {
  const cJSON *x = vget(o, f);
  return cJSON_IsBool(x) ? CG_OK : vfail(v, f, "true or false", x);
}
static int vobj(const struct vctx *v, const cJSON *o, const char *f) {
  const cJSON *x = vget(o, f);
  return cJSON_IsObject(x) ? CG_OK : vfail(v, f, "an object", x);
}
static int varr(const struct vctx *v, const cJSON *o, const char *f, int min) {
  const cJSON *x = vget(o, f);
  char exp[64];
  snprintf(exp, sizeof exp, "an array of at least %d entr%s", min, min == 1 ? "y" : "ies");
  if (!cJSON_IsArray(x) || cJSON_GetArraySize(x) < min) return vfail(v, f, exp, x);
  return CG_OK;
}
/* descend into o.f (object) or o.f[i] (i >= 0) */
static void vpush(struct vctx *v, const char *f, int i, size_t *saved) {
  *saved = strlen(v->path);
  size_t u = *saved;
  if (i < 0) snprintf(v->path + u, sizeof v->path - u, "%s%s", u ? "." : "", f);
  else snprintf(v->path + u, sizeof v->path - u, "%s%s[%d]", u ? "." : "", f, i);
}
static void vpop(struct vctx *v, size_t saved) { v->path[saved] = '\0'; }

static int vtiming(struct vctx *v, const cJSON *e) {
  TRY(vpos(v, e, "median_s"));
  TRY(vpos(v, e, "min_s"));
  TRY(vint(v, e, "reps", 1, 1e9));
  return CG_OK;
}

typedef int (*vfn)(struct vctx *v, const cJSON *e);

/* A point of links.allreduce.curve: a timing of `floats` floats. */
static int vcurve_point(struct vctx *v, const cJSON *e) {
  TRY(vtiming(v, e));
  TRY(vint(v, e, "floats", 1, 1e15));
  return CG_OK;
}

static int vlist(struct vctx *v, const cJSON *o, const char *f, int min, vfn fn) {
  TRY(varr(v, o, f, min));
  const cJSON *arr = vget(o, f);
  int i = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, arr) {
    size_t s;
    vpush(v, f, i, &s);
    if (!cJSON_IsObject(e)) {
      int st = cg_err_set(CG_ERR_FORMAT, "%s: %s: expected an object", v->what, v->path);
      vpop(v, s);
      return st;
    }
    int st = fn(v, e);
    vpop(v, s);
    if (st < 0) return st;
    i++;
  }
  return CG_OK;
}

static int v_mm(struct vctx *v, const cJSON *e) {
  TRY(vtiming(v, e));
  TRY(vint(v, e, "m", 1, 1e12));
  TRY(vint(v, e, "n", 1, 1e12));
  TRY(vint(v, e, "k", 1, 1e12));
  return vpos(v, e, "gflops");
}
static int v_spmm(struct vctx *v, const cJSON *e) {
  TRY(vtiming(v, e));
  TRY(vint(v, e, "f", 1, 1e9));
  TRY(vpos(v, e, "gnnz_s"));
  return vpos(v, e, "gathered_gbs");
}
static int v_curve(struct vctx *v, const cJSON *e) {
  TRY(vtiming(v, e));
  TRY(vint(v, e, "bytes", 1, 1e15));
  return vpos(v, e, "gbs");
}
static int v_peer(struct vctx *v, const cJSON *e) {
  TRY(vtiming(v, e));
  TRY(vint(v, e, "peer", 0, 1e6));
  TRY(vint(v, e, "bytes", 1, 1e15));
  return vpos(v, e, "gbs");
}

static int vsub(struct vctx *v, const cJSON *o, const char *f, vfn fn) {
  TRY(vobj(v, o, f));
  size_t s;
  vpush(v, f, -1, &s);
  int st = fn(v, vget(o, f));
  vpop(v, s);
  return st;
}

static int v_devinfo(struct vctx *v, const cJSON *d) {
  const cJSON *k = vget(d, "kind");
  if (!cJSON_IsString(k) || (strcmp(k->valuestring, "cpu") && strcmp(k->valuestring, "cuda")))
    return vfail(v, "kind", "\"cpu\" or \"cuda\"", k);
  TRY(vstr(v, d, "name"));
  if (!strcmp(k->valuestring, "cuda")) TRY(vstr(v, d, "uuid"));
  TRY(vint(v, d, "threads", 0, 1e6));
  TRY(vint(v, d, "share_pct", 0, 100));
  TRY(vnonneg(v, d, "memory_bytes"));
  return vbool(v, d, "tf32");
}
static int v_context(struct vctx *v, const cJSON *c) {
  TRY(vstr(v, c, "hostname"));
  TRY(vstr(v, c, "cpu_model"));
  TRY(vint(v, c, "cores", 0, 1e9));
  TRY(vint(v, c, "pus", 0, 1e9));
  return vint(v, c, "numa_nodes", 0, 1e9);
}
static int v_mmobj(struct vctx *v, const cJSON *m) {
  TRY(vlist(v, m, "model", 1, v_mm));
  TRY(vlist(v, m, "sweep", 1, v_mm));
  return vbool(v, m, "tf32");
}
static int v_spmmobj(struct vctx *v, const cJSON *s) {
  TRY(vstr(v, s, "graph"));
  TRY(vint(v, s, "rows", 1, 1e15));
  TRY(vint(v, s, "cols", 1, 1e15));
  TRY(vint(v, s, "nnz", 1, 1e15));
  return vlist(v, s, "results", 1, v_spmm);
}
static int v_copyobj(struct vctx *v, const cJSON *c) {
  TRY(vlist(v, c, "pageable", 1, v_curve));
  return vlist(v, c, "pinned", 0, v_curve);
}
static int v_peerobj(struct vctx *v, const cJSON *p) {
  TRY(vbool(v, p, "available"));
  TRY(vstr(v, p, "note"));
  return vlist(v, p, "results", 0, v_peer);
}
static int v_idtobj(struct vctx *v, const cJSON *c) {
  TRY(vlist(v, c, "d2d", 1, v_curve));
  return vsub(v, c, "peer", v_peerobj);
}
static int v_summary(struct vctx *v, const cJSON *s) {
  static const char *pos[] = {"mm_gflops", "spmm_gnnz_s", "spmm_gbs", "h2d_gbs", "d2h_gbs", "idt_gbs",
                              "h2d_latency_us", "d2h_latency_us", "idt_latency_us", "layer_s"};
  for (size_t i = 0; i < sizeof pos / sizeof pos[0]; i++) TRY(vpos(v, s, pos[i]));
  const cJSON *t = vget(s, "mm_tf32_gflops");
  if (!cJSON_IsNull(t) && !(cJSON_IsNumber(t) && t->valuedouble > 0))
    return vfail(v, "mm_tf32_gflops", "a number > 0 or null", t);
  return CG_OK;
}

static int vdevice(struct vctx *v, const cJSON *d) {
  const cJSON *s = vget(d, "schema");
  if (!cJSON_IsString(s) || strcmp(s->valuestring, "capgnn-device-profile"))
    return vfail(v, "schema", "\"capgnn-device-profile\"", s);
  const cJSON *ver = vget(d, "version");
  if (!cJSON_IsNumber(ver) || ver->valuedouble != RAPA_PROFILE_VERSION) {
    char exp[64];
    snprintf(exp, sizeof exp, "%d (the version this capgnn writes)", RAPA_PROFILE_VERSION);
    return vfail(v, "version", exp, ver);
  }
  TRY(vstr(v, d, "key"));
  TRY(vstr(v, d, "measured"));
  TRY(vbool(v, d, "quick"));
  TRY(vsub(v, d, "device", v_devinfo));
  TRY(vsub(v, d, "context", v_context));
  TRY(vsub(v, d, "mm", v_mmobj));
  TRY(vsub(v, d, "spmm", v_spmmobj));
  TRY(vsub(v, d, "h2d", v_copyobj));
  TRY(vsub(v, d, "d2h", v_copyobj));
  TRY(vsub(v, d, "idt", v_idtobj));
  TRY(vsub(v, d, "summary", v_summary));
  /* the summary's layer time is the one the formula gives */
  double t = 0;
  TRY(rapa_device_layer_time(d, &t));
  double got = rapa_json_num(d, "summary.layer_s");
  if (fabs(got - t) > 1e-9 * t)
    return cg_err_set(CG_ERR_FORMAT, "%s: %s%ssummary.layer_s is %.17g but its rates give %.17g",
                      v->what, v->path, v->path[0] ? "." : "", got, t);
  return CG_OK;
}

int rapa_validate_device(const cJSON *d, const char *what, const char *path) {
  struct vctx v = {what, ""};
  snprintf(v.path, sizeof v.path, "%s", path ? path : "");
  if (!cJSON_IsObject(d)) return cg_err_set(CG_ERR_FORMAT, "%s: %s: expected an object", what, path ? path : "(top)");
  return vdevice(&v, d);
}

static int v_link(struct vctx *v, const cJSON *e) {
  TRY(vnonneg(v, e, "latency_us"));
  return vlist(v, e, "curve", 1, v_curve);
}
static int nranks_for_pairs;
#define LINKS_MAX_RANKS 65535 /* 65535 * 65534 / 2 pairs still fit an int (the product does not) */
static int v_pair(struct vctx *v, const cJSON *p) {
  TRY(vint(v, p, "a", 0, nranks_for_pairs - 1));
  TRY(vint(v, p, "b", 0, nranks_for_pairs - 1));
  if (vget(p, "a")->valuedouble >= vget(p, "b")->valuedouble)
    return vfail(v, "b", "a rank above a", vget(p, "b"));
  TRY(vbool(v, p, "same_node"));
  TRY(vbool(v, p, "same_host"));
  TRY(vsub(v, p, "host", v_link));
  for (int i = 0; i < 2; i++) {
    const char *f = i ? "nccl" : "device";
    const cJSON *x = vget(p, f);
    if (!cJSON_IsNull(x)) TRY(vsub(v, p, f, v_link));
  }
  return CG_OK;
}

static int vmatrix(struct vctx *v, const cJSON *m, const char *f, int n) {
  const cJSON *x = vget(m, f);
  if (!cJSON_IsArray(x) || cJSON_GetArraySize(x) != n) {
    char exp[64];
    snprintf(exp, sizeof exp, "an array of %d rows", n);
    return vfail(v, f, exp, x);
  }
  for (int i = 0; i < n; i++) {
    const cJSON *row = cJSON_GetArrayItem(x, i);
    if (!cJSON_IsArray(row) || cJSON_GetArraySize(row) != n)
      return cg_err_set(CG_ERR_FORMAT, "%s: %s.%s[%d]: expected %d entries", v->what, v->path, f, i, n);
    for (int j = 0; j < n; j++) {
      const cJSON *e = cJSON_GetArrayItem(row, j);
      int ok = i == j ? cJSON_IsNull(e) : cJSON_IsNumber(e) && e->valuedouble > 0;
      if (!ok)
        return cg_err_set(CG_ERR_FORMAT, "%s: %s.%s[%d][%d]: expected %s", v->what, v->path, f, i, j,
                          i == j ? "null on the diagonal" : "a number > 0");
    }
  }
  return CG_OK;
}

int rapa_validate_links(const cJSON *l, int nranks, const char *what, const char *path) {
  struct vctx v = {what, ""};
  snprintf(v.path, sizeof v.path, "%s", path ? path : "");
  if (!cJSON_IsObject(l)) return cg_err_set(CG_ERR_FORMAT, "%s: %s: expected an object", what, v.path);
  /* n(n-1)/2 pairs must be an int (a JSON array's size): far more ranks than a job has */
  if (nranks < 1 || nranks > LINKS_MAX_RANKS)
    return cg_err_set(CG_ERR_FORMAT, "%s: %s.nranks: expected a whole number of ranks in 1 .. %d", what,
                      v.path, LINKS_MAX_RANKS);
  TRY(vint(&v, l, "nranks", nranks, nranks));
  TRY(vbool(&v, l, "quick"));
  nranks_for_pairs = nranks;
  const int npairs = (int)((int64_t)nranks * (nranks - 1) / 2);
  TRY(vlist(&v, l, "pairs", npairs, v_pair));
  if (cJSON_GetArraySize(vget(l, "pairs")) != npairs)
    return vfail(&v, "pairs", "one entry per pair of ranks", vget(l, "pairs"));
  TRY(vstr(&v, l, "device_note"));
  TRY(vstr(&v, l, "nccl_note"));
  TRY(vobj(&v, l, "matrix"));
  size_t s;
  vpush(&v, "matrix", -1, &s);
  TRY(vmatrix(&v, vget(l, "matrix"), "bandwidth_gbs", nranks));
  TRY(vmatrix(&v, vget(l, "matrix"), "latency_us", nranks));
  vpop(&v, s);
  const cJSON *ar = vget(l, "allreduce");
  if (nranks > 1 || !cJSON_IsNull(ar)) {
    TRY(vobj(&v, l, "allreduce"));
    vpush(&v, "allreduce", -1, &s);
    TRY(vtiming(&v, ar));
    TRY(vint(&v, ar, "floats", 1, 1e15));
    TRY(vstr(&v, ar, "path"));
    /* (since 2026-11-29: the algorithm, the nodes and the curve over sizes; optional) */
    if (vget(ar, "algorithm")) {
      TRY(vstr(&v, ar, "algorithm"));
      const char *a = cJSON_GetStringValue(vget(ar, "algorithm"));
      if (strcmp(a, "mpi") && strcmp(a, "flat") && strcmp(a, "hier") && strcmp(a, "nccl"))
        return vfail(&v, "algorithm", "mpi, flat, hier or nccl", vget(ar, "algorithm"));
    }
    if (vget(ar, "nodes")) TRY(vint(&v, ar, "nodes", 1, 1e9));
    if (vget(ar, "curve")) TRY(vlist(&v, ar, "curve", 1, vcurve_point));
    vpop(&v, s);
  }
  return CG_OK;
}

int rapa_device_layer_time(const cJSON *dev, double *t) {
  double mm = rapa_json_num(dev, "summary.mm_gflops"), sp = rapa_json_num(dev, "summary.spmm_gnnz_s");
  if (!(mm > 0) || !(sp > 0))
    return cg_err_set(CG_ERR_FORMAT, "device profile has no MM or SpMM rate (summary.mm_gflops %g, "
                      "summary.spmm_gnnz_s %g)", mm, sp);
  *t = 2.0 * REF_ROWS * REF_HIDDEN * REF_HIDDEN / (mm * 1e9) + REF_NNZ * REF_HIDDEN / (sp * 1e9);
  return CG_OK;
}

int rapa_validate_profile(const cJSON *root, const char *what) {
  struct vctx v = {what, ""};
  if (!cJSON_IsObject(root)) return cg_err_set(CG_ERR_FORMAT, "%s: expected a JSON object at the top", what);
  const cJSON *s = vget(root, "schema");
  if (!cJSON_IsString(s) || strcmp(s->valuestring, "capgnn-profile"))
    return vfail(&v, "schema", "\"capgnn-profile\"", s);
  const cJSON *ver = vget(root, "version");
  if (!cJSON_IsNumber(ver) || ver->valuedouble != RAPA_PROFILE_VERSION) {
    char exp[64];
    snprintf(exp, sizeof exp, "%d (the version this capgnn reads)", RAPA_PROFILE_VERSION);
    return vfail(&v, "version", exp, ver);
  }
  TRY(vstr(&v, root, "created"));
  TRY(vstr(&v, root, "command"));
  TRY(vbool(&v, root, "quick"));
  TRY(vobj(&v, root, "model"));
  TRY(vobj(&v, root, "mpi"));
  TRY(varr(&v, root, "ranks", 1));
  const cJSON *ranks = vget(root, "ranks");
  const int n = cJSON_GetArraySize(ranks);
  for (int r = 0; r < n; r++) {
    const cJSON *d = cJSON_GetArrayItem(ranks, r);
    size_t sv;
    vpush(&v, "ranks", r, &sv);
    if (!cJSON_IsObject(d)) return cg_err_set(CG_ERR_FORMAT, "%s: %s: expected an object", what, v.path);
    TRY(vint(&v, d, "rank", r, r));
    TRY(vstr(&v, d, "host"));
    TRY(vint(&v, d, "node", 0, n - 1));
    TRY(vbool(&v, d, "reused"));
    TRY(vdevice(&v, d));
    vpop(&v, sv);
  }
  TRY(vobj(&v, root, "links"));
  TRY(rapa_validate_links(vget(root, "links"), n, what, "links"));
  TRY(vobj(&v, root, "capability"));
  const cJSON *cap = vget(root, "capability");
  size_t sv;
  vpush(&v, "capability", -1, &sv);
  TRY(vstr(&v, cap, "definition"));
  static const char *arrs[] = {"relative", "vs_fastest", "layer_s"};
  for (int a = 0; a < 3; a++) {
    const cJSON *x = vget(cap, arrs[a]);
    if (!cJSON_IsArray(x) || cJSON_GetArraySize(x) != n) {
      char exp[64];
      snprintf(exp, sizeof exp, "an array of %d numbers", n);
      return vfail(&v, arrs[a], exp, x);
    }
  }
  /* recompute: a hand-edited capability does not pass */
  double sum = 0.0, *t = malloc(sizeof(double) * (size_t)n);
  if (!t) return cg_err_set(CG_ERR_NOMEM, "out of memory validating %s", what);
  int st = CG_OK;
  for (int r = 0; r < n && st == CG_OK; r++) {
    st = rapa_device_layer_time(cJSON_GetArrayItem(ranks, r), &t[r]);
    if (st == CG_OK) sum += 1.0 / t[r];
  }
  for (int r = 0; r < n && st == CG_OK; r++) {
    const cJSON *x = cJSON_GetArrayItem(vget(cap, "relative"), r);
    double want = (1.0 / t[r]) / sum;
    if (!cJSON_IsNumber(x) || fabs(x->valuedouble - want) > 1e-9)
      st = cg_err_set(CG_ERR_FORMAT, "%s: capability.relative[%d] is %s%.17g but the ranks' rates give %.17g",
                      what, r, cJSON_IsNumber(x) ? "" : "not a number: ", cJSON_IsNumber(x) ? x->valuedouble : NAN, want);
  }
  free(t);
  vpop(&v, sv);
  return st;
}

/* Where cJSON stopped, for a message: "near '...'" with up to 20 characters, to the end
 * of that line (a file cut short mid-line put its newline inside the one error line);
 * "at the end of the file" when nothing follows. */
static void json_near(const char *at, char *out, size_t len) {
  char text[24];
  size_t k = 0;
  while (at && k < 20 && at[k] && at[k] != '\n' && at[k] != '\r') {
    text[k] = (unsigned char)at[k] < 0x20 ? ' ' : at[k];
    k++;
  }
  text[k] = '\0';
  if (!at) snprintf(out, len, "near '?'");
  else if (k == 0 && !at[0]) snprintf(out, len, "at the end of the file");
  else snprintf(out, len, "near '%s'", text);
}

int rapa_profile_validate_text(const char *json, const char *what) {
  cJSON *root = cJSON_Parse(json);
  if (!root) {
    char near[40];
    json_near(cJSON_GetErrorPtr(), near, sizeof near);
    return cg_err_set(CG_ERR_FORMAT, "%s: not valid JSON (%s)", what, near);
  }
  int st = rapa_validate_profile(root, what);
  cJSON_Delete(root);
  return st;
}

/* ---- the opaque profile ------------------------------------------------------------ */

int rapa_profile_wrap(cJSON *root, struct rapa_profile **out) {
  *out = NULL;
  struct rapa_profile *p = cg_calloc(1, sizeof *p, "profile");
  int n = cJSON_GetArraySize(cJSON_GetObjectItem(root, "ranks"));
  if (p) p->desc = cg_calloc((size_t)(n > 0 ? n : 1), sizeof(char *), "profile descriptions");
  if (!p || !p->desc) {
    cg_free(p);
    cJSON_Delete(root);
    return CG_ERR_NOMEM;
  }
  p->root = root;
  for (int r = 0; r < n; r++) {
    const cJSON *d = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "ranks"), r);
    const cJSON *dv = cJSON_GetObjectItem(d, "device");
    char buf[512];
    const char *kind = cJSON_GetStringValue(cJSON_GetObjectItem(dv, "kind"));
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(dv, "name"));
    const char *host = cJSON_GetStringValue(cJSON_GetObjectItem(d, "host"));
    int threads = (int)rapa_json_num(dv, "threads"), share = (int)rapa_json_num(dv, "share_pct");
    if (kind && !strcmp(kind, "cpu"))
      snprintf(buf, sizeof buf, "%s: cpu, %d thread%s, %s", host ? host : "?", threads, threads == 1 ? "" : "s",
               name ? name : "?");
    else if (share > 0)
      snprintf(buf, sizeof buf, "%s: %s, %d%% of its SMs (MPS)", host ? host : "?", name ? name : "?", share);
    else
      snprintf(buf, sizeof buf, "%s: %s", host ? host : "?", name ? name : "?");
    p->desc[r] = cg_malloc(strlen(buf) + 1, "profile description");
    if (p->desc[r]) memcpy(p->desc[r], buf, strlen(buf) + 1);
  }
  *out = p;
  return CG_OK;
}

void rapa_profile_destroy(struct rapa_profile **pp) {
  if (!pp || !*pp) return;
  struct rapa_profile *p = *pp;
  int n = rapa_profile_nranks(p);
  for (int r = 0; r < n; r++) cg_free(p->desc[r]);
  cg_free(p->desc);
  cJSON_Delete(p->root);
  cg_free(p);
  *pp = NULL;
}

int rapa_profile_nranks(const struct rapa_profile *p) {
  return cJSON_GetArraySize(cJSON_GetObjectItem(p->root, "ranks"));
}

const char *rapa_profile_key(const struct rapa_profile *p, int r) {
  const cJSON *d = cJSON_GetArrayItem(cJSON_GetObjectItem(p->root, "ranks"), r);
  return cJSON_GetStringValue(cJSON_GetObjectItem(d, "key"));
}

const char *rapa_profile_describe(const struct rapa_profile *p, int r) {
  return r >= 0 && r < rapa_profile_nranks(p) && p->desc[r] ? p->desc[r] : "?";
}

int rapa_profile_capabilities(const struct rapa_profile *p, double *rel, double *t_layer) {
  const cJSON *ranks = cJSON_GetObjectItem(p->root, "ranks");
  const int n = cJSON_GetArraySize(ranks);
  double sum = 0.0;
  for (int r = 0; r < n; r++) {
    double t = 0.0;
    TRY(rapa_device_layer_time(cJSON_GetArrayItem(ranks, r), &t));
    rel[r] = 1.0 / t;
    if (t_layer) t_layer[r] = t;
    sum += rel[r];
  }
  for (int r = 0; r < n; r++) rel[r] /= sum;
  return CG_OK;
}

int rapa_profile_parse(const char *json, const char *what, struct rapa_profile **out) {
  *out = NULL;
  cJSON *root = cJSON_Parse(json);
  if (!root) {
    char near[40];
    json_near(cJSON_GetErrorPtr(), near, sizeof near);
    return cg_err_set(CG_ERR_FORMAT, "%s: not valid JSON (%s): was it cut short or edited?", what, near);
  }
  int st = rapa_validate_profile(root, what);
  if (st < 0) {
    cJSON_Delete(root);
    return st;
  }
  return rapa_profile_wrap(root, out);
}

/* The whole file as a NUL-terminated string. */
static int read_text(const char *path, char **out) {
  *out = NULL;
  FILE *f = fopen(path, "rb");
  if (!f) return cg_err_set(errno == ENOENT ? CG_ERR_NOT_FOUND : CG_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
  int st = CG_OK;
  char *buf = NULL;
  struct stat sb;
  if (fstat(fileno(f), &sb) == 0 && S_ISDIR(sb.st_mode)) /* (fopen opens one; its size is no file's) */
    st = cg_err_set(CG_ERR_IO, "cannot read '%s': it is a folder, not a file", path);
  if (st == CG_OK && fseek(f, 0, SEEK_END) != 0) st = cg_err_set(CG_ERR_IO, "cannot read '%s': %s", path, strerror(errno));
  long len = st == CG_OK ? ftell(f) : -1;
  if (st == CG_OK && (len < 0 || fseek(f, 0, SEEK_SET) != 0))
    st = cg_err_set(CG_ERR_IO, "cannot read '%s': %s", path, strerror(errno));
  if (st == CG_OK && len > (long)1 << 30) st = cg_err_set(CG_ERR_FORMAT, "'%s' is over 1 GiB: not a profile", path);
  if (st == CG_OK && !(buf = cg_malloc((size_t)len + 1, "profile file contents"))) st = CG_ERR_NOMEM;
  if (st == CG_OK && fread(buf, 1, (size_t)len, f) != (size_t)len)
    st = cg_err_set(CG_ERR_IO, "cannot read '%s': short read", path);
  fclose(f);
  if (st < 0) {
    cg_free(buf);
    return st;
  }
  buf[len] = '\0';
  *out = buf;
  return CG_OK;
}

int rapa_profile_load(const char *path, struct rapa_profile **out) {
  char *text = NULL;
  TRY(read_text(path, &text));
  char what[600];
  snprintf(what, sizeof what, "profile '%s'", path);
  int st = rapa_profile_parse(text, what, out);
  cg_free(text);
  return st;
}

int rapa_write_json(const char *path, const cJSON *obj, const char *what) {
  char *text = cJSON_Print(obj);
  if (!text) return cg_err_set(CG_ERR_NOMEM, "out of memory printing the %s", what);
  struct cg_outfile of;
  int st = cg_outfile_open(&of, path, what);
  if (st == CG_OK) {
    size_t n = strlen(text);
    if (fwrite(text, 1, n, of.fp) != n || fputc('\n', of.fp) == EOF) {
      cg_outfile_abort(&of);
      st = cg_err_set(CG_ERR_IO, "cannot write the %s to '%s': %s", what, path, strerror(errno));
    } else {
      st = cg_outfile_commit(&of);
    }
  }
  cJSON_free(text);
  return st;
}

int rapa_profile_save(const struct rapa_profile *p, const char *path) {
  return rapa_write_json(path, p->root, "profile");
}

/* ---- cache ----------------------------------------------------------------------------- */

const char *rapa_cache_dir(const char *cache_dir) {
  if (cache_dir && cache_dir[0]) return cache_dir;
  const char *env = getenv("CAPGNN_CACHE");
  if (env && env[0]) return env;
  return ".capgnn-cache";
}

int rapa_mkdirs(const char *dir) {
  char buf[1024];
  if (snprintf(buf, sizeof buf, "%s", dir) >= (int)sizeof buf)
    return cg_err_set(CG_ERR_ARG, "folder name too long: '%s'", dir);
  for (char *p = buf + 1;; p++) {
    if (*p == '/' || *p == '\0') {
      char c = *p;
      *p = '\0';
      if (mkdir(buf, 0777) != 0 && errno != EEXIST)
        return cg_err_set(CG_ERR_IO, "cannot create folder '%s': %s", buf, strerror(errno));
      *p = c;
      if (!c) break;
    }
  }
  struct stat sb;
  if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) return cg_err_set(CG_ERR_IO, "'%s' is not a folder", dir);
  return CG_OK;
}

/* An unusable cache file: a warning for a caller that measures again, else the detail
 * goes to *why (rapa_cache_read). */
static void cache_unusable(const char *path, int remeasure, char *why, size_t why_len, const char *reason,
                           const char *detail) {
  if (remeasure) {
    LOG_WARN("profile", "profile cache '%s' %s: re-measuring", path, detail);
    snprintf(why, why_len, "%s", reason);
  } else {
    snprintf(why, why_len, "the file %s", detail);
  }
}

/* A links file's own rank count, for validating it against itself: 0 when it is not a
 * number of ranks at all (missing, NaN, beyond an int), which the validation refuses
 * naming the field, rather than converting it to int (undefined for those). */
static int links_nranks(const cJSON *links) {
  const double n = rapa_json_num(links, "nranks");
  return n >= 1 && n <= LINKS_MAX_RANKS + 1.0 ? (int)n : 0;
}

int rapa_cache_read(const char *path, const char *schema, int need_full, int remeasure, cJSON **out, char *why,
                    size_t why_len) {
  *out = NULL;
  snprintf(why, why_len, "no cached profile");
  char *text = NULL;
  char detail[1400];
  int st = read_text(path, &text);
  if (st == CG_ERR_NOT_FOUND) {
    cg_err_clear();
    return 0;
  }
  if (st < 0) {
    snprintf(detail, sizeof detail, "cannot be read (%s)", cg_err_msg());
    cache_unusable(path, remeasure, why, why_len, "unreadable cache file", detail);
    cg_err_clear();
    return 0;
  }
  cJSON *root = cJSON_Parse(text);
  cg_free(text);
  if (!root) {
    cache_unusable(path, remeasure, why, why_len, "corrupt cache file", "is corrupt (not valid JSON)");
    return 0;
  }
  char what[600];
  snprintf(what, sizeof what, "profile cache '%s'", path);
  const cJSON *ver = cJSON_GetObjectItem(root, "version");
  if (cJSON_IsNumber(ver) && ver->valuedouble != RAPA_PROFILE_VERSION) {
    snprintf(detail, sizeof detail, "has version %g; this capgnn writes version %d", ver->valuedouble,
             RAPA_PROFILE_VERSION);
    cache_unusable(path, remeasure, why, why_len, "cache file of another version", detail);
    cJSON_Delete(root);
    return 0;
  }
  if (!strcmp(schema, "capgnn-device-profile")) {
    st = rapa_validate_device(root, what, "");
  } else {
    const cJSON *s = cJSON_GetObjectItem(root, "schema");
    const cJSON *links = cJSON_GetObjectItem(root, "links");
    st = cJSON_IsString(s) && !strcmp(s->valuestring, schema)
             ? rapa_validate_links(links, links_nranks(links), what, "links")
             : cg_err_set(CG_ERR_FORMAT, "%s: schema: expected \"%s\"", what, schema);
  }
  if (st < 0) {
    snprintf(detail, sizeof detail, "does not validate (%s)", cg_err_msg());
    cache_unusable(path, remeasure, why, why_len, "invalid cache file", detail);
    cg_err_clear();
    cJSON_Delete(root);
    return 0;
  }
  const cJSON *q = cJSON_GetObjectItem(root, "quick");
  if (need_full && cJSON_IsTrue(q)) {
    LOG_INFO("profile", "profile cache '%s' holds a --quick profile; measuring the full one", path);
    snprintf(why, why_len, "cached profile is --quick");
    cJSON_Delete(root);
    return 0;
  }
  *out = root;
  return 1;
}

int rapa_cache_write(const char *path, const cJSON *obj) {
  return rapa_write_json(path, obj, "profile cache");
}
