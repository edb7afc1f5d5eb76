// SPDX-License-Identifier: GPL-2.0-or-later
#include "reader.h"
#include "ctr.h"
#include "engine.h"
#include "log.h"
#include "meta.h"
#include "spool.h"
#include "tarstream.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* History kept behind the transfer for reads that come back to what it
 * has just passed: a seek back, a page asked again, mmap read-around.
 * Readahead is synchronous (fs.c), so one task's reads come in order;
 * two of the largest requests (1 MiB). */
#define RING (2 * 1024 * 1024)
/* the most a transfer is drained to disk rather than closed: when another
 * call needs the container, and when it sat idle */
#define DRAIN_PREEMPT ((off_t)1 << 30)
#define DRAIN_IDLE    ((off_t)64 << 20)
#define IDLE_MAX      30.0 /* seconds: the longest a container stays locked */
/* Seconds between reads after which a transfer whose rest fits DRAIN_IDLE
 * is drained, before the idle close (a transfer with more left is closed
 * only then: resuming it costs a new GET and a skip). A `docker exec` on
 * the container waited 2.4 s behind a paused read with 56 MiB left when
 * every transfer waited for the idle close, 0.8 s with this, on Docker 26
 * and 20.10 alike, and the paused read went on as fast
 * (docs/performance-notes.md). */
#define DRAIN_SOON 0.5

struct reader {
	pthread_mutex_t lock;
	struct engine *e;
	struct meta *m;
	struct spool *drain_to; /* its engine's, or NULL: never drained */
	struct ctr ctr;
	char *path;
	struct engine_stream *s;
	struct tarstream *t;
	atomic_bool streaming; /* t is open: read without the lock */
	const char *blk;       /* unread rest of the current data block */
	size_t blklen;
	off_t pos;	  /* file offset of the next byte of the transfer */
	bool data_end;	  /* the transfer has delivered the whole file */
	char *ring;	  /* the last ring_len bytes before pos */
	size_t ring_len;  /* valid bytes */
	size_t ring_head; /* index where the byte at pos would go */
	double last_used;
	double idle_allow; /* idle seconds before the transfer is closed */
	bool closed_idle;  /* the reaper closed it: the next read resumes */
	bool drain_tried;  /* since the last read: not tried again early */
	double touched;	   /* when the cache entry was last confirmed */
	bool tried_cache;  /* looked for the content in the cache */
	off_t size;	   /* from the tar header of the transfer */
	int dfd;	   /* spool file holding [dfrom, dend) of the file, */
	off_t dfrom, dend; /* byte X of the file at dbase + X in it */
	off_t dbase;
	struct reader *prev, *next;
};

static int drain(struct reader *r, off_t max);

/* Whether the rest of r's file may go to the spool under max. */
static bool drain_fits(const struct reader *r, off_t max)
{
	return r->drain_to && r->size - r->pos <= max;
}

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct reader *registry;

static ssize_t stream_source(void *ctx, const void **buf)
{
	return engine_stream_read(ctx, buf);
}

int reader_new(struct engine *e, struct meta *m, struct spool *drain_to,
	       const struct ctr *c, const char *path, struct reader **out)
{
	struct reader *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	r->path = strdup(path);
	if (!r->path) {
		free(r);
		return -ENOMEM;
	}
	r->e = e;
	r->m = m;
	r->drain_to = drain_to;
	r->ctr = *c;
	r->last_used = now_mono();
	r->idle_allow = 0;
	r->dfd = -1;
	pthread_mutex_init(&r->lock, NULL);
	pthread_mutex_lock(&registry_lock);
	r->next = registry;
	if (registry)
		registry->prev = r;
	registry = r;
	pthread_mutex_unlock(&registry_lock);
	*out = r;
	return 0;
}

static void close_transfer(struct reader *r)
{
	tarstream_free(r->t);
	engine_stream_free(r->s);
	r->t = NULL;
	r->s = NULL;
	r->blk = NULL;
	r->blklen = 0;
	atomic_store(&r->streaming, false);
}

