/* cuda/tests/test_cuda_libs_missing.c — what a user sees when cuBLAS cannot be loaded.
 * This test compiles cuda/cuda_libs.c with a soname and folder that do not exist
 * (cuda/tests/CMakeLists.txt); needs no GPU.
 *
 * Checked: loading fails with CG_ERR_CUDA and a message naming the library, the
 * folder tried and the remedy; the table stays empty; a second call fails the same
 * way; cg_cuda_blas_version leaves its buffer empty. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/status.h"
#include "cuda/cuda_backend.h"
#include "cuda/cuda_libs_internal.h"

static void test_missing(void **state) {
  (void)state;
  assert_int_equal(cuda_libs_load(), CG_ERR_CUDA);
  const char *msg = cg_err_msg();
  printf("%s\n", msg);
  assert_non_null(strstr(msg, CAPGNN_CUBLAS_SONAME));
  assert_non_null(strstr(msg, CAPGNN_CUBLAS_DIR));
  assert_non_null(strstr(msg, "LD_LIBRARY_PATH"));
  const void *const *slot = (const void *const *)&cuda_lib;
  for (size_t i = 0; i < sizeof cuda_lib / sizeof(void *); i++) assert_null(slot[i]);
  assert_int_equal(cuda_libs_load(), CG_ERR_CUDA);
  char v[32] = "x";
  assert_int_equal(cg_cuda_blas_version(v, sizeof v), CG_ERR_CUDA);
  assert_string_equal(v, "");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_missing),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
