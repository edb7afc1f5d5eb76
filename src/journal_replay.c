// SPDX-License-Identifier: GPL-2.0-or-later
/* The replay of the write-back journal at start: what runs that are gone
 * left is committed, or kept in the rescue directory (docs/design.md,
 * "Durable write-back"). */
#include "journal.h"
#include "journal_int.h"
#include "engine.h"
#include "errmap.h"
#include "jrecord.h"
#include "log.h"
#include "pathmap.h"
#include "spool.h"
#include "tarstream.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* One record found in a run that is gone. */
struct found {
	char run[64];
	int where;
	int dfd; /* its run directory (borrowed) */
	char key[24];
	bool valid;
	struct jrecord r;
};

struct replay {
	struct journal *j;
	struct engine *e;
	struct spool *spool; /* for rescue copies, made at the first */
	struct found *list;
	size_t n, cap;
	struct run_dir {
		int fd;	   /* locked: closed at the end */
		int where; /* J_DISK or J_MEM */
		char name[64];
	} * dirs; /* the runs' directories */
	size_t ndirs;
	size_t left; /* entries left for another engine or a later start */
};

static int by_run_seq(const void *a, const void *b)
{
	const struct found *x = a, *y = b;
	int c = strcmp(x->run, y->run);

	if (c)
		return c;
	return x->r.seq < y->r.seq ? -1 : x->r.seq > y->r.seq;
}

/* A stream of the entries of directory dfd, from its first: a dup of
 * dfd shares its offset, which an earlier stream left at the end. */
