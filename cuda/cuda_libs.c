/* cuda/cuda_libs.c — dlopen of cuBLAS and cuSPARSE (why: cuda_libs_internal.h).
 *
 * Where they are looked for: by soname first (LD_LIBRARY_PATH, the program's
 * run path, the loader's cache: where the linker would have found them), then in
 * the toolkit folder the build found them in. Both names come from the build
 * (CAPGNN_CUBLAS_SONAME, CAPGNN_CUBLAS_DIR, ... in cuda/CMakeLists.txt), so the major
 * version loaded is the one the headers describe. */
#include "cuda/cuda_libs_internal.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include "core/status.h"
#include "cuda/cuda_backend.h"

struct cuda_libs cuda_lib;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static int load_status = CG_ERR_INTERNAL;
static char load_error[768];

/* The soname, else the build's folder; NULL with why in load_error. */
static void *open_lib(const char *soname, const char *dir) {
  void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (h) return h;
  char first[320];
  snprintf(first, sizeof first, "%s", dlerror());
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, soname);
  h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (h) return h;
  snprintf(load_error, sizeof load_error,
           "%s could not be loaded (%s; nor from %s, the folder this build found it in). A GPU "
           "run needs the CUDA libraries this capgnn was built with: install them, or add their "
           "folder to LD_LIBRARY_PATH",
           soname, first, dir);
  return NULL;
}

/* (STR expands its argument first: cublasCreate is looked up as cublasCreate_v2) */
#define CUDA_LIBS_STR_(x) #x
#define CUDA_LIBS_STR(x) CUDA_LIBS_STR_(x)

static int find_all(void *h, const char *soname, void **slots[], const char *const names[],
                    int n) {
  for (int i = 0; i < n; i++) {
    *slots[i] = dlsym(h, names[i]);
    if (!*slots[i]) {
      snprintf(load_error, sizeof load_error,
               "%s has no function %s: it is not the version this capgnn was built with",
               soname, names[i]);
      return 0;
    }
  }
  return 1;
}

static void load(void) {
#define CUDA_LIBS_SLOT(fn) (void **)&cuda_lib.fn,
#define CUDA_LIBS_NAME(fn) CUDA_LIBS_STR(fn),
  void **blas_slots[] = {CUDA_LIBS_CUBLAS(CUDA_LIBS_SLOT)};
  const char *const blas_names[] = {CUDA_LIBS_CUBLAS(CUDA_LIBS_NAME)};
  void **sparse_slots[] = {CUDA_LIBS_CUSPARSE(CUDA_LIBS_SLOT)};
  const char *const sparse_names[] = {CUDA_LIBS_CUSPARSE(CUDA_LIBS_NAME)};
#undef CUDA_LIBS_SLOT
#undef CUDA_LIBS_NAME
  const int nb = (int)(sizeof blas_names / sizeof *blas_names);
  const int ns = (int)(sizeof sparse_names / sizeof *sparse_names);
  /* (a half-loaded table is cleared: a caller sees all of it or none) */
  void *blas = open_lib(CAPGNN_CUBLAS_SONAME, CAPGNN_CUBLAS_DIR), *sparse = NULL;
  if (!blas || !find_all(blas, CAPGNN_CUBLAS_SONAME, blas_slots, blas_names, nb)) goto fail;
  sparse = open_lib(CAPGNN_CUSPARSE_SONAME, CAPGNN_CUSPARSE_DIR);
  if (!sparse || !find_all(sparse, CAPGNN_CUSPARSE_SONAME, sparse_slots, sparse_names, ns))
    goto fail;
  /* (the handles stay open for the life of the process, as linked libraries do) */
  load_status = CG_OK;
  return;
fail:
  for (int i = 0; i < nb; i++) *blas_slots[i] = NULL;
  for (int i = 0; i < ns; i++) *sparse_slots[i] = NULL;
  /* (closed: a run that goes on without a GPU does not keep their ~250 MB) */
  if (sparse) dlclose(sparse);
  if (blas) dlclose(blas);
  load_status = CG_ERR_CUDA;
}

int cuda_libs_load(void) {
  pthread_once(&load_once, load);
  if (load_status != CG_OK) return cg_err_set(load_status, "%s", load_error);
  return CG_OK;
}

int cg_cuda_blas_version(char *buf, size_t len) {
  if (len) buf[0] = '\0';
  TRY(cuda_libs_load());
  int v[3] = {0, 0, 0};
  const libraryPropertyType what[3] = {MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL};
  for (int i = 0; i < 3; i++)
    if (cuda_lib.cublasGetProperty(what[i], &v[i]) != CUBLAS_STATUS_SUCCESS)
      return cg_err_set(CG_ERR_CUDA, "cublasGetProperty failed");
  snprintf(buf, len, "%d.%d.%d", v[0], v[1], v[2]);
  return CG_OK;
}
