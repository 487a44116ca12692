/* rapa/train.c — `capgnn train --profile FILE|auto`: find every rank's device in a
 * profile and log the ranks' relative capabilities.
 *
 * Design notes (the why): the training ranks are matched to profile entries by host
 * and device key, not by rank number, so a profile measured with one rank count
 * serves a job with another on the same devices; the capabilities are normalised over
 * the job's ranks. Nothing here changes how training runs (--partition rapa reads the
 * profile's rates itself: runtime/dist.c, rapa/balance.h). */
#include <dirent.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/status.h"
#include "rapa/rapa_internal.h"

#ifdef CAPGNN_HAVE_CUDA
#include "cuda/cuda_backend.h"
#endif

static void safe_host(char *out, size_t len) {
  const char *in = cg_hostname();
  size_t k = 0;
  for (; *in && k + 1 < len; in++) {
    char ch = *in;
    int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '-' ||
             ch == '_' || ch == '.';
    out[k++] = ok ? ch : '_';
  }
  out[k] = '\0';
  if (!k || out[0] == '.') snprintf(out, len, "host");
}

/* The key rapa_profile_run gives this rank's device for the training's --device and
 * --threads. Collective ("auto" asks every rank whether it sees a GPU). */
static int train_key(struct comm *c, const char *device, int threads, char *key, size_t len) {
  int cuda = device && !strcmp(device, "cuda");
  if (!device || !strcmp(device, "auto")) {
    double g = 0.0;
#ifdef CAPGNN_HAVE_CUDA
    g = cg_cuda_device_count() > 0 ? 1.0 : 0.0;
#endif
    TRY(comm_allreduce_host(c, &g, 1, COMM_MIN));
    cuda = g > 0;
  }
  if (!cuda) {
    int t = threads > 0 ? threads : omp_get_max_threads();
    snprintf(key, len, "cpu-t%d", t < 1 ? 1 : t);
    return CG_OK;
  }
#ifdef CAPGNN_HAVE_CUDA
  int n = cg_cuda_device_count();
  if (n <= 0) return cg_err_set(CG_ERR_NOT_FOUND, "--profile: no CUDA device visible to rank %d", comm_rank(c));
  char uuid[64];
  TRY(cg_cuda_device_uuid(comm_host_local_rank(c) % n, uuid, sizeof uuid));
  const char *share = getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
  if (share && atoi(share) > 0) snprintf(key, len, "%s-s%d", uuid, atoi(share));
  else snprintf(key, len, "%s", uuid);
  return CG_OK;
#else
  return cg_err_set(CG_ERR_UNSUPPORTED, "--profile with --device cuda: this build has no CUDA backend");
#endif
}

/* Rank 0: profile entry of each of the P ranks whose "host|key" ids are ids[]: entry r when
 * its id is rank r's, else the first unused entry with that id, else any entry with that id
 * (a profile of fewer ranks on the same devices), else (as many entries as ranks) the first
 * unused one, with a warning naming it. Distinct entries where ids allow, so that the link
 * matrix can be read for every pair. */
static const char *entry_id(const struct rapa_profile *prof, int q, char *buf, size_t len) {
  const cJSON *d = cJSON_GetArrayItem(cJSON_GetObjectItem(prof->root, "ranks"), q);
  snprintf(buf, len, "%s|%s", cJSON_GetStringValue(cJSON_GetObjectItem(d, "host")),
           cJSON_GetStringValue(cJSON_GetObjectItem(d, "key")));
  return buf;
}

static int match_entries(const struct rapa_profile *prof, const char *spec, char **ids, int P, int *match) {
  const int nr = rapa_profile_nranks(prof);
  char id[300];
  unsigned char *used = cg_calloc((size_t)(nr > 0 ? nr : 1), 1, "profile entries used");
  if (!used) return CG_ERR_NOMEM;
  for (int r = 0; r < P; r++) { /* rank r's own entry, when it holds rank r's device */
    match[r] = r < nr && !strcmp(entry_id(prof, r, id, sizeof id), ids[r]) ? r : -1;
    if (match[r] >= 0) used[r] = 1;
  }
  for (int r = 0; r < P; r++) /* else the first unused entry of that device */
    for (int q = 0; q < nr && match[r] < 0; q++)
      if (!used[q] && !strcmp(entry_id(prof, q, id, sizeof id), ids[r])) {
        match[r] = q;
        used[q] = 1;
      }
  for (int r = 0; r < P; r++) /* else an entry of that device another rank uses too (a profile of fewer ranks) */
    for (int q = 0; q < nr && match[r] < 0; q++)
      if (!strcmp(entry_id(prof, q, id, sizeof id), ids[r])) match[r] = q;
  for (int r = 0; r < P && nr == P; r++) /* else, a profile of the job's size: the first unused entry */
    for (int q = 0; q < nr && match[r] < 0; q++)
      if (!used[q]) {
        LOG_WARN("profile", "--profile %s: rank %d's device (%s) is not in the profile; using the profile's rank %d "
                 "(%s) since both jobs have %d ranks", spec, r, ids[r], q, rapa_profile_describe(prof, q), P);
        match[r] = q;
        used[q] = 1;
      }
  cg_free(used);
  for (int r = 0; r < P; r++)
    if (match[r] < 0)
      return cg_err_set(CG_ERR_NOT_FOUND,
                        "--profile %s: rank %d's device (%s) is not in the profile (%d ranks): profile this job's "
                        "devices with `capgnn profile` (same --device and --threads: the key's t<N> is the rank's "
                        "threads)", spec, r, ids[r], nr);
  return CG_OK;
}