void reader_free(struct reader *r)
{
	if (!r)
		return;
	pthread_mutex_lock(&registry_lock);
	if (r->prev)
		r->prev->next = r->next;
	else
		registry = r->next;
	if (r->next)
		r->next->prev = r->prev;
	pthread_mutex_unlock(&registry_lock);
	/* a drain by the reaper or a preempt may still hold it */
	pthread_mutex_lock(&r->lock);
	pthread_mutex_unlock(&r->lock);
	close_transfer(r);
	if (r->dfd >= 0)
		close(r->dfd);
	pthread_mutex_destroy(&r->lock);
	free(r->ring);
	free(r->path);
	free(r);
}

static void fail(struct reader *r, const char *reason)
{
	log_err("cannot read '%s' in container '%s': %s", r->path, r->ctr.name,
		reason);
}

/* Starts the transfer from the beginning of the file. */
static int open_transfer(struct reader *r)
{
	struct tar_entry te;
	char msg[512];
	int ret;

	close_transfer(r);
	if (r->dfd >= 0) {
		close(r->dfd);
		r->dfd = -1;
	}
	r->pos = 0;
	r->ring_len = 0;
	r->ring_head = 0;
	r->data_end = false;
	ret = engine_archive_get(r->e, r->ctr.id, r->path, &r->s, msg,
				 sizeof(msg));
	if (ret < 0) {
		if (ret == -ENOENT)
			meta_forget(r->m, &r->ctr, r->path);
		else if (ret != -EINTR) /* the reader was killed */
			fail(r, msg);
		r->s = NULL;
		return ret;
	}
	ret = tarstream_open(stream_source, r->s, &r->t);
	if (ret < 0)
		goto out_close;
	atomic_store(&r->streaming, true);
	ret = tarstream_next(r->t, &te);
	if (ret != 0) {
		if (ret != -EINTR)
			fail(r, ret == 1 ? "empty archive"
					 : tarstream_error(r->t));
		ret = ret == 1 ? -EIO : ret;
		goto out_close;
	}
	if (!S_ISREG(te.st.st_mode) || te.hardlink) {
		ret = S_ISDIR(te.st.st_mode) ? -EISDIR : -EIO;
		fail(r, "not a regular file in the archive");
		goto out_close;
	}
	meta_learn(r->m, &r->ctr, r->path, &te);
	r->size = te.st.st_size;
	return 0;
out_close:
	close_transfer(r);
	return ret;
}

static void ring_append(struct reader *r, const char *p, size_t n)
{
	/* made on first use: files served from the spool never need it */
	if (!r->ring && !(r->ring = malloc(RING)))
		return; /* no history: a read behind pos restarts instead */
	if (n >= RING) {
		p += n - RING;
		n = RING;
	}
	while (n > 0) {
		size_t k = RING - r->ring_head;

		if (k > n)
			k = n;
		memcpy(r->ring + r->ring_head, p, k);
		r->ring_head = (r->ring_head + k) % RING;
		r->ring_len = r->ring_len + k > RING ? RING : r->ring_len + k;
		p += k;
		n -= k;
	}
}

/* Copies n bytes that lie back * before pos out of the ring. */
static void ring_copy(struct reader *r, char *out, size_t back, size_t n)
{
	size_t start = (r->ring_head + RING - back) % RING;

	while (n > 0) {
		size_t k = RING - start;

		if (k > n)
			k = n;
		memcpy(out, r->ring + start, k);
		out += k;
		n -= k;
		start = (start + k) % RING;
	}
}

/* After the file's last byte: reads the end of the archive so the GET
 * completes and releases the container now, not when the handle closes.
 * What goes wrong there costs the reader nothing: its data is whole. */
static void end_transfer(struct reader *r)
{
	struct tar_entry te;

	r->data_end = true;
	if (tarstream_next(r->t, &te) != 1)
		log_dbg("'%s': no clean end of the archive after the file",
			r->path);
	close_transfer(r);
}

