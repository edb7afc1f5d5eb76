// SPDX-License-Identifier: GPL-2.0-or-later
/* What a walk past the TTL chooses from the costs measured (callcost.h). */
#include "callcost.h"

#include <stdio.h>
#include <stdlib.h>

static int failed;

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__,     \
				#cond);                                        \
			failed = 1;                                            \
		}                                                              \
	} while (0)

static bool near(double a, double b)
{
	return a - b < 1e-9 && b - a < 1e-9;
}

int main(void)
{
	struct callcost c;

	/* start values stand until the first measure, which replaces them */
	callcost_init(&c, 0.001, 0.050, 0.150);
	CHECK(near(callcost_get(&c, CALL_GET), 0.050));
	callcost_note(&c, CALL_GET, 0.002);
	CHECK(near(callcost_get(&c, CALL_GET), 0.002));
	/* the first ones averaged evenly */
	callcost_note(&c, CALL_GET, 0.004);
	CHECK(near(callcost_get(&c, CALL_GET), 0.003));
	/* a call that waited behind a long GET counts as 4x the estimate */
	callcost_note(&c, CALL_GET, 1.5);
	CHECK(near(callcost_get(&c, CALL_GET), (0.002 + 0.004 + 0.012) / 3));
	/* later measures count 1/8 */
	callcost_init(&c, 0.001, 0.002, 0.150);
	for (int i = 0; i < 20; i++)
		callcost_note(&c, CALL_HEAD, 0.001);
	callcost_note(&c, CALL_HEAD, 0.002);
	CHECK(near(callcost_get(&c, CALL_HEAD), 0.001 + 0.001 / 8));
	callcost_note(&c, CALL_HEAD, -1); /* not a measure */
	CHECK(near(callcost_get(&c, CALL_HEAD), 0.001 + 0.001 / 8));

	/* Docker 26: a GET costs about a HEAD: a few stale entries of a small
	 * directory are one GET; a big subtree's bytes are not */
	callcost_init(&c, 0.002, 0.002, 0.050);
	CHECK(callcost_get_pays(&c, 4, 64 << 10));
	CHECK(!callcost_get_pays(&c, 1, 0));
	CHECK(!callcost_get_pays(&c, 8, (off_t)8 << 20));
	CHECK(callcost_get_pays(&c, 117, (off_t)8 << 20));
	/* Docker 20.10: a GET starts a helper process, 50 ms */
	callcost_init(&c, 0.0015, 0.050, 0.150);
	CHECK(!callcost_get_pays(&c, 30, 64 << 10));
	CHECK(callcost_get_pays(&c, 40, 64 << 10));
	/* Podman 4.3: HEAD 56 ms, GET 381 ms */
	callcost_init(&c, 0.056, 0.381, 0.300);
	CHECK(!callcost_get_pays(&c, 6, 0));
	CHECK(callcost_get_pays(&c, 8, 64 << 10));

	/* a listing streams past big files while that costs less than an
	 * exec: on Docker 26 streaming 240 MiB past three big files took
	 * 0.6 s more than listing them by exec (the fixed 256 MiB bound) */
	callcost_init(&c, 0.002, 0.003, 0.150);
	CHECK(callcost_list_cap(&c) == (off_t)(0.150 * CALLCOST_STREAM_RATE));
	for (int i = 0; i < 8; i++)
		callcost_note(&c, CALL_EXEC, 0.050);
	CHECK(callcost_list_cap(&c) < (off_t)16 << 20);
	CHECK(callcost_list_cap(&c) > (off_t)8 << 20);
	/* an exec that waited behind a transfer counts as 4x, not as it
	 * took */
	callcost_note(&c, CALL_EXEC, 30.0);
	CHECK(callcost_list_cap(&c) < (off_t)24 << 20);

	if (!failed)
		printf("callcost: all checks passed\n");
	return failed;
}
