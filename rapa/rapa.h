/* rapa/rapa.h — device and link profiles: what each rank's device and each link
 * between ranks really does (`capgnn profile`), the relative capability per rank that
 * resource-aware partitioning will use, and the report (plain text and HTML).
 *
 * 1. Microbenchmarks on one backend (core/ops.h). Each checks its own result before
 *    it times anything, and fails with CG_ERR_INTERNAL ("... check failed: ...",
 *    naming the worst entry) on a wrong one. Timing: `warmup` untimed runs, then
 *    repetitions timed one by one (CUDA events on the backend's stream for the CUDA
 *    backend, the monotonic clock around the op and be->sync otherwise) until
 *    `min_reps` are done and `budget_s` is spent, or `max_reps`; the median and the
 *    minimum are reported.
 * 2. A profile (`struct rapa_profile`, opaque): every rank's device measurements,
 *    the link matrix between ranks, the derived capabilities and the machine
 *    context, as JSON (docs/profile.md documents it; docs/profile.schema.json is its
 *    JSON Schema). rapa_profile_run measures on every rank (collective) and gathers
 *    the result on rank 0; a device's measurements are kept in the cache folder and
 *    reused by later runs (see rapa_profile_run).
 * 3. Reports: an nccl-tests style table (rapa_report_text) and a self-contained
 *    HTML file with inline SVG charts (rapa_report_html).
 *
 * Errors are statuses with messages (core/status.h); nothing here exits. Collective
 * calls must be made by every rank in the same order; their errors are agreed (every
 * rank returns an error together). */
#ifndef CAPGNN_RAPA_H
#define CAPGNN_RAPA_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/csr.h"
#include "core/ops.h"
#include "mpi/comm.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RAPA_PROFILE_VERSION 1 /* of the JSON written; an older file is re-measured */

/* ---- microbenchmarks ------------------------------------------------------------ */

struct rapa_bench_opts {
  int warmup;      /* untimed runs before timing (>= 0) */
  int min_reps;    /* timed repetitions at least (>= 1) */
  int max_reps;    /* ... and at most (>= min_reps) */
  double budget_s; /* no repetition starts after this much timed time once min_reps are done */
  int batch;       /* the op runs this many times per timed repetition (>= 1), the times
                      reported being per op: ops of microseconds are timed over a span the
                      clock (and an emulated device's waits) resolve */
  double evict_bytes; /* CPU backends: > 0: before each call (untimed) this many bytes of
                         another buffer are written, and each call is timed alone (then
                         synchronised), so that the op finds its operands as far down the
                         caches as a training step leaves them: its other data passes between
                         two uses (rapa_rates_measure_local). 0: none (default) */
};
/* Defaults: warmup 1, 3..15 repetitions within 0.25 s (quick: 3..7 within 0.08 s), batch 1. */
void rapa_bench_opts_default(struct rapa_bench_opts *o, int quick);

struct rapa_timing {
  double median_s, min_s;
  int reps;
};

/* C[m x n] = A[m x k] B[k x n] (fp32 row-major operands in backend memory, filled with
 * a fixed pattern). Check: 64 entries of C (the corners included) against a double
 * precision reference, |c - ref| <= rtol * sum_i |a_i b_i| (rtol 2e-4 for fp32; a
 * TF32 backend needs ~1e-2). FLOP/s = 2 m n k / median_s. */
int rapa_bench_gemm(struct cg_backend *be, int64_t m, int64_t n, int64_t k, double rtol,
                    const struct rapa_bench_opts *o, struct rapa_timing *t);

/* Y = A X at width f with the backend's SpMM (be->spmat_create of the host CSR `a`,
 * which needs values). Check: up to 64 rows of Y (first and last included) against a
 * double reference, |y - ref| <= 1e-4 * sum |a_k x_k| + 1e-6. Rates: nnz x f /
 * median_s nonzero-columns per second; gathered bytes nnz x f x 4 per median_s. */
