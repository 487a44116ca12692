/* apps/env.c — the CAPGNN_* environment variables capgnn reads, in one list, and the
 * warning for one in the environment that nothing reads: a misspelt name
 * (CAPGNN_EMULATE_NODE=2) was otherwise ignored without a word.
 *
 * The list is every name a C source reads with getenv("CAPGNN_..."), tests' and
 * benchmarks' programs included (they read them in the same environment);
 * tests/run_env_names.sh compares it with the sources, so a new getenv without an
 * entry here fails the suite. The scripts' own variables are listed apart: setting them
 * for a script that then runs capgnn is not a mistake. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "apps/commands_internal.h"
#include "apps/config_file_internal.h"
#include "core/log.h"

extern char **environ;

/* BEGIN getenv names (sorted; tests/run_env_names.sh checks this list against the sources) */
static const char *const read_by_code[] = {
    "CAPGNN_CACHE",
    "CAPGNN_CPU_GEMM",
    "CAPGNN_CPU_KERNELS",
    "CAPGNN_CPU_SPMM",
    "CAPGNN_CPU_SPMM_GROUP",
    "CAPGNN_CPU_SPMM_PANEL",
    "CAPGNN_CPU_SPMM_TILE",
    "CAPGNN_DATA",
    "CAPGNN_EMULATE_NODES",
    "CAPGNN_EMULATE_SPEED",
    "CAPGNN_HALO_P2P",
    "CAPGNN_JACA_TIMEOUT",
    "CAPGNN_LOG_ALL_RANKS",
    "CAPGNN_LOG_LEVEL",
    "CAPGNN_LOG_SUBSYS",
    "CAPGNN_MPI_CUDA_AWARE",
    "CAPGNN_PROFILE_OPS",
    "CAPGNN_SPMM",
    "CAPGNN_SPMM_MAX_PASS",
    "CAPGNN_SPMM_SLICE",
    "CAPGNN_SPMM_TILE_HEAVY",
    "CAPGNN_SPMM_TILE_REUSE",
    "CAPGNN_SPMM_TILE_VEC",
    "CAPGNN_TEST_FAIL_AT",
    "CAPGNN_TEST_FAIL_RANK",
    "CAPGNN_TEST_RATE_SCALE",
    "CAPGNN_TEST_SEED",
    "CAPGNN_TEST_VERBOSE",
};
/* END getenv names */

/* read by scripts (scripts/test.sh, scripts/behaviour-check.sh, tests/test_torch_peer.sh) */
static const char *const read_by_scripts[] = {"CAPGNN_TEST_DATASETS", "CAPGNN_TEST_LABELS", "CAPGNN_TORCH_PYTHON"};

#define NCODE (sizeof read_by_code / sizeof read_by_code[0])
#define NSCRIPTS (sizeof read_by_scripts / sizeof read_by_scripts[0])

static int known(const char *name, size_t len) {
  for (size_t i = 0; i < NCODE; i++)
    if (strlen(read_by_code[i]) == len && !strncmp(read_by_code[i], name, len)) return 1;
  for (size_t i = 0; i < NSCRIPTS; i++)
    if (strlen(read_by_scripts[i]) == len && !strncmp(read_by_scripts[i], name, len)) return 1;
  return 0;
}

void cli_env_warn_unknown(void) {
  if (!cli_speaks()) return; /* rank 0 says it for the job: every rank has the same environment */
  struct option names[NCODE + 1];
  memset(names, 0, sizeof names);
  for (size_t i = 0; i < NCODE; i++) names[i].name = read_by_code[i];
  for (char **e = environ; e && *e; e++) {
    if (strncmp(*e, "CAPGNN_", 7) != 0) continue;
    const char *eq = strchr(*e, '=');
    const size_t len = eq ? (size_t)(eq - *e) : strlen(*e);
    if (known(*e, len)) continue;
    char name[128];
    snprintf(name, sizeof name, "%.*s", (int)(len < sizeof name - 1 ? len : sizeof name - 1), *e);
    /* a known name with a word added (CAPGNN_DATA_DIR for CAPGNN_DATA) is further from it
     * than the edit distance the suggestion allows: name the known prefix */
    const char *best = NULL;
    for (size_t i = 0; i < NCODE && !best; i++) {
      const size_t k = strlen(read_by_code[i]);
      if (len > k && !strncmp(name, read_by_code[i], k) && name[k] == '_') best = read_by_code[i];
    }
    if (!best) best = config_option_suggest(name, names);
    char shown[512]; /* (escaped: a control byte in the name reaches no terminal raw) */
    fprintf(stderr, "capgnn: warning: environment variable %s is not one capgnn reads: it is ignored%s%s%s\n",
            cg_text_escape(shown, sizeof shown, name), best ? " (did you mean " : "", best ? best : "",
            best ? "?)" : "");
  }
}
