/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Reading one open file: a GET of the file streamed through libarchive into
 * the caller's buffers. Reads that go forward continue the transfer (a gap
 * is skipped); the last RING bytes delivered are kept so that readahead
 * arriving slightly out of order, and short seeks back, are served without
 * restarting it; a seek further back restarts it. A transfer idle for
 * longer than the idle time is closed by reader_reap(), since an open GET
 * holds the container's lock in the engine; the next read resumes it (a
 * new GET, skipping to where it was). Each resume doubles that reader's
 * idle allowance, up to 30 s, so a consumer that is slow, not gone, does
 * not pay for a restart again and again.
 */
#ifndef CTRFS_READER_H
#define CTRFS_READER_H

#include <stdbool.h>
#include <sys/types.h>

struct ctr;
struct engine;
struct meta;
struct reader;
struct spool;

/* Copies what it needs of c; path is the path inside the container.
 * drain_to (borrowed: the spool of c's engine, or NULL for none) is where
 * the transfer is drained to when it must end early: a reader whose GET has
 * to let go of the container (another call needs it, or it sat idle) reads
 * the rest of a file of moderate size into a spool file and goes on from
 * there, instead of a new GET and a skip later. */
int reader_new(struct engine *e, struct meta *m, struct spool *drain_to,
	       const struct ctr *c, const char *path, struct reader **out);

/* Bytes copied into buf (short only at the end of the file), or -errno. */
ssize_t reader_read(struct reader *r, char *buf, size_t size, off_t off);

void reader_free(struct reader *r);

/* Copies the whole current content of path into fd (at offset 0). */
int reader_copy(struct engine *e, struct meta *m, const struct ctr *c,
		const char *path, int fd);

/* True while a reader of the container (ctr_id of engine e: a mount's
 * engines may share an id) has a transfer open: the engine then makes
 * every other archive call on that container wait. */
bool reader_ctr_busy(const struct engine *e, const char *ctr_id);

/* Closes the open transfers of readers of the container that are not in
 * a read right now (see engine_set_preempt()). */
void reader_preempt(const struct engine *e, const char *ctr_id);

/* Closes the transfers of every reader idle for longer than idle seconds. */
void reader_reap(double idle);

#endif