int rapa_profile_match_ranks(struct comm *c, const struct rapa_profile *prof, const char *spec, const char *device,
                             int threads, int *match) {
  const int P = comm_size(c);
  char key[128] = "", mine[300];
  char **ids = NULL;
  int st = train_key(c, device, threads, key, sizeof key);
  TRY(comm_agree(c, st, "--profile: naming this rank's device"));
  snprintf(mine, sizeof mine, "%s|%s", cg_hostname(), key);
  TRY(comm_gather_text(c, mine, 0, &ids));
  if (comm_rank(c) == 0) st = match_entries(prof, spec, ids, P, match);
  comm_texts_free(ids, P);
  TRY(comm_agree(c, st, "--profile: matching the ranks' devices"));
  return comm_bcast(c, match, (size_t)P * sizeof *match, 0);
}

/* The device keys the profile cache holds for `host` ("cpu-t1, cpu-t2"; "none"), for
 * messages. */
static void profiles_cached(const char *dir, const char *host, char *buf, size_t len) {
  char path[1200];
  snprintf(path, sizeof path, "%s/profile", dir);
  snprintf(buf, len, "none");
  DIR *d = opendir(path);
  if (!d) return;
  size_t k = 0, hl = strlen(host);
  const struct dirent *e;
  while ((e = readdir(d)) != NULL && k + 1 < len) {
    const size_t l = strlen(e->d_name);
    if (l <= hl + 6 || strncmp(e->d_name, host, hl) != 0 || e->d_name[hl] != '-' ||
        strcmp(e->d_name + l - 5, ".json") != 0)
      continue;
    const int w = snprintf(buf + k, len - k, "%s%.*s", k ? ", " : "", (int)(l - hl - 6), e->d_name + hl + 1);
    if (w < 0) break;
    k += (size_t)w < len - k ? (size_t)w : len - k - 1;
  }
  closedir(d);
}

int rapa_profile_check_ranks(const struct rapa_profile *p, const char *spec, int P) {
  if (rapa_profile_nranks(p) == P) return CG_OK;
  return cg_err_set(CG_ERR_ARG, "--partition rapa --profile %s: the profile has %d ranks, the job %d: profile the "
                    "job's ranks (capgnn profile with the same -np, --threads, --gpu-share)", spec,
                    rapa_profile_nranks(p), P);
}

