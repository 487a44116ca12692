/* core/fatal.c — cg_fatal and its replaceable handler (core/fatal.h). */
#include "core/fatal.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/log.h"

static void (*fatal_handler)(int code, void *ctx); /* NULL: abort() */
static void *fatal_ctx;
/* Set by the first thread that reaches the handler: one MPI_Abort, not several
 * racing ones; a later thread has nothing to add but its log line. */
static atomic_int fatal_taken;
/* Set while this thread runs the handler: a failure inside it must not recurse. */
static _Thread_local int fatal_in_handler;

void cg_fatal_set_handler(void (*handler)(int code, void *ctx), void *ctx) {
  fatal_handler = handler;
  fatal_ctx = ctx;
  fatal_in_handler = 0;
  atomic_store(&fatal_taken, 0);
}

void cg_fatal_get_handler(void (**handler)(int code, void *ctx), void **ctx) {
  *handler = fatal_handler;
  *ctx = fatal_ctx;
}

void cg_fatal(const char *subsys, const char *file, int line, const char *call, const char *fmt,
              ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (!subsys) subsys = "core";
  if (fatal_in_handler) {
    cg_log_write(CG_LOG_ERROR, subsys,
                 "%s:%d: %s failed: %s (inside the fatal-error handler, aborting)", file, line,
                 call, msg);
    fflush(stderr);
    abort();
  }
  /* cg_log_write directly: an ERROR line is never filtered, and the line is
   * written in one piece so that ranks do not interleave. */
  cg_log_write(CG_LOG_ERROR, subsys,
               "%s:%d: %s failed: %s (fatal inside a training step, aborting)", file, line, call,
               msg);
  fflush(stdout);
  fflush(stderr);
  if (atomic_exchange(&fatal_taken, 1))
    for (;;) pause(); /* another thread is ending the process */
  fatal_in_handler = 1;
  void (*handler)(int, void *) = fatal_handler;
  if (handler) {
    handler(CG_FATAL_EXIT_CODE, fatal_ctx);
    cg_log_write(CG_LOG_ERROR, subsys, "the fatal-error handler returned; aborting");
    fflush(stderr);
  }
  abort();
}
