/* benchmarks/tests/wrong_blas.c — a CBLAS that gets sgemm wrong, for test_bench_blas:
 * bench_blas must refuse it. It computes op(A) op(B) correctly except for the last
 * element of the reduction (a short edge block, the kind of bug a real BLAS has shown),
 * and it leaves C unread when beta = 0, as BLAS must. */
#include <stddef.h>

enum { CB_TRANS = 112 };

void cblas_sgemm(int order, int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                 const float *b, int ldb, float beta, float *c, int ldc);

void cblas_sgemm(int order, int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                 const float *b, int ldb, float beta, float *c, int ldc) {
  (void)order; /* row-major only, as bench_blas calls it */
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++) {
      double s = 0.0;
      for (int p = 0; p + 1 < k; p++) /* the bug: drops p = k - 1 */
        s += (double)(ta == CB_TRANS ? a[(size_t)p * lda + i] : a[(size_t)i * lda + p]) *
             (double)(tb == CB_TRANS ? b[(size_t)j * ldb + p] : b[(size_t)p * ldb + j]);
      float *cij = &c[(size_t)i * ldc + j];
      *cij = alpha * (float)s + (beta == 0.0f ? 0.0f : beta * *cij);
    }
}