/* Makes blk hold the next bytes of the file; 0, 1 at its end, or -errno. */
static int next_block(struct reader *r)
{
	const void *b;
	off_t boff;
	ssize_t n;

	if (r->blklen > 0)
		return 0;
	if (r->data_end)
		return 1;
	n = tarstream_data(r->t, &b, &boff);
	if (n < 0) {
		if (n != -EINTR)
			fail(r, tarstream_error(r->t));
		close_transfer(r);
		return (int)n;
	}
	if (n == 0) {
		end_transfer(r);
		return 1;
	}
	if (boff != r->pos) {
		fail(r, "sparse or out-of-order data in the archive");
		close_transfer(r);
		return -EIO;
	}
	r->blk = b;
	r->blklen = (size_t)n;
	return 0;
}

/* Takes the file's content from where a directory listing left it in the
 * spool: no GET at all. */
static bool from_cache(struct reader *r)
{
	off_t off, len;
	int fd;

	r->tried_cache = true;
	if (meta_content(r->m, &r->ctr, r->path, &fd, &off, &len) < 0)
		return false;
	if (r->dfd >= 0)
		close(r->dfd);
	r->dfd = fd;
	r->dbase = off;
	r->dfrom = 0;
	r->dend = len;
	r->pos = len;
	r->ring_len = 0;
	r->data_end = true;
	return true;
}

/* Whether the file is bigger now than the transfer that delivered all of
 * it (from cached attributes, which the caller's getattr just refreshed). */
static bool grew(struct reader *r)
{
	struct stat st;

	return meta_getattr(r->m, &r->ctr, r->path, &st, NULL, 0) == 0 &&
	       S_ISREG(st.st_mode) && st.st_size > r->pos;
}

/* One READ: the cases of where off lies against the transfer (in its
 * ring, ahead of it, behind it, past its end) are one decision, kept in
 * one place rather than spread over helpers that share its locals. */
ssize_t reader_read(struct reader *r, char *buf, size_t size, off_t off)
{
	size_t done = 0;
	ssize_t ret = 0;
	bool regrown = false;

	pthread_mutex_lock(&r->lock);
	r->last_used = now_mono();
	while (done < size) {
		off_t cur = off + (off_t)done;
		size_t k;
		int st;

		if (cur < r->pos && r->pos - cur <= (off_t)r->ring_len) {
			size_t back = (size_t)(r->pos - cur);

			k = back < size - done ? back : size - done;
			ring_copy(r, buf + done, back, k);
			done += k;
			continue;
		}
		if (r->dfd >= 0 && cur >= r->dfrom && cur < r->dend) {
			off_t left = r->dend - cur;
			ssize_t n;

			k = left < (off_t)(size - done) ? (size_t)left
							: size - done;
			n = pread(r->dfd, buf + done, k, r->dbase + cur);
			if (n <= 0) {
				ret = n < 0 ? -errno : -EIO;
				break;
			}
			done += (size_t)n;
			continue;
		}
		if (cur >= r->pos && r->data_end) {
			/* the kernel asks past the end only when a getattr
			 * said the file is bigger: it grew since this handle
			 * read it (a log under `tail -f`). The archive API
			 * has no ranges: read it again from its start. */
			if (regrown || !grew(r))
				break;
			regrown = true;
			ret = open_transfer(r);
			if (ret < 0)
				break;
			continue;
		}
		if (r->pos == 0 && !r->t && !r->data_end && !r->tried_cache &&
		    from_cache(r))
			continue;
		if (cur < r->pos || (!r->t && !r->data_end)) {
			if (r->closed_idle) {
				/* a slow consumer: resuming costs a new GET
				 * and a skip, so let it idle longer next time
				 */
				r->idle_allow *= 2;
				if (r->idle_allow > IDLE_MAX)
					r->idle_allow = IDLE_MAX;
				r->closed_idle = false;
			}
			ret = open_transfer(r);
			if (ret < 0)
				break;
		}
		st = next_block(r);
		if (st < 0) {
			ret = st;
			break;
		}
		if (st == 1)
			break;
		if (cur > r->pos) { /* skip forward, keeping the ring */
			off_t gap = cur - r->pos;

			k = gap < (off_t)r->blklen ? (size_t)gap : r->blklen;
		} else {
			k = size - done < r->blklen ? size - done : r->blklen;
			memcpy(buf + done, r->blk, k);
			done += k;
		}
		ring_append(r, r->blk, k);
		r->blk += k;
		r->blklen -= k;
		r->pos += (off_t)k;
	}
	/* the whole file delivered: read the archive's end now, so the GET
	 * completes and frees the container. The kernel asks nothing past the
	 * size it knows, so a file whose size is a multiple of 4 KiB would
	 * otherwise hold the GET open until the close or the reaper. */
	if (ret >= 0 && r->t && !r->data_end && r->blklen == 0 &&
	    r->pos >= r->size) {
		const void *b;
		off_t boff;

		/* libarchive says "no more data" once before the next
		 * header; what fails here leaves the data whole */
		(void)tarstream_data(r->t, &b, &boff);
		end_transfer(r);
	}
	r->last_used = now_mono();
	r->drain_tried = false;
	if (r->t && r->last_used - r->touched > 0.25) {
		/* the transfer is the truth about this file while it runs,
		 * and a HEAD would wait for it to end (the engine serializes
		 * archive calls per container) */
		meta_touch(r->m, &r->ctr, r->path);
		r->touched = r->last_used;
	}
	pthread_mutex_unlock(&r->lock);
	/* a short read is the end of the file to the kernel: an error must
	 * not pass for one, even after part of the request was served */
	return ret < 0 ? ret : (ssize_t)done;
}

