/* cuda/tests/test_cuda_libs.c — cuBLAS and cuSPARSE are loaded on demand
 * (cuda/cuda_libs_internal.h); needs no GPU (neither library needs one to load or
 * to say its version).
 *
 * Checked: a process that links the CUDA backend has neither library mapped before
 * the first load (the point of loading them late: ~250 MB resident per process);
 * loading maps both, fills every function of the table, and cuBLAS reports the
 * major version of the soname the build chose; loading again is a no-op. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/status.h"
#include "cuda/cuda_backend.h"
#include "cuda/cuda_libs_internal.h"

/* 1 when a file whose name contains `name` is mapped into this process. */
static int mapped(const char *name) {
  FILE *f = fopen("/proc/self/maps", "r");
  assert_non_null(f);
  char line[1024];
  int found = 0;
  while (!found && fgets(line, sizeof line, f)) found = strstr(line, name) != NULL;
  fclose(f);
  return found;
}

static void test_loaded_on_demand(void **state) {
  (void)state;
  assert_false(mapped("libcublas"));
  assert_false(mapped("libcusparse"));
  assert_null(cuda_lib.cublasCreate);

  char v[32];
  int st = cg_cuda_blas_version(v, sizeof v);
  if (st != CG_OK) fprintf(stderr, "%s\n", cg_err_msg());
  assert_int_equal(st, CG_OK);
  assert_true(mapped(CAPGNN_CUBLAS_SONAME));
  assert_true(mapped(CAPGNN_CUSPARSE_SONAME));
  /* "libcublas.so.13" -> "13." starts the version */
  char major[16];
  snprintf(major, sizeof major, "%s.", strrchr(CAPGNN_CUBLAS_SONAME, '.') + 1);
  printf("cuBLAS %s (%s), %s\n", v, CAPGNN_CUBLAS_SONAME, CAPGNN_CUSPARSE_SONAME);
  assert_memory_equal(v, major, strlen(major));

  /* every slot filled */
  const void *const *slot = (const void *const *)&cuda_lib;
  for (size_t i = 0; i < sizeof cuda_lib / sizeof(void *); i++) assert_non_null(slot[i]);
  /* a library call through the table that needs no GPU */
  const char *msg = cuda_lib.cusparseGetErrorString(CUSPARSE_STATUS_NOT_INITIALIZED);
  assert_non_null(msg);
  assert_true(strlen(msg) > 0);
  assert_int_equal(cuda_libs_load(), CG_OK);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_loaded_on_demand),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
