// SPDX-License-Identifier: GPL-2.0-or-later
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

static bool use_stderr = true;
static bool debug_on;

void log_init(bool to_stderr, bool debug)
{
	use_stderr = to_stderr;
	debug_on = debug;
	if (!to_stderr)
		openlog("ctrfs", LOG_PID, LOG_DAEMON);
}

bool log_debug_enabled(void)
{
	return debug_on;
}

void log_msg(int prio, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (use_stderr) {
		/* room for two paths of PATH_MAX and a reason, so that the
		 * reason at the end of a line is never cut off */
		char line[3 * 4096];

		vsnprintf(line, sizeof(line), fmt, ap);
		fprintf(stderr, "ctrfs: %s\n", line);
	} else {
		vsyslog(prio, fmt, ap);
	}
	va_end(ap);
}

void time_after(double secs, struct timespec *ts)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec += (time_t)secs;
	ts->tv_nsec += (long)((secs - (double)(time_t)secs) * 1e9);
	if (ts->tv_nsec >= 1000000000) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000;
	}
}

double now_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
