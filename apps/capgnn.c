/* apps/capgnn.c — the `capgnn` command: a dispatcher over subcommands.
 *
 *   capgnn [COMMAND] [options]      COMMAND defaults to `train`
 *   capgnn --version | version      the version and the backends built in
 *
 * A subcommand is one entry in `commands` below and one function in its own
 * apps/cmd_<name>.c; nothing else changes to add one. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "apps/commands_internal.h"
#include "apps/config_file_internal.h"
#include "core/log.h"
#ifdef CAPGNN_HAVE_DIST
#include "mpi/comm.h"
#endif

struct capgnn_command {
  const char *name;
  int (*run)(int argc, char **argv);
  const char *summary;
  int one_process; /* 1: the command is one process's work (under mpirun with several ranks
                      every rank would do it: refused once); predict says so itself */
};

static const struct capgnn_command commands[] = {
    {"train", cmd_train, "train a GCN, GraphSAGE or GAT model full-batch (default command)", 0},
#ifdef CAPGNN_HAVE_CMD_PARTITION
    {"partition", cmd_partition, "partition a graph for several ranks and save the partition set", 1},
#endif
#ifdef CAPGNN_HAVE_CMD_PROFILE
    {"profile", cmd_profile, "measure every rank's device and link; keep the profile; write a report", 0},
    {"plan", cmd_plan, "predict per-rank compute, communication and memory of P ranks on N nodes, and the epoch",
     1},
    {"doctor", cmd_doctor, "where every rank runs, MPI and its transport, and what is wrong with the mapping", 0},
#endif
    {"predict", cmd_predict, "write a checkpoint's logits (and embeddings) on its graph as .npy", 0},
    {"convert", cmd_convert, "convert a dataset (DGL Reddit, OGB, GraphSAINT, edge list) to .cgr", 1},
    {"info", cmd_info, "print a dataset's sizes, split, degrees and checksum status", 1},
    {"gen", cmd_gen, "write a synthetic graph to a .cgr file", 1},
};
static const int ncommands = (int)(sizeof commands / sizeof commands[0]);

#ifndef CAPGNN_VERSION
#define CAPGNN_VERSION "unknown" /* set by apps/CMakeLists.txt from project(VERSION) */
#endif

static void version(FILE *out) {
  fprintf(out, "capgnn %s\n", CAPGNN_VERSION);
#ifdef CAPGNN_HAVE_CUDA
  fprintf(out, "CUDA backend: built\n");
#else
  fprintf(out, "CUDA backend: not built (CPU only)\n");
#endif
#ifdef CAPGNN_HAVE_DIST
  fprintf(out, "MPI partition-parallel training: built\n");
#else
  fprintf(out, "MPI partition-parallel training: not built\n");
#endif
}

static void usage(FILE *out) {
  fprintf(out, "usage: capgnn [COMMAND] [options]\n\ncommands:\n");
  for (int i = 0; i < ncommands; i++) fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
  fprintf(out, "  %-10s %s\n", "version", "print the version and the backends built in (also --version)");
  fprintf(out, "\n'capgnn COMMAND --help' describes a command's options. Without a command,\n"
               "capgnn trains:\n\n");
  cmd_train_usage(out);
}

static int dispatch(int argc, char **argv) {
  if (argc < 2 || argv[1][0] == '-') {
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
      if (cli_speaks()) usage(stdout); /* once under mpirun */
      return CAPGNN_EXIT_OK;
    }
    if (argc == 2 && strcmp(argv[1], "--version") == 0) {
      version(stdout);
      return CAPGNN_EXIT_OK;
    }
    return cmd_train(argc, argv); /* `train` is the default command */
  }
  if (strcmp(argv[1], "version") == 0) {
    if (argc == 3 && (strcmp(argv[2], "--help") == 0 || strcmp(argv[2], "-h") == 0)) {
      printf("usage: capgnn version\n\nPrints the version and the backends built in (also capgnn "
             "--version).\n");
      return CAPGNN_EXIT_OK;
    }
    if (argc > 2) {
      char shown[512];
      fprintf(stderr, "capgnn: error: unexpected argument '%s' (usage: capgnn version)\n",
              cg_text_escape(shown, sizeof shown, argv[2]));
      return CAPGNN_EXIT_USAGE;
    }
    version(stdout);
    return CAPGNN_EXIT_OK;
  }
  if (strcmp(argv[1], "help") == 0) {
    usage(stdout);
    return CAPGNN_EXIT_OK;
  }
  for (int i = 0; i < ncommands; i++) {
    if (strcmp(argv[1], commands[i].name) != 0) continue;
    if (commands[i].one_process && cli_launch_size() > 1) { /* every rank would write or print it */
      if (!cli_speaks()) return CAPGNN_EXIT_USAGE;
      fprintf(stderr, "capgnn: error: capgnn %s runs as one process, not under mpirun with %d ranks (run it "
              "without mpirun, or with mpirun -np 1)\n", commands[i].name, cli_launch_size());
      return CAPGNN_EXIT_USAGE;
    }
    return commands[i].run(argc - 1, argv + 1);
  }
  if (!cli_speaks()) return CAPGNN_EXIT_USAGE; /* rank 0 says it for the job */
  /* the settings files' "did you mean", over the command names */
  struct option names[sizeof commands / sizeof commands[0] + 3];
  memset(names, 0, sizeof names);
  int k = 0;
  for (int i = 0; i < ncommands; i++) names[k++].name = commands[i].name;
  names[k++].name = "version";
  names[k++].name = "help";
  const char *best = config_option_suggest(argv[1], names);
  char shown[512]; /* (escaped: no raw control byte of what was typed reaches the terminal) */
  fprintf(stderr, "capgnn: error: unknown command '%s'", cg_text_escape(shown, sizeof shown, argv[1]));
  if (best) fprintf(stderr, "; did you mean '%s'?", best);
  fprintf(stderr, " (commands:");
  for (int i = 0; i < ncommands; i++) fprintf(stderr, " %s", commands[i].name);
  fprintf(stderr, " version help; see capgnn --help)\n");
  return CAPGNN_EXIT_USAGE;
}

int main(int argc, char **argv) {
  cli_env_warn_unknown(); /* a misspelt CAPGNN_* variable would be ignored silently */
  const int rc = dispatch(argc, argv);
#ifdef CAPGNN_HAVE_DIST
  /* One of several processes that stopped before MPI (a usage error found while parsing,
   * said by rank 0 alone): it waits for the others there, else mpirun ended the job as
   * soon as a silent rank left, at times before rank 0 had said why. (Nothing once the
   * command finalised MPI itself.) */
  if (cli_launch_size() > 1) return comm_leave(rc);
#endif
  return rc;
}
