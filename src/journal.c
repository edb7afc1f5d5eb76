// SPDX-License-Identifier: GPL-2.0-or-later
#include "journal.h"
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

#define SHM_BASE "/dev/shm"
#define RUN_PFX	 "run-"
#define REC_SFX	 ".rec"

enum { J_DISK, J_MEM, J_WHERE };

struct journal {
	char dir[J_WHERE][PATH_MAX]; /* the journal and its twin on the tmpfs */
	int dfd[J_WHERE];	     /* open, or -1 */
	dev_t shm_dev;		     /* the tmpfs memory spool files are on */
	char engine[512];
	char run[64];	     /* this run's directory name, "" before start */
	int run_fd[J_WHERE]; /* this run's directories (locked), or -1 */
	pthread_mutex_t lock;
	atomic_ullong seq;
	atomic_ulong keys;
};

struct jentry {
	int where;
	char key[24];
	char data[64]; /* the data file's name, "" when none */
	dev_t dev;     /* the spool file it links, when linked */
	ino_t ino;
	bool linked; /* data is the spool file itself, not a copy */
	bool recorded;
};

/* A directory of this user's, closed to others (not a link). */
static bool private_dir(const struct stat *st)
{
	return S_ISDIR(st->st_mode) && st->st_uid == geteuid() &&
	       (st->st_mode & 07777) == 0700;
}

/* Opens (with create, makes) the private directory path: an fd, 0 when
 * missing and not to be made, or -errno with the reason in msg. */
static int open_private(const char *path, bool create, char *msg, size_t msglen)
{
	struct stat st;
	int fd;

	if (create && mkdir(path, 0700) < 0 && errno != EEXIST) {
		snprintf(msg, msglen,
			 "cannot make the journal directory '%s': %s", path,
			 strerror(errno));
		return -errno;
	}
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && !create)
		return 0;
	if (fd < 0 || fstat(fd, &st) < 0 || !private_dir(&st)) {
		int err = fd < 0 && errno != ELOOP && errno != ENOTDIR ? errno
								       : EPERM;

		if (err == EPERM && fd >= 0)
			snprintf(msg, msglen,
				 "refusing the journal directory '%s': owned "
				 "by uid %u with mode %04o, not a private "
				 "directory of uid %u (mode 0700); fix it, "
				 "or name another with -o spool=DIR",
				 path, (unsigned)st.st_uid,
				 (unsigned)(st.st_mode & 07777),
				 (unsigned)geteuid());
		else if (err == EPERM)
			snprintf(msg, msglen,
				 "refusing the journal directory '%s': not a "
				 "directory (a link?); name another with -o "
				 "spool=DIR",
				 path);
		else
			snprintf(msg, msglen,
				 "cannot open the journal directory '%s': %s",
				 path, strerror(err));
		if (fd >= 0)
			close(fd);
		return -err;
	}
	return fd;
}

int journal_open(const char *dir, bool create, const char *engine_url,
		 struct journal **out, char *msg, size_t msglen)
{
	struct journal *j = calloc(1, sizeof(*j));
	const char *base = getenv("TMPDIR");
	struct stat st;
	int ret = -ENAMETOOLONG;

