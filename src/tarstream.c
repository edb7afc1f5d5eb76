// SPDX-License-Identifier: GPL-2.0-or-later
#include "tarstream.h"
#include "errmap.h"
#include "xattrs.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct tarstream {
	struct archive *a;
	tar_read_fn fn;
	void *ctx;
	int src_err; /* -errno from the source, kept over libarchive's */
	char *xa;    /* the current entry's xattrs, packed */
	size_t xa_len;
};

static la_ssize_t read_cb(struct archive *a, void *data, const void **buf)
{
	struct tarstream *t = data;
	ssize_t n = t->fn(t->ctx, buf);

	if (n < 0) {
		t->src_err = (int)n;
		archive_set_error(a, (int)-n, "engine stream: %s",
				  strerror((int)-n));
		return -1;
	}
	return n;
}

/* A failed read's errno: the source's own, else the map's (errmap.h). */
static int tar_errno(struct tarstream *t, int status)
{
	int ret;

	if (t->src_err)
		return t->src_err;
	ret = errmap_archive(status, archive_errno(t->a),
			     archive_error_string(t->a), false);
	return ret < 0 ? ret : -EIO;
}

int tarstream_open(tar_read_fn fn, void *ctx, struct tarstream **out)
{
	struct tarstream *t = calloc(1, sizeof(*t));
	int ret = -ENOMEM;

	if (!t)
		return -ENOMEM;
	t->fn = fn;
	t->ctx = ctx;
	t->a = archive_read_new();
	if (!t->a)
		goto out_free;
	archive_read_support_format_tar(t->a);
	if (archive_read_open(t->a, t, NULL, read_cb, NULL) != ARCHIVE_OK) {
		ret = tar_errno(t, ARCHIVE_FATAL);
		goto out_archive;
	}
	*out = t;
	return 0;
out_archive:
	archive_read_free(t->a);
out_free:
	free(t);
	return ret;
}

/* Packs the entry's extended attributes into t->xa. */
static int read_xattrs(struct tarstream *t, struct archive_entry *ae)
{
	const char *name;
	const void *value;
	size_t size;

	free(t->xa);
	t->xa = NULL;
	t->xa_len = 0;
	if (archive_entry_xattr_reset(ae) == 0)
		return 0;
	while (archive_entry_xattr_next(ae, &name, &value, &size) ==
	       ARCHIVE_OK) {
		int r = xattrs_edit(&t->xa, &t->xa_len, name,
				    value ? value : "", size, 0);

		if (r < 0)
			return r;
	}
	return 0;
}

int tarstream_next(struct tarstream *t, struct tar_entry *e)
{
	struct archive_entry *ae;
	int r = archive_read_next_header(t->a, &ae);

	if (r == ARCHIVE_EOF)
		return 1;
	if (r != ARCHIVE_OK && r != ARCHIVE_WARN)
		return tar_errno(t, r);
	memset(e, 0, sizeof(*e));
	e->name = archive_entry_pathname(ae);
	if (!e->name)
		e->name = archive_entry_pathname_utf8(ae);
	if (!e->name)
		return -EIO;
	e->st.st_mode = archive_entry_mode(ae);
	e->st.st_uid = (uid_t)archive_entry_uid(ae);
	e->st.st_gid = (gid_t)archive_entry_gid(ae);
	e->st.st_size = archive_entry_size(ae);
	e->st.st_mtim.tv_sec = archive_entry_mtime(ae);
	e->st.st_mtim.tv_nsec = archive_entry_mtime_nsec(ae);
	e->st.st_nlink = 1;
	if (archive_entry_rdevmajor(ae) || archive_entry_rdevminor(ae))
		e->st.st_rdev = archive_entry_rdev(ae);
	e->symlink = archive_entry_symlink(ae);
	e->hardlink = archive_entry_hardlink(ae);
	r = read_xattrs(t, ae);
	if (r < 0)
		return r;
	e->xattrs = t->xa;
	e->xattrs_len = t->xa_len;
	if (e->hardlink) {
		/* a link entry has no data and no file type of its own */
		e->st.st_size = 0;
		if (!(e->st.st_mode & S_IFMT))
			e->st.st_mode |= S_IFREG;
	}
	return 0;
}

ssize_t tarstream_data(struct tarstream *t, const void **buf, off_t *off)
{
	size_t len;
	la_int64_t o;
	int r = archive_read_data_block(t->a, buf, &len, &o);

	if (r == ARCHIVE_EOF)
		return 0;
	if (r != ARCHIVE_OK && r != ARCHIVE_WARN)
		return tar_errno(t, r);
	*off = (off_t)o;
	return (ssize_t)len;
}

const char *tarstream_error(struct tarstream *t)
{
	const char *s = archive_error_string(t->a);

	return s ? s : "no error";
}

void tarstream_free(struct tarstream *t)
{
	if (!t)
		return;
	archive_read_free(t->a);
	free(t->xa);
	free(t);
}

ssize_t tarstream_header(const struct tar_entry *e, char *out, size_t outlen)
{
	struct archive_entry *ae;
	struct archive *a;
	size_t used = 0;
	ssize_t ret = -EIO;
	int r;

	a = archive_write_new();
	ae = archive_entry_new();
	if (!a || !ae) {
		ret = -ENOMEM;
		goto out_free;
	}
	archive_write_set_format_pax(a);
	archive_write_set_bytes_per_block(a, 0);
	if (archive_write_open_memory(a, out, outlen, &used) != ARCHIVE_OK)
		goto out_free;
	archive_entry_copy_pathname(ae, e->name);
	archive_entry_set_mode(ae, e->st.st_mode);
	archive_entry_set_uid(ae, e->st.st_uid);
	archive_entry_set_gid(ae, e->st.st_gid);
	archive_entry_set_mtime(ae, e->st.st_mtim.tv_sec,
				e->st.st_mtim.tv_nsec);
	if (e->atime)
		archive_entry_set_atime(ae, e->st.st_atim.tv_sec,
					e->st.st_atim.tv_nsec);
	if (S_ISCHR(e->st.st_mode) || S_ISBLK(e->st.st_mode))
		archive_entry_set_rdev(ae, e->st.st_rdev);
	if (e->symlink) {
		archive_entry_set_filetype(ae, AE_IFLNK);
		archive_entry_copy_symlink(ae, e->symlink);
	} else if (e->hardlink) {
		archive_entry_copy_hardlink(ae, e->hardlink);
	}
	{
		const char *name;
		const void *value;
		size_t pos = 0, vlen;

		while (xattrs_next(e->xattrs, e->xattrs_len, &pos, &name,
				   &value, &vlen))
			archive_entry_xattr_add_entry(ae, name, value, vlen);
	}
	archive_entry_set_size(
	    ae, S_ISREG(e->st.st_mode) && !e->hardlink ? e->st.st_size : 0);
	/* ARCHIVE_WARN with a header written: a name that is not UTF-8,
	 * which the pax writer passes as bytes (hdrcharset=BINARY), as the
	 * kernel and the engine take it */
	r = archive_write_header(a, ae);
	if (r != ARCHIVE_OK && !(r == ARCHIVE_WARN && used > 0)) {
		ret = errmap_archive(r, archive_errno(a),
				     archive_error_string(a), true);
		goto out_free;
	}
	ret = (ssize_t)used;
out_free:
	archive_entry_free(ae);
	if (a)
		archive_write_free(a); /* pads the data we never wrote: gone */
	return ret;
}
