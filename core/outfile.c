/* core/outfile.c — output files written whole or not at all (see outfile.h). */
#define _GNU_SOURCE /* realpath */
#include "core/outfile.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/status.h"

static void outfile_free(struct cg_outfile *o) {
  free(o->path);
  free(o->tmp);
  memset(o, 0, sizeof *o);
}

int cg_outfile_open(struct cg_outfile *o, const char *path, const char *what) {
  memset(o, 0, sizeof *o);
  if (!path || !*path) return cg_err_set(CG_ERR_ARG, "no file name given for the %s", what);
  struct stat st;
  if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
    if (stat(path, &st) != 0)
      return cg_err_set(CG_ERR_IO, "cannot write the %s to '%s': it is a symbolic link to %s (%s)",
                        what, path, errno == ENOENT ? "a missing file" : "an unusable path",
                        strerror(errno));
    /* a regular target is replaced by name (the link stays); anything else, e.g.
     * /dev/stdout -> /proc/self/fd/1 -> a pipe, is written through the link */
    o->path = S_ISREG(st.st_mode) ? realpath(path, NULL) : strdup(path);
    if (!o->path)
      return cg_err_set(CG_ERR_IO, "cannot write the %s to '%s': %s", what, path, strerror(errno));
  } else {
    o->path = strdup(path);
    if (!o->path) return cg_err_set(CG_ERR_NOMEM, "out of memory for a file name");
    if (lstat(path, &st) != 0) st.st_mode = S_IFREG; /* a new file */
  }
  if (S_ISDIR(st.st_mode)) {
    int rc = cg_err_set(CG_ERR_IO, "cannot write the %s to '%s': it is a directory", what, path);
    outfile_free(o);
    return rc;
  }
  const int in_place = !S_ISREG(st.st_mode);
  if (!in_place) {
    /* per process: ranks writing the same file at once each have their own temporary
     * and the last rename wins whole */
    const size_t n = strlen(o->path) + 32;
    o->tmp = malloc(n);
    if (!o->tmp) {
      outfile_free(o);
      return cg_err_set(CG_ERR_NOMEM, "out of memory for a file name");
    }
    snprintf(o->tmp, n, "%s.tmp.%ld", o->path, (long)getpid());
  }
  const char *name = in_place ? o->path : o->tmp;
  o->fp = fopen(name, "wb");
  if (!o->fp) {
    int rc = cg_err_set(CG_ERR_IO, "cannot write the %s to '%s': %s", what, name, strerror(errno));
    outfile_free(o);
    return rc;
  }
  return CG_OK;
}

int cg_outfile_commit(struct cg_outfile *o) {
  int rc = CG_OK;
  const int err = ferror(o->fp);
  if (fclose(o->fp) != 0 || err)
    rc = cg_err_set(CG_ERR_IO, "writing '%s' failed: %s (is the disk full?)",
                    o->tmp ? o->tmp : o->path, strerror(errno));
  o->fp = NULL;
  if (rc == CG_OK && o->tmp && rename(o->tmp, o->path) != 0)
    rc = cg_err_set(CG_ERR_IO, "cannot rename '%s' to '%s': %s", o->tmp, o->path, strerror(errno));
  if (rc != CG_OK && o->tmp) remove(o->tmp);
  outfile_free(o);
  return rc;
}

void cg_outfile_abort(struct cg_outfile *o) {
  if (o->fp) fclose(o->fp);
  if (o->tmp) remove(o->tmp);
  outfile_free(o);
}
