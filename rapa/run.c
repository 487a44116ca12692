/* rapa/run.c — `capgnn profile` on every rank: open the rank's backend, reuse or
 * measure its device profile (ranks of one host in turn), measure or reuse the link
 * matrix, gather everything on rank 0 and derive the capabilities.
 *
 * Design notes (the why):
 * - Ranks of one host measure one after the other: concurrent measurements on shared
 *   cores or one GPU would measure the sharing, not the device, and a rank's share of
 *   a GPU (MPS) or thread count is what it keeps in training anyway.
 * - The cache holds a device's profile under its host and device key, so that any
 *   later job with that device (another rank count, another partner) reuses it; the
 *   links depend on the whole job's layout, so they have a file per layout.
 * - Every decision that changes which collective calls follow (reuse or measure the
 *   links, the backend kind) is taken on rank 0 or agreed before anyone acts on it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "core/log.h"
#include "core/status.h"
#include "core/timer.h"
#include "rapa/rapa_internal.h"

#ifdef CAPGNN_HAVE_CUDA
#include "cuda/cuda_backend.h"
#endif

#ifndef CAPGNN_VERSION
#define CAPGNN_VERSION "unknown"
#endif

void rapa_run_opts_default(struct rapa_run_opts *o) {
  memset(o, 0, sizeof *o);
  o->device = "cpu";
  o->rows = 0; /* by quick: 4096 or 32768 */
  o->features = 602;
  o->hidden = 256;
  o->classes = 41;
  o->layers = 3;
  o->command = "capgnn profile";
}

/* The backend of this rank; "auto" is CUDA when every rank sees a GPU. Collective. */
static int open_backend(struct comm *c, const struct rapa_run_opts *o, struct cg_backend **be) {
  *be = NULL;
  const char *dev = o->device ? o->device : "auto";
  if (strcmp(dev, "cpu") && strcmp(dev, "cuda") && strcmp(dev, "auto"))
    return cg_err_set(CG_ERR_ARG, "--device %s: expected cpu, cuda or auto", dev);
  int want_cuda = !strcmp(dev, "cuda");
  if (!strcmp(dev, "auto")) {
#ifdef CAPGNN_HAVE_CUDA
    double g = cg_cuda_device_count() > 0 ? 1.0 : 0.0;
    TRY(comm_allreduce_host(c, &g, 1, COMM_MIN));
    want_cuda = g > 0;
#endif
  }
  int st = CG_OK;
  if (want_cuda) {
#ifdef CAPGNN_HAVE_CUDA
    int ord = -1;
    TRY(comm_gpu_bind(c, &ord)); /* collective, agreed */
    st = cg_backend_cuda_create(ord, 0, be);
#else
    st = cg_err_set(CG_ERR_UNSUPPORTED, "--device cuda: this build has no CUDA backend (rebuild with "
                    "-DCAPGNN_WITH_CUDA=ON where the CUDA toolkit is installed, or use --device cpu)");
#endif
  } else {
    st = cg_backend_cpu_create(o->threads, be);
  }
  return comm_agree(c, st, "opening the backend");
}

