// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * clocklag: the estimate of the engine's clock lag from its replies' Date
 * headers, per window of CLOCKLAG_WINDOW seconds.
 */
#include "clocklag.h"

#include "check.h"

#define W CLOCKLAG_WINDOW

/* Before any reply: no lag. */
static void test_empty(void)
{
	struct clocklag c = {0};

	CHECK_INT(clocklag_get(&c), 0);
}

/* Within a window the smallest observation wins: a slow reply adds its
 * time in flight, never less. Negative lags (engine ahead) work alike. */
static void test_smallest_in_a_window(void)
{
	struct clocklag c = {0};
	double t0 = 1000.0;

	CHECK_INT(clocklag_add(&c, t0, 6), 6);
	CHECK_INT(clocklag_add(&c, t0 + 1, 5), 5);
	CHECK_INT(clocklag_add(&c, t0 + 2, 7), 5);
	CHECK_INT(clocklag_get(&c), 5);

	struct clocklag a = {0};

	CHECK_INT(clocklag_add(&a, t0, -3), -3);
	CHECK_INT(clocklag_add(&a, t0 + 1, -2), -3);
	CHECK_INT(clocklag_add(&a, t0 + 2, -4), -4);
}

/* The window before counts as long as it ended just now: the estimate
 * keeps the smaller of the two. */
static void test_previous_window_counts(void)
{
	struct clocklag c = {0};
	double t0 = 1000.0;

	CHECK_INT(clocklag_add(&c, t0, 3), 3);
	CHECK_INT(clocklag_add(&c, t0 + W + 1, 8), 3); /* window 2: 8, 3 */
	CHECK_INT(clocklag_add(&c, t0 + W + 2, 9), 3);
	/* window 3 begins at t0 + 2W + 1; the first (3) is dropped */
	CHECK_INT(clocklag_add(&c, t0 + 2 * W + 1, 10), 8);
	CHECK_INT(clocklag_add(&c, t0 + 2 * W + 2, 7), 7);
}

/* A clock that is set back (the engine's, or ours forward) shows in the
 * estimate within two windows; the old, smaller one is forgotten. */
static void test_clock_set_back_is_followed(void)
{
	struct clocklag c = {0};
	double t = 500.0;

	CHECK_INT(clocklag_add(&c, t, 0), 0);
	for (int i = 1; i <= 150; i++)
		clocklag_add(&c, t + i, 5); /* from t + 1 on: 5 s behind */
	CHECK_INT(clocklag_get(&c), 5);
}

/* A silent stretch longer than a window: the window before it is too old
 * to count, only what came after does. */
static void test_gap_drops_old_window(void)
{
	struct clocklag c = {0};
	double t0 = 1000.0;

	CHECK_INT(clocklag_add(&c, t0, 2), 2);
	CHECK_INT(clocklag_add(&c, t0 + 3 * W, 9), 9);
	CHECK_INT(clocklag_get(&c), 9);
}

/* The zero state starts a window at its first observation, whatever the
 * monotonic clock says (a machine up for less than a window too). */
static void test_first_observation_early_in_uptime(void)
{
	struct clocklag c = {0};

	CHECK_INT(clocklag_add(&c, 5.0, 4), 4);
	CHECK_INT(clocklag_add(&c, 6.0, 6), 4);
	CHECK_INT(clocklag_add(&c, 5.0 + W + 1, 6), 4);
}

int main(void)
{
	test_empty();
	test_smallest_in_a_window();
	test_previous_window_counts();
	test_clock_set_back_is_followed();
	test_gap_drops_old_window();
	test_first_observation_early_in_uptime();
	return check_report();
}