	*out = NULL;
	if (!j)
		return -ENOMEM;
	pthread_mutex_init(&j->lock, NULL);
	for (int w = 0; w < J_WHERE; w++)
		j->dfd[w] = j->run_fd[w] = -1;
	snprintf(j->engine, sizeof(j->engine), "%s", engine_url);
	if (!base || !*base)
		base = "/var/tmp";
	if ((dir ? (size_t)snprintf(j->dir[J_DISK], PATH_MAX, "%s", dir)
		 : (size_t)snprintf(j->dir[J_DISK], PATH_MAX,
				    "%s/ctrfs-journal-%u", base,
				    (unsigned)geteuid())) >= PATH_MAX) {
		snprintf(msg, msglen, "journal directory name too long");
		goto out_free;
	}
	ret = open_private(j->dir[J_DISK], create, msg, msglen);
	if (ret <= 0)
		goto out_free;
	j->dfd[J_DISK] = ret;
	/* memory spool files cannot be linked to the disk: their entries go
	 * to a twin on the same tmpfs, named after this directory */
	if (fstat(j->dfd[J_DISK], &st) == 0 &&
	    (size_t)snprintf(j->dir[J_MEM], PATH_MAX,
			     SHM_BASE "/ctrfs-journal-%u-%llx-%llx",
			     (unsigned)geteuid(), (unsigned long long)st.st_dev,
			     (unsigned long long)st.st_ino) < PATH_MAX) {
		ret = open_private(j->dir[J_MEM], false, msg, msglen);
		if (ret < 0)
			goto out_free;
		j->dfd[J_MEM] = ret > 0 ? ret : -1;
	}
	if (stat(SHM_BASE, &st) == 0)
		j->shm_dev = st.st_dev;
	*out = j;
	return 0;
out_free:
	journal_free(j);
	return ret;
}

const char *journal_path(const struct journal *j)
{
	return j->dir[J_DISK];
}

/* Makes and locks this run's directory in the journal where (j->lock
 * held): its fd, or -errno. */
