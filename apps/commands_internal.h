/* apps/commands_internal.h — the subcommands of the `capgnn` command.
 * Each takes the arguments after the command name (argv[0] is the command name),
 * prints "capgnn: error: ..." on failure and returns the process exit status:
 * 0 success, 1 runtime failure (bad file, device, I/O), 2 usage error. A fatal
 * error inside a training step ends the whole job from wherever it happens with
 * CG_FATAL_EXIT_CODE, 70 (core/fatal.h: MPI_Abort through comm_init's handler). */
#ifndef CAPGNN_APPS_COMMANDS_INTERNAL_H
#define CAPGNN_APPS_COMMANDS_INTERNAL_H

#include <stdint.h>
#include <stdio.h>

#define CAPGNN_EXIT_OK 0
#define CAPGNN_EXIT_FAILURE 1
#define CAPGNN_EXIT_USAGE 2
#define CAPGNN_EXIT_INTERRUPTED 130 /* stopped by SIGINT/SIGTERM (128 + SIGINT, as shells report) */

/* The rank a launcher (mpirun, srun) gave this process, from its environment, before
 * MPI starts; 0 without a launcher. Errors found while parsing the command line are
 * the same on every rank: only rank 0 prints them (cli_speaks), once for the job. */
int cli_launch_rank(void);
int cli_speaks(void); /* cli_launch_rank() == 0 */
/* The number of processes the launcher started (its environment), 1 without one. */
int cli_launch_size(void);
/* On rank 0 (cli_speaks): one warning line on stderr for each CAPGNN_* variable in the
 * environment that capgnn does not read (apps/env.c holds the list), with the closest
 * known name when one is at most two edits away. */
void cli_env_warn_unknown(void);
/* Whether this host has an NVIDIA GPU driver's device node (/dev/nvidiactl): asked before
 * any CUDA call, e.g. before an MPS share must be set (--gpu-share). */
int cli_nvidia_present(void);

/* Shared by the subcommands (apps/cli.c): print one line
 * "capgnn: error: MESSAGE (see capgnn CMD --help)" and return CAPGNN_EXIT_USAGE;
 * print the recorded error (cg_err_msg) as one line and return CAPGNN_EXIT_FAILURE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int cli_runtime_error(void);
/* After getopt_long: getopt takes the word after an option that needs a value
 * whatever it is, so "--metrics --quiet" would write metrics to a file named
 * "--quiet". When the value (optarg) came as a separate word that looks like an
 * option, prints a usage error for command `cmd` and returns CAPGNN_EXIT_USAGE;
 * else 0. "--metrics=--quiet" still means that file. */
int cli_check_value(const char *cmd, int argc, char **argv, int ind, const char *arg);
/* Ends the option loop: later usage errors are not about an option's value. (While
 * parsing, a usage error about a value that came from a settings file names it.) */
void cli_options_done(void);
/* The usage error for an option getopt did not accept (`name` as written): a switch
 * given a value ("--layernorm=false") is told so, anything else is unknown, with the
 * closest option when one is near ("did you mean '--epochs'?", the settings files'
 * suggestion: config_option_suggest). */
struct option;
int cli_bad_option(const char *cmd, const char *name, const struct option *longopts);
/* `--cache DIR`, the short name of --part-cache (capgnn train, partition): a value that
 * names a halo-cache policy or preset (none, jaca, lru, fifo, exact, fast) is refused
 * with the option meant (--cache-policy; --part-cache takes any folder name), since
 * `capgnn plan --cache jaca` is the halo cache and a train run with it would silently be
 * the exact one, its partitions cached in ./jaca. 0 when the value is taken. */
int cli_part_cache_alias(const char *cmd, const char *dir);
/* Where a command reports what it wrote: stderr when `output` is stdout itself
 * (-o /dev/stdout), so the report does not end up inside the file; else stdout. */
FILE *cli_report_stream(const char *output);

