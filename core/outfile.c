/* core/outfile.c — output files written whole or not at all (see outfile.h). */
#define _GNU_SOURCE /* realpath */
#include "core/outfile.h"

#include <errno.h>
#include <fcntl.h>
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

static int is_special_prefix(const char *p) {
  return strncmp(p, "/dev/", 5) == 0 || strncmp(p, "/proc/", 6) == 0;
}

/* True when `path` or a link on its way names /dev/... or /proc/...: /dev/stdout ->
 * /proc/self/fd/1 -> out.txt is a regular file, but replacing out.txt by name would
 * lose what `>>` appended before and what the program prints after. */
static int via_special(const char *path) {
  char cur[PATH_MAX], next[PATH_MAX];
  if (strlen(path) >= sizeof cur) return 0;
  strcpy(cur, path);
  for (int hop = 0; hop < 40; hop++) {
    if (is_special_prefix(cur)) return 1;
    const ssize_t n = readlink(cur, next, sizeof next - 1);
    if (n < 0) return 0;
    next[n] = '\0';
    if (next[0] != '/') return 0; /* relative links stay where they are */
    strcpy(cur, next);
  }
  return 0;
}

int cg_outfile_open(struct cg_outfile *o, const char *path, const char *what) {
  memset(o, 0, sizeof *o);
  if (!path || !*path) return cg_err_set(CG_ERR_ARG, "no file name given for the %s", what);
  struct stat st;
  int exists = 1;
  const int special = via_special(path);
  if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
    if (stat(path, &st) != 0)
      return cg_err_set(CG_ERR_IO, "cannot write the %s to '%s': it is a symbolic link to %s (%s)",
                        what, path, errno == ENOENT ? "a missing file" : "an unusable path",
                        strerror(errno));
    /* a regular target is replaced by name (the link stays); anything else, e.g.
     * /dev/stdout -> /proc/self/fd/1 -> a pipe, is written through the link */
    o->path = S_ISREG(st.st_mode) && !special ? realpath(path, NULL) : strdup(path);
    if (!o->path)
      return cg_err_set(CG_ERR_IO, "cannot write the %s to '%s': %s", what, path, strerror(errno));
  } else {
    o->path = strdup(path);
    if (!o->path) return cg_err_set(CG_ERR_NOMEM, "out of memory for a file name");
    if (lstat(path, &st) != 0) exists = 0;
  }
  if (exists && S_ISDIR(st.st_mode)) {
    const int rc = cg_err_set(CG_ERR_IO, "cannot write the %s to '%s': it is a directory", what, path);
    outfile_free(o);
    return rc;
  }
  if (exists && (!S_ISREG(st.st_mode) || special)) {
    /* in place, appending: a file behind /dev/stdout keeps what the shell's >> or the
     * program itself put there before */
    o->fp = fopen(o->path, "ab");
    if (!o->fp) {
      const int rc = cg_err_set(CG_ERR_IO, "cannot write the %s to '%s': %s", what, path, strerror(errno));
      outfile_free(o);
      return rc;
    }
    return CG_OK;
  }
  /* A unique temporary beside the target (mkstemp: never an existing file, even for
   * ranks on different hosts with the same pid), with the mode the target has or a
   * new file would get. */
  const size_t n = strlen(o->path) + 16;
  o->tmp = malloc(n);
  if (!o->tmp) {
    outfile_free(o);
    return cg_err_set(CG_ERR_NOMEM, "out of memory for a file name");
  }
  snprintf(o->tmp, n, "%s.tmp.XXXXXX", o->path);
  const int fd = mkstemp(o->tmp);
  if (fd < 0) {
    const int rc = cg_err_set(CG_ERR_IO, "cannot write the %s to '%s': cannot create a file beside "
                              "it: %s", what, path, strerror(errno));
    outfile_free(o);
    return rc;
  }
  mode_t mode = exists ? (st.st_mode & 07777) : 0;
  if (!exists) {
    const mode_t mask = umask(0);
    umask(mask);
    mode = 0666 & ~mask;
  }
  o->fp = fchmod(fd, mode) == 0 ? fdopen(fd, "wb") : NULL;
  if (!o->fp) {
    const int rc = cg_err_set(CG_ERR_IO, "cannot write the %s to '%s': %s", what, o->tmp, strerror(errno));
    close(fd);
    remove(o->tmp);
    outfile_free(o);
    return rc;
  }
  return CG_OK;
}

int cg_outfile_commit(struct cg_outfile *o) {
  int rc = CG_OK;
  const char *name = o->tmp ? o->tmp : o->path;
  if (ferror(o->fp)) {
    fclose(o->fp);
    rc = cg_err_set(CG_ERR_IO, "writing '%s' failed (is the disk full?)", name);
  } else if (o->tmp && (fflush(o->fp) != 0 || fsync(fileno(o->fp)) != 0)) {
    /* on the disk before the rename makes it the file: a power loss then leaves the old
     * file or the new one, not a renamed empty one */
    rc = cg_err_set(CG_ERR_IO, "writing '%s' failed: %s (is the disk full?)", name, strerror(errno));
    fclose(o->fp);
  } else if (fclose(o->fp) != 0) {
    rc = cg_err_set(CG_ERR_IO, "writing '%s' failed: %s (is the disk full?)", name, strerror(errno));
  }
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

int cg_outfile_probe(const char *path, const char *what) {
  struct stat sb;
  if (stat(path, &sb) == 0 && (S_ISFIFO(sb.st_mode) || S_ISSOCK(sb.st_mode) || S_ISCHR(sb.st_mode)))
    return CG_OK;
  struct cg_outfile o;
  TRY(cg_outfile_open(&o, path, what));
  cg_outfile_abort(&o);
  return CG_OK;
}

const char *cg_path_type(const char *path) {
  struct stat sb;
  if (stat(path, &sb) != 0) return lstat(path, &sb) == 0 ? "a symbolic link to a missing file" : NULL;
  if (S_ISREG(sb.st_mode)) return "a regular file";
  if (S_ISDIR(sb.st_mode)) return "a folder";
  if (S_ISFIFO(sb.st_mode)) return "a named pipe (FIFO)";
  if (S_ISCHR(sb.st_mode)) return "a character device";
  if (S_ISBLK(sb.st_mode)) return "a block device";
  if (S_ISSOCK(sb.st_mode)) return "a socket";
  return "not a regular file";
}
