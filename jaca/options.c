/* jaca/options.c — the cache's options: names, defaults, checks and the one line that
 * names every approximation in force. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "jaca/jaca.h"

static const char *const policy_names[] = {"none", "jaca", "lru", "fifo"};

const char *jaca_policy_name(enum jaca_policy p) {
  return (int)p >= 0 && (int)p < 4 ? policy_names[p] : "?";
}

int jaca_policy_parse(const char *s, enum jaca_policy *out) {
  for (int i = 0; s && i < 4; i++)
    if (strcmp(s, policy_names[i]) == 0) {
      *out = (enum jaca_policy)i;
      return CG_OK;
    }
  return cg_err_set(CG_ERR_ARG, "cache policy '%s': expected jaca, lru, fifo or none", s ? s : "(null)");
}

void jaca_options_defaults(struct jaca_options *o) {
  memset(o, 0, sizeof *o);
  o->policy = JACA_POLICY_NONE;
  o->capacity = 1.0;
  o->host_mb = JACA_MB_AUTO;
  o->device_mb = JACA_MB_AUTO;
  o->reserve_mb = JACA_RESERVE_MB_DEFAULT;
  o->prefetch = 1;
}

/* One staleness option's value (flag names it in messages): "S" (epochs, adaptive off) or
 * "adaptive[:EPS[:S]]". The forward rows' --staleness and the gradients' --grad-staleness
 * share it (the same syntax and defaults). */
static int staleness_parse(const char *flag, const char *s, int *bound_out, int *adaptive_out, double *eps_out) {
  const char *syntax = "expected a number of epochs S, or adaptive[:EPS[:S]] (EPS >= 0, S >= 1)";
  if (!s || !*s) return cg_err_set(CG_ERR_ARG, "%s: %s", flag, syntax);
  char *end = NULL;
  if (strncmp(s, "adaptive", 8) != 0) {
    errno = 0;
    const long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < 0 || v > JACA_MAX_STALENESS)
      return cg_err_set(CG_ERR_ARG, "%s %s: %s, S at most %d", flag, s, syntax, JACA_MAX_STALENESS);
    *bound_out = (int)v;
    *adaptive_out = 0;
    *eps_out = 0.0;
    return CG_OK;
  }
  double eps = JACA_ADAPT_EPS_DEFAULT;
  long bound = JACA_ADAPT_S_DEFAULT;
  const char *p = s + 8;
  if (*p == ':') {
    errno = 0;
    eps = strtod(p + 1, &end);
    if (errno || end == p + 1 || !isfinite(eps) || eps < 0.0 || (*end && *end != ':'))
      return cg_err_set(CG_ERR_ARG, "%s %s: EPS: %s", flag, s, syntax);
    p = end;
    if (*p == ':') {
      errno = 0;
      bound = strtol(p + 1, &end, 10);
      if (errno || end == p + 1 || *end || bound < 1 || bound > JACA_MAX_STALENESS)
        return cg_err_set(CG_ERR_ARG, "%s %s: S: %s, S at most %d", flag, s, syntax, JACA_MAX_STALENESS);
      p = end;
    }
  }
  if (*p) return cg_err_set(CG_ERR_ARG, "%s %s: %s", flag, s, syntax);
  *adaptive_out = 1;
  *eps_out = eps;
  *bound_out = (int)bound;
  return CG_OK;
}

int jaca_staleness_parse(const char *s, struct jaca_options *o) {
  return staleness_parse("--staleness", s, &o->staleness, &o->adaptive, &o->adapt_eps);
}

int jaca_grad_staleness_parse(const char *s, struct jaca_options *o) {
  return staleness_parse("--grad-staleness", s, &o->grad_staleness, &o->grad_adaptive, &o->grad_adapt_eps);
}

int64_t jaca_capacity_rows(int64_t avail_bytes, int64_t reserve_bytes, int64_t vertex_bytes, int64_t candidates) {
  if (candidates <= 0) return 0;
  if (vertex_bytes <= 0) return candidates;
  const int64_t left = avail_bytes - reserve_bytes;
  if (left <= 0) return 0;
  const int64_t rows = left / vertex_bytes;
  return rows < candidates ? rows : candidates;
}

