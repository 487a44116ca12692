/* jaca/options.c — the cache's options: names, defaults, checks and the one line that
 * names every approximation in force. */
#include <stdio.h>
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
  char grad[96];
  if (o->grad_staleness == 0) snprintf(grad, sizeof grad, "gradients every epoch");
  else snprintf(grad, sizeof grad, "halo gradients up to %d epochs old (--grad-staleness %d)", o->grad_staleness,
                o->grad_staleness);
  if (o->staleness == 0 && o->grad_staleness == 0)
    snprintf(buf, len, "halo cache %s: node tier %g %% of the node's halo rows%s; exact (staleness 0, "
             "gradients every epoch)%s",
             jaca_policy_name(o->policy), o->capacity * 100.0, mb, warm);
  else
    snprintf(buf, len, "halo cache %s: node tier %g %% of the node's halo rows%s, rank tier %g %% of the direct "
             "rows%s; APPROXIMATE: hidden halo rows up to %d epochs old (--staleness %d), %s%s",
             jaca_policy_name(o->policy), o->capacity * 100.0, mb, o->capacity * 100.0, dmb, o->staleness,
             o->staleness, grad, warm);
  return buf;
}
