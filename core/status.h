/* core/status.h — error values, messages and breadcrumbs.
 *
 * Setup code returns `int` status values: CG_OK (0) or a negative enum cg_status.
 * The function that detects an error calls cg_err_set() once with a message that
 * tells the user what to do; every level that passes the error up adds a one-line
 * breadcrumb through TRY()/TRY_GOTO(). cg_err_report() prints message + trail.
 * State is thread-local; a library call never exits its caller. */
#ifndef CAPGNN_CORE_STATUS_H
#define CAPGNN_CORE_STATUS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum cg_status {
  CG_OK = 0,
  CG_ERR_ARG = -1,         /* bad option or argument */
  CG_ERR_IO = -2,          /* open/read/write failed */
  CG_ERR_FORMAT = -3,      /* file content fails a check */
  CG_ERR_NOMEM = -4,       /* allocation failed (message names what) */
  CG_ERR_UNSUPPORTED = -5, /* feature not built or not available here */
  CG_ERR_CUDA = -6,        /* CUDA / cuBLAS / cuSPARSE failure */
  CG_ERR_MPI = -7,         /* MPI / NCCL failure */
  CG_ERR_METIS = -8,       /* METIS failure */
  CG_ERR_INTERNAL = -9,    /* invariant violated: a bug */
  CG_ERR_NOT_FOUND = -10,  /* a named thing (dataset, file, device) does not exist */
  CG_ERR_INTERRUPTED = -11, /* stopped on request (a signal), state saved where asked */
};

/* Short name of a status ("format error", ...). */
const char *cg_status_str(int status);

/* Record an error: sets the message (printf-style) and clears the trail.
 * Returns `status` so that `return cg_err_set(CG_ERR_IO, "...")` reads naturally. */
int cg_err_set(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Append a breadcrumb "file:line: expr" to the trail (TRY does this). */
void cg_err_trail(const char *file, int line, const char *expr);
/* The current message ("" when none) and its status. */
const char *cg_err_msg(void);
int cg_err_status(void);
/* Print "error: <message>" and, at debug log level, the breadcrumb trail, to stderr. */
void cg_err_report(const char *prefix);
/* Forget the current error. */
void cg_err_clear(void);

/* Propagate a failing status with a breadcrumb. */
#define TRY(x)                                           \
  do {                                                   \
    int try_status_ = (x);                               \
    if (try_status_ < 0) {                               \
      cg_err_trail(__FILE__, __LINE__, #x);              \
      return try_status_;                                \
    }                                                    \
  } while (0)

/* Same, but jump to a cleanup label; the status lands in the int variable `st`,
 * which the function must declare. */
#define TRY_GOTO(x, label)                               \
  do {                                                   \
    st = (x);                                            \
    if (st < 0) {                                        \
      cg_err_trail(__FILE__, __LINE__, #x);              \
      goto label;                                        \
    }                                                    \
  } while (0)

/* Tagged allocation: on failure records CG_ERR_NOMEM naming `what` and the size.
 * The pointer is aligned to 64 bytes; release with cg_free(). */
void *cg_malloc(size_t bytes, const char *what);
void *cg_calloc(size_t count, size_t size, const char *what);
void cg_free(void *p);

#ifdef __cplusplus
}
#endif
#endif