static DIR *open_entries(int dfd)
{
	int fd = dup(dfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

	if (!d && fd >= 0)
		close(fd);
	if (d)
		rewinddir(d);
	return d;
}

/* Reads the record name in dfd into f. */
static void read_record(int dfd, const char *name, struct found *f)
{
	char *buf = malloc(JRECORD_MAX + 1);
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	ssize_t len = 0, n;

	f->valid = false;
	while (buf && fd >= 0 && len <= JRECORD_MAX &&
	       (n = read(fd, buf + len, (size_t)(JRECORD_MAX + 1 - len))) > 0)
		len += n;
	if (buf && fd >= 0 && len <= JRECORD_MAX)
		f->valid = jrecord_decode(buf, (size_t)len, &f->r) == 0;
	if (fd >= 0)
		close(fd);
	free(buf);
}

/* Collects the records of the run directory name in the journal where,
 * unless its run is alive (its lock is held). */
static void scan_run(struct replay *rp, int where, const char *name)
{
	int dfd = openat(rp->j->dfd[where], name,
			 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct run_dir *nd;
	struct dirent *de;
	DIR *d;

	if (dfd >= 0 && strlen(name) >= 64) { /* not a name of ours */
		close(dfd);
		return;
	}
	if (dfd < 0)
		return;
	if (flock(dfd, LOCK_EX | LOCK_NB) < 0) { /* a mount that lives */
		close(dfd);
		return;
	}
	nd = realloc(rp->dirs, (rp->ndirs + 1) * sizeof(*rp->dirs));
	if (!nd) {
		close(dfd);
		return;
	}
	rp->dirs = nd;
	nd[rp->ndirs].fd = dfd;
	nd[rp->ndirs].where = where;
	snprintf(nd[rp->ndirs++].name, sizeof(nd->name), "%.63s", name);
	d = open_entries(dfd);
	if (!d)
		return;
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		struct found *f;

		if (len <= strlen(REC_SFX) || len - strlen(REC_SFX) >= 24 ||
		    strcmp(de->d_name + len - strlen(REC_SFX), REC_SFX) != 0)
			continue;
		if (rp->n == rp->cap) {
			size_t ncap = rp->cap ? 2 * rp->cap : 16;
			struct found *nl =
			    realloc(rp->list, ncap * sizeof(*nl));

			if (!nl)
				break;
			rp->list = nl;
			rp->cap = ncap;
		}
		f = &rp->list[rp->n++];
		memset(f, 0, sizeof(*f));
		snprintf(f->run, sizeof(f->run), "%.63s", name);
		f->where = where;
		f->dfd = dfd;
		snprintf(f->key, sizeof(f->key), "%.*s",
			 (int)(len - strlen(REC_SFX)), de->d_name);
		read_record(dfd, de->d_name, f);
	}
	closedir(d);
}

/* The tar body of a replayed file: header, data, padding, the end. */
struct rbody {
	char hdr[3 * 4096];
	size_t hdr_len;
	int fd;
	off_t size;
	int step;
};

static const char zeros[2 * TAR_BLOCK];

static int rbody_next(void *ctx, struct engine_piece *p)
{
	struct rbody *b = ctx;

	if (!p) { /* again from the start (engine.h) */
		b->step = 0;
		return 0;
	}
	switch (b->step++) {
	case 0:
		p->buf = b->hdr;
		p->len = b->hdr_len;
		return 1;
	case 1:
		if (b->size > 0) {
			p->buf = NULL;
			p->fd = b->fd;
			p->off = 0;
			p->len = (size_t)b->size;
			return 1;
		}
		b->step++;
		/* fall through */
	case 2:
		p->len =
		    (TAR_BLOCK - (size_t)(b->size % TAR_BLOCK)) % TAR_BLOCK;
		if (p->len) {
			p->buf = zeros;
			return 1;
		}
		b->step++;
		/* fall through */
	case 3:
		p->buf = zeros;
		p->len = sizeof(zeros);
		return 1;
	default:
		return 0;
	}
}

/* One PUT of the data in fd as r says. 0 or -errno, the reason in msg. */
static int put_file(struct engine *e, const struct jrecord *r, int fd,
		    char *msg, size_t msglen)
{
	struct rbody *b = calloc(1, sizeof(*b));
	char parent[PATH_MAX];
	struct tar_entry te;
	ssize_t n;
	int ret;

	if (!b)
		return -ENOMEM;
	memset(&te, 0, sizeof(te));
	te.name = strrchr(r->path, '/') + 1;
	te.st.st_mode = (r->type == 'd'	  ? S_IFDIR
			 : r->type == 'l' ? S_IFLNK
					  : S_IFREG) |
			r->mode;
	if (r->type == 'd' || r->type == 'l') {
		/* at the root by its full path: its parents may be pending
		 * entries themselves, made by the engine as it goes */
		te.name = r->path + 1;
		te.symlink = r->type == 'l' ? r->link : NULL;
		te.atime = r->type == 'd'; /* Docker 20.10 sets 0 else */
		te.st.st_atim = r->mtime;
	}
	if (r->has_atime) {
		te.atime = true;
		te.st.st_atim = r->atime;
	}
	te.xattrs = r->xattrs_len ? r->xattrs : NULL;
	te.xattrs_len = r->xattrs_len;
	te.st.st_uid = r->uid;
	te.st.st_gid = r->gid;
	te.st.st_mtim = r->mtime;
	te.st.st_size = r->size;
	te.st.st_nlink = 1;
	n = tarstream_header(&te, b->hdr, sizeof(b->hdr));
	if (te.name == r->path + 1)
		snprintf(parent, sizeof(parent), "/");
	else if (n >= 0 && pathmap_parent(r->path, parent, sizeof(parent)) < 0)
		n = -ENAMETOOLONG;
	if (n < 0) {
		snprintf(msg, msglen, "cannot make its tar header");
		free(b);
		return (int)n;
	}
	b->hdr_len = (size_t)n;
	b->fd = fd;
	b->size = r->size;
	ret = engine_archive_put(e, r->ctr_id, parent, rbody_next, b, r->size,
				 msg, msglen);
	free(b);
	return ret;
}

/* Whether the container is there: 0, -ENOENT when gone, else -errno. */
static int ctr_there(struct engine *e, const char *id)
{
	struct engine_reply rep;
	char *esc = engine_escape(id), path[256];
	int ret;

	if (!esc)
		return -ENOMEM;
	snprintf(path, sizeof(path), "/containers/%s/json", esc);
	engine_free_string(esc);
	ret = engine_request(e, "GET", path, &rep);
	if (ret < 0)
		return ret;
	ret = errmap_http(rep.status, NULL, 0);
	engine_reply_free(&rep);
	return ret;
}

/* Keeps the data file name of dfd in the rescue directory as path of
 * container ctr; 0 and the copy's path in where, or -errno. */
static int rescue(struct replay *rp, int dfd, const char *name, const char *ctr,
		  const char *path, char *where, size_t len)
{
	int fd, ret;

	if (!rp->spool && (ret = spool_new(NULL, false, &rp->spool)) < 0)
		return ret;
	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = spool_rescue(rp->spool, fd, ctr, path, where, len);
	close(fd);
	return ret;
}

/* A record that cannot be read: every data file of its key goes to the
 * rescue directory, as ctrfs-journal/RUN/NAME (its container and path are
 * not known). Whether it is done with. */
static bool rescue_damaged(struct replay *rp, struct found *f)
{
	char pfx[32], path[PATH_MAX], where[PATH_MAX + 64];
	size_t plen = (size_t)snprintf(pfx, sizeof(pfx), "%s.", f->key);
	bool done = true, any = false;
	struct dirent *de;
	DIR *d = open_entries(f->dfd);

	if (!d)
		return false;
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		int ret;

		if (strncmp(de->d_name, pfx, plen) != 0 || len < 5 ||
		    strcmp(de->d_name + len - 5, ".data") != 0)
			continue;
		any = true;
		snprintf(path, sizeof(path), "/%s/%s", f->run, de->d_name);
		ret = rescue(rp, f->dfd, de->d_name, "ctrfs-journal", path,
			     where, sizeof(where));
		if (ret == 0) {
			log_err("journal: the record of %s/%s/%s is damaged: "
				"its data is kept in %s",
				rp->j->dir[f->where], f->run, de->d_name,
				where);
		} else {
			log_err("journal: the record of %s/%s/%s is damaged, "
				"and its data cannot be kept in %s: %s; it "
				"stays there",
				rp->j->dir[f->where], f->run, de->d_name, where,
				strerror(-ret));
			done = false;
		}
	}
	closedir(d);
	if (!any)
		log_err("journal: the record %s/%s/%s" REC_SFX " is damaged "
			"and has no data; removed",
			rp->j->dir[f->where], f->run, f->key);
	return done;
}

