/* mpi/tests/fake_device.c — see fake_device.h. */
#include "fake_device.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"

#define FAKE_BIT ((uintptr_t)1 << 62)

struct fake_dev {
  struct cg_backend be; /* first, so the backend pointer is the struct pointer */
  struct cg_backend *cpu;
  int64_t uploads, downloads;
  pthread_t creator;
  pthread_mutex_t mu; /* the side counters (channels lock their own lists) */
  struct fake_side_counts side;
};

/* A channel: the uploads enqueued and not carried out yet. */
struct fake_copy {
  void *dst;
  const void *src;
  size_t bytes;
};
struct cg_upchan {
  pthread_mutex_t mu;
  struct fake_copy *q;
  int64_t n, cap;
};

static void *real(const void *p) { return p ? (void *)((uintptr_t)p ^ FAKE_BIT) : NULL; }
static void *fake(void *p) { return p ? (void *)((uintptr_t)p ^ FAKE_BIT) : NULL; }
static struct fake_dev *fd(struct cg_backend *be) { return (struct fake_dev *)be; }

static void fake_destroy(struct cg_backend *be) {
  pthread_mutex_destroy(&fd(be)->mu);
  cg_free(be);
}

static int fake_alloc(struct cg_backend *be, void **p, size_t bytes, const char *what) {
  void *q = NULL;
  int st = fd(be)->cpu->alloc(fd(be)->cpu, &q, bytes, what);
  *p = fake(q);
  return st;
}
static void fake_free(struct cg_backend *be, void *p) { fd(be)->cpu->free(fd(be)->cpu, real(p)); }
static int fake_upload(struct cg_backend *be, void *dst, const void *src, size_t bytes) {
  fd(be)->uploads++;
  return fd(be)->cpu->upload(fd(be)->cpu, real(dst), src, bytes);
}
static int fake_download(struct cg_backend *be, void *dst, const void *src, size_t bytes) {
  fd(be)->downloads++;
  return fd(be)->cpu->download(fd(be)->cpu, dst, real(src), bytes);
}
static void fake_copy(struct cg_backend *be, void *dst, const void *src, size_t bytes) {
  fd(be)->cpu->copy(fd(be)->cpu, real(dst), real(src), bytes);
}
static void fake_sync(struct cg_backend *be) { fd(be)->cpu->sync(fd(be)->cpu); }
static int fake_mem_info(struct cg_backend *be, size_t *free_bytes, size_t *total_bytes) {
  return fd(be)->cpu->mem_info(fd(be)->cpu, free_bytes, total_bytes);
}
static void fake_fill(struct cg_backend *be, float *x, int64_t n, float value) {
  fd(be)->cpu->fill(fd(be)->cpu, real(x), n, value);
}
static void fake_scale(struct cg_backend *be, int64_t n, float alpha, float *x) {
  fd(be)->cpu->scale(fd(be)->cpu, n, alpha, real(x));
}
static void fake_gather_rows(struct cg_backend *be, const float *src, int64_t cols,
                             const int32_t *idx, int64_t n, float *dst) {
  fd(be)->cpu->gather_rows(fd(be)->cpu, real(src), cols, real(idx), n, real(dst));
}
static void fake_scatter_add_rows(struct cg_backend *be, const float *src, int64_t cols,
                                  const int32_t *idx, int64_t n, float *dst) {
  fd(be)->cpu->scatter_add_rows(fd(be)->cpu, real(src), cols, real(idx), n, real(dst));
}

