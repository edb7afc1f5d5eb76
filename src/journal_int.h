/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What journal.c (the journal of a running mount) and journal_replay.c
 * (what a run that is gone left, at start) share. Not part of journal.h.
 */
#ifndef CTRFS_JOURNAL_INT_H
#define CTRFS_JOURNAL_INT_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/types.h>

#define RUN_PFX "run-"
#define REC_SFX ".rec"
#define NO_DATA "-" /* the data of an entry without data */

enum { J_DISK, J_MEM, J_WHERE };

struct journal {
	char dir[J_WHERE][PATH_MAX]; /* the journal and its twin on the tmpfs */
	int dfd[J_WHERE];	     /* open, or -1 */
	/* on a filesystem that fsync cannot make any more durable (a
	 * tmpfs: it outlives the daemon, never a reboot): records there
	 * are written without it, two calls fewer per change */
	bool volatile_fs[J_WHERE];
	/* entries without data (directories, symlinks) go to the tmpfs twin,
	 * as memory spool files do (journal_entries_in_memory()) */
	bool entries_mem;
	dev_t shm_dev; /* the tmpfs memory spool files are on */
	char engine[512];
	char run[64];	     /* this run's directory name, "" before start */
	int run_fd[J_WHERE]; /* this run's directories (locked), or -1 */
	pthread_mutex_t lock;
	atomic_ullong seq;
	atomic_ulong keys;
};

#endif
