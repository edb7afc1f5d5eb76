/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The engine's event stream: a thread that keeps one
 * GET /events?filters={"type":["container"]} open on a connection of its
 * own and has the container table listed again after each burst of events
 * that change it (create, start, die, rename, destroy, ...). While the
 * stream is open the table says so (ctr_set_live()); when it drops, one log
 * line, a full listing, and it is opened again after a backoff.
 */
#ifndef CTRFS_EVENTS_H
#define CTRFS_EVENTS_H

struct engine;
struct ctr_table;
struct events;

/* Starts the thread (call it after the daemon forked); NULL when it
 * cannot. The table must outlive it. name: the engine's directory in a
 * mount of several, which its log lines then say; "" with one engine. */
struct events *events_start(struct engine *e, struct ctr_table *t,
			    const char *name);
/* Stops the thread, waits for it and frees ev (NULL: nothing). */
void events_stop(struct events *ev);

#endif