static bool is_entry(const struct found *f)
{
	return f->valid && (f->r.type == 'd' || f->r.type == 'l');
}

/* Replays a valid record of a directory or a symlink: one PUT of its entry
 * (again: pass 0 makes the directories before the files, pass 1 puts
 * every entry after them, the times last). Whether it is done with. */
static bool replay_entry(struct replay *rp, struct found *f, int pass)
{
	const struct jrecord *r = &f->r;
	char msg[512];
	int ret;

	if (strcmp(r->engine, rp->j->engine) != 0) {
		rp->left += pass;
		return false;
	}
	ret = ctr_there(rp->e, r->ctr_id);
	if (ret == 0)
		ret = put_file(rp->e, r, -1, msg, sizeof(msg));
	else
		snprintf(msg, sizeof(msg), "%s",
			 ret == -ENOENT ? "the container is gone"
					: strerror(-ret));
	if (pass == 0)
		return false;
	if (ret == 0) {
		log_info("journal: made '%s' in container '%s', left pending "
			 "by a mount that ended",
			 r->path, r->ctr_name);
		return true;
	}
	if (ret != -ENOENT && ret != -EIO) {
		log_err("journal: cannot make '%s' in container '%s': %s; "
			"left for the next start",
			r->path, r->ctr_name, msg);
		rp->left++;
		return false;
	}
	log_err("journal: cannot make '%s' in container '%s' left pending by "
		"a mount that ended: %s; not made (it has no data to keep)",
		r->path, r->ctr_name, msg);
	return true;
}

/* Entries in the order a pass puts them: parents first (pass 0), or
 * children first (a name sorts before its own prefix). */
static int by_path_children_first(const void *a, const void *b)
{
	const unsigned char *x =
	    (const unsigned char *)((const struct found *)a)->r.path;
	const unsigned char *y =
	    (const unsigned char *)((const struct found *)b)->r.path;

	while (*x && *x == *y)
		x++, y++;
	if (!*x || !*y)
		return *x ? -1 : *y ? 1 : 0; /* the longer one first */
	return *x < *y ? -1 : 1;
}

/* Replays one valid record. Whether it is done with (committed, or kept
 * in the rescue directory). */
static bool replay_one(struct replay *rp, struct found *f)
{
	const struct jrecord *r = &f->r;
	char msg[512], where[PATH_MAX + 64];
	const char *why = NULL;
	struct stat st;
	int fd, ret;

	if (strcmp(r->engine, rp->j->engine) != 0) {
		rp->left++;
		return false;
	}
	fd = openat(f->dfd, r->data, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		log_err("journal: '%s' in container '%s': its data file %s is "
			"missing; nothing to commit",
			r->path, r->ctr_name, r->data);
		return true;
	}
	ret = ctr_there(rp->e, r->ctr_id);
	if (fstat(fd, &st) < 0 || st.st_size != r->size) {
		snprintf(msg, sizeof(msg),
			 "its data has %lld bytes, the record says %lld",
			 (long long)st.st_size, r->size);
		why = msg;
	} else if (ret == -ENOENT) {
		why = "the container is gone";
	} else if (ret < 0) {
		log_err("journal: cannot commit '%s' in container '%s': %s; "
			"left for the next start",
			r->path, r->ctr_name, strerror(-ret));
		close(fd);
		rp->left++;
		return false;
	} else {
		ret = put_file(rp->e, r, fd, msg, sizeof(msg));
		if (ret == 0) {
			log_info("journal: committed '%s' in container '%s', "
				 "left pending by a mount that ended",
				 r->path, r->ctr_name);
			close(fd);
			return true;
		}
		why = msg;
	}
	close(fd);
	ret = rescue(rp, f->dfd, r->data, r->ctr_name, r->path, where,
		     sizeof(where));
	if (ret == 0) {
		log_err("journal: cannot commit '%s' in container '%s' left "
			"pending by a mount that ended (%s): its data is kept "
			"in %s",
			r->path, r->ctr_name, why, where);
		return true;
	}
	log_err("journal: cannot commit '%s' in container '%s' (%s), nor keep "
		"it in %s: %s; it stays in %s/%s",
		r->path, r->ctr_name, why, where, strerror(-ret),
		rp->j->dir[f->where], f->run);
	rp->left++;
	return false;
}