static int run_dir(struct journal *j, int where)
{
	int fd;

	if (j->run_fd[where] >= 0)
		return j->run_fd[where];
	if (!j->run[0])
		return -EINVAL;
	if (j->dfd[where] < 0) { /* the twin, made at its first use */
		char msg[PATH_MAX + 256];

		fd = open_private(j->dir[where], true, msg, sizeof(msg));
		if (fd < 0) {
			log_err("%s", msg);
			return fd;
		}
		j->dfd[where] = fd;
	}
	if (mkdirat(j->dfd[where], j->run, 0700) < 0)
		return -errno;
	fsync(j->dfd[where]);
	fd = openat(j->dfd[where], j->run,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* held until the daemon is gone: a start meanwhile leaves it be */
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	j->run_fd[where] = fd;
	return fd;
}

int journal_start(struct journal *j, char *msg, size_t msglen)
{
	struct timespec ts;
	int ret;

	clock_gettime(CLOCK_REALTIME, &ts);
	/* names sort in the order the runs started */
	snprintf(j->run, sizeof(j->run), RUN_PFX "%016llx-%d",
		 (unsigned long long)ts.tv_sec * 1000000000ULL +
		     (unsigned long long)ts.tv_nsec,
		 (int)getpid());
	pthread_mutex_lock(&j->lock);
	ret = run_dir(j, J_DISK);
	pthread_mutex_unlock(&j->lock);
	if (ret < 0)
		snprintf(msg, msglen, "cannot make a directory in '%s': %s",
			 j->dir[J_DISK], strerror(-ret));
	return ret < 0 ? ret : 0;
}

void journal_free(struct journal *j)
{
	if (!j)
		return;
	for (int w = 0; w < J_WHERE; w++) {
		if (j->run_fd[w] >= 0) {
			close(j->run_fd[w]);
			/* entries kept for the next start stay */
			if (unlinkat(j->dfd[w], j->run, AT_REMOVEDIR) == 0)
				fsync(j->dfd[w]);
		}
		if (j->dfd[w] >= 0)
			close(j->dfd[w]);
	}
	/* the twin goes with its last run: made again when needed */
	if (j->run[0] && j->dir[J_MEM][0])
		rmdir(j->dir[J_MEM]);
	pthread_mutex_destroy(&j->lock);
	free(j);
}

bool journal_recorded(const struct jentry *ent)
{
	return ent && ent->recorded;
}

/* Writes the record r under name in dfd, replacing what was there in one
 * step: written aside, synced, renamed, the directory synced. */
static int write_record(int dfd, const char *name, const struct jrecord *r)
{
	char tmp[80], *buf = malloc(JRECORD_MAX);
	ssize_t len = buf ? jrecord_encode(r, buf, JRECORD_MAX) : -ENOMEM;
	int fd = -1, ret = len < 0 ? (int)len : 0;

	snprintf(tmp, sizeof(tmp), "%s.tmp", name);
	if (ret == 0) {
		fd = openat(dfd, tmp,
			    O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
				O_CLOEXEC,
			    0600);
		if (fd < 0)
			ret = -errno;
	}
	for (ssize_t off = 0; ret == 0 && off < len;) {
		ssize_t n = write(fd, buf + off, (size_t)(len - off));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			ret = n < 0 ? -errno : -EIO;
		else
			off += n;
	}
	if (ret == 0 && fsync(fd) < 0)
		ret = -errno;
	if (fd >= 0 && close(fd) < 0 && ret == 0)
		ret = -errno;
	if (ret == 0 && renameat(dfd, tmp, dfd, name) < 0)
		ret = -errno;
	if (ret == 0 && fsync(dfd) < 0)
		ret = -errno;
	if (ret < 0 && fd >= 0)
		unlinkat(dfd, tmp, 0);
	free(buf);
	return ret;
}

/* Gives fd's file the name in dfd (a link), or a copy of it that name.
 * 1 when linked, 0 when copied, or -errno. */
static int link_or_copy(int fd, int dfd, const char *name)
{
	char proc[64];
	int to, ret;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	if (linkat(AT_FDCWD, proc, dfd, name, AT_SYMLINK_FOLLOW) == 0)
		return 1;
	/* another filesystem, or a spool file that was linked before (the
	 * kernel links an O_TMPFILE file once) or made without O_TMPFILE */
	if (errno != EXDEV && errno != ENOENT && errno != EPERM &&
	    errno != EOPNOTSUPP)
		return -errno;
	to = openat(dfd, name,
		    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (to < 0)
		return -errno;
	ret = spool_copy(to, fd);
	close(to);
	if (ret < 0)
		unlinkat(dfd, name, 0);
	return ret;
}

int journal_put(struct journal *j, struct jentry **entp, int fd,
		struct jrecord *r)
{
	struct jentry *ent = *entp, old;
	char rec[64], data[64];
	bool fresh, had;
	struct stat st;
	int where, dfd, ret;

	if (fstat(fd, &st) < 0)
		return -errno;
	where = j->shm_dev && st.st_dev == j->shm_dev ? J_MEM : J_DISK;
	pthread_mutex_lock(&j->lock);
	dfd = run_dir(j, where);
	if (dfd < 0 && where == J_MEM) /* no twin: a copy on disk */
		dfd = run_dir(j, where = J_DISK);
	pthread_mutex_unlock(&j->lock);
	if (dfd < 0)
		return dfd;
	had = ent != NULL;
	if (!ent) {
		ent = calloc(1, sizeof(*ent));
		if (!ent)
			return -ENOMEM;
		snprintf(ent->key, sizeof(ent->key), "e%lu",
			 atomic_fetch_add(&j->keys, 1));
		ent->where = where;
	}
	old = *ent;
	r->seq = atomic_fetch_add(&j->seq, 1) + 1;
	snprintf(r->engine, sizeof(r->engine), "%s", j->engine);
	r->size = (long long)st.st_size;
	/* a new data file unless the one there is this spool file */
	fresh = !ent->data[0] || !ent->linked || ent->where != where ||
		ent->dev != st.st_dev || ent->ino != st.st_ino;
	if (fresh) {
		snprintf(data, sizeof(data), "%s.%llu.data", ent->key, r->seq);
		ret = link_or_copy(fd, dfd, data);
		if (ret < 0)
			goto out_fail;
		ent->linked = ret == 1;
		ent->dev = st.st_dev;
		ent->ino = st.st_ino;
	} else {
		snprintf(data, sizeof(data), "%s", ent->data);
	}
	snprintf(r->data, sizeof(r->data), "%s", data);
	snprintf(rec, sizeof(rec), "%s" REC_SFX, ent->key);
	ret = write_record(dfd, rec, r);
	if (ret < 0) {
		if (fresh)
			unlinkat(dfd, data, 0);
		*ent = old;
		goto out_fail;
	}
	ent->where = where;
	ent->recorded = true;
	snprintf(ent->data, sizeof(ent->data), "%s", data);
	/* what the last record named: a replay sorts by seq, so a crash
	 * before these leaves an older entry that a newer one follows */
	if (had && old.where != where && old.recorded)
		unlinkat(j->run_fd[old.where], rec, 0);
	if (had && fresh && old.data[0])
		unlinkat(j->run_fd[old.where], old.data, 0);
	*entp = ent;
	return 0;
out_fail:
	if (!had)
		free(ent);
	return ret;
}

void journal_drop(struct journal *j, struct jentry *ent)
{
	char rec[64];

	if (!ent || !ent->recorded)
		return;
	/* not synced: should the removal be lost (a power cut), the next
	 * start commits the file again, which is harmless */
	snprintf(rec, sizeof(rec), "%s" REC_SFX, ent->key);
	unlinkat(j->run_fd[ent->where], rec, 0);
	ent->recorded = false;
}

void journal_release(struct journal *j, struct jentry **entp, bool keep)
{
	struct jentry *ent = *entp;

	if (!ent)
		return;
	if (!keep) {
		journal_drop(j, ent);
		if (ent->data[0])
			unlinkat(j->run_fd[ent->where], ent->data, 0);
	}
	free(ent);
	*entp = NULL;
}

/* ---- replay ---- */

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
	int *dirs; /* the runs' directories, locked: closed at the end */
	char (*dir_names)[64];
	int *dir_where;
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
	void *nd, *nn, *nw;
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
	if (nd)
		rp->dirs = nd;
	nn = realloc(rp->dir_names, (rp->ndirs + 1) * sizeof(*rp->dir_names));
	if (nn)
		rp->dir_names = nn;
	nw = realloc(rp->dir_where, (rp->ndirs + 1) * sizeof(*rp->dir_where));
	if (nw)
		rp->dir_where = nw;
	if (!nd || !nn || !nw) {
		close(dfd);
		return;
	}
	rp->dirs[rp->ndirs] = dfd;
	rp->dir_where[rp->ndirs] = where;
	snprintf(rp->dir_names[rp->ndirs++], 64, "%.63s", name);
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
	te.st.st_mode = S_IFREG | r->mode;
	te.st.st_uid = r->uid;
	te.st.st_gid = r->gid;
	te.st.st_mtim = r->mtime;
	te.st.st_size = r->size;
	te.st.st_nlink = 1;
	n = tarstream_header(&te, b->hdr, sizeof(b->hdr));
	if (n < 0 || pathmap_parent(r->path, parent, sizeof(parent)) < 0) {
		snprintf(msg, msglen, "cannot make its tar header");
		free(b);
		return n < 0 ? (int)n : -ENAMETOOLONG;
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
	int dfd = rp->dirs[i], where = rp->dir_where[i];
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
	if (unlinkat(rp->j->dfd[where], rp->dir_names[i], AT_REMOVEDIR) == 0)
		fsync(rp->j->dfd[where]);
}

void journal_replay(struct journal *j, struct engine *e)
{
	struct replay rp = {.j = j, .e = e};

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
	for (size_t i = 0; i < rp.n; i++) {
		struct found *f = &rp.list[i];
		bool done =
		    f->valid ? replay_one(&rp, f) : rescue_damaged(&rp, f);

		if (done) {
			char rec[64];

			snprintf(rec, sizeof(rec), "%s" REC_SFX, f->key);
			unlinkat(f->dfd, rec, 0);
			if (f->valid)
				unlinkat(f->dfd, f->r.data, 0);
			fsync(f->dfd);
		}
	}
	if (rp.left)
		log_err("journal: %zu file(s) stay in %s for a later start "
			"(another engine's, or not committed now)",
			rp.left, j->dir[J_DISK]);
	for (size_t i = 0; i < rp.ndirs; i++) {
		sweep_run(&rp, i);
		close(rp.dirs[i]);
	}
	spool_free(rp.spool);
	free(rp.list);
	free(rp.dirs);
	free(rp.dir_names);
	free(rp.dir_where);
}
