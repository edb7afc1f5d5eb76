// SPDX-License-Identifier: GPL-2.0-or-later
/* Preloaded into ctrfs by test_clock.py: time() a whole second behind
 * CLOCK_REALTIME, all the time. glibc's own time() reads the kernel's
 * coarse clock, which trails by up to a tick, so just after a second
 * begins it still says the last one; this makes that window permanent.
 * At load it logs to $CTRFS_SHIM_LOG (shim_log.h) that the process's
 * time() is this one: ctrfs should not call it at all, so the test
 * checks that the trap was set, not that it was sprung. */
#define _GNU_SOURCE
#include <time.h>

#include "shim_log.h"

static int called;

time_t time(time_t *out)
{
	struct timespec ts;
	time_t t;

	shim_log_first_call("time", &called);
	clock_gettime(CLOCK_REALTIME, &ts);
	t = ts.tv_sec - 1;
	if (out)
		*out = t;
	return t;
}

__attribute__((constructor)) static void coarse_time_loaded(void)
{
	shim_log_interposed("time", (void *)time);
}