int jaca_options_check(const struct jaca_options *o) {
  if ((int)o->policy < 0 || (int)o->policy > 3)
    return cg_err_set(CG_ERR_ARG, "cache policy %d: expected jaca, lru, fifo or none", (int)o->policy);
  if (!(o->capacity > 0.0 && o->capacity <= 1.0))
    return cg_err_set(CG_ERR_ARG, "--cache-capacity %g: expected a fraction of the halo rows in (0, 1]",
                      o->capacity);
  if (o->host_mb < 0 && o->host_mb != JACA_MB_AUTO)
    return cg_err_set(CG_ERR_ARG, "--cache-host-mb %lld: expected auto or >= 0", (long long)o->host_mb);
  if (o->device_mb < 0 && o->device_mb != JACA_MB_AUTO)
    return cg_err_set(CG_ERR_ARG, "--cache-device-mb %lld: expected auto or >= 0", (long long)o->device_mb);
  if (o->reserve_mb < 0)
    return cg_err_set(CG_ERR_ARG, "--cache-reserve-mb %lld: expected >= 0", (long long)o->reserve_mb);
  if (o->staleness < 0) return cg_err_set(CG_ERR_ARG, "--staleness %d: expected >= 0", o->staleness);
  if (o->grad_staleness < 0)
    return cg_err_set(CG_ERR_ARG, "--grad-staleness %d: expected >= 0", o->grad_staleness);
  if (o->prefetch != 0 && o->prefetch != 1)
    return cg_err_set(CG_ERR_ARG, "--cache-prefetch %d: expected on (1) or off (0)", o->prefetch);
  if (o->warmup < 0) return cg_err_set(CG_ERR_ARG, "--cache-warmup %d: expected >= 0", o->warmup);
  if (!(o->read_timeout_s >= 0.0 && o->read_timeout_s <= 1e7))
    return cg_err_set(CG_ERR_ARG, "the cache readers' timeout %g s: expected seconds in [0, 1e7] (0 = %g s)",
                      o->read_timeout_s, JACA_READ_TIMEOUT_S);
  if (o->adaptive != 0 && o->adaptive != 1)
    return cg_err_set(CG_ERR_ARG, "adaptive staleness flag %d: expected 0 or 1", o->adaptive);
  if (o->adaptive && !(o->adapt_eps >= 0.0 && isfinite(o->adapt_eps)))
    return cg_err_set(CG_ERR_ARG, "--staleness adaptive:%g: expected a relative drift EPS >= 0", o->adapt_eps);
  if (o->adaptive && o->staleness < 1)
    return cg_err_set(CG_ERR_ARG, "--staleness adaptive:%g:%d: expected a bound S >= 1 epochs", o->adapt_eps,
                      o->staleness);
  if (o->grad_adaptive != 0 && o->grad_adaptive != 1)
    return cg_err_set(CG_ERR_ARG, "adaptive gradient staleness flag %d: expected 0 or 1", o->grad_adaptive);
  if (o->grad_adaptive && !(o->grad_adapt_eps >= 0.0 && isfinite(o->grad_adapt_eps)))
    return cg_err_set(CG_ERR_ARG, "--grad-staleness adaptive:%g: expected a relative drift EPS >= 0",
                      o->grad_adapt_eps);
  if (o->grad_adaptive && o->grad_staleness < 1)
    return cg_err_set(CG_ERR_ARG, "--grad-staleness adaptive:%g:%d: expected a bound G >= 1 epochs",
                      o->grad_adapt_eps, o->grad_staleness);
  /* what is not built yet is refused, never silently ignored */
  if (o->staleness > JACA_MAX_STALENESS)
    return cg_err_set(CG_ERR_ARG, "--staleness %d: expected at most %d epochs", o->staleness, JACA_MAX_STALENESS);
  if (o->grad_staleness > JACA_MAX_STALENESS)
    return cg_err_set(CG_ERR_ARG, "--grad-staleness %d: expected at most %d epochs", o->grad_staleness,
                      JACA_MAX_STALENESS);
  return CG_OK;
}

