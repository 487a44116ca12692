/* core/progress.h — progress of long steps (conversion, generation, loading,
 * partitioning, training epochs) on stderr.
 *
 * On an interactive terminal (stderr is a TTY) one line is redrawn in place with
 * "\r": what, percentage, amount done, rate and ETA. Otherwise plain log lines
 * ("[host:rank graph] ..." through core/log.h) are printed, one per 10 % of the
 * work or every 10 s, but only for steps that last longer than about a second, so
 * that short steps and tests stay quiet. --quiet (CG_PROGRESS_OFF) silences it.
 * Output is also off when INFO logging is off for the subsystem "progress" (non-zero
 * MPI ranks, CAPGNN_LOG_LEVEL=warn), so only rank 0 reports.
 *
 * A struct cg_progress is caller-owned and needs no cleanup besides _end. The
 * mode is process-wide and not thread-safe to change while steps run; _update may
 * be called as often as wanted (it redraws at most 10 times a second). */
#ifndef CAPGNN_CORE_PROGRESS_H
#define CAPGNN_CORE_PROGRESS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum cg_progress_mode {
  CG_PROGRESS_AUTO = 0, /* TTY redraw if stderr is a terminal, else log lines (default) */
  CG_PROGRESS_TTY,      /* always redraw one line */
  CG_PROGRESS_LOG,      /* always plain log lines */
  CG_PROGRESS_OFF,      /* nothing (--quiet) */
};

void cg_progress_set_mode(enum cg_progress_mode mode);
enum cg_progress_mode cg_progress_get_mode(void);
/* The mode in effect for the next step: AUTO resolved to TTY or LOG, OFF when
 * INFO output is disabled on this rank. */
enum cg_progress_mode cg_progress_effective_mode(void);

struct cg_progress {
  char what[128];   /* e.g. "reading edge.csv.gz" */
  char unit[16];    /* "B" formats bytes (kB, MB, GB); anything else is a count noun */
  int64_t total;    /* 0 or negative: unknown (no percentage, no ETA) */
  int64_t done;
  double t0, t_draw; /* start, last redraw/log line */
  int mode;          /* resolved at _begin */
  int next_decile;   /* log mode: next 10 % mark to report */
  int drawn;         /* something was printed for this step */
  char detail[160];  /* shown after the amount, e.g. "loss 0.4123  val 0.8912" */
  int64_t every;     /* log mode: a line at done = 1, every `every` and at total (however
                        short the step); 0: the 10 % / 10 s rule */
  int64_t logged;    /* log mode: the `done` of the last line printed */
};

void cg_progress_begin(struct cg_progress *p, const char *what, int64_t total, const char *unit);
void cg_progress_update(struct cg_progress *p, int64_t done);
/* The same, with a detail text shown on the line (TTY and log), e.g. a training
 * loop: cg_progress_begin(&p, "training", epochs, "epochs") then per epoch
 * cg_progress_update_detail(&p, e, "loss 0.4123  val acc 0.8912") gives
 * "training   18.5%  37 / 200 epochs  loss 0.4123  val acc 0.8912  2.1 epochs/s  ETA 1:17". */
void cg_progress_update_detail(struct cg_progress *p, int64_t done, const char *detail);
/* Log mode: a line at done = 1, every n-th and the last (total) instead of the
 * 10 % / 10 s rule, whatever the step's length (a training run's --log-every). Call
 * after _begin. */
void cg_progress_set_every(struct cg_progress *p, int64_t n);
/* Log mode: print the current line now unless it was printed already (the last
 * epoch of a run that stops before its total). */
void cg_progress_log_now(struct cg_progress *p);
/* One line naming the files a command wrote, e.g. "training wrote: metrics m.jsonl,
 * checkpoint c.ckpt": labels[i] and paths[i] for i < n (NULL paths skipped); nothing
 * when none is left or progress is off (--quiet). */
void cg_progress_files(const char *what, const char *const *labels, const char *const *paths, int n);
/* Final line: "what: done, AMOUNT in T (RATE)" (TTY: replaces the live line). In log
 * mode it is printed only for steps that took longer than about a second. */
void cg_progress_end(struct cg_progress *p);
/* The step failed: clear the live TTY line, print nothing else (safe after _end). */
void cg_progress_cancel(struct cg_progress *p);

/* The text of a progress line (no "\r", no newline), e.g.
 * "reading edge.csv.gz  45.0%  312 MB / 694 MB  104 MB/s  ETA 0:04".
 * Exposed for tests. Returns the length written (truncated to len - 1). */
size_t cg_progress_format(char *buf, size_t len, const char *what, int64_t done, int64_t total,
                             const char *unit, const char *detail, double elapsed_s);
/* "1.5 GB", "694 MB", "12.3 kB", "512 B" (unit "B"), or "1,234,567 edges". */
size_t cg_progress_amount(char *buf, size_t len, double amount, const char *unit);
/* "0:04", "1:02:03"; "?" for a negative or non-finite value. */
size_t cg_progress_duration(char *buf, size_t len, double seconds);

#ifdef __cplusplus
}
#endif
#endif
