/* benchmarks/openblas_shim_blis.c — runs an unchanged capgnn binary on BLIS instead of
 * OpenBLAS, to time a whole epoch with BLIS's sgemm (issue #14 item 4; an experiment, not
 * part of the build). capgnn calls cblas_sgemm plus three OpenBLAS-only functions; this
 * library takes the name libopenblas.so.0, defines those three on top of BLIS, and leaves
 * cblas_sgemm to libblis.so.4 (its dependency), so that LD_LIBRARY_PATH picks it over
 * OpenBLAS:
 *
 *   d=/usr/lib/x86_64-linux-gnu/blis-pthread; mkdir -p /tmp/shim-blis
 *   gcc -O2 -shared -fPIC -o /tmp/shim-blis/libopenblas.so.0 -Wl,-soname,libopenblas.so.0 \
 *       benchmarks/openblas_shim_blis.c -L$d -l:libblis.so.4 -Wl,-rpath,$d
 *   LD_LIBRARY_PATH=/tmp/shim-blis build/bin/bench_epoch ...
 *
 * (OpenBLAS's OpenMP build needs no shim: LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp.) */
#include <stdint.h>
#include <stdio.h>

void bli_thread_set_num_threads(int64_t n); /* dim_t is 64-bit in Debian's BLIS */
int64_t bli_thread_get_num_threads(void);
const char *bli_info_get_version_str(void);

void openblas_set_num_threads(int n);
int openblas_get_num_threads(void);
char *openblas_get_config(void);

void openblas_set_num_threads(int n) { bli_thread_set_num_threads(n); }
int openblas_get_num_threads(void) { return (int)bli_thread_get_num_threads(); }
char *openblas_get_config(void) {
  static char s[96];
  snprintf(s, sizeof s, "BLIS %s through benchmarks/openblas_shim_blis.c", bli_info_get_version_str());
  return s;
}
