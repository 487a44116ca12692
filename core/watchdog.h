/* core/watchdog.h — a rank that stops making progress ends the job (--stall-timeout).
 *
 * The thread that trains marks its progress (cg_watch_mark: what it is doing, the
 * epoch and layer, whether it is waiting for the other ranks). A watchdog thread
 * looks at the marks; when none came for the timeout it logs, as ERROR lines, where
 * this rank stopped and what the other ranks of its host were doing, then ends this
 * process with CG_STALL_EXIT_CODE. The launcher then ends the job: Open MPI's mpirun
 * kills the other ranks when one exits without MPI_Finalize (a stopped one too, with
 * SIGKILL).
 *
 * Why a thread that exits rather than an MPI_Abort: under MPI_THREAD_FUNNELED only the
 * main thread may call MPI, and the main thread is the one that is stuck (in a wait
 * for a peer, a GPU synchronisation, a write to a hung file system). The watchdog
 * calls no MPI and takes no lock the main thread may hold, except stderr's (its ERROR
 * lines: a main thread stuck in a write to stderr holds that lock for ever, and then
 * the process ends 5 s later without them, from a thread of its own, with the same exit code). A
 * stalled rank cannot act at all when it is stopped (SIGSTOP stops its watchdog too):
 * its peers, waiting for it, are the ones that notice.
 *
 * Slots. Each rank publishes its marks in a slot. When the slots of a host's ranks
 * are in memory they share (mpi/'s comm_host_shared, handed over with
 * cg_watchdog_set_slots), the firing rank names the peer that stalled: one whose
 * watchdog stopped ticking is stopped (SIGSTOP, a debugger, a paused machine) or
 * starved; one that has been busy in the same step for long is stuck there. Ranks on
 * other hosts are not visible: their own watchdogs report them. Without shared slots
 * (one process) a private slot is used.
 *
 * Threads: cg_watch_mark is called by one thread (the one that trains); start / stop /
 * set_slots by that thread too, outside a started watchdog's life. */
#ifndef CAPGNN_CORE_WATCHDOG_H
#define CAPGNN_CORE_WATCHDOG_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Exit code of a process the watchdog ended: EX_TEMPFAIL of <sysexits.h> (the same
 * job may well run if started again), apart from capgnn's 1, 2, 70 and 130. */
#define CG_STALL_EXIT_CODE 75

/* Bytes of one rank's slot (its layout is private to core/watchdog.c). */
size_t cg_watch_slot_bytes(void);
/* Use `nslots` slots at `slots` (zeroed, shared by the ranks of this host), this
 * process's being slot `self`; `rank` is its world rank (for messages). NULL: a
 * private slot. The memory must outlive every started watchdog. */
void cg_watchdog_set_slots(void *slots, int nslots, int self, int rank);

/* Start watching with `timeout_s` > 0 (0: nothing is started, CG_OK). Marks "started"
 * now. CG_ERR_* when the thread cannot be created. */
int cg_watchdog_start(double timeout_s, const char *what);
/* Stop watching (joins the thread); a no-op when none runs. No stall report starts
 * after it began; one that had begun ends the process (stop does not return) or, in a
 * test, calls the handler first. */
void cg_watchdog_stop(void);

/* Progress: this rank is now in `where` (copied, up to 47 characters; e.g. "the
 * training step", "comm halo end (forward)") of `epoch` (0: none) at `layer` (-1:
 * none); waiting = 1 when the call waits for other ranks. Cheap (a few stores); does
 * nothing visible without a slot. */
void cg_watch_mark(const char *where, int epoch, int layer, int waiting);

/* What happens when the watchdog fires: handler(message, ctx), message being the ERROR
 * text it logged. Default (NULL): _exit(CG_STALL_EXIT_CODE). A handler that returns
 * ends the watchdog thread (tests). */
void cg_watchdog_set_handler(void (*handler)(const char *message, void *ctx), void *ctx);

#ifdef __cplusplus
}
#endif
#endif
