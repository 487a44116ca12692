/* core/outfile.c — output files written whole or not at all (see outfile.h). */
#define _GNU_SOURCE /* realpath */
#include "core/outfile.h"

#include <ctype.h>
#include <errno.h>
#include <libgen.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/log.h"
#include "core/status.h"

/* ---- what --force replaces, said when it is replaced -------------------------------
 * cg_outfile_check lets `force` replace a file that needs it; the warning waits here,
 * keyed by the file (device and inode), until cg_outfile_commit renames over that file:
 * a run that fails before writing (a graph not found) replaced nothing and says nothing,
 * and a file written several times (checkpoints, a resumed run's metrics) is named once. */
#define PENDING_MAX 32
static struct pending_note {
  dev_t dev;
  ino_t ino;
  char *note;
} pending[PENDING_MAX];
static int npending;
static pthread_mutex_t pending_lock = PTHREAD_MUTEX_INITIALIZER; /* commits may come from a writer thread */

static void pending_add(const struct stat *st, const char *note) {
  pthread_mutex_lock(&pending_lock);
  int i = 0;
  while (i < npending && !(pending[i].dev == st->st_dev && pending[i].ino == st->st_ino)) i++;
  char *copy = strdup(note);
  if (copy && i < PENDING_MAX) {
    if (i == npending) npending++;
    else free(pending[i].note); /* checked again (a second check of the same run): one note */
    pending[i] = (struct pending_note){st->st_dev, st->st_ino, copy};
    copy = NULL;
  }
  pthread_mutex_unlock(&pending_lock);
  if (copy) { /* no room to keep it: said now rather than never */
    LOG_WARN_COMMON("core", "%s", copy);
    free(copy);
  }
}

/* The note kept for the file `st` describes, taken out (caller frees); NULL when none. */
static char *pending_take(const struct stat *st) {
  char *note = NULL;
  pthread_mutex_lock(&pending_lock);
  for (int i = 0; i < npending && !note; i++)
    if (pending[i].dev == st->st_dev && pending[i].ino == st->st_ino) {
      note = pending[i].note;
      pending[i] = pending[--npending];
    }
  pthread_mutex_unlock(&pending_lock);
  return note;
}

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
    const int err = errno;
    int rc;
    char *copy = strdup(path), *folder = copy ? dirname(copy) : NULL;
    if (folder && err == ENOENT && !cg_path_type(folder)) /* outputs do not create folders: the user does */
      rc = cg_err_set(CG_ERR_IO, "cannot write the %s to '%s': the folder '%s' does not exist (create it "
                      "first, or choose another path)", what, path, folder);
    else if (folder && err == ENOTDIR && cg_path_type(folder) && strcmp(cg_path_type(folder), "a folder") != 0)
      rc = cg_err_set(CG_ERR_IO, "cannot write the %s to '%s': '%s' is %s, not a folder", what, path, folder,
                      cg_path_type(folder));
    else if (folder && err == ENOTDIR)
      rc = cg_err_set(CG_ERR_IO, "cannot write the %s to '%s': a part of the folder path '%s' is a file, not a "
                      "folder", what, path, folder);
    else
      rc = cg_err_set(CG_ERR_IO, "cannot write the %s to '%s': cannot create a file in its folder: %s", what,
                      path, strerror(err));
    free(copy);
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
  struct stat old;
  const int had = rc == CG_OK && o->tmp && stat(o->path, &old) == 0; /* the file about to be replaced */
  if (rc == CG_OK && o->tmp && rename(o->tmp, o->path) != 0)
    rc = cg_err_set(CG_ERR_IO, "cannot rename '%s' to '%s': %s", o->tmp, o->path, strerror(errno));
  if (rc == CG_OK && had) { /* replaced: what --force let replace is said now (once) */
    char *note = pending_take(&old);
    if (note) LOG_WARN_COMMON("core", "%s", note);
    free(note);
  }
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

int cg_outfile_open_keep(struct cg_outfile *o, const char *path, const char *what) {
  TRY(cg_outfile_open(o, path, what));
  if (!o->tmp) return CG_OK; /* in place: appending already */
  FILE *in = fopen(o->path, "rb");
  if (!in) return CG_OK; /* a new file */
  char buf[1 << 16];
  size_t k;
  int ok = 1;
  while (ok && (k = fread(buf, 1, sizeof buf, in)) > 0) ok = fwrite(buf, 1, k, o->fp) == k;
  ok = ok && !ferror(in);
  fclose(in);
  if (!ok) {
    const int rc = cg_err_set(CG_ERR_IO, "cannot copy '%s' to start the %s: %s", o->path, what,
                              strerror(errno ? errno : EIO));
    cg_outfile_abort(o);
    return rc;
  }
  return CG_OK;
}

/* ---- the rule ------------------------------------------------------------------------ */

#define KIND_HEAD CG_OUTFILE_KIND_HEAD

static size_t read_head(const char *path, unsigned char *buf, size_t len) {
  const int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t got = read(fd, buf, len);
  close(fd);
  return got > 0 ? (size_t)got : 0;
}

int cg_outfile_is_kind(const char *path, const struct cg_outfile_kind *kind) {
  struct stat sb;
  if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) return 0;
  unsigned char head[KIND_HEAD];
  const size_t n = read_head(path, head, sizeof head);
  for (const char *const *sig = kind->signatures; sig && *sig; sig++) {
    const size_t k = strlen(*sig);
    if (k <= n && memcmp(head, *sig, k) == 0) return 1;
  }
  return n > 0 && kind->match && kind->match((const char *)head, n);
}