/* host name with only portable file-name characters */
static void safe_name(const char *in, char *out, size_t len) {
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

static int device_key(struct cg_backend *be, const struct rapa_run_opts *o, char *key, size_t len) {
  if (be->kind == CG_DEVICE_CPU) {
    snprintf(key, len, "cpu-t%d", cg_backend_cpu_threads(be));
    return CG_OK;
  }
#ifdef CAPGNN_HAVE_CUDA
  char uuid[64];
  TRY(cg_cuda_device_uuid(cg_cuda_device(be), uuid, sizeof uuid));
  if (o->share_pct > 0) snprintf(key, len, "%s-s%d", uuid, o->share_pct);
  else snprintf(key, len, "%s", uuid);
  return CG_OK;
#else
  return cg_err_set(CG_ERR_INTERNAL, "a CUDA backend in a build without CUDA");
#endif
}

/* Whether a cached device entry was measured at the shapes this run asks for: the GEMMs'
 * rows (given with --rows, or either default: a full profile serves a --quick run), the
 * model's widths, and the SpMM matrix (given with --spmm-graph, or either default). The
 * cache is keyed by host and device only, so an entry of `--rows 1000 --hidden 32` would
 * otherwise be reused for the defaults, and the other way round (found by a new user's
 * pass: the JSON then named shapes it had not measured). NULL when it matches, else what
 * differs. */
static const char *cached_shapes_differ(const cJSON *dev, const struct rapa_run_opts *o, int rows_given,
                                        char *buf, size_t len) {
  const cJSON *model = cJSON_GetObjectItem(cJSON_GetObjectItem(dev, "mm"), "model");
  const cJSON *m0 = cJSON_GetArrayItem(model, 0), *m1 = cJSON_GetArrayItem(model, 1);
  const cJSON *m2 = cJSON_GetArrayItem(model, 2);
  const double rows = cJSON_GetNumberValue(cJSON_GetObjectItem(m1, "m"));
  const double hidden = cJSON_GetNumberValue(cJSON_GetObjectItem(m1, "n"));
  const double features = cJSON_GetNumberValue(cJSON_GetObjectItem(m0, "k"));
  const double classes = cJSON_GetNumberValue(cJSON_GetObjectItem(m2, "n"));
  const char *spmm = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(dev, "spmm"), "graph"));
  const int rows_ok = rows_given ? rows == (double)o->rows : rows == 32768.0 || (o->quick && rows == 4096.0);
  const int spmm_ok = spmm && (o->spmm_graph ? !strcmp(spmm, o->spmm_graph)
                                             : !strcmp(spmm, rapa_spmm_default_spec(0)) ||
                                                   (o->quick && !strcmp(spmm, rapa_spmm_default_spec(1))));
  if (rows_ok && spmm_ok && hidden == (double)o->hidden && features == (double)o->features &&
      classes == (double)o->classes)
    return NULL;
  snprintf(buf, len, "GEMMs of %.0f rows, %.0f -> %.0f -> %.0f wide, SpMM on %s", rows, features, hidden, classes,
           spmm ? spmm : "?");
  return buf;
}

/* This rank's device entry: from the cache or measured (in turns with the host's other
 * ranks). *reused tells which. Collective over the host (the turns). */
static int device_profile(struct comm *c, struct cg_backend *be, const struct rapa_run_opts *o, int rows_given,
                          const char *key, const char *path, cJSON **dev, int *reused, char *note,
                          size_t note_len) {
  int st = CG_OK;
  *dev = NULL;
  *reused = 0;
  char why[128] = "--refresh", shapes[512];
  if (!o->refresh && rapa_cache_read(path, "capgnn-device-profile", !o->quick, 1, dev, why, sizeof why) == 1) {
    const cJSON *k = cJSON_GetObjectItem(*dev, "key");
    /* (the key names the device and its threads, not the GEMM library: an entry measured
     * with another one, e.g. OpenBLAS's before oneDNN was installed, is another device's) */
    const char *blas = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(*dev, "device"), "blas"));
    const char *blas_now = rapa_blas_name(be);
    if (cJSON_IsString(k) && !strcmp(k->valuestring, key) && (!blas || strcmp(blas, blas_now) != 0)) {
      LOG_INFO("profile", "profile cache '%s' was measured with %s, this run's GEMM is %s: re-measuring", path,
               blas ? blas : "an unnamed GEMM library", blas_now);
      snprintf(why, sizeof why, "cache file of another GEMM library");
      cJSON_Delete(*dev);
      *dev = NULL;
    } else if (cJSON_IsString(k) && !strcmp(k->valuestring, key) &&
               cached_shapes_differ(*dev, o, rows_given, shapes, sizeof shapes)) {
      LOG_INFO("profile", "profile cache '%s' was measured at other shapes (%s): re-measuring", path, shapes);
      snprintf(why, sizeof why, "cache file of other shapes");
      cJSON_Delete(*dev);
      *dev = NULL;
    } else if (cJSON_IsString(k) && !strcmp(k->valuestring, key)) {
      *reused = 1;
      snprintf(note, note_len, "reused %s (measured %s)", path,
               cJSON_GetStringValue(cJSON_GetObjectItem(*dev, "measured")));
    } else {
      LOG_WARN("profile", "profile cache '%s' holds device %s, not %s: re-measuring", path,
               cJSON_IsString(k) ? k->valuestring : "?", key);
      snprintf(why, sizeof why, "cache file of another device");
      cJSON_Delete(*dev);
      *dev = NULL;
    }
  }
  for (int turn = 0; turn < comm_host_local_size(c); turn++) {
    if (turn == comm_host_local_rank(c) && !*reused && st == CG_OK) {
      LOG_INFO("profile", "measuring %s (%s)%s", key, why, o->quick ? ", quick" : "");
      const double t0 = cg_time_now();
      st = rapa_device_measure(be, o, key, dev);
      if (st == CG_OK) {
        int w = rapa_cache_write(path, *dev);
        if (w < 0) {
          LOG_WARN("profile", "could not save the device profile to the cache (%s)", cg_err_msg());
          cg_err_clear();
          snprintf(note, note_len, "measured in %.1f s (%s); not saved", cg_time_now() - t0, why);
        } else {
          snprintf(note, note_len, "measured in %.1f s (%s), saved to %s", cg_time_now() - t0, why, path);
        }
      }
    }
    int b = comm_host_barrier(c);
    if (st == CG_OK && b < 0) st = b;
  }
  return st;
}

