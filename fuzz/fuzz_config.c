/* fuzz/fuzz_config.c — settings files (`--config FILE`, apps/config_file.c) on
 * untrusted text, and the shared option-value parsers (apps/cli.c) on every value a
 * file yields. The option table mirrors the kinds `capgnn train` has: values,
 * switches, a no-X switch, aliases of one setting, and keys a file may not hold.
 * The file is named twice and the command line sets two of its options, so the
 * override and cancelling rules run too. */
#include "fuzz_util.h"

#include <getopt.h>

#include "apps/commands_internal.h"
#include "apps/config_file_internal.h"

static const struct option longopts[] = {
    {"graph", required_argument, NULL, 1},
    {"layers", required_argument, NULL, 2},
    {"hidden", required_argument, NULL, 3},
    {"dropout", required_argument, NULL, 4},
    {"lr", required_argument, NULL, 5},
    {"seed", required_argument, NULL, 6},
    {"epochs", required_argument, NULL, 7},
    {"layernorm", no_argument, NULL, 8},
    {"quiet", no_argument, NULL, 9},
    {"metrics", required_argument, NULL, 10},
    {"part-cache", required_argument, NULL, 11},
    {"no-part-cache", no_argument, NULL, 12},
    {"cache", required_argument, NULL, 11},
    {"no-cache", no_argument, NULL, 12},
    {"seeds", required_argument, NULL, 13},
    {"resume", required_argument, NULL, 14},
    {"config", required_argument, NULL, 15},
    {"print-config", no_argument, NULL, 16},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_quiet();
  static FILE *devnull;
  if (!devnull) devnull = fopen("/dev/null", "w");
  const char *path = fuzz_file(data, size);
  char cfg[128];
  snprintf(cfg, sizeof cfg, "--config=%s", path);
  char *argv[] = {"train", "--config", (char *)path, "--layernorm=false", "--lr", "0.5", cfg, "--quiet", NULL};
  int xargc = 0;
  char **xargv = NULL;
  if (config_file_expand(8, argv, longopts, &xargc, &xargv) != 0) return 0;
  const char *names[4];
  (void)config_file_names(8, argv, names, 4);
  for (int i = 1; i < xargc; i++) {
    (void)config_file_origin(i);
    const char *w = xargv[i], *eq = strchr(w, '=');
    if (strncmp(w, "--", 2) != 0 || !eq) continue;
    (void)config_option_suggest(w + 2, longopts);
    /* the value through each parser: they refuse with a usage line on stderr */
    int fd = dup(2);
    if (devnull) dup2(fileno(devnull), 2);
    int iv;
    int64_t lv;
    uint64_t uv;
    float fv;
    (void)cli_parse_int("train", "--x", eq + 1, &iv);
    (void)cli_parse_int_in("train", "--x", eq + 1, -3, 1000, &iv);
    (void)cli_parse_i64("train", "--x", eq + 1, &lv);
    (void)cli_parse_u64("train", "--x", eq + 1, &uv);
    (void)cli_parse_float("train", "--x", eq + 1, &fv);
    if (fd >= 0) {
      dup2(fd, 2);
      close(fd);
    }
  }
  config_file_argv_free(xargc, xargv);
  return 0;
}
