/* core/log.h — logging filtered by level and subsystem.
 *
 * LOG_ERROR/WARN/INFO/DEBUG(subsys, fmt, ...) print "[host:rank subsys] message" to
 * stderr. Environment:
 *   CAPGNN_LOG_LEVEL   error|warn|info|debug   (default info)
 *   CAPGNN_LOG_SUBSYS  comma list of subsystems to show (default: all)
 *   CAPGNN_LOG_ALL_RANKS=1  INFO/DEBUG from every rank (default: rank 0 only;
 *                           WARN and ERROR always print on every rank, except
 *                           LOG_WARN_COMMON: a warning that every rank meets
 *                           identically, having done the same work, such as
 *                           generating the same graph: rank 0 prints it once)
 * cg_log_set_rank() is called once MPI is up; before that the rank prints as 0. */
#ifndef CAPGNN_CORE_LOG_H
#define CAPGNN_CORE_LOG_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum cg_log_level { CG_LOG_ERROR = 0, CG_LOG_WARN = 1, CG_LOG_INFO = 2, CG_LOG_DEBUG = 3 };

void cg_log_set_rank(int rank);
void cg_log_set_level(enum cg_log_level level); /* overrides the environment */
int cg_log_enabled(enum cg_log_level level, const char *subsys);
int cg_log_prints_common(void); /* rank 0, or CAPGNN_LOG_ALL_RANKS=1 */
void cg_log_write(enum cg_log_level level, const char *subsys, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
const char *cg_hostname(void);
/* text copied to out (cap bytes, NUL-terminated) with every control byte (below 0x20,
 * newline and tab included, and 0x7f) written as \xNN, and every C1 control: U+0080 to
 * U+009F UTF-8 encoded (\xc2\x9b for CSI), and a byte 0x80..0x9F that is no part of a
 * well-formed UTF-8 sequence (\x9b); so that a user's string quoted in a message (an ESC
 * in a file name) cannot move the cursor, recolour or ring the terminal. Other UTF-8
 * (accented letters too) and other invalid bytes are kept; backslashes are kept as they
 * are, so that escaping twice changes nothing. Cut short at a whole character (a whole
 * escape, a whole UTF-8 sequence); returns out. cg_log_write, cg_err_set and capgnn's
 * usage errors pass their formatted text through it (none of their formats holds a
 * control byte). */
char *cg_text_escape(char *out, size_t cap, const char *text);

#define CG_LOG_(lvl, subsys, ...)                                         \
  do {                                                                    \
    if (cg_log_enabled(lvl, subsys)) cg_log_write(lvl, subsys, __VA_ARGS__); \
  } while (0)
#define LOG_ERROR(subsys, ...) CG_LOG_(CG_LOG_ERROR, subsys, __VA_ARGS__)
#define LOG_WARN(subsys, ...) CG_LOG_(CG_LOG_WARN, subsys, __VA_ARGS__)
#define LOG_WARN_COMMON(subsys, ...)                                   \
  do {                                                                 \
    if (cg_log_enabled(CG_LOG_WARN, subsys) && cg_log_prints_common()) \
      cg_log_write(CG_LOG_WARN, subsys, __VA_ARGS__);                  \
  } while (0)
#define LOG_INFO(subsys, ...) CG_LOG_(CG_LOG_INFO, subsys, __VA_ARGS__)
#define LOG_DEBUG(subsys, ...) CG_LOG_(CG_LOG_DEBUG, subsys, __VA_ARGS__)

#ifdef __cplusplus
}
#endif
#endif