int rapa_bench_spmm(struct cg_backend *be, const struct cg_csr *a, int64_t f,
                    const struct rapa_bench_opts *o, struct rapa_timing *t);

enum rapa_copy_kind {
  RAPA_COPY_H2D = 0, /* host -> device, be->upload */
  RAPA_COPY_D2H = 1, /* device -> host, be->download */
  RAPA_COPY_D2D = 2, /* within the device, be->copy (IDT inside a device) */
};
const char *rapa_copy_kind_name(enum rapa_copy_kind k); /* "h2d", "d2h", "d2d" */

/* One copy of `bytes` bytes. pinned = 1 puts the host side in page-locked memory
 * (CUDA backend only: CG_ERR_UNSUPPORTED elsewhere; ignored for D2D). Check: every
 * byte of the destination equals the source's pattern after the timed runs. */
int rapa_bench_copy(struct cg_backend *be, enum rapa_copy_kind kind, int pinned, size_t bytes,
                    const struct rapa_bench_opts *o, struct rapa_timing *t);

/* ---- MPS share (CUDA) --------------------------------------------------------------- */

/* Limit this process to `pct` percent of its GPU's SMs: checks that the MPS control
 * daemon runs (its pipe $CUDA_MPS_PIPE_DIRECTORY/control, default
 * /tmp/nvidia-mps/control) and sets CUDA_MPS_ACTIVE_THREAD_PERCENTAGE. Must be called
 * before the process creates its CUDA context (before any backend or GPU binding).
 * CG_ERR_ARG outside 1..100; CG_ERR_UNSUPPORTED, with the command that starts the
 * daemon, when it is not running (without it the variable would be silently ignored). */
int rapa_mps_share_set(int pct);

/* ---- profiles ---------------------------------------------------------------------- */

struct rapa_run_opts {
  const char *device;     /* "cpu" | "cuda" | "auto" (this rank) */
  int threads;            /* this rank's CPU threads, 0 = OpenMP's default */
  int share_pct;          /* this rank's MPS share (rapa_mps_share_set done), 0 = none */
  int quick;              /* smaller sweeps and graph */
  int refresh;            /* measure even when the cache holds a valid profile */
  const char *cache_dir;  /* NULL: $CAPGNN_CACHE, else .capgnn-cache */
  const char *spmm_graph; /* synthetic spec of the SpMM matrix; NULL: synth:reddit at
                             scale 0.1 (quick: 0.005) */
  const char *command;    /* the command line, recorded in the profile */
  /* the model whose shapes MM runs and whose gradient the all-reduce moves (defaults
   * from rapa_run_opts_default: GCN 3 x 256 on Reddit's 602 features / 41 classes) */
  int64_t rows;           /* GEMM rows (default 32768; quick 4096) */
  int64_t features, hidden, classes;
  int layers;
};
void rapa_run_opts_default(struct rapa_run_opts *o);

struct rapa_profile; /* opaque: the JSON document */

/* Every rank profiles its device (ranks of one host take turns, so that they do not
 * share its cores or GPU while measuring), then the links: MPI ping-pong between
 * every pair of ranks (one pair at a time) on host buffers, on device buffers when
 * MPI is CUDA-aware, NCCL send/recv when every rank has a GPU of its own, and the
 * gradient all-reduce. Rank 0 gathers everything into *out (NULL on other ranks).
 * Cache: a device's measurements are saved as
 *   <cache>/profile/<host>-<device key>.json
 * (device key: "cpu-t<threads>", or the GPU UUID with "-s<share>" under MPS) and the
 * links as <cache>/profile/links-<hash of the ranks' keys and layout>.json. A later
 * run reuses a file that validates and is at least as thorough (a quick file does
 * not serve a full run) and logs so; refresh ignores it. A file that does not parse
 * or validate, or has another version, is re-measured with a warning. Collective. */
int rapa_profile_run(struct comm *c, const struct rapa_run_opts *o, struct rapa_profile **out);

/* Read and validate a profile (JSON text or file). CG_ERR_FORMAT naming the file, the
 * field and what was expected. */
