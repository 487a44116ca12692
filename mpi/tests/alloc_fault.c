/* mpi/tests/alloc_fault.c — link-time wrappers of posix_memalign and free (see
 * alloc_fault.h). */
#include "alloc_fault.h"

#include <errno.h>
#include <stddef.h>

#define AF_MAX 8192

int __real_posix_memalign(void **p, size_t align, size_t bytes);
void __real_free(void *p);
int __wrap_posix_memalign(void **p, size_t align, size_t bytes);
void __wrap_free(void *p);

static _Thread_local int af_fail;
static _Thread_local int af_fail_in; /* > 0: allocations until the one that fails */
static _Thread_local int af_tracking, af_overflow, af_n;
static _Thread_local void *af_live[AF_MAX];

void af_fail_next(void) { af_fail = 1; }
void af_fail_at(int n) { af_fail_in = n > 0 ? n : 0; }
int af_fail_pending(void) { return af_fail_in > 0; }

void af_track_begin(void) {
  af_tracking = 1;
  af_overflow = 0;
  af_n = 0;
}

int af_track_end(void) {
  af_tracking = 0;
  return af_overflow ? -1 : af_n;
}

int __wrap_posix_memalign(void **p, size_t align, size_t bytes) {
  if (af_fail) {
    af_fail = 0;
    return ENOMEM;
  }
  if (af_fail_in > 0 && --af_fail_in == 0) return ENOMEM;
  int rc = __real_posix_memalign(p, align, bytes);
  if (rc == 0 && af_tracking) {
    if (af_n < AF_MAX) af_live[af_n++] = *p;
    else af_overflow = 1;
  }
  return rc;
}

void __wrap_free(void *p) {
  if (af_tracking && p)
    for (int i = 0; i < af_n; i++)
      if (af_live[i] == p) {
        af_live[i] = af_live[--af_n];
        break;
      }
  __real_free(p);
}
