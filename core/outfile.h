/* core/outfile.h — output files written whole or not at all.
 *
 * A regular file (existing or new) is written to a temporary name beside it and
 * renamed over it on commit, so a crash, a full disk or a concurrent writer never
 * leaves a half-written file under the real name. A symbolic link is followed: the
 * file it points to is replaced (keeping its mode) and the link stays a link.
 * Anything else that already exists and is not a directory (/dev/null, a FIFO), and
 * any path under /dev or /proc or reached through them (/dev/stdout redirected to
 * a file with > or >>), is written in place, appending: renaming over it would
 * replace the device or pipe itself, or lose what the shell's redirection expects. */
#ifndef CAPGNN_CORE_OUTFILE_H
#define CAPGNN_CORE_OUTFILE_H

#include <stdio.h>

struct cg_outfile {
  FILE *fp;   /* write here between open and commit/abort */
  char *path; /* the file that receives the data (the link target for a link) */
  char *tmp;  /* temporary name (FILE.tmp.XXXXXX), NULL when writing in place */
};

/* ---- the rule every output path follows -----------------------------------------
 * Every file capgnn writes (metrics, checkpoints, partition statistics, converted and
 * generated graphs) is checked by cg_outfile_check before any long work and then
 * written through a temporary renamed over it (cg_outfile_open / commit):
 *  1. never one of the run's inputs (its graph, the checkpoint it resumes from, a
 *     settings file, a converter's source files; the same file, whatever the path
 *     says: links and hard links are resolved), whatever `force` says;
 *  2. an existing file is replaced only when it is an output of the same kind
 *     (recognised by its first bytes) or with `force` (--force); a kind that holds
 *     data costly to remake (graphs) needs `force` even then. A read-only file (no
 *     write permission bit for anyone: st_mode & 0222 == 0; renaming over it in a
 *     writable folder would ignore its mode) needs `force` whatever it holds, empty
 *     too. An empty file is replaced; a device, pipe or socket is written in place
 *     (as cg_outfile_open does); a folder is refused;
 *  3. the name '-' is refused (CG_ERR_ARG): a user means standard output by it, not a
 *     file of that name (/dev/stdout is standard output, ./- such a file). */

/* A kind of output. A file is of this kind when it starts with one of `signatures`,
 * or, for a kind whose files start with text a user's own files may start with too
 * (JSON Lines), when `match` accepts its first bytes. */
struct cg_outfile_kind {
  const char *what;              /* "metrics file", "graph" ... for messages */
  const char *const *signatures; /* NULL-terminated; may be NULL when match is set */
  int replace_needs_force;       /* 1: an existing file of this kind too (datasets) */
  /* optional: 1 when the file's first n bytes (n <= CG_OUTFILE_KIND_HEAD; fewer when
   * the file is shorter) are this kind's */
  int (*match)(const char *head, size_t n);
};
#define CG_OUTFILE_KIND_HEAD 256 /* bytes read to tell a file's kind */

/* One input of a run, for rule 1: the option that named it and its path (NULL: none). */
struct cg_outfile_input {
  const char *opt, *path;
};

/* Rule 1 and 2 for output `path`, given as option `opt` ("--metrics"), of `kind`;
 * `inputs` has n entries (entries with a NULL path are skipped). CG_OK when it may be
 * written (a new file: whether its folder is writable is cg_outfile_probe's question);
 * otherwise CG_ERR_ARG (rule 1) or CG_ERR_IO (rule 2, a folder) with a message that
 * names the file, what it holds and what to do. `flags`: CG_OUTFILE_WARN_REPLACE logs
 * replacing an existing file of the kind as a warning, here; a replacement that only
 * `force` allows is always logged, once, when cg_outfile_commit renames over that file
 * (the same file: device and inode), so that a run that fails before it writes says
 * nothing; with CG_OUTFILE_FORCE_LATER not at all: the caller says it with
 * cg_outfile_force_note when it writes (capgnn convert, whose writer does not commit
 * through this process's check). */
#define CG_OUTFILE_WARN_REPLACE 1
#define CG_OUTFILE_FORCE_LATER 2
int cg_outfile_check(const char *path, const char *opt, const struct cg_outfile_kind *kind,
                     const struct cg_outfile_input *inputs, int n, int force, int flags);
/* The warning cg_outfile_check logs when `force` lets it replace the existing file at
 * `path` ("--output g.cgr: replacing the existing file (--force)") into note (len
 * bytes); an empty string when writing there needs no force (no file, an empty one, a
 * device, a file of a kind replaced without it). */
void cg_outfile_force_note(const char *path, const char *opt, const struct cg_outfile_kind *kind, int force,
                           char *note, size_t len);
/* Whether the existing regular file `path` is of `kind` (starts with one of its
 * signatures, or its match accepts it; 0 when not, empty or unreadable). */
int cg_outfile_is_kind(const char *path, const struct cg_outfile_kind *kind);

/* Opens `path` for writing ("wb"); `what` names the content in error messages
 * ("graph", "partition statistics"; a missing folder is named as such: outputs do not
 * create folders). On failure *o is zeroed. */
int cg_outfile_open(struct cg_outfile *o, const char *path, const char *what);
/* The same, and the temporary starts as a copy of the existing regular file (for an
 * output that grows across runs: a resumed run's metrics); written in place, the file
 * is appended to anyway. */
int cg_outfile_open_keep(struct cg_outfile *o, const char *path, const char *what);
/* Closes and, for a temporary, renames it over the target. Frees *o either way; on
 * failure the temporary is removed and the target is left as it was. */
int cg_outfile_commit(struct cg_outfile *o);
/* Closes and removes the temporary (the target is left as it was); frees *o. */
void cg_outfile_abort(struct cg_outfile *o);
/* Whether `path` can be written, checked before long work so that a bad path fails
 * early: cg_outfile_open then abort. An existing FIFO, socket or character device is
 * not opened (opening a FIFO blocks until a reader comes; the real write will wait
 * for it then): CG_OK. */
int cg_outfile_probe(const char *path, const char *what);
/* 1 when paths a and b name the same file, for two outputs (or an output and an input)
 * of one run: the same inode when both exist; else the same folder (links resolved)
 * and the same name. 0 when either is NULL. */
int cg_outfile_same(const char *a, const char *b);

/* What `path` is, for messages about an input or output of the wrong kind: "a regular
 * file", "a folder", "a named pipe (FIFO)", "a character device", "a block device",
 * "a socket", "a symbolic link to a missing file"; NULL when nothing is there. Does not
 * open it (opening a FIFO would block). */
const char *cg_path_type(const char *path);

#endif