int rapa_profile_parse(const char *json, const char *what, struct rapa_profile **out);
int rapa_profile_load(const char *path, struct rapa_profile **out);
/* Written whole or not at all (core/outfile.h). */
int rapa_profile_save(const struct rapa_profile *p, const char *path);
void rapa_profile_destroy(struct rapa_profile **p); /* accepts NULL */

int rapa_profile_nranks(const struct rapa_profile *p);
/* Rank r's device key and one-line description ("cpu, 2 threads, AMD EPYC ..."). */
const char *rapa_profile_key(const struct rapa_profile *p, int r);
const char *rapa_profile_describe(const struct rapa_profile *p, int r);
/* Relative capability of each rank (n = rapa_profile_nranks entries, summing to 1):
 *   rel_i = (1 / T_i) / sum_j (1 / T_j),
 *   T_i = 2 N H^2 / MM_i + E H / SpMM_i,
 * the modelled time of one GCN layer of width H = 256 on Reddit (N = 232,965 rows,
 * E = 114,577,213 nonzeros: synth:reddit's operator with self-loops), MM_i the rank's FLOP/s at the
 * rows x 256 x 256 GEMM, SpMM_i its nonzero-columns per second at width 256.
 * t_layer (may be NULL) receives T_i in seconds. */
int rapa_profile_capabilities(const struct rapa_profile *p, double *rel, double *t_layer);
/* Validation alone, for a parsed document (what rapa_profile_parse runs). */
int rapa_profile_validate_text(const char *json, const char *what);

/* ---- reports ------------------------------------------------------------------------ */

/* nccl-tests style: '#' header lines, then per section one row per size or rank. */
void rapa_report_text(const struct rapa_profile *p, FILE *out);
/* Self-contained HTML (no script, no external resource): summary table per device,
 * bar charts of MM, SpMM, H2D, D2H and IDT per device side by side, bandwidth versus
 * size curves, the link matrix as heat maps, the capabilities, the machine context.
 * Every number taken from the profile carries data-path (its JSON path) and
 * data-value (the value, %.17g) attributes. Written whole or not at all.
 * split (may be NULL): a partition priced with this profile (`capgnn partition
 * --profile F --html R`), shown as a "Chosen split" section: per rank its capability,
 * target and received share, predicted compute, communication, lambda and memory; its
 * numbers carry data-path "split.partitions[r].KEY", the keys of the partition JSON's
 * "rapa" object (apps/cmd_partition.c). split_label says which split (method, model,
 * rates). */
struct rapa_split;
/* The output kind of these reports (core/outfile.h, for cg_outfile_check): an earlier
 * report is replaced, any other existing file only with --force. */
struct cg_outfile_kind;
const struct cg_outfile_kind *rapa_report_outfile_kind(void);
int rapa_report_html(const struct rapa_profile *p, const struct rapa_split *split, const char *split_label,
                     const char *path);

/* ---- use by training ------------------------------------------------------------------ */

/* `capgnn train --profile FILE|auto`: load the profile (FILE: rank 0 reads it; auto:
 * each rank reads its own device's entry from the cache, an error when it has none),
 * validate it, find each rank's device in it (by key; by rank when the file has as
 * many ranks as the job but other keys, with a warning) and log the relative
 * capabilities of the job's ranks on rank 0. `device`/`threads` as the training's
 * --device/--threads. sizes_parts: --partition rapa sizes the parts by this FILE's
 * rates, so it must hold the job's ranks (rapa_profile_check_ranks), refused before
 * anything is logged. Changes nothing in training. Collective. */
int rapa_train_profile(struct comm *c, const char *spec, const char *device, int threads,
                       const char *cache_dir, int sizes_parts);
/* CG_ERR_ARG unless profile `spec` (loaded as p) holds P ranks, the job's, as
 * --partition rapa --profile needs (one entry of rates per rank): the message says so. */
int rapa_profile_check_ranks(const struct rapa_profile *p, const char *spec, int P);

