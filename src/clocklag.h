/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * How far our clock runs ahead of the engine's, from the Date header of
 * its replies. An observation is our second when a reply arrived less the
 * engine's second when it sent it: the true lag plus the reply's time in
 * flight, plus up to a second of rounding either way. The smallest seen is
 * kept per window of CLOCKLAG_WINDOW seconds, for the current window and
 * the one before it, so that the estimate follows a clock that is set
 * back within two windows. The true lag is below the estimate plus one
 * second. Not locked: its owner holds a lock around each call.
 */
#ifndef CTRFS_CLOCKLAG_H
#define CTRFS_CLOCKLAG_H

#include <stdbool.h>

#define CLOCKLAG_WINDOW 60.0 /* seconds */

/* All zero is an empty estimate. */
struct clocklag {
	long min[2];  /* the smallest observation of window 0 and 1 */
	bool seen[2]; /* window i has one */
	double since; /* the monotonic second window 0 began */
};

/* Adds observation d (our second - the engine's second), made at
 * monotonic second t; returns the estimate. */
long clocklag_add(struct clocklag *c, double t, long d);

/* The estimate: 0 before any observation. */
long clocklag_get(const struct clocklag *c);

#endif