/* ---- side uploads: deferred copies ---- */
static int fake_host_alloc(struct cg_backend *be, void **p, size_t bytes, const char *what) {
  *p = cg_malloc(bytes ? bytes : 1, what);
  if (!*p) return CG_ERR_NOMEM;
  pthread_mutex_lock(&fd(be)->mu);
  fd(be)->side.host_live++;
  pthread_mutex_unlock(&fd(be)->mu);
  return CG_OK;
}
static void fake_host_free(struct cg_backend *be, void *p) {
  if (!p) return;
  cg_free(p);
  pthread_mutex_lock(&fd(be)->mu);
  fd(be)->side.host_live--;
  pthread_mutex_unlock(&fd(be)->mu);
}
static int fake_upchan_create(struct cg_backend *be, struct cg_upchan **out) {
  (void)be;
  *out = cg_calloc(1, sizeof **out, "fake device: upload channel");
  if (!*out) return CG_ERR_NOMEM;
  pthread_mutex_init(&(*out)->mu, NULL);
  return CG_OK;
}
/* Carries out every upload enqueued so far, in order. */
static void drain(struct cg_upchan *ch) {
  pthread_mutex_lock(&ch->mu);
  for (int64_t i = 0; i < ch->n; i++) memcpy(real(ch->q[i].dst), ch->q[i].src, ch->q[i].bytes);
  ch->n = 0;
  pthread_mutex_unlock(&ch->mu);
}
static void fake_upchan_destroy(struct cg_backend *be, struct cg_upchan *ch) {
  (void)be;
  if (!ch) return;
  drain(ch);
  pthread_mutex_destroy(&ch->mu);
  free(ch->q);
  cg_free(ch);
}
static int fake_upchan_begin(struct cg_backend *be, struct cg_upchan *ch) {
  (void)be;
  drain(ch); /* "the previous uploads have completed" */
  return CG_OK;
}
static int fake_upchan_upload(struct cg_backend *be, struct cg_upchan *ch, void *dst, const void *src, size_t bytes) {
  if (!bytes) return CG_OK;
  pthread_mutex_lock(&ch->mu);
  if (ch->n == ch->cap) {
    const int64_t cap = ch->cap ? 2 * ch->cap : 64;
    struct fake_copy *q = realloc(ch->q, sizeof *q * (size_t)cap);
    if (!q) {
      pthread_mutex_unlock(&ch->mu);
      return cg_err_set(CG_ERR_NOMEM, "fake device: upload channel queue");
    }
    ch->q = q;
    ch->cap = cap;
  }
  ch->q[ch->n++] = (struct fake_copy){dst, src, bytes};
  pthread_mutex_unlock(&ch->mu);
  pthread_mutex_lock(&fd(be)->mu);
  fd(be)->side.uploads++;
  fd(be)->side.uploads_other_thread += !pthread_equal(pthread_self(), fd(be)->creator);
  fd(be)->side.bytes += (int64_t)bytes;
  pthread_mutex_unlock(&fd(be)->mu);
  return CG_OK;
}
static int fake_upchan_join(struct cg_backend *be, struct cg_upchan *ch) {
  drain(ch); /* the stream's later ops see them: here, at once */
  pthread_mutex_lock(&fd(be)->mu);
  fd(be)->side.joins++;
  pthread_mutex_unlock(&fd(be)->mu);
  return CG_OK;
}

void fake_device_side_uploads(struct cg_backend *be, int on) {
  be->host_alloc = on ? fake_host_alloc : NULL;
  be->host_free = on ? fake_host_free : NULL;
  be->upchan_create = on ? fake_upchan_create : NULL;
  be->upchan_destroy = on ? fake_upchan_destroy : NULL;
  be->upchan_begin = on ? fake_upchan_begin : NULL;
  be->upchan_upload = on ? fake_upchan_upload : NULL;
  be->upchan_join = on ? fake_upchan_join : NULL;
}

void fake_device_side_counts(const struct cg_backend *be, struct fake_side_counts *out) {
  struct fake_dev *f = (struct fake_dev *)be;
  pthread_mutex_lock(&f->mu);
  *out = f->side;
  pthread_mutex_unlock(&f->mu);
}

int fake_device_create(struct cg_backend *cpu, struct cg_backend **out) {
  struct fake_dev *f = cg_calloc(1, sizeof *f, "fake device backend");
  if (!f) return CG_ERR_NOMEM;
  f->cpu = cpu;
  f->creator = pthread_self();
  pthread_mutex_init(&f->mu, NULL);
  f->be.name = "fake-device";
  f->be.kind = CG_DEVICE_CUDA;
  f->be.impl = f;
  f->be.destroy = fake_destroy;
  f->be.alloc = fake_alloc;
  f->be.free = fake_free;
  f->be.upload = fake_upload;
  f->be.download = fake_download;
  f->be.copy = fake_copy;
  f->be.sync = fake_sync;
  f->be.mem_info = fake_mem_info;
  f->be.fill = fake_fill;
  f->be.scale = fake_scale;
  f->be.gather_rows = fake_gather_rows;
  f->be.scatter_add_rows = fake_scatter_add_rows;
  *out = &f->be;
  return CG_OK;
}

void fake_device_counts(const struct cg_backend *be, int64_t *uploads, int64_t *downloads) {
  const struct fake_dev *f = (const struct fake_dev *)be;
  *uploads = f->uploads;
  *downloads = f->downloads;
}
