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

/* Opens `path` for writing ("wb"); `what` names the content in error messages
 * ("graph", "partition statistics"). On failure *o is zeroed. */
int cg_outfile_open(struct cg_outfile *o, const char *path, const char *what);
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

/* What `path` is, for messages about an input or output of the wrong kind: "a regular
 * file", "a folder", "a named pipe (FIFO)", "a character device", "a block device",
 * "a socket", "a symbolic link to a missing file"; NULL when nothing is there. Does not
 * open it (opening a FIFO would block). */
const char *cg_path_type(const char *path);

#endif