static bool idle_transfer(struct reader *r, const void *arg)
{
	double idle = *(const double *)arg, quiet;

	if (r->idle_allow < idle)
		r->idle_allow = idle;
	if (!r->t)
		return false;
	quiet = now_mono() - r->last_used;
	return quiet > r->idle_allow ||
	       (quiet > DRAIN_SOON && !r->drain_tried &&
		drain_fits(r, DRAIN_IDLE));
}

/* the container of an engine whose transfer a call needs ended */
struct ctr_key {
	const struct engine *e;
	const char *id;
};

static bool ctr_transfer(struct reader *r, const void *arg)
{
	const struct ctr_key *k = arg;

	return r->t && r->e == k->e && strcmp(r->ctr.id, k->id) == 0;
}

/*
 * Finds a reader between reads (a reader inside a read keeps its transfer
 * flowing) that match() picks, and returns it locked.  The registry lock
 * is not held on return: draining a transfer may take seconds, and
 * getattr (reader_ctr_busy) must not wait for it.  reader_free() waits
 * for the reader's lock, so the reader stays valid until it is unlocked.
 */
static struct reader *pick(bool (*match)(struct reader *, const void *),
			   const void *arg)
{
	struct reader *found = NULL;

	pthread_mutex_lock(&registry_lock);
	for (struct reader *r = registry; r && !found; r = r->next) {
		if (pthread_mutex_trylock(&r->lock) != 0)
			continue;
		if (match(r, arg))
			found = r;
		else
			pthread_mutex_unlock(&r->lock);
	}
	pthread_mutex_unlock(&registry_lock);
	return found;
}

void reader_reap(double idle)
{
	struct reader *r;

	/* each pick ends its reader's transfer or marks it tried early:
	 * the loop ends */
	while ((r = pick(idle_transfer, &idle))) {
		bool late = now_mono() - r->last_used > r->idle_allow;

		r->drain_tried = true;
		log_dbg("'%s': no read for %.2f s: %s", r->path,
			now_mono() - r->last_used,
			late ? "idle"
			     : "its rest fits the spool, drained early");
		if (drain(r, DRAIN_IDLE) < 0 && r->t && late) {
			log_dbg("'%s': transfer idle, closed at offset %lld",
				r->path, (long long)r->pos);
			close_transfer(r);
			r->closed_idle = true;
		}
		pthread_mutex_unlock(&r->lock);
	}
}

