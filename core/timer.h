/* core/timer.h — wall-clock timing (CLOCK_MONOTONIC) and peak RSS.
 * Device work must be synchronised (backend->sync) before reading a timer that
 * is meant to cover it; see the README's definition of each metric timer. */
#ifndef CAPGNN_CORE_TIMER_H
#define CAPGNN_CORE_TIMER_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

double cg_time_now(void);         /* seconds, monotonic */
int64_t cg_peak_rss_bytes(void);  /* getrusage ru_maxrss, in bytes */

#ifdef __cplusplus
}
#endif
#endif