/* Whether the file nm of run directory dfd belongs to a record still
 * there (one not replayed now): a valid one's data, or any data of a
 * damaged one's key. */
static bool still_named(const struct replay *rp, int dfd, const char *nm)
{
	for (size_t k = 0; k < rp->n; k++) {
		const struct found *f = &rp->list[k];
		size_t klen = strlen(f->key);
		char rec[64];

		if (f->dfd != dfd)
			continue;
		snprintf(rec, sizeof(rec), "%s" REC_SFX, f->key);
		if (faccessat(dfd, rec, F_OK, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (f->valid
			? strcmp(f->r.data, nm) == 0
			: strncmp(nm, f->key, klen) == 0 && nm[klen] == '.')
			return true;
	}
	return false;
}

/* Removes what a run left that no record names (data whose record was
 * never written or already removed, records written aside), then the run
 * itself when empty. */
static void sweep_run(struct replay *rp, size_t i)
{
	int dfd = rp->dirs[i].fd, where = rp->dirs[i].where;
	struct dirent *de;
	DIR *d = open_entries(dfd);

	while (d && (de = readdir(d))) {
		const char *nm = de->d_name;
		size_t len = strlen(nm), slen = strlen(REC_SFX);

		if (nm[0] == '.' ||
		    (len > slen && strcmp(nm + len - slen, REC_SFX) == 0))
			continue;
		if (!still_named(rp, dfd, nm))
			unlinkat(dfd, nm, 0);
	}
	if (d)
		closedir(d);
	if (unlinkat(rp->j->dfd[where], rp->dirs[i].name, AT_REMOVEDIR) == 0)
		fsync(rp->j->dfd[where]);
}

void journal_replay(struct journal *j, struct engine *e)
{
	struct replay rp = {.j = j, .e = e};
	struct found *ents;
	size_t nents = 0;

	for (int w = 0; w < J_WHERE; w++) {
		struct dirent *de;
		DIR *d;

		if (j->dfd[w] < 0 || !(d = open_entries(j->dfd[w])))
			continue;
		while ((de = readdir(d)))
			if (strncmp(de->d_name, RUN_PFX, strlen(RUN_PFX)) == 0)
				scan_run(&rp, w, de->d_name);
		closedir(d);
	}
	/* oldest first: a file recorded twice (moved between the disk and
	 * memory) lands with its newest content last */
	if (rp.n)
		qsort(rp.list, rp.n, sizeof(*rp.list), by_run_seq);
	/* directories first, parents first, so that files below them
	 * land; then the files; then every entry without data again,
	 * children first, so that their modes and times are the last word
	 * (the records' order kept in list for the files) */
	ents = rp.n ? calloc(rp.n, sizeof(*ents)) : NULL;
	for (size_t i = 0; ents && i < rp.n; i++)
		if (is_entry(&rp.list[i]))
			ents[nents++] = rp.list[i];
	if (nents)
		qsort(ents, nents, sizeof(*ents), by_path_children_first);
	for (size_t i = nents; i-- > 0;)
		if (ents[i].r.type == 'd')
			replay_entry(&rp, &ents[i], 0);
	for (size_t i = 0, k = 0; i < rp.n + nents; i++) {
		struct found *f = i < rp.n ? &rp.list[i] : &ents[k++];
		bool done;

		if (i < rp.n && is_entry(f))
			continue;
		done = is_entry(f) ? replay_entry(&rp, f, 1)
		       : f->valid  ? replay_one(&rp, f)
				   : rescue_damaged(&rp, f);
		if (done) {
			char rec[64];

			snprintf(rec, sizeof(rec), "%s" REC_SFX, f->key);
			unlinkat(f->dfd, rec, 0);
			if (f->valid && !is_entry(f))
				unlinkat(f->dfd, f->r.data, 0);
			fsync(f->dfd);
		}
	}
	free(ents);
	if (rp.left)
		log_err("journal: %zu file(s) stay in %s for a later start "
			"(another engine's, or not committed now)",
			rp.left, j->dir[J_DISK]);
	for (size_t i = 0; i < rp.ndirs; i++) {
		sweep_run(&rp, i);
		close(rp.dirs[i].fd);
	}
	spool_free(rp.spool);
	free(rp.list);
	free(rp.dirs);
}
