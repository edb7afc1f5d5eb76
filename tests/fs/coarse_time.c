// SPDX-License-Identifier: GPL-2.0-or-later
/* Preloaded into ctrfs by test_clock.py: time() a whole second behind
 * CLOCK_REALTIME, all the time. glibc's own time() reads the kernel's
 * coarse clock, which trails by up to a tick, so just after a second
 * begins it still says the last one; this makes that window permanent. */
#define _GNU_SOURCE
#include <time.h>

time_t time(time_t *out)
{
	struct timespec ts;
	time_t t;

	clock_gettime(CLOCK_REALTIME, &ts);
	t = ts.tv_sec - 1;
	if (out)
		*out = t;
	return t;
}
