/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One record of the write-back journal (journal.c): what a pending file is
 * to become in its container, as text lines with a CRC-32C of them all at
 * the end, so that a record cut short or damaged is told from a good one.
 * Pure: no files, no engine.
 */
#ifndef CTRFS_JRECORD_H
#define CTRFS_JRECORD_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#define JRECORD_XATTRS_MAX 512

struct jrecord {
	char engine[512];    /* the engine's URL */
	char ctr_id[72];     /* the container */
	char ctr_name[256];  /* its name, for the rescue directory and logs */
	char path[PATH_MAX]; /* absolute, in the container */
	char data[64];	     /* the data file's name beside the record */
	unsigned long long seq; /* later records of a run have higher ones */
	mode_t mode;		/* permission bits (07777) */
	uid_t uid;
	gid_t gid;
	struct timespec mtime;
	long long size; /* of the data file */
	/* 'f' (or 0) a file, with data; 'd' a directory, 'l' a symlink
	 * (its target in link): entries without data ("-") */
	char type;
	char link[PATH_MAX];
	/* an atime set by utimensat (has_atime), put as such; else the
	 * engine's own */
	bool has_atime;
	struct timespec atime;
	/* extended attributes, packed as xattrs.h says: the archive carries
	 * security.capability alone, some 50 bytes packed; a file with more
	 * than JRECORD_XATTRS_MAX is not journaled (its close commits it) */
	char xattrs[JRECORD_XATTRS_MAX];
	size_t xattrs_len;
};

/* Room enough for any record: every byte of the strings may be escaped,
 * the extended attributes are in hex. */
#define JRECORD_MAX                                                            \
	(3 * (512 + 72 + 256 + 2 * PATH_MAX + 64) + 2 * JRECORD_XATTRS_MAX +   \
	 512)

/* Writes r into buf: its length, or -ENAMETOOLONG when it does not fit. */
ssize_t jrecord_encode(const struct jrecord *r, char *buf, size_t len);

/* Reads the len bytes of buf into r: 0, or -EBADMSG for a record that is
 * cut short, damaged (its checksum), or not one of ours. */
int jrecord_decode(const char *buf, size_t len, struct jrecord *r);

/* CRC-32C (Castagnoli) of len bytes, continuing from crc (0 to start). */
uint32_t jrecord_crc32c(uint32_t crc, const void *buf, size_t len);

#endif