/* "its first line: '...'" for text, "binary data" otherwise: what the user would lose. */
static void describe_head(const char *path, char *out, size_t len) {
  unsigned char head[KIND_HEAD];
  const size_t n = read_head(path, head, sizeof head);
  size_t text = 0;
  while (text < n && head[text] != '\n' && (isprint(head[text]) || head[text] == '\t')) text++;
  if (text == 0 || (text < n && head[text] != '\n'))
    snprintf(out, len, "binary data");
  else
    snprintf(out, len, "text starting '%.*s%s'", (int)(text > 40 ? 40 : text), (const char *)head,
             text > 40 ? "..." : "");
}

void cg_outfile_force_note(const char *path, const char *opt, const struct cg_outfile_kind *kind, int force,
                           char *note, size_t len) {
  struct stat out;
  if (len) note[0] = '\0';
  if (!force || !path || !len || stat(path, &out) != 0 || !S_ISREG(out.st_mode)) return;
  if ((out.st_mode & 0222) == 0)
    snprintf(note, len, "%s %s: replacing the read-only file (--force)", opt, path);
  else if (out.st_size > 0 && (kind->replace_needs_force || !cg_outfile_is_kind(path, kind)))
    snprintf(note, len, "%s %s: replacing the existing file (--force)", opt, path);
}

int cg_outfile_check(const char *path, const char *opt, const struct cg_outfile_kind *kind,
                     const struct cg_outfile_input *inputs, int n, int force, int flags) {
  struct stat out;
  /* '-' would be a file of that name in the current folder, where a user means standard
   * output (as `capgnn plan --json -`, which handles it before this check) */
  if (path && !strcmp(path, "-"))
    return cg_err_set(CG_ERR_ARG, "%s -: '-' is not standard output here; write /dev/stdout for it (or ./- for "
                      "a file named '-')", opt);
  if (!path || stat(path, &out) != 0) return CG_OK; /* nothing there to lose */
  for (int i = 0; i < n; i++) {
    struct stat in;
    if (!inputs[i].path || stat(inputs[i].path, &in) != 0) continue;
    if (in.st_dev == out.st_dev && in.st_ino == out.st_ino && !S_ISCHR(out.st_mode))
      return cg_err_set(CG_ERR_ARG, "%s %s is the %s %s of this run: writing there would destroy "
                        "it; choose another file", opt, path, inputs[i].opt, inputs[i].path);
  }
  if (S_ISDIR(out.st_mode))
    return cg_err_set(CG_ERR_IO, "%s %s: it is a folder (give a file name for the %s)", opt, path, kind->what);
  if (!S_ISREG(out.st_mode)) return CG_OK; /* a device or pipe: in place */
  if ((out.st_mode & 0222) == 0) { /* someone made it read-only: keep it so, unless told */
    if (!force)
      return cg_err_set(CG_ERR_IO, "%s %s: the file is read-only (no write permission); refusing to replace "
                        "it (make it writable, choose another path, or pass --force to replace it)", opt, path);
    if (!(flags & CG_OUTFILE_FORCE_LATER)) {
      char note[4300];
      snprintf(note, sizeof note, "%s %s: replacing the read-only file (--force)", opt, path);
      pending_add(&out, note);
    }
    return CG_OK;
  }
  if (out.st_size == 0) return CG_OK; /* nothing there to lose */
  const int same = cg_outfile_is_kind(path, kind);
  if (same && !kind->replace_needs_force) {
    if (flags & CG_OUTFILE_WARN_REPLACE)
      LOG_WARN_COMMON("core", "%s %s: replacing the %s there", opt, path, kind->what);
    return CG_OK;
  }
  if (force) {
    if (!(flags & CG_OUTFILE_FORCE_LATER)) {
      char note[4300];
      snprintf(note, sizeof note, "%s %s: replacing the existing file (--force)", opt, path);
      pending_add(&out, note);
    }
    return CG_OK;
  }
  if (same)
    return cg_err_set(CG_ERR_IO, "%s %s: a %s exists there; refusing to replace it (remove it, choose "
                      "another path, or pass --force to replace it)", opt, path, kind->what);
  char head[96];
  describe_head(path, head, sizeof head);
  return cg_err_set(CG_ERR_IO, "%s %s: the file exists and is not a %s (%s); refusing to replace it "
                    "(choose another path, or pass --force to replace it)", opt, path, kind->what, head);
}

/* The folder of `path` resolved (links, "..") joined with its last name; NULL when the
 * folder does not exist. Caller frees. */
static char *resolved_name(const char *path) {
  char *copy1 = strdup(path), *copy2 = strdup(path);
  char *out = NULL;
  if (copy1 && copy2) {
    char *dir = realpath(dirname(copy1), NULL);
    const char *base = basename(copy2);
    if (dir) {
      const size_t len = strlen(dir) + strlen(base) + 2;
      out = malloc(len);
      if (out) snprintf(out, len, "%s/%s", dir, base);
      free(dir);
    }
  }
  free(copy1);
  free(copy2);
  return out;
}

int cg_outfile_same(const char *a, const char *b) {
  if (!a || !b) return 0;
  struct stat sa, sb;
  const int ea = stat(a, &sa) == 0, eb = stat(b, &sb) == 0;
  if (ea && eb) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  if (ea != eb) return 0;
  char *ra = resolved_name(a), *rb = resolved_name(b);
  const int same = ra && rb ? strcmp(ra, rb) == 0 : strcmp(a, b) == 0;
  free(ra);
  free(rb);
  return same;
}
