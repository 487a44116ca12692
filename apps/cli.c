/* apps/cli.c — the error lines every subcommand prints (one line, then an exit status). */
#include <stdarg.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "apps/commands.h"
#include "apps/config_file.h"
#include "core/status.h"

/* The argument word being parsed (cli_check_value), -1 outside the option loop. */
static int cli_word = -1;

void cli_options_done(void) { cli_word = -1; }

int cli_usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "capgnn: error: ");
  vfprintf(stderr, fmt, ap);
  const char *from = cli_word >= 0 ? config_file_origin(cli_word) : NULL;
  if (from) fprintf(stderr, " (set in %s)", from);
  fprintf(stderr, " (see capgnn %s --help)\n", cmd);
  va_end(ap);
  return CAPGNN_EXIT_USAGE;
}

int cli_runtime_error(void) {
  fprintf(stderr, "capgnn: error: %s\n", cg_err_msg()[0] ? cg_err_msg() : cg_status_str(cg_err_status()));
  return CAPGNN_EXIT_FAILURE;
}

int cli_check_value(const char *cmd, int argc, char **argv, int ind, const char *arg) {
  cli_word = arg && ind >= 1 ? ind - 1 : -1; /* the word that holds the value */
  /* separate form: "--opt VALUE" leaves VALUE at argv[ind - 1], the option before it */
  if (!arg || ind < 2 || ind > argc || argv[ind - 1] != arg) return 0;
  if (arg[0] != '-' || arg[1] != '-' || arg[2] == '\0') return 0;
  const char *opt = argv[ind - 2];
  if (opt[0] == '-' && opt[1] == '-')
    return cli_usage_error(cmd, "option '%s' needs a value, got the option '%s' (write %s=%s if that "
                           "is the value)", opt, arg, opt, arg);
  return cli_usage_error(cmd, "option '%s' needs a value, got the option '%s'", opt, arg);
}

int cli_bad_option(const char *cmd, const char *name, const struct option *longopts) {
  const char *eq = strchr(name, '=');
  if (strncmp(name, "--", 2) == 0 && eq)
    for (const struct option *o = longopts; o->name; o++)
      if (o->has_arg == no_argument && strlen(o->name) == (size_t)(eq - name - 2) &&
          strncmp(o->name, name + 2, (size_t)(eq - name - 2)) == 0)
        return cli_usage_error(cmd, "option '--%s' takes no value: it is a switch (give it to turn "
                               "it on, leave it out to keep it off)", o->name);
  return cli_usage_error(cmd, "unknown option '%s'", name);
}

FILE *cli_report_stream(const char *output) {
  struct stat out, std;
  if (stat(output, &out) == 0 && fstat(STDOUT_FILENO, &std) == 0 && out.st_dev == std.st_dev &&
      out.st_ino == std.st_ino)
    return stderr;
  return stdout;
}