bool reader_ctr_busy(const struct engine *e, const char *ctr_id)
{
	bool busy = false;

	pthread_mutex_lock(&registry_lock);
	for (struct reader *r = registry; r && !busy; r = r->next)
		busy = atomic_load(&r->streaming) && r->e == e &&
		       strcmp(r->ctr.id, ctr_id) == 0;
	pthread_mutex_unlock(&registry_lock);
	return busy;
}

/* Writes the rest of the transfer to fd, each byte at its offset in the
 * file; 0 once the whole file is there, or -errno. */
static int copy_rest(struct reader *r, int fd, bool keep_ring)
{
	int st;

	while ((st = next_block(r)) == 0) {
		ssize_t n = pwrite(fd, r->blk, r->blklen, r->pos);

		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		if (keep_ring)
			ring_append(r, r->blk, (size_t)n);
		r->blk += n;
		r->blklen -= (size_t)n;
		r->pos += n;
	}
	return st == 1 ? 0 : st;
}

int reader_copy(struct engine *e, struct meta *m, const struct ctr *c,
		const char *path, int fd)
{
	struct reader *r;
	off_t off, len;
	int ret, cfd;

	/* what a listing, or ctrfs's own write, left in the cache, if a
	 * HEAD says the file is still that: no GET */
	if (meta_content_now(m, c, path, &cfd, &off, &len) == 0) {
		ret = spool_copy_range(fd, cfd, off, len);
		close(cfd);
		if (ret == 0)
			return 0;
		if (ftruncate(fd, 0) < 0 || lseek(fd, 0, SEEK_SET) < 0)
			return -errno;
	}
	ret = reader_new(e, m, NULL, c, path, &r);
	if (ret < 0)
		return ret;
	pthread_mutex_lock(&r->lock);
	ret = open_transfer(r);
	if (ret == 0)
		ret = copy_rest(r, fd, false);
	if (ret < 0 && r->t) /* next_block() has said why it failed */
		log_err("cannot copy '%s' of container '%s' to the spool: %s",
			path, c->name, strerror(-ret));
	pthread_mutex_unlock(&r->lock);
	reader_free(r);
	return ret;
}

/*
 * Reads the rest of an open transfer into a spool file, so that the GET
 * ends (and frees the container) while the reader can go on from disk.
 * Only for a rest of at most max bytes; 0, or -errno (then the transfer
 * is closed and will be resumed with a new GET).
 */
static int drain(struct reader *r, off_t max)
{
	off_t from = r->pos;
	int fd, st;

	bool was;

	if (!drain_fits(r, max))
		return -EFBIG;
	fd = spool_file(r->drain_to);
	if (fd < 0)
		return fd;
	/* for this reader's sake, not for the caller in whose thread it runs */
	was = engine_set_abortable(false);
	st = copy_rest(r, fd, true);
	engine_set_abortable(was);
	if (st < 0) {
		close(fd);
		close_transfer(r);
		return st;
	}
	if (r->dfd >= 0)
		close(r->dfd);
	r->dfd = fd;
	r->dbase = 0;
	r->dfrom = from;
	r->dend = r->pos;
	log_dbg("'%s': drained %lld bytes to the spool", r->path,
		(long long)(r->dend - from));
	return 0;
}

void reader_preempt(const struct engine *e, const char *ctr_id)
{
	const struct ctr_key k = {e, ctr_id};
	struct reader *r;

	/* a reader between reads would hold the container until
	 * idle-closed; each pick ends its reader's transfer */
	while ((r = pick(ctr_transfer, &k))) {
		if (drain(r, DRAIN_PREEMPT) < 0 && r->t) {
			log_dbg("'%s': transfer closed at offset %lld for "
				"another call on the container",
				r->path, (long long)r->pos);
			close_transfer(r);
		}
		pthread_mutex_unlock(&r->lock);
	}
}
