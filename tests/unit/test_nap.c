// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * nap: the sleep of a reader of a long GET body between the engine's
 * writes, from the rate seen so far.
 */
#include "nap.h"

#include "check.h"

#define MIB (1024.0 * 1024.0)

/* Near a value: the rule is arithmetic on doubles. */
#define CHECK_NEAR(a, b) CHECK((a) > (b)*0.999 && (a) < (b)*1.001)

/* The first MiB of a body, or no time measured: no rate, no nap. */
static void test_no_nap_before_a_rate(void)
{
	CHECK(nap_seconds(0, 0.1) == 0);
	CHECK(nap_seconds(NAP_AFTER - 1, 0.1) == 0);
	CHECK(nap_seconds(NAP_AFTER, 0) == 0);
	CHECK(nap_seconds(NAP_AFTER, -1) == 0);
}

/* The time the engine takes to send NAP_BATCH at the rate seen: 64 KiB at
 * 320 MiB/s (a cold 1 GiB GET here) is 195 us; at 3,200 MiB/s, 19.5 us. */
static void test_the_time_of_a_batch(void)
{
	CHECK_NEAR(nap_seconds(NAP_AFTER, NAP_AFTER / (320 * MIB)),
		   NAP_BATCH / (320 * MIB));
	CHECK_NEAR(nap_seconds(1LL << 30, 3.2), NAP_BATCH / (320 * MIB));
	CHECK_NEAR(nap_seconds(1LL << 30, 0.32), NAP_BATCH / (3200 * MIB));
}

/* A slow engine: never more than NAP_MAX per wait. */
static void test_a_slow_engine_is_capped(void)
{
	CHECK(nap_seconds(NAP_AFTER, 60.0) == NAP_MAX);
	CHECK(nap_seconds(2 * NAP_AFTER, 1.0) == NAP_MAX);
	CHECK(nap_seconds(1LL << 40, 1e6) == NAP_MAX);
}

int main(void)
{
	test_no_nap_before_a_rate();
	test_the_time_of_a_batch();
	test_a_slow_engine_is_capped();
	return check_report();
}