const char *jaca_options_describe(const struct jaca_options *o, char *buf, size_t len) {
  if (o->policy == JACA_POLICY_NONE) {
    snprintf(buf, len, "no halo cache");
    return buf;
  }
  char mb[96] = "", dmb[96] = "", warm[64] = "";
  if (o->host_mb > 0) snprintf(mb, sizeof mb, ", at most %lld MiB", (long long)o->host_mb);
  else if (o->host_mb == JACA_MB_AUTO)
    snprintf(mb, sizeof mb, ", within free host memory less %lld MiB", (long long)o->reserve_mb);
  if (o->device_mb > 0) snprintf(dmb, sizeof dmb, ", at most %lld MiB", (long long)o->device_mb);
  else if (o->device_mb == JACA_MB_AUTO)
    snprintf(dmb, sizeof dmb, ", within free memory less %lld MiB", (long long)o->reserve_mb);
  if (o->warmup > 0) snprintf(warm, sizeof warm, "; cache off for the first %d epochs", o->warmup);
  if (!o->prefetch) { /* what is not the default is named (the values are the same) */
    const size_t n = strlen(warm);
    snprintf(warm + n, sizeof warm - n, "; prefetch off");
  }
  char grad[192];
  if (o->grad_adaptive)
    snprintf(grad, sizeof grad, "halo gradients resent only when their relative drift exceeds %g, up to %d epochs "
             "old (--grad-staleness adaptive:%g:%d)", o->grad_adapt_eps, o->grad_staleness, o->grad_adapt_eps,
             o->grad_staleness);
  else if (o->grad_staleness == 0) snprintf(grad, sizeof grad, "gradients every epoch");
  else snprintf(grad, sizeof grad, "halo gradients up to %d epochs old (--grad-staleness %d)", o->grad_staleness,
                o->grad_staleness);
  char rows[160];
  if (o->adaptive)
    snprintf(rows, sizeof rows, "hidden halo rows resent only when their relative drift exceeds %g, up to %d epochs "
             "old (--staleness adaptive:%g:%d)", o->adapt_eps, o->staleness, o->adapt_eps, o->staleness);
  else if (o->staleness == 0) snprintf(rows, sizeof rows, "hidden halo rows every epoch (--staleness 0)");
  else snprintf(rows, sizeof rows, "hidden halo rows up to %d epochs old (--staleness %d)", o->staleness, o->staleness);
  /* adaptive at EPS 0 resends every row (gradient) that changed at all: exact too */
  const int rows_exact = o->adaptive ? o->adapt_eps == 0.0 : o->staleness == 0;
  const int grads_exact = o->grad_adaptive ? o->grad_adapt_eps == 0.0 : o->grad_staleness == 0;
  if (o->staleness == 0 && o->grad_staleness == 0)
    snprintf(buf, len, "halo cache %s: node tier %g %% of the node's halo rows%s; exact (staleness 0, "
             "gradients every epoch)%s",
             jaca_policy_name(o->policy), o->capacity * 100.0, mb, warm);
  else if (rows_exact && grads_exact)
    snprintf(buf, len, "halo cache %s: node tier %g %% of the node's halo rows%s, rank tier %g %% of the direct "
             "rows%s; exact: %s, %s%s", jaca_policy_name(o->policy), o->capacity * 100.0, mb, o->capacity * 100.0,
             dmb, rows, grad, warm);
  else
    snprintf(buf, len, "halo cache %s: node tier %g %% of the node's halo rows%s, rank tier %g %% of the direct "
             "rows%s; APPROXIMATE: %s, %s%s",
             jaca_policy_name(o->policy), o->capacity * 100.0, mb, o->capacity * 100.0, dmb, rows, grad, warm);
  return buf;
}
