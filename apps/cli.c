/* apps/cli.c — the error lines every subcommand prints (one line, then an exit status). */
#include <stdarg.h>
#include <stdio.h>

#include "apps/commands.h"
#include "core/status.h"

int cli_usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "capgnn: error: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, " (see capgnn %s --help)\n", cmd);
  va_end(ap);
  return CAPGNN_EXIT_USAGE;
}

int cli_runtime_error(void) {
  fprintf(stderr, "capgnn: error: %s\n", cg_err_msg()[0] ? cg_err_msg() : cg_status_str(cg_err_status()));
  return CAPGNN_EXIT_FAILURE;
}
