/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The smallest test harness that does the job: CHECK() and friends report
 * file:line and the failing expression, count passes and failures, and
 * check_report() prints "N passed, M failed" and gives main's exit status.
 * One translation unit per test program, so the counters can be static.
 */
#ifndef CTRFS_TEST_CHECK_H
#define CTRFS_TEST_CHECK_H

#include <stdio.h>
#include <string.h>

static unsigned check_passed __attribute__((unused));
static unsigned check_failed __attribute__((unused));

#define CHECK(expr)                                                            \
	do {                                                                   \
		if (expr) {                                                    \
			check_passed++;                                        \
		} else {                                                       \
			check_failed++;                                        \
			fprintf(stderr, "%s:%d: %s: CHECK(%s) failed\n",       \
				__FILE__, __LINE__, __func__, #expr);          \
		}                                                              \
	} while (0)

/* Integer equality, printing both values on failure. */
#define CHECK_INT(a, b)                                                        \
	do {                                                                   \
		long long check_a_ = (long long)(a);                           \
		long long check_b_ = (long long)(b);                           \
		if (check_a_ == check_b_) {                                    \
			check_passed++;                                        \
		} else {                                                       \
			check_failed++;                                        \
			fprintf(stderr,                                        \
				"%s:%d: %s: CHECK_INT(%s, %s) failed: "        \
				"%lld != %lld\n",                              \
				__FILE__, __LINE__, __func__, #a, #b,          \
				check_a_, check_b_);                           \
		}                                                              \
	} while (0)

/* String equality; NULL only equals NULL. */
#define CHECK_STR(a, b)                                                        \
	do {                                                                   \
		const char *check_a_ = (a);                                    \
		const char *check_b_ = (b);                                    \
		if (check_a_ == check_b_ ||                                    \
		    (check_a_ && check_b_ && !strcmp(check_a_, check_b_))) {   \
			check_passed++;                                        \
		} else {                                                       \
			check_failed++;                                        \
			fprintf(stderr,                                        \
				"%s:%d: %s: CHECK_STR(%s, %s) failed: "        \
				"\"%s\" != \"%s\"\n",                          \
				__FILE__, __LINE__, __func__, #a, #b,          \
				check_a_ ? check_a_ : "(null)",                \
				check_b_ ? check_b_ : "(null)");               \
		}                                                              \
	} while (0)

/* Prints the summary line; returns the exit status for main(). */
static inline int check_report(void)
{
	printf("%u passed, %u failed\n", check_passed, check_failed);
	return check_failed ? 1 : 0;
}

#endif
