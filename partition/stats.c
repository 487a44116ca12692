/* partition/stats.c — partition statistics (definitions in partition.h). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/outfile.h"
#include "core/status.h"
#include "partition/part_internal.h"
#include "partition/partition.h"

void part_stats_free(struct part_stats *s) {
  if (!s) return;
  cg_free(s->inner);
  cg_free(s->halo);
  cg_free(s->edges);
  cg_free(s->outer_edges);
  cg_free(s->halo_ratio);
  cg_free(s->overlap_hist);
  memset(s, 0, sizeof *s);
}

int part_stats_compute(const struct graph *g, const int32_t *owner, int nparts, int hops,
                       struct part_stats *s) {
  if (!g || !s || !g->rowptr || g->n < 1)
    return cg_err_set(CG_ERR_ARG, "part_stats_compute: graph is empty or not loaded");
  memset(s, 0, sizeof *s);
  if (nparts < 1) return cg_err_set(CG_ERR_ARG, "part_stats_compute: %d parts", nparts);
  if (hops != 1 && hops != 2)
    return cg_err_set(CG_ERR_ARG, "halo depth (hops) must be 1 or 2, got %d", hops);
  TRY(part_owner_check(g, owner, nparts, "part_stats_compute"));

  int st = CG_OK;
  int64_t n = g->n;
  int64_t *start = NULL;
  int32_t *order = NULL, *stamp = NULL, *rcount = NULL, *frontier = NULL;
  memcpy(s->graph, g->name, sizeof s->graph);
  s->graph[sizeof s->graph - 1] = '\0';
  s->checksum = g->checksum;
  s->nparts = nparts;
  s->hops = hops;
  s->n = n;
  s->m = g->rowptr[n];
  size_t P = (size_t)nparts;
  s->inner = cg_calloc(P, sizeof(int64_t), "stats inner");
  s->halo = cg_calloc(P, sizeof(int64_t), "stats halo");
  s->edges = cg_calloc(P, sizeof(int64_t), "stats edges");
  s->outer_edges = cg_calloc(P, sizeof(int64_t), "stats outer edges");
  s->halo_ratio = cg_calloc(P, sizeof(double), "stats halo ratio");
  s->overlap_hist = cg_calloc(P, sizeof(int64_t), "stats overlap histogram");
  stamp = cg_malloc((size_t)n * sizeof *stamp, "stats marks");
  rcount = cg_calloc((size_t)n, sizeof *rcount, "stats overlap counts");
  frontier = cg_malloc((size_t)n * sizeof *frontier, "stats frontier");
  if (!s->inner || !s->halo || !s->edges || !s->outer_edges || !s->halo_ratio || !s->overlap_hist ||
      !stamp || !rcount || !frontier) {
    st = CG_ERR_NOMEM;
    goto fail;
  }
  TRY_GOTO(part_group_by_owner(g, owner, nparts, &start, &order), fail);

  for (int64_t v = 0; v < n; v++) {
    int p = owner[v];
    s->inner[p]++;
    s->edges[p] += g->rowptr[v + 1] - g->rowptr[v];
    for (int64_t k = g->rowptr[v]; k < g->rowptr[v + 1]; k++) {
      int32_t u = g->colidx[k];
      if (owner[u] == p) continue;
      s->outer_edges[p]++;
      if (u < v) s->edge_cut++;
    }
  }

  for (int64_t v = 0; v < n; v++) stamp[v] = -1;
  for (int p = 0; p < nparts; p++) {
    /* 1 hop: non-owned columns of the inner rows. 2 hops: also the non-owned columns
     * of those halo rows (columns of inner-to-inner edges are already 1-hop). */
    int64_t nh = 0;
    for (int64_t i = start[p]; i < start[p + 1]; i++) {
      int32_t v = order[i];
      for (int64_t k = g->rowptr[v]; k < g->rowptr[v + 1]; k++) {
        int32_t u = g->colidx[k];
        if (owner[u] != p && stamp[u] != p) {
          stamp[u] = p;
          frontier[nh++] = u;
        }
      }
    }
    if (hops == 2) {
      int64_t n1 = nh;
      for (int64_t i = 0; i < n1; i++) {
        int32_t h = frontier[i];
        for (int64_t k = g->rowptr[h]; k < g->rowptr[h + 1]; k++) {
          int32_t u = g->colidx[k];
          if (owner[u] != p && stamp[u] != p) {
            stamp[u] = p;
            frontier[nh++] = u;
          }
        }
      }
    }
    s->halo[p] = nh;
    s->halo_total += nh;
    for (int64_t i = 0; i < nh; i++) rcount[frontier[i]]++;
    s->halo_ratio[p] = s->inner[p] > 0 ? (double)nh / (double)s->inner[p] : 0.0;
  }
  for (int64_t v = 0; v < n; v++) s->overlap_hist[rcount[v]]++; /* rcount < nparts */
  s->replication = (double)s->halo_total / (double)n;
  s->inner_min = s->inner_max = s->inner[0];
  for (int p = 1; p < nparts; p++) {
    if (s->inner[p] < s->inner_min) s->inner_min = s->inner[p];
    if (s->inner[p] > s->inner_max) s->inner_max = s->inner[p];
  }
  s->imbalance = (double)s->inner_max * (double)nparts / (double)n;
  cg_free(start);
  cg_free(order);
  cg_free(stamp);
  cg_free(rcount);
  cg_free(frontier);
  return CG_OK;
