/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What an engine's calls cost here, as measured while ctrfs runs: a HEAD's
 * round trip, a GET's time to its first byte (on Docker 20.10 and 23
 * that is where the helper process it starts for each archive call costs;
 * 26 starts none) and an exec's whole run. The choices that trade one
 * kind of call or transfer for another (a walk past the TTL: one GET of a
 * directory or a HEAD per entry; a listing: stream past a big file or
 * list by exec) ask this instead of constants tuned on one engine
 * (docs/performance-notes.md, "The fast-path rules measured on both
 * engines"). Pure and not locked: its
 * owner (struct engine) holds a lock around each call.
 */
#ifndef CTRFS_CALLCOST_H
#define CTRFS_CALLCOST_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

enum call_kind { CALL_HEAD, CALL_GET, CALL_EXEC, CALL_KINDS };

/* How fast a GET's tar goes into the cache (the loader's libarchive and
 * cache inserts included): measured on Docker 26, a GET of a Debian root's
 * /usr, 116 MB in 0.97 s (docs/performance-notes.md). */
#define CALLCOST_LOAD_RATE (100.0 * 1024 * 1024) /* bytes per second */

/* How fast a GET's tar streams past data nobody keeps (a listing reading
 * over a big file): 256 MiB/s, Docker 20.10's in ENGINE.md, the slower of
 * the two (26 gave about 400 MiB/s). */
#define CALLCOST_STREAM_RATE (256.0 * 1024 * 1024)

struct callcost {
	double est[CALL_KINDS]; /* seconds */
	unsigned n[CALL_KINDS]; /* measures taken, up to CALLCOST_WEIGHT */
};

#define CALLCOST_WEIGHT 8 /* the newest measure counts 1/8 once 8 are in */

/* Start values, until measures come: what an engine of the kind costs. */
void callcost_init(struct callcost *c, double head, double get, double exec);

/* One measure of a call of kind k that took secs. The first ones are
 * averaged evenly, later ones count 1/CALLCOST_WEIGHT; a measure over four
 * times the estimate counts as four times it (a call queued behind a long
 * GET on its container waits for that GET, which is not what the call
 * costs). */
void callcost_note(struct callcost *c, enum call_kind k, double secs);

double callcost_get(const struct callcost *c, enum call_kind k);

/* Whether one GET of a subtree of bytes bytes costs less than stale
 * HEADs. */
bool callcost_get_pays(const struct callcost *c, size_t stale, off_t bytes);

/* The bytes of tar a listing may stream before it costs more than listing
 * by one exec. */
off_t callcost_list_cap(const struct callcost *c);

#endif
