// SPDX-License-Identifier: GPL-2.0-or-later
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
#include <sys/statfs.h>
#include <linux/magic.h>
#include <time.h>
#include <unistd.h>

#define SHM_BASE "/dev/shm"

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

void journal_entries_in_memory(struct journal *j, bool on)
{
	if (j)
		j->entries_mem = on;
}

const char *journal_path(const struct journal *j)
{
	return j->dir[J_DISK];
}

/* Makes and locks this run's directory in the journal where (j->lock
 * held): its fd, or -errno. */
static int run_dir(struct journal *j, int where)
{
	struct statfs sfs;
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
	j->volatile_fs[where] =
	    fstatfs(j->dfd[where], &sfs) == 0 && sfs.f_type == TMPFS_MAGIC;
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
static int write_record(int dfd, const char *name, const struct jrecord *r,
			bool sync)
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
	if (ret == 0 && sync && fsync(fd) < 0)
		ret = -errno;
	if (fd >= 0 && close(fd) < 0 && ret == 0)
		ret = -errno;
	if (ret == 0 && renameat(dfd, tmp, dfd, name) < 0)
		ret = -errno;
	if (ret == 0 && sync && fsync(dfd) < 0)
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

	memset(&st, 0, sizeof(st));
	if (fd >= 0 && fstat(fd, &st) < 0)
		return -errno;
	/* an entry without data (fd -1: a directory, a symlink) is only its
	 * record: with the memory spool's files on the tmpfs, as they are */
	where = fd >= 0
		    ? (j->shm_dev && st.st_dev == j->shm_dev ? J_MEM : J_DISK)
		    : (j->entries_mem ? J_MEM : J_DISK);
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
	fresh =
	    fd >= 0 && (!ent->data[0] || !ent->linked || ent->where != where ||
			ent->dev != st.st_dev || ent->ino != st.st_ino);
	if (fd < 0) {
		snprintf(data, sizeof(data), "%s", NO_DATA);
	} else if (fresh) {
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
	ret = write_record(dfd, rec, r, !j->volatile_fs[where]);
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
	if (had && fresh && old.data[0] && strcmp(old.data, NO_DATA) != 0)
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
		if (ent->data[0] && strcmp(ent->data, NO_DATA) != 0)
			unlinkat(j->run_fd[ent->where], ent->data, 0);
	}
	free(ent);
	*entp = NULL;
}
