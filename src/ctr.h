/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Containers: the list the engine reports, kept current by the engine's
 * event stream (events.c) or, while that is not open, refreshed when older
 * than its TTL; and what ctrfs needs to know of each (id, state, tmpfs
 * mounts).
 */
#ifndef CTRFS_CTR_H
#define CTRFS_CTR_H

#include <stdbool.h>
#include <stddef.h>

struct engine;

/* Reference-counted: ctr_lookup() hands out a reference, ctr_put() drops
 * it; the table holds one while the container is listed. */
struct ctr {
	char id[72];
	char name[256];
	char state[24];
	bool running;
	void *owner; /* ctr_table_new()'s ctx: whose table lists it */
};

struct ctr_table;

/* Called with the id of each container that left the engine's list; ctx
 * is also each container's owner. */
typedef void (*ctr_gone_fn)(void *ctx, const char *id);

struct ctr_table *ctr_table_new(struct engine *e, bool all, double ttl,
				ctr_gone_fn gone, void *ctx);
void ctr_table_free(struct ctr_table *t);

/* name: the engine's directory, which the table's log lines then say,
 * in a mount of several engines; "" with one (its lines as they always
 * were). The event stream that keeps the table current (events.c) is
 * its site's (fs_sites.c): the table is below it, and does not start it. */
void ctr_table_name(struct ctr_table *t, const char *name);

/* For events.c: lists the containers now (one GET, shared with lookups
 * waiting for one), 0 or -errno; and says whether the event stream is
 * open, so that an access need not list them again on age alone. */
int ctr_refresh(struct ctr_table *t);
void ctr_set_live(struct ctr_table *t, bool live);
/* A `rename` event: container id is called name now (the list read just
 * after it may still carry the old name too). */
void ctr_renamed(struct ctr_table *t, const char *id, const char *name);

/* 0 and a reference, -ENOENT when no such (visible) container, -EIO when
 * the engine cannot be reached. */
int ctr_lookup(struct ctr_table *t, const char *name, struct ctr **out);
void ctr_put(struct ctr_table *t, struct ctr *c);

/* The same for a path below the container's directory: a name no
 * container has now also finds the one renamed from it (docker rename),
 * so that what the kernel already holds under the old name (open files,
 * a cwd, directories open) follows the container; its directory itself,
 * looked up by the old name, is ENOENT (ctr_lookup()). */
int ctr_lookup_below(struct ctr_table *t, const char *name, struct ctr **out);

/* The names of the visible containers, packed NUL-terminated in *names
 * (free() it); 0 or -errno. */
int ctr_names(struct ctr_table *t, char **names, size_t *count);

/* 0, or -EOPNOTSUPP when path lies on a tmpfs mount of the container (the
 * archive API would show what is under the tmpfs, not the tmpfs). */
int ctr_check_path(struct ctr_table *t, struct ctr *c, const char *path);

#endif