/* Ranks of one host with the same device key (cpu-t<threads>; a GPU's UUID and MPS
 * share) measured one after the other and should measure alike: rates further apart warn,
 * as the start-up calibration of --partition rapa does (rapa_rates_apart). (An emulated
 * speed, CAPGNN_EMULATE_SPEED, does not apply: a profile measures the devices as they
 * are.) Rank 0, on the gathered entries. */
static void check_alike(const cJSON *ranks, int P) {
  char **ids = cg_calloc((size_t)P, sizeof *ids, "the ranks' devices");
  double *v = cg_calloc(2 * (size_t)P, sizeof *v, "the ranks' rates");
  char *lines = cg_malloc(8192, "the rates' warnings");
  for (int r = 0; r < P && ids && v && lines; r++) {
    const cJSON *e = cJSON_GetArrayItem(ranks, r);
    const char *host = cJSON_GetStringValue(cJSON_GetObjectItem(e, "host"));
    const char *key = cJSON_GetStringValue(cJSON_GetObjectItem(e, "key"));
    char id[300];
    snprintf(id, sizeof id, "host %s, device %s", host ? host : "?", key ? key : "?");
    if (!(ids[r] = cg_malloc(strlen(id) + 1, "a rank's device"))) break;
    strcpy(ids[r], id);
    const double f = rapa_test_rate_scale(r);
    v[r] = rapa_json_num(e, "summary.mm_gflops") * 1e9 * f;
    v[P + r] = rapa_json_num(e, "summary.spmm_gnnz_s") * 1e9 * f;
  }
  int all = ids && v && lines;
  for (int r = 0; r < P && all; r++) all = ids[r] != NULL;
  if (all && rapa_rates_apart(P, ids, v, v + P, lines, 8192) > 0) {
    char *save = NULL;
    for (char *l = strtok_r(lines, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
      LOG_WARN("profile", "%s: something else ran while one of them measured, and the capabilities follow it "
               "(the cache keeps the last one's); profile again on a quiet host (--refresh)", l);
  }
  cg_err_clear(); /* (an allocation that failed leaves the check out, not the profile) */
  for (int r = 0; ids && r < P; r++) cg_free(ids[r]);
  cg_free(ids);
  cg_free(v);
  cg_free(lines);
}

int rapa_profile_run(struct comm *c, const struct rapa_run_opts *oin, struct rapa_profile **out) {
  int st = CG_OK;
  *out = NULL;
  struct rapa_run_opts o = *oin;
  const int rows_given = o.rows > 0;
  if (o.rows <= 0) o.rows = o.quick ? 4096 : 32768;
  const int rank = comm_rank(c), P = comm_size(c);
  struct cg_backend *be = NULL;
  cJSON *dev = NULL, *links = NULL, *root = NULL;
  char **texts = NULL, **keys = NULL, **notes = NULL;
  char *text = NULL;
  TRY(open_backend(c, &o, &be));

  /* cache paths */
  char key[128], host[128], dir[900], path[1200];
  safe_name(cg_hostname(), host, sizeof host);
  st = device_key(be, &o, key, sizeof key);
  snprintf(dir, sizeof dir, "%s/profile", rapa_cache_dir(o.cache_dir));
  if (st == CG_OK && (st = rapa_mkdirs(dir)) != CG_OK) { /* (the default is relative: the current folder's) */
    char why[1200];
    snprintf(why, sizeof why, "%s", cg_err_msg());
    st = cg_err_set(st, "%s (the profile cache's folder; --cache DIR or CAPGNN_CACHE puts it elsewhere)", why);
  }
  snprintf(path, sizeof path, "%s/%s-%s.json", dir, host, key);
  TRY_GOTO(comm_agree(c, st, "preparing the profile cache"), done);

  int reused = 0;
  char note[1400] = "";
  st = device_profile(c, be, &o, rows_given, key, path, &dev, &reused, note, sizeof note);
  TRY_GOTO(comm_agree(c, st, "profiling the device"), done);
  cJSON_AddNumberToObject(dev, "rank", rank);
  cJSON_AddStringToObject(dev, "host", cg_hostname());
  cJSON_AddNumberToObject(dev, "node", comm_node(c));
  cJSON_AddBoolToObject(dev, "reused", reused);

  /* the job's layout names the links file */
  char mine[512];
  snprintf(mine, sizeof mine, "%s|%s|%d", host, key, comm_node(c));
  TRY_GOTO(comm_gather_text(c, mine, 0, &keys), done);
  TRY_GOTO(comm_gather_text(c, note, 0, &notes), done);
  char lpath[1200] = "", layout[8192] = "";
  int reuse_links = 0;
  if (rank == 0) {
    for (int r = 0; r < P; r++) {
      size_t u = strlen(layout);
      snprintf(layout + u, sizeof layout - u, "%s%s", r ? ";" : "", keys[r]);
    }
    snprintf(layout + strlen(layout), sizeof layout - strlen(layout), ";quick=%d", o.quick);
    snprintf(lpath, sizeof lpath, "%s/links-p%d-%016llx.json", dir, P, (unsigned long long)cg_fnv1a_str(layout));
    char why[128];
    cJSON *cached = NULL;
    if (!o.refresh && rapa_cache_read(lpath, "capgnn-links-profile", !o.quick, 1, &cached, why, sizeof why) == 1) {
      const cJSON *lay = cJSON_GetObjectItem(cached, "layout");
      /* links cached before the all-reduce was measured by size (2026-11-29) lack its
       * curve, which `capgnn plan` prices a job of this layout from: measured again */
      const cJSON *ar = cJSON_GetObjectItem(cJSON_GetObjectItem(cached, "links"), "allreduce");
      const int no_curve = cJSON_IsObject(ar) && !cJSON_GetObjectItem(ar, "curve");
      if (no_curve)
        LOG_INFO("profile", "links: %s was measured without the all-reduce's curve by size: re-measuring", lpath);
      if (cJSON_IsString(lay) && !strcmp(lay->valuestring, layout) && !no_curve) {
        links = cJSON_DetachItemFromObject(cached, "links");
        reuse_links = 1;
        LOG_INFO("profile", "links: reused %s (measured %s); --refresh re-measures", lpath,
                 cJSON_GetStringValue(cJSON_GetObjectItem(cached, "measured")));
      }
      cJSON_Delete(cached);
    }
  }
  TRY_GOTO(comm_bcast(c, &reuse_links, sizeof reuse_links, 0), done);
  if (!reuse_links) {
    if (rank == 0) LOG_INFO("profile", "links: measuring %d pair%s", P * (P - 1) / 2, P * (P - 1) / 2 == 1 ? "" : "s");
    TRY_GOTO(rapa_links_measure(c, be, &o, &links), done);
    if (rank == 0) {
      cJSON *f = cJSON_CreateObject();
      char now[64];
      rapa_now_iso(now, sizeof now);
      cJSON_AddStringToObject(f, "schema", "capgnn-links-profile");
      cJSON_AddNumberToObject(f, "version", RAPA_PROFILE_VERSION);
      cJSON_AddStringToObject(f, "layout", layout);
      cJSON_AddStringToObject(f, "measured", now);
      cJSON_AddBoolToObject(f, "quick", o.quick);
      cJSON_AddItemReferenceToObject(f, "links", links);
      if (rapa_cache_write(lpath, f) < 0) {
        LOG_WARN("profile", "could not save the links to the cache (%s)", cg_err_msg());
        cg_err_clear();
      }
      cJSON_Delete(f);
    }
  }

  /* gather the device entries on rank 0 */
  text = cJSON_PrintUnformatted(dev);
  if (!text) st = cg_err_set(CG_ERR_NOMEM, "out of memory printing the device profile");
  TRY_GOTO(comm_agree(c, st, "printing the device profile"), done);
  TRY_GOTO(comm_gather_text(c, text, 0, &texts), done);
  if (rank == 0) {
    for (int r = 0; r < P; r++) LOG_INFO("profile", "rank %d (%s): %s", r, keys[r], notes[r]);
    root = cJSON_CreateObject();
    char now[64];
    rapa_now_iso(now, sizeof now);
    cJSON_AddStringToObject(root, "schema", "capgnn-profile");
    cJSON_AddNumberToObject(root, "version", RAPA_PROFILE_VERSION);
    cJSON_AddStringToObject(root, "created", now);
    cJSON_AddStringToObject(root, "capgnn_version", CAPGNN_VERSION);
    cJSON_AddStringToObject(root, "command", o.command ? o.command : "capgnn profile");
    cJSON_AddBoolToObject(root, "quick", o.quick);
    cJSON *m = cJSON_AddObjectToObject(root, "model");
    cJSON_AddNumberToObject(m, "rows", (double)o.rows);
    cJSON_AddNumberToObject(m, "features", (double)o.features);
    cJSON_AddNumberToObject(m, "hidden", (double)o.hidden);
    cJSON_AddNumberToObject(m, "classes", (double)o.classes);
    cJSON_AddNumberToObject(m, "layers", o.layers);
    struct comm_lib_info li;
    comm_lib_info(c, &li);
    cJSON *mp = cJSON_AddObjectToObject(root, "mpi");
    cJSON_AddStringToObject(mp, "library", li.mpi_library);
    char v[32];
    snprintf(v, sizeof v, "%d.%d", li.mpi_version, li.mpi_subversion);
    cJSON_AddStringToObject(mp, "standard", v);
    cJSON_AddBoolToObject(mp, "cuda_aware", li.cuda_aware);
    cJSON_AddStringToObject(mp, "cuda_aware_how", li.cuda_aware_how);
    cJSON_AddNumberToObject(mp, "nccl_version", li.nccl_version);
    cJSON_AddStringToObject(mp, "transport", li.transport);
    cJSON_AddNumberToObject(mp, "nodes", comm_nnodes(c));
    const char *emu = getenv("CAPGNN_EMULATE_NODES");
    cJSON_AddStringToObject(mp, "emulate_nodes", emu && emu[0] ? emu : "");
    cJSON *ranks = cJSON_AddArrayToObject(root, "ranks");
    for (int r = 0; r < P && st == CG_OK; r++) {
      cJSON *d = cJSON_Parse(texts[r]);
      if (!d) st = cg_err_set(CG_ERR_INTERNAL, "rank %d's device profile does not parse", r);
      else cJSON_AddItemToArray(ranks, d);
    }
    if (st == CG_OK) check_alike(ranks, P);
    if (st == CG_OK) {
      cJSON_AddItemToObject(root, "links", links);
      links = NULL;
      double *rel = cg_malloc(sizeof(double) * 3 * (size_t)P, "capabilities");
      if (!rel) st = CG_ERR_NOMEM;
      struct rapa_profile tmp = {root, NULL};
      if (st == CG_OK) st = rapa_profile_capabilities(&tmp, rel, rel + 2 * P);
      if (st == CG_OK) {
        double best = 0;
        for (int r = 0; r < P; r++) best = rel[r] > best ? rel[r] : best;
        for (int r = 0; r < P; r++) rel[P + r] = rel[r] / best;
        cJSON *cap = cJSON_AddObjectToObject(root, "capability");
        cJSON_AddStringToObject(cap, "definition",
                                "relative[i] = (1/T_i) / sum_j (1/T_j), T_i = 2 N H^2 / MM_i + E H / SpMM_i: "
                                "one GCN layer of width H = 256 on Reddit (N = 232,965 rows, E = 114,577,213 "
                                "nonzeros), MM_i the rank's FLOP/s at the rows x 256 x 256 GEMM, SpMM_i its "
                                "nonzero-columns per second at width 256");
        cJSON_AddItemToObject(cap, "relative", cJSON_CreateDoubleArray(rel, P));
        cJSON_AddItemToObject(cap, "vs_fastest", cJSON_CreateDoubleArray(rel + P, P));
        cJSON_AddItemToObject(cap, "layer_s", cJSON_CreateDoubleArray(rel + 2 * P, P));
      }
      cg_free(rel);
    }
    /* keep exactly what the file will hold: cJSON prints a number with 15 digits when
     * that reads back within an ulp, so the saved value may differ from the measured
     * double in its last bit; the report then shows the file's numbers */
    if (st == CG_OK) {
      char *t2 = cJSON_PrintUnformatted(root);
      cJSON *again = t2 ? cJSON_Parse(t2) : NULL;
      cJSON_free(t2);
      if (!again) st = cg_err_set(CG_ERR_NOMEM, "out of memory printing the profile");
      cJSON_Delete(root);
      root = again;
    }
    if (st == CG_OK) st = rapa_validate_profile(root, "the profile just measured");
    if (st == CG_OK) {
      st = rapa_profile_wrap(root, out);
      root = NULL;
    }
  }
  st = comm_agree(c, st, "assembling the profile");
done:
  cJSON_free(text);
  comm_texts_free(texts, P);
  comm_texts_free(keys, P);
  comm_texts_free(notes, P);
  cJSON_Delete(dev);
  cJSON_Delete(links);
  cJSON_Delete(root);
  cg_backend_destroy(&be);
  if (st < 0) rapa_profile_destroy(out);
  return st;
}