fail:
  cg_free(start);
  cg_free(order);
  cg_free(stamp);
  cg_free(rcount);
  cg_free(frontier);
  part_stats_free(s);
  return st;
}

void part_stats_print(FILE *f, const struct part_stats *s) {
  char shown[4 * sizeof s->graph]; /* (a name of a file written elsewhere: escaped, core/log.h) */
  fprintf(f, "partition of '%s' (checksum 0x%08x)%s%s: %d parts, %d-hop halo\n",
          cg_text_escape(shown, sizeof shown, s->graph),
          s->checksum, s->method[0] ? ", method " : "", s->method, s->nparts, s->hops);
  fprintf(f, "%6s %10s %10s %12s %12s %11s\n", "part", "inner", "halo", "edges", "outer_edges",
          "halo/inner");
  for (int p = 0; p < s->nparts; p++)
    fprintf(f, "%6d %10lld %10lld %12lld %12lld %11.4f\n", p, (long long)s->inner[p],
            (long long)s->halo[p], (long long)s->edges[p], (long long)s->outer_edges[p],
            s->halo_ratio[p]);
  fprintf(f,
          "totals: n %lld, m %lld, edge cut %lld, halo %lld (%.4f per vertex; replication factor %.4f: "
          "inner + halo rows over n), inner min/max %lld/%lld (imbalance %.4f)\n",
          (long long)s->n, (long long)s->m, (long long)s->edge_cut, (long long)s->halo_total,
          s->replication, 1.0 + s->replication, (long long)s->inner_min, (long long)s->inner_max, s->imbalance);
  fprintf(f, "overlap R(v) (vertices that are halo in k parts):");
  for (int k = 0; k < s->nparts; k++) fprintf(f, " %d:%lld", k, (long long)s->overlap_hist[k]);
  fprintf(f, "\n");
}

char *part_stats_to_json(const struct part_stats *s) {
  cJSON *root = cJSON_CreateObject();
  if (!root) return NULL;
  char crc[16];
  snprintf(crc, sizeof crc, "0x%08x", s->checksum);
  cJSON_AddStringToObject(root, "graph", s->graph);
  cJSON_AddStringToObject(root, "checksum", crc);
  if (s->method[0]) cJSON_AddStringToObject(root, "method", s->method);
  cJSON_AddNumberToObject(root, "n", (double)s->n);
  cJSON_AddNumberToObject(root, "m", (double)s->m);
  cJSON_AddNumberToObject(root, "nparts", s->nparts);
  cJSON_AddNumberToObject(root, "hops", s->hops);
  cJSON *parts = cJSON_AddArrayToObject(root, "partitions");
  for (int p = 0; parts && p < s->nparts; p++) {
    cJSON *o = cJSON_CreateObject();
    if (!o) break;
    cJSON_AddNumberToObject(o, "part", p);
    cJSON_AddNumberToObject(o, "inner", (double)s->inner[p]);
    cJSON_AddNumberToObject(o, "halo", (double)s->halo[p]);
    cJSON_AddNumberToObject(o, "edges", (double)s->edges[p]);
    cJSON_AddNumberToObject(o, "outer_edges", (double)s->outer_edges[p]);
    cJSON_AddNumberToObject(o, "halo_ratio", s->halo_ratio[p]);
    cJSON_AddItemToArray(parts, o);
  }
  cJSON *tot = cJSON_AddObjectToObject(root, "totals");
  if (tot) {
    cJSON_AddNumberToObject(tot, "edge_cut", (double)s->edge_cut);
    cJSON_AddNumberToObject(tot, "halo_total", (double)s->halo_total);
    cJSON_AddNumberToObject(tot, "replication", s->replication); /* halo_total / n (kept: its meaning since v1) */
    cJSON_AddNumberToObject(tot, "replication_factor", 1.0 + s->replication); /* (inner + halo) / n */
    cJSON_AddNumberToObject(tot, "inner_min", (double)s->inner_min);
    cJSON_AddNumberToObject(tot, "inner_max", (double)s->inner_max);
    cJSON_AddNumberToObject(tot, "imbalance", s->imbalance);
    cJSON *h = cJSON_AddArrayToObject(tot, "overlap_hist");
    for (int k = 0; h && k < s->nparts; k++)
      cJSON_AddItemToArray(h, cJSON_CreateNumber((double)s->overlap_hist[k]));
  }
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  return text;
}

const struct cg_outfile_kind *part_stats_outfile_kind(void) {
  static const char *const sig[] = {"{\n\t\"graph\":", NULL};
  static const struct cg_outfile_kind kind = {"partition statistics file", sig, 0, NULL};
  return &kind;
}

int part_stats_write_json(const struct part_stats *s, const char *path) {
  char *text = part_stats_to_json(s);
  if (!text) return cg_err_set(CG_ERR_NOMEM, "out of memory formatting partition statistics as JSON");
  struct cg_outfile out;
  int st = cg_outfile_open(&out, path, "partition statistics");
  if (st == CG_OK) {
    if (fputs(text, out.fp) >= 0 && fputc('\n', out.fp) != EOF) {
      st = cg_outfile_commit(&out);
    } else {
      st = cg_err_set(CG_ERR_IO, "writing partition statistics to '%s' failed: %s",
                      out.tmp ? out.tmp : out.path, strerror(errno));
      cg_outfile_abort(&out);
    }
  }
  free(text);
  return st;
}
