/* apps/config_file_internal.h — settings files for capgnn commands (`--config FILE`).
 *
 * A settings file is INI (read with the inih library):
 *
 *   # Kipf & Welling's GCN on Cora
 *   [data]
 *   graph = cora
 *   feat-norm = row
 *   [model]
 *   layers = 2
 *   hidden = 16
 *   layernorm = false
 *
 * Every key is the name of one of the command's long options, without "--" ("_"
 * may stand for "-"), and the value is what would follow the option on the
 * command line. Options without a value (switches such as layernorm or quiet) take
 * true/false (also yes/no, on/off, 1/0); false turns the switch off, cancelling an
 * earlier file's true. Sections only
 * group keys for the reader ([data], [model], [training], [output] by convention);
 * any section name is accepted. Comments are lines starting with '#' or ';', and a
 * ';' or '#' after white space starts one (a value in quotes keeps a '#', not a
 * ';', which inih cuts first: an unclosed quote is refused). Lines
 * have no length limit (a long metrics path), though a section name or key must fit
 * in about 90 characters: inih, which reads the file, stops at 200 bytes a line, so
 * longer values are handed to it as placeholders (apps/config_file.c).
 * Relative paths in values are relative to the working directory, as on the
 * command line.
 *
 * Resolution: the settings of each --config file, in command-line order, then the
 * command-line options, so the command line overrides every file and a later file
 * (or line) overrides an earlier one. A setting may have several options: aliases
 * (equal `val` and `flag` in the option table) and, for a switch no-X, the option X.
 * A word for a setting (a value, or a switch on) drops every earlier settings-file
 * word for any of its options (a file's no-part-cache = true and the command line's
 * --part-cache DIR: the folder, not "exclude each other"); a switch set to false drops
 * the earlier words for that switch and its aliases only, from the files and from the
 * command line. On the command line a switch also takes "=true" or "=false"
 * (--layernorm=false turns off a file's layernorm = true). Options that exclude each
 * other otherwise (--seeds and --resume) still do so across a file and the command line. */
#ifndef CAPGNN_APPS_CONFIG_FILE_INTERNAL_H
#define CAPGNN_APPS_CONFIG_FILE_INTERNAL_H

#include <getopt.h>

/* Builds the argument list the command should parse: argv[0], then the settings of
 * every "--config FILE" / "--config=FILE" as "--key=value" words, then the other
 * arguments, less the words that later ones override (above; "--SWITCH=true" becomes
 * "--SWITCH", "--SWITCH=false" goes; another value for a switch is CG_ERR_ARG). The result is heap-allocated (config_file_argv_free); *out_argv is
 * NULL-terminated. On error (unreadable file, INI syntax error, unknown key, bad
 * flag value) returns CG_ERR_ARG or CG_ERR_IO with a message "FILE:LINE: ...".
 * Keys "config", "help" and "print-config" are not allowed in a file. */
int config_file_expand(int argc, char **argv, const struct option *longopts, int *out_argc, char ***out_argv);
void config_file_argv_free(int argc, char **argv);

/* The long option of `opts` closest to `name` (no leading "--"), at most two edits
 * away, for "did you mean" (settings-file keys and command-line options alike); NULL
 * when none is that close. A name DGL's or PyG's examples give a setting ("dataset",
 * "num_layers", "patience") gets the option it means first. */
const char *config_option_suggest(const char *name, const struct option *opts);

/* The config files named on the command line (NULL-terminated list inside `argv`
 * order), for --print-config's header; returns how many were found (up to max). */
int config_file_names(int argc, char **argv, const char **names, int max);
/* The settings file that word `index` of the last expanded argument list came from,
 * or NULL (a command-line word), so that an error about its value can name it. */
const char *config_file_origin(int index);

#endif
