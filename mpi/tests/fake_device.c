/* mpi/tests/fake_device.c — see fake_device.h. */
#include "fake_device.h"

#include <stdint.h>

#include "core/status.h"

#define FAKE_BIT ((uintptr_t)1 << 62)

struct fake_dev {
  struct cg_backend be; /* first, so the backend pointer is the struct pointer */
  struct cg_backend *cpu;
  int64_t uploads, downloads;
};

static void *real(const void *p) { return p ? (void *)((uintptr_t)p ^ FAKE_BIT) : NULL; }
static void *fake(void *p) { return p ? (void *)((uintptr_t)p ^ FAKE_BIT) : NULL; }
static struct fake_dev *fd(struct cg_backend *be) { return (struct fake_dev *)be; }

static void fake_destroy(struct cg_backend *be) { cg_free(be); }

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

int fake_device_create(struct cg_backend *cpu, struct cg_backend **out) {
  struct fake_dev *f = cg_calloc(1, sizeof *f, "fake device backend");
  if (!f) return CG_ERR_NOMEM;
  f->cpu = cpu;
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