/* Numeric option values, for every subcommand: `s` is the value of option `opt`
 * (as the message names it, e.g. "--seed") of command `cmd`. The whole word is the
 * number, in base 10 (a leading '+' is allowed; white space is not). On success
 * *out is set and 0 returned; otherwise *out is left alone and the usage error
 * "OPT 'S': expected ..." is printed (naming the settings file the value came
 * from, see cli_usage_error) and CAPGNN_EXIT_USAGE returned.
 *   cli_parse_int     an int                   "expected an integer"
 *   cli_parse_int_in  an int in [lo, hi]       "expected an integer in [LO, HI]"
 *   cli_parse_i64     an int64_t               "expected an integer"
 *   cli_parse_u64     a uint64_t, no '-' sign  "expected a non-negative integer"
 *   cli_parse_float   a float, finite once     "expected a number"; a value that
 *                     rounded to float          overflows ("1e300") or underflows to 0
 *                                               ("1e-50") as a float: "out of range" /
 *                                               "too close to 0", naming it as written */
int cli_parse_int(const char *cmd, const char *opt, const char *s, int *out);
int cli_parse_int_in(const char *cmd, const char *opt, const char *s, int lo, int hi, int *out);
int cli_parse_i64(const char *cmd, const char *opt, const char *s, int64_t *out);
int cli_parse_u64(const char *cmd, const char *opt, const char *s, uint64_t *out);
int cli_parse_float(const char *cmd, const char *opt, const char *s, float *out);

int cmd_train(int argc, char **argv);
void cmd_train_usage(FILE *out);
/* apps/cmd_partition.c (built in when that file and capgnn_partition exist, which
 * defines CAPGNN_HAVE_CMD_PARTITION for capgnn.c's command table). */
int cmd_partition(int argc, char **argv);
/* Datasets: apps/cmd_convert.c (import to .cgr), apps/cmd_info.c (sizes, split,
 * degrees, checksum status), apps/cmd_gen.c (synthetic graph to .cgr). */
int cmd_convert(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_gen(int argc, char **argv);
/* apps/cmd_predict.c: logits and embeddings of a checkpoint's model, as .npy. */
int cmd_predict(int argc, char **argv);
/* apps/cmd_profile.c (built in with rapa/, which defines CAPGNN_HAVE_CMD_PROFILE):
 * device and link profiles, the report. */
int cmd_profile(int argc, char **argv);
/* apps/cmd_doctor.c (with rapa/ too): the job's mapping, MPI and transport checked. */
int cmd_doctor(int argc, char **argv);
/* apps/cmd_plan.c (with rapa/ too): the scale model, predicted epochs of P ranks on N nodes. */
int cmd_plan(int argc, char **argv);

#ifdef CAPGNN_HAVE_DIST
struct comm;
/* Collective over the job: whether every rank holds rank 0's `text` (the settings the
 * ranks must share, one "key = value" a line; NULL: this rank could not build it). Each
 * rank parses its own command line and settings files (an MPMD line `mpirun -np 1 capgnn
 * A : -np 1 capgnn B`, a settings file that differs between machines), and ranks that
 * differ corrupt memory, hang or compute other things on each rank. CG_OK when they
 * agree; otherwise rank 0 prints one line, "capgnn: error: the ranks were not given the
 * same settings: rank R has 'LINE' where rank 0 has 'LINE' (N of P ranks differ from rank
 * 0): HINT", and every rank returns CG_ERR_ARG (another status when the comparison itself
 * failed: reported by the caller). */
int cli_ranks_agree(struct comm *c, const char *text, const char *hint);
/* Collective: reports a set-up error every rank has agreed on (comm_agree: its status
 * < 0 on every rank), once per distinct message. Each failing rank's own message is
 * printed by the lowest rank that holds it; comm_agree's "rank R failed during ... (see
 * that rank's log)" on the ranks that did not fail is left out (comm_err_is_relay):
 * the failing rank's line says what and why. A line names its rank ("rank R: ", rank 0's
 * too when it failed alone) unless every rank holds that message (every rank failed alike,
 * or a check rank 0 made for the job and broadcast, such as the output files'). */
void cli_report_setup_error(struct comm *c);
/* Collective: the lowest rank whose `flag` is set, -1 when none is (-2 when the exchange
 * failed: cg_err_msg says why). For a check each rank makes of its own options (a
 * --threads list as long as the job): every rank must learn of a failure on any rank
 * before it leaves, or the others wait in the next collective; the lowest failing rank
 * speaks, once. */
int cli_first_rank_with(struct comm *c, int flag);
#endif

#endif