/* The profile entry of every rank of the job (match[P], on every rank), found as
 * rapa_train_profile finds them: by host and device key (rank r's own entry first, then
 * the first unused one with its key), else, when the profile has as many ranks as the
 * job, the first unused entry with a warning; distinct entries where the keys allow.
 * prof is read on rank 0 only (NULL elsewhere). Collective. */
int rapa_profile_match_ranks(struct comm *c, const struct rapa_profile *prof, const char *spec, const char *device,
                             int threads, int *match);

/* ---- capgnn doctor (doctor.c, mapping.c) ------------------------------------------- */

/* What one rank learns about where it runs (doctor.c gathers them; mapping.c checks
 * them). Facts a rank cannot learn are 0, -1 or "". */
#define RAPA_PU_WORDS 16 /* the bound CPUs as a bitmap of the host's first 1024 PUs */
#define RAPA_WARN_LEN 400
struct rapa_rank_facts {
  int rank, node;                /* world rank; node (emulated if CAPGNN_EMULATE_NODES) */
  char host[64];                 /* hostname */
  int host_cores, host_pus;      /* the host's cores and hardware threads (hwloc) */
  int bound_pus;                 /* PUs this rank may run on */
  char bound_cpus[128];          /* their list ("0-3,8") */
  uint64_t cpu_mask[RAPA_PU_WORDS];
  int cpu_numa;                  /* NUMA node of those PUs, -1 when several or unknown */
  int host_gpus;                 /* GPUs the rank sees (0 without CUDA in the build) */
  char gpu_name[64], gpu_uuid[64]; /* the rank's GPU, "" without one */
  char gpu_bus[32];              /* its PCI bus id */
  int gpu_numa;                  /* its NUMA node, -1 unknown */
  int nics, ib_nics;             /* the host's network devices (hwloc), InfiniBand among them */
  char nic_names[128];           /* "mlx5_0, ib0" */
  unsigned nic_numa_mask;        /* bit k: a NIC on NUMA node k (k < 32) */
};
/* Write the problems of a job's mapping into warnings[0 .. max) (each one sentence
 * with the fix; cut at RAPA_WARN_LEN) and return how many there are (may exceed max):
 * ranks sharing a GPU (and whether other GPUs are idle), a GPU on another NUMA node
 * than every NIC of its host, a rank bound to CPUs of another NUMA node than its GPU,
 * uneven ranks per node, more ranks than cores on a host, ranks of a host bound to
 * overlapping CPU sets (unbound ranks excepted), a job over several hosts with a host
 * without InfiniBand. Emulated nodes count as nodes; hosts are told apart by name.
 * f[i] is rank i's facts. Pure: no I/O. */
int rapa_mapping_check(const struct rapa_rank_facts *f, int n, char (*warnings)[RAPA_WARN_LEN], int max);
/* Nodes (the highest node id + 1) and distinct hosts among f[0 .. n). */
void rapa_facts_counts(const struct rapa_rank_facts *f, int n, int *nodes, int *hosts);

struct rapa_doctor_opts {
  const char *device;   /* "auto" (GPUs when every rank sees one), "cpu", "cuda" */
  int links;            /* measure latency and bandwidth between rank 0 and a peer per kind */
  const char *json;     /* rank 0 writes the whole report (JSON) here, NULL: none */
};
/* `capgnn doctor`: every rank collects its facts (binding to its GPU as training
 * would, comm_gpu_bind), rank 0 gathers them, checks the mapping, measures rank 0's
 * links to one rank of its node and one of another node (ping-pong: 8-byte latency,
 * 4 MiB bandwidth, medians) and prints the report on `out`: the MPI library and
 * transport (comm_lib_info), CUDA-awareness, NCCL, nodes, one line per rank, the
 * links, the warnings. Collective; on success *nwarn (rank 0) is the warning count. */
int rapa_doctor_run(struct comm *c, const struct rapa_doctor_opts *o, FILE *out, int *nwarn);

#ifdef __cplusplus
}
#endif
#endif
