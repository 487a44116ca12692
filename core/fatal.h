/* core/fatal.h — the way out of a failure inside a training step.
 *
 * Setup code returns a status (core/status.h). Inside a training step there is
 * nothing to return to: the op table (core/ops.h) has no error value, and a rank
 * that gave up silently would leave its MPI peers blocked in a collective forever.
 * Such a failure (an op called with invalid arguments, a CUDA launch or library
 * call that fails) is fatal: cg_fatal() logs one ERROR line
 *
 *   [host:rank subsys] ERROR file:line: call failed: message (fatal inside a
 *   training step, aborting)
 *
 * (the log prefix carries host and rank, core/log.h), flushes stdout and stderr,
 * then calls the installed handler with CG_FATAL_EXIT_CODE. core/ cannot call MPI
 * (ARCHITECTURE.md), so the handler is replaceable:
 * - default: abort(), the process dies with SIGABRT (a core dump where enabled);
 * - mpi/comm.c's comm_init installs one that calls comm_abort(), i.e. MPI_Abort
 *   on the world with CG_FATAL_EXIT_CODE, so the whole job ends at once and
 *   mpiexec exits with that code; comm_finalize puts back the handler that was
 *   installed before comm_init;
 * - tests install one that longjmps back.
 * A handler must not return; if it does, cg_fatal calls abort(). A fatal error
 * raised again while the same thread is inside the handler aborts at once. When
 * several threads fail together, the first one runs the handler and the others
 * log their line and wait for it to end the process.
 *
 * Threads — a limit, not handled: cg_fatal may be called on any thread and runs the
 * handler on the thread that failed. comm's handler calls MPI_Abort, but comm_init
 * initialises MPI with MPI_THREAD_FUNNELED, under which only the thread that called
 * comm_init may call MPI. MPI_Abort from another thread (perhaps while the main
 * thread is inside an MPI call) is outside the MPI standard: whether the job ends is
 * up to the MPI library, and this process may instead crash or hang, leaving its
 * peers waiting in a collective. Today every cg_fatal runs on the thread that calls
 * the ops — the CPU backend checks its arguments outside its OpenMP regions and the
 * CUDA backend checks its calls on the calling thread — and under MPI that is the
 * thread that called comm_init. A thread added later (a loader, a prefetcher) must
 * not call cg_fatal, nor an op (whose checks call it): it must hand its failure back
 * to the main thread, which then calls cg_fatal or returns the error. Otherwise the
 * program must initialise MPI itself with MPI_THREAD_MULTIPLE before comm_init,
 * which then uses MPI as it finds it. */
#ifndef CAPGNN_CORE_FATAL_H
#define CAPGNN_CORE_FATAL_H

#ifdef __cplusplus
extern "C" {
#endif

/* Exit code of a job ended by a fatal step error (the code handed to the handler;
 * comm_abort passes it to MPI_Abort). 70 is EX_SOFTWARE of <sysexits.h>: apart
 * from the capgnn command's 1 (runtime failure at set-up), 2 (usage) and 130
 * (interrupted), from the tests' 77 (skipped) and from the 124/137 of a timeout. */
#define CG_FATAL_EXIT_CODE 70

/* Log "file:line: call failed: <fmt...>" at ERROR under `subsys`, flush, call the
 * handler. `call` names what failed (the expression, the library call, the op). */
void cg_fatal(const char *subsys, const char *file, int line, const char *call, const char *fmt,
              ...) __attribute__((noreturn, format(printf, 5, 6)));

/* The same with the place filled in. */
#define CG_FATAL(subsys, call, ...) cg_fatal(subsys, __FILE__, __LINE__, call, __VA_ARGS__)

/* Install `handler` (called with CG_FATAL_EXIT_CODE and `ctx`; it must not return).
 * NULL restores the default, abort(). Call during set-up, before other threads
 * can fail. Also re-arms the calling thread after a handler that left cg_fatal by
 * longjmp (tests). */
void cg_fatal_set_handler(void (*handler)(int code, void *ctx), void *ctx);

/* The handler installed now and its context (*handler NULL: the default, abort()),
 * so that code that installs its own for a while (comm_init) can put the previous
 * one back when it is done (comm_finalize). */
void cg_fatal_get_handler(void (**handler)(int code, void *ctx), void **ctx);

#ifdef __cplusplus
}
#endif
#endif
