/* mpi/tests/alloc_fault.h — an allocation that fails on demand, and a count of the
 * blocks a call leaves allocated, for the allocations of capgnn's own code.
 *
 * cg_malloc allocates with posix_memalign and cg_free releases with free. A test
 * linked with `-Wl,--wrap=posix_memalign,--wrap=free` (CMake:
 * target_link_options(t PRIVATE "LINKER:--wrap=posix_memalign,--wrap=free")) and
 * alloc_fault.c sees those calls of the code linked into it (capgnn's static
 * libraries, the test itself), not those of shared libraries (MPI's own buffers), so
 * the count is exact. State is per thread: only the calling thread's allocations
 * fail or are counted. */
#ifndef CAPGNN_MPI_TESTS_ALLOC_FAULT_H
#define CAPGNN_MPI_TESTS_ALLOC_FAULT_H

/* The next posix_memalign on this thread fails with ENOMEM (cg_malloc then returns
 * NULL with CG_ERR_NOMEM); later ones succeed. */
void af_fail_next(void);
/* The n-th posix_memalign on this thread from now (n >= 1) fails with ENOMEM; the
 * others succeed. af_fail_pending: 1 while that failure has not happened yet (the code
 * made fewer than n allocations). */
void af_fail_at(int n);
int af_fail_pending(void);

/* Start counting the blocks allocated on this thread that are not freed again. */
void af_track_begin(void);
/* Stop counting; returns how many of them are still allocated (-1 if more were
 * allocated than the tracker holds). */
int af_track_end(void);

#endif