int rapa_train_profile(struct comm *c, const char *spec, const char *device, int threads, const char *cache_dir,
                       int sizes_parts) {
  int st = CG_OK;
  const int rank = comm_rank(c), P = comm_size(c);
  char key[128] = "", host[128], mine[300];
  char **ids = NULL, **texts = NULL;
  char *text = NULL;
  struct rapa_profile *prof = NULL;
  double *t = NULL;
  const cJSON **entry = NULL;
  cJSON *dev = NULL;
  const int from_cache = !strcmp(spec, "auto");
  safe_host(host, sizeof host);
  st = train_key(c, device, threads, key, sizeof key);
  TRY_GOTO(comm_agree(c, st, "--profile: naming this rank's device"), done);
  snprintf(mine, sizeof mine, "%s|%s", cg_hostname(), key);
  if (from_cache) {
    char path[1200], why[1600];
    snprintf(path, sizeof path, "%s/profile/%s-%s.json", rapa_cache_dir(cache_dir), host, key);
    /* (not re-measured here: refused, the reason in the one error line) */
    if (rapa_cache_read(path, "capgnn-device-profile", 0, 0, &dev, why, sizeof why) != 1) {
      char have[400];
      profiles_cached(rapa_cache_dir(cache_dir), host, have, sizeof have);
      /* (no rank number: ranks of one device read one file and fail alike, said once) */
      st = cg_err_set(CG_ERR_NOT_FOUND,
                      "--profile auto: no usable profile of device %s on %s (this run's --device and threads) in "
                      "the cache: %s (%s); the cache's files for this host: %s; run `capgnn profile` with this run's "
                      "--device and --threads first",
                      key, cg_hostname(), path, why, have);
    }
    else if (!(text = cJSON_PrintUnformatted(dev)))
      st = cg_err_set(CG_ERR_NOMEM, "out of memory printing the device profile");
    TRY_GOTO(comm_agree(c, st, "--profile auto: reading the cache"), done);
    TRY_GOTO(comm_gather_text(c, text, 0, &texts), done);
  } else {
    if (rank == 0) st = rapa_profile_load(spec, &prof);
    /* (now, not after a line of relative capabilities that maps the job's ranks onto
     * fewer entries, which --partition rapa then refuses) */
    if (rank == 0 && st == CG_OK && sizes_parts) st = rapa_profile_check_ranks(prof, spec, P);
    TRY_GOTO(comm_agree(c, st, "--profile: loading the profile"), done);
  }
  TRY_GOTO(comm_gather_text(c, mine, 0, &ids), done);
  if (rank == 0) {
    t = cg_calloc((size_t)P, sizeof *t, "layer times");
    entry = cg_calloc((size_t)P, sizeof *entry, "profile entries");
    if (!t || !entry) st = CG_ERR_NOMEM;
    cJSON **parsed = from_cache && st == CG_OK ? cg_calloc((size_t)P, sizeof *parsed, "device entries") : NULL;
    int *match = !from_cache && st == CG_OK ? cg_calloc((size_t)P, sizeof *match, "profile entry of each rank") : NULL;
    if ((from_cache && !parsed) || (!from_cache && !match)) st = CG_ERR_NOMEM;
    if (!from_cache && st == CG_OK) st = match_entries(prof, spec, ids, P, match);
    for (int r = 0; r < P && st == CG_OK; r++) {
      if (from_cache) {
        parsed[r] = cJSON_Parse(texts[r]);
        entry[r] = parsed[r];
        if (!entry[r]) st = cg_err_set(CG_ERR_INTERNAL, "rank %d's device profile does not parse", r);
      } else {
        entry[r] = cJSON_GetArrayItem(cJSON_GetObjectItem(prof->root, "ranks"), match[r]);
      }
    }
    cg_free(match);
    double sum = 0;
    for (int r = 0; r < P && st == CG_OK; r++) {
      st = rapa_device_layer_time(entry[r], &t[r]);
      sum += 1.0 / t[r];
    }
    if (st == CG_OK) {
      char line[4096];
      int k = snprintf(line, sizeof line, "profile %s: relative capability of the %d rank%s (%s):",
                       from_cache ? "auto (cache)" : spec, P, P == 1 ? "" : "s",
                       from_cache ? "logged only: --partition rapa sizes the parts by a --profile FILE's rates, "
                                    "else by rates it measures at start-up"
                                  : "--partition rapa sizes the parts by the profile's rates");
      for (int r = 0; r < P && k > 0 && (size_t)k < sizeof line; r++)
        k += snprintf(line + k, sizeof line - (size_t)k, "%s rank %d %.4f (%s, %.1f ms per reference layer)",
                      r ? ";" : "", r, (1.0 / t[r]) / sum, cJSON_GetStringValue(cJSON_GetObjectItem(entry[r], "key")),
                      t[r] * 1e3);
      const char *speed = getenv("CAPGNN_EMULATE_SPEED");
      if (speed && speed[0] && k > 0 && (size_t)k < sizeof line) /* (the rapa line gives the emulated ones) */
        snprintf(line + k, sizeof line - (size_t)k, " (the devices as profiled: CAPGNN_EMULATE_SPEED=%s scales "
                 "them for --partition rapa)", speed);
      LOG_INFO("profile", "%s", line);
    }
    if (parsed) {
      for (int r = 0; r < P; r++) cJSON_Delete(parsed[r]);
      cg_free(parsed);
    }
  }
  st = comm_agree(c, st, "--profile: matching the ranks' devices");
done:
  cJSON_Delete(dev);
  cJSON_free(text);
  comm_texts_free(texts, P);
  comm_texts_free(ids, P);
  rapa_profile_destroy(&prof);
  cg_free(t);
  cg_free(entry);
  return st;
}
