/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The bridge between a byte source (an engine GET body) and libarchive: tar
 * entries and their data are pulled block by block, never buffered whole.
 * The only file that includes libarchive.
 */
#ifndef CTRFS_TARSTREAM_H
#define CTRFS_TARSTREAM_H

#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>

/*
 * A byte source: sets *buf to the next block and returns its length, 0 at
 * the end, or -errno. The block stays valid until the next call.
 */
typedef ssize_t (*tar_read_fn)(void *ctx, const void **buf);

struct tar_entry {
	const char *name;     /* as in the archive */
	struct stat st;	      /* type and mode, uid, gid, size, mtime */
	const char *symlink;  /* raw symlink target, or NULL */
	const char *hardlink; /* name of an earlier entry of the same file */
	/* extended attributes (pax SCHILY.xattr.NAME), packed as xattrs.h
	 * says, or NULL */
	const char *xattrs;
	size_t xattrs_len;
	/* written: st.st_atim goes in a pax atime (the engine applies it,
	 * to a regular file or symlink as the later of it and the mtime) */
	bool atime;
};

struct tarstream;

/* The source is borrowed: the caller frees it after tarstream_free(). */
int tarstream_open(tar_read_fn fn, void *ctx, struct tarstream **out);

/* 0 and the next entry (valid until the next call), 1 at the end, or
 * -errno. Data of the previous entry that was not read is skipped. */
int tarstream_next(struct tarstream *t, struct tar_entry *e);

/* Next data block of the current entry: its length (and file offset in
 * *off), 0 at the end of the entry, or -errno. Valid until the next call. */
ssize_t tarstream_data(struct tarstream *t, const void **buf, off_t *off);

/* What went wrong last, for log lines. */
const char *tarstream_error(struct tarstream *t);

void tarstream_free(struct tarstream *t);

/*
 * Writes the header block(s) of one entry (pax extensions where ustar
 * cannot say it: long names, big ids, sub-second mtimes) into out; the
 * entry's data, padded to TAR_BLOCK, follows it in the archive. Uses
 * name, st (type, mode, uid, gid, size, mtime; atime when e->atime),
 * symlink, hardlink and xattrs of e.
 * Returns the length, or -errno (-ENAMETOOLONG when out is too small).
 */
#define TAR_BLOCK 512
ssize_t tarstream_header(const struct tar_entry *e, char *out, size_t outlen);

#endif
