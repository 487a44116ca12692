/* core/status.c — thread-local error message and breadcrumb trail. */
#include "status.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

#define CG_ERR_MSG_MAX 1024
#define CG_ERR_TRAIL_MAX 16

static _Thread_local int err_status;
static _Thread_local char err_msg[CG_ERR_MSG_MAX];
static _Thread_local char err_trail[CG_ERR_TRAIL_MAX][160];
static _Thread_local int err_ntrail;

const char *cg_status_str(int status) {
  switch (status) {
    case CG_OK: return "ok";
    case CG_ERR_ARG: return "invalid argument";
    case CG_ERR_IO: return "I/O error";
    case CG_ERR_FORMAT: return "format error";
    case CG_ERR_NOMEM: return "out of memory";
    case CG_ERR_UNSUPPORTED: return "unsupported";
    case CG_ERR_CUDA: return "CUDA error";
    case CG_ERR_MPI: return "MPI error";
    case CG_ERR_METIS: return "METIS error";
    case CG_ERR_INTERNAL: return "internal error";
    case CG_ERR_NOT_FOUND: return "not found";
    case CG_ERR_INTERRUPTED: return "interrupted";
    default: return "unknown error";
  }
}

int cg_err_set(int status, const char *fmt, ...) {
  /* formatted apart (an argument may be err_msg itself: a message passed on), then
   * escaped: a user's string quoted in it (a file name, an option's value) brings no raw
   * control byte to the terminal that prints it (core/log.h, cg_text_escape) */
  char text[sizeof err_msg];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  cg_text_escape(err_msg, sizeof err_msg, text);
  err_status = status;
  err_ntrail = 0;
  return status;
}

void cg_err_trail(const char *file, int line, const char *expr) {
  if (err_ntrail >= CG_ERR_TRAIL_MAX) return;
  const char *base = strrchr(file, '/');
  snprintf(err_trail[err_ntrail++], sizeof err_trail[0], "%s:%d: %s", base ? base + 1 : file, line,
           expr);
}

const char *cg_err_msg(void) { return err_msg; }
int cg_err_status(void) { return err_status; }

void cg_err_clear(void) {
  err_status = CG_OK;
  err_msg[0] = '\0';
  err_ntrail = 0;
}

void cg_err_report(const char *prefix) {
  fprintf(stderr, "%s%serror: %s\n", prefix ? prefix : "", prefix ? ": " : "",
          err_msg[0] ? err_msg : cg_status_str(err_status));
  if (cg_log_enabled(CG_LOG_DEBUG, "core"))
    for (int i = 0; i < err_ntrail; i++) fprintf(stderr, "  from %s\n", err_trail[i]);
}

void *cg_malloc(size_t bytes, const char *what) {
  void *p = NULL;
  if (bytes == 0) bytes = 1;
  size_t rounded = (bytes + 63) & ~(size_t)63;
  if (posix_memalign(&p, 64, rounded) != 0 || !p) {
    cg_err_set(CG_ERR_NOMEM, "out of memory allocating %zu bytes for %s", bytes, what);
    return NULL;
  }
  return p;
}

void *cg_calloc(size_t count, size_t size, const char *what) {
  if (size && count > SIZE_MAX / size) {
    cg_err_set(CG_ERR_NOMEM, "allocation size overflow for %s (%zu x %zu)", what, count, size);
    return NULL;
  }
  void *p = cg_malloc(count * size, what);
  if (p) memset(p, 0, count * size);
  return p;
}

void cg_free(void *p) { free(p); }
