/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Logging: stderr in the foreground, syslog in the background; and the
 * clocks the log and its callers time things with. */
#ifndef CTRFS_LOG_H
#define CTRFS_LOG_H

#include <stdbool.h>
#include <syslog.h>
#include <time.h>

void log_init(bool to_stderr, bool debug);
bool log_debug_enabled(void);
void log_msg(int prio, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define log_err(...)  log_msg(LOG_ERR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARNING, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_dbg(...)                                                           \
	do {                                                                   \
		if (log_debug_enabled())                                       \
			log_msg(LOG_DEBUG, __VA_ARGS__);                       \
	} while (0)

/* Monotonic clock in seconds, for TTLs and durations. */
double now_mono(void);

/* The wall-clock time secs from now, as pthread_cond_timedwait() takes
 * it. */
void time_after(double secs, struct timespec *ts);

#endif
