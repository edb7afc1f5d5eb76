// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * tarstream: tar archives built in memory with libarchive's writer are fed
 * through sources that cut them into blocks of awkward sizes, fail, or stop
 * early; every entry's metadata and data must come out exactly.
 */
#include "tarstream.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <locale.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define T_DEFAULT 1700000000L
#define T_SUID	  1234567890L

struct want {
	const char *name;
	mode_t mode; /* type and permissions */
	uid_t uid;
	gid_t gid;
	off_t size;
	time_t mtime;
	const char *symlink;
	const char *hardlink;
};

static char long_name[4 + 150 + 1];
static char long_target[200 + 1];

static struct want wants[] = {
    {"dir/", S_IFDIR | 0755, 0, 0, 0, T_DEFAULT, NULL, NULL},
    {"dir/size-0", S_IFREG | 0644, 0, 0, 0, T_DEFAULT, NULL, NULL},
    {"dir/size-1", S_IFREG | 0644, 0, 0, 1, T_DEFAULT, NULL, NULL},
    {"dir/size-511", S_IFREG | 0644, 0, 0, 511, T_DEFAULT, NULL, NULL},
    {"dir/size-512", S_IFREG | 0644, 0, 0, 512, T_DEFAULT, NULL, NULL},
    {"dir/size-513", S_IFREG | 0644, 0, 0, 513, T_DEFAULT, NULL, NULL},
    {"dir/size-1048575", S_IFREG | 0644, 0, 0, 1048575, T_DEFAULT, NULL, NULL},
    {"dir/size-1048576", S_IFREG | 0644, 0, 0, 1048576, T_DEFAULT, NULL, NULL},
    {"dir/size-1048577", S_IFREG | 0644, 0, 0, 1048577, T_DEFAULT, NULL, NULL},
    {"dir/link", S_IFLNK | 0777, 0, 0, 0, T_DEFAULT, "../target/x", NULL},
    {"dir/hard", S_IFREG | 0644, 0, 0, 0, T_DEFAULT, NULL, "dir/size-1"},
    {"dir/naïve file ✓.txt", S_IFREG | 0644, 0, 0, 5, T_DEFAULT, NULL, NULL},
    {"dir/suid", S_IFREG | S_ISUID | 0755, 1234, 5678, 100, T_SUID, NULL, NULL},
    {long_name, S_IFREG | 0600, 0, 0, 10, T_DEFAULT, NULL, NULL},
    {"dir/big-ids", S_IFREG | 0644, 100000000, 100000001, 1, T_DEFAULT, NULL,
     NULL},
    {"dir/long-link", S_IFLNK | 0777, 0, 0, 0, T_DEFAULT, long_target, NULL},
    {"dir/empty dir/", S_IFDIR | 01777, 0, 0, 0, T_DEFAULT, NULL, NULL},
};

#define NWANTS (sizeof(wants) / sizeof(wants[0]))

/* Index of the 1048576 byte file, where the failure tests cut. */
#define BIG 7

/* Byte at offset off of the data of entry k: shifts show up at once. */
static unsigned char pattern(size_t k, off_t off)
{
	return (unsigned char)(off % 251 + k * 13);
}

static void init_names(void)
{
	memcpy(long_name, "dir/", 4);
	memset(long_name + 4, 'n', 150);
	long_name[154] = '\0';
	for (size_t i = 0; i < 200; i++)
		long_target[i] = i % 10 == 9 ? '/' : 'a' + i % 26;
	long_target[200] = '\0';
}

/* The archive of wants[], as pax_restricted. */
static unsigned char *build_archive(size_t *len)
{
	size_t cap = 8 << 20, used = 0;
	unsigned char *buf = malloc(cap);
	unsigned char *data = malloc(1048577);
	struct archive *a = archive_write_new();

	archive_write_set_format_pax_restricted(a);
	archive_write_set_bytes_per_block(a, 10240);
	if (archive_write_open_memory(a, buf, cap, &used) != ARCHIVE_OK)
		goto fail;
	for (size_t k = 0; k < NWANTS; k++) {
		const struct want *w = &wants[k];
		struct archive_entry *e = archive_entry_new();

		archive_entry_set_pathname(e, w->name);
		archive_entry_set_mode(e, w->mode);
		archive_entry_set_uid(e, w->uid);
		archive_entry_set_gid(e, w->gid);
		archive_entry_set_mtime(e, w->mtime, 0);
		archive_entry_set_size(e, w->size);
		if (w->symlink)
			archive_entry_set_symlink(e, w->symlink);
		if (w->hardlink)
			archive_entry_set_hardlink(e, w->hardlink);
		if (archive_write_header(a, e) != ARCHIVE_OK) {
			fprintf(stderr, "writing %s: %s\n", w->name,
				archive_error_string(a));
			archive_entry_free(e);
			goto fail;
		}
		archive_entry_free(e);
		for (off_t i = 0; i < w->size; i++)
			data[i] = pattern(k, i);
		if (w->size && archive_write_data(a, data, (size_t)w->size) !=
				   (la_ssize_t)w->size)
			goto fail;
	}
	if (archive_write_close(a) != ARCHIVE_OK)
		goto fail;
	archive_write_free(a);
	free(data);
	*len = used;
	return buf;
fail:
	fprintf(stderr, "cannot build the test archive: %s\n",
		archive_error_string(a));
	archive_write_free(a);
	free(data);
	free(buf);
	return NULL;
}

/*
 * A byte source over buf: blocks of at most block bytes, each in a fresh
 * allocation freed at the next call (so that a block used after its time
 * is caught by ASan), and -fail_errno once fail_at bytes were given.
 */
struct src {
	const unsigned char *buf;
	size_t len, pos, block;
	size_t fail_at; /* (size_t)-1: never */
	int fail_errno;
	unsigned char *cur;
	long calls_after_end;
};

static ssize_t src_read(void *ctx, const void **buf)
{
	struct src *s = ctx;
	size_t n;

	free(s->cur);
	s->cur = NULL;
	if (s->pos >= s->fail_at)
		return -s->fail_errno;
	if (s->pos >= s->len) {
		s->calls_after_end++;
		return 0;
	}
	n = s->len - s->pos;
	if (n > s->block)
		n = s->block;
	if (s->fail_at != (size_t)-1 && n > s->fail_at - s->pos)
		n = s->fail_at - s->pos;
	s->cur = malloc(n);
	memcpy(s->cur, s->buf + s->pos, n);
	s->pos += n;
	*buf = s->cur;
	return (ssize_t)n;
}

static struct src src_of(const unsigned char *buf, size_t len, size_t block)
{
	return (struct src){.buf = buf,
			    .len = len,
			    .block = block,
			    .fail_at = (size_t)-1,
			    .fail_errno = EIO};
}

static void src_done(struct src *s)
{
	free(s->cur);
	s->cur = NULL;
}

/*
 * Reads all data of the current entry, checking offsets are contiguous and
 * bytes follow pattern(k). Returns the byte count, or the negative errno.
 */
static long long read_data(struct tarstream *t, size_t k, bool *ok)
{
	long long total = 0;

	*ok = true;
	for (;;) {
		const void *buf;
		off_t off = -1;
		ssize_t n = tarstream_data(t, &buf, &off);
		const unsigned char *b = buf;

		if (n < 0)
			return n;
		if (n == 0)
			return total;
		if (off != total)
			*ok = false;
		for (ssize_t i = 0; i < n && *ok; i++)
			if (b[i] != pattern(k, total + i))
				*ok = false;
		total += n;
	}
}

static void check_entry(const struct tar_entry *e, const struct want *w)
{
	CHECK_STR(e->name, w->name);
	/*
	 * A hard link entry ('1') records permissions only; its type is
	 * that of the earlier entry it names, which the reader looks up.
	 */
	if (w->hardlink)
		CHECK_INT(e->st.st_mode & 07777, w->mode & 07777);
	else
		CHECK_INT(e->st.st_mode, w->mode);
	CHECK_INT(e->st.st_uid, w->uid);
	CHECK_INT(e->st.st_gid, w->gid);
	CHECK_INT(e->st.st_size, w->size);
	CHECK_INT(e->st.st_mtim.tv_sec, w->mtime);
	CHECK_INT(e->st.st_mtim.tv_nsec, 0);
	CHECK_STR(e->symlink, w->symlink);
	CHECK_STR(e->hardlink, w->hardlink);
}

/* Reads the whole archive through blocks of the given size. */
static void check_whole_archive(const unsigned char *ar, size_t len,
				size_t block)
{
	struct src s = src_of(ar, len, block);
	struct tarstream *t = NULL;
	struct tar_entry e;
	size_t k;

	CHECK_INT(tarstream_open(src_read, &s, &t), 0);
	if (!t)
		return;
	for (k = 0; k < NWANTS; k++) {
		long long got;
		bool ok;

		if (tarstream_next(t, &e) != 0) {
			fprintf(stderr, "block %zu: entry %zu missing: %s\n",
				block, k, tarstream_error(t));
			CHECK(!"entry missing");
			break;
		}
		check_entry(&e, &wants[k]);
		got = read_data(t, k, &ok);
		if (got != wants[k].size || !ok)
			fprintf(stderr, "block %zu: data of %s: %lld bytes%s\n",
				block, wants[k].name, got,
				ok ? "" : ", wrong bytes or offsets");
		CHECK_INT(got, wants[k].size);
		CHECK(ok);
	}
	CHECK_INT(tarstream_next(t, &e), 1);
	tarstream_free(t);
	src_done(&s);
}

static void test_blocks_of_1(const unsigned char *ar, size_t len)
{
	check_whole_archive(ar, len, 1);
}

static void test_blocks_of_7(const unsigned char *ar, size_t len)
{
	check_whole_archive(ar, len, 7);
}

static void test_blocks_of_511(const unsigned char *ar, size_t len)
{
	check_whole_archive(ar, len, 511);
}

static void test_blocks_of_4096(const unsigned char *ar, size_t len)
{
	check_whole_archive(ar, len, 4096);
}

static void test_blocks_of_65537(const unsigned char *ar, size_t len)
{
	check_whole_archive(ar, len, 65537);
}

static void test_one_block(const unsigned char *ar, size_t len)
{
	check_whole_archive(ar, len, len);
}

static void test_skip_all_data(const unsigned char *ar, size_t len)
{
	struct src s = src_of(ar, len, 4096);
	struct tarstream *t = NULL;
	struct tar_entry e;
	size_t k = 0;
	int r;

	CHECK_INT(tarstream_open(src_read, &s, &t), 0);
	if (!t)
		return;
	while ((r = tarstream_next(t, &e)) == 0) {
		if (k < NWANTS)
			CHECK_STR(e.name, wants[k].name);
		k++;
	}
	CHECK_INT(r, 1);
	CHECK_INT(k, NWANTS);
	tarstream_free(t);
	src_done(&s);
}

/* Reads one block of every other entry, all of the rest. */
static void test_skip_partly_read(const unsigned char *ar, size_t len)
{
	struct src s = src_of(ar, len, 7000);
	struct tarstream *t = NULL;
	struct tar_entry e;
	size_t k = 0;
	int r;

	CHECK_INT(tarstream_open(src_read, &s, &t), 0);
	if (!t)
		return;
	while ((r = tarstream_next(t, &e)) == 0 && k < NWANTS) {
		CHECK_STR(e.name, wants[k].name);
		if (k % 2) {
			const void *buf;
			off_t off;
			ssize_t n = tarstream_data(t, &buf, &off);

			CHECK(n >= 0);
			if (n > 0)
				CHECK_INT(off, 0);
		} else {
			bool ok;

			CHECK_INT(read_data(t, k, &ok), wants[k].size);
			CHECK(ok);
		}
		k++;
	}
	CHECK_INT(r, 1);
	CHECK_INT(k, NWANTS);
	tarstream_free(t);
	src_done(&s);
}

/* Reading past the end of an entry keeps giving 0, then next goes on. */
static void test_data_after_end(const unsigned char *ar, size_t len)
{
	struct src s = src_of(ar, len, len);
	struct tarstream *t = NULL;
	struct tar_entry e;
	const void *buf;
	off_t off;
	bool ok;

	CHECK_INT(tarstream_open(src_read, &s, &t), 0);
	if (!t)
		return;
	CHECK_INT(tarstream_next(t, &e), 0); /* dir/ */
	CHECK_INT(tarstream_data(t, &buf, &off), 0);
	CHECK_INT(tarstream_next(t, &e), 0); /* size-0 */
	CHECK_INT(tarstream_data(t, &buf, &off), 0);
	CHECK_INT(tarstream_next(t, &e), 0); /* size-1 */
	CHECK_INT(read_data(t, 2, &ok), 1);
	CHECK(ok);
	CHECK_INT(tarstream_data(t, &buf, &off), 0);
	CHECK_INT(tarstream_next(t, &e), 0);
	CHECK_STR(e.name, wants[3].name);
	tarstream_free(t);
	src_done(&s);
}

/* A stream freed in the middle of an entry frees everything. */
static void test_free_mid_entry(const unsigned char *ar, size_t len)
{
	struct src s = src_of(ar, len, 4096);
	struct tarstream *t = NULL;
	struct tar_entry e;
	const void *buf;
	off_t off;

	CHECK_INT(tarstream_open(src_read, &s, &t), 0);
	if (!t)
		return;
	for (int i = 0; i <= BIG; i++)
		CHECK_INT(tarstream_next(t, &e), 0);
	CHECK(tarstream_data(t, &buf, &off) > 0);
	tarstream_free(t);
	tarstream_free(NULL);
	src_done(&s);
}

/*
 * Reads an archive that the source cuts or fails at byte cut. Every entry
 * that comes out whole must be right; the first failure must be an error
 * (want_err exactly, when not 0), never an entry shorter than its size
 * or a clean end. Returns the number of entries read whole.
 */
static size_t read_until_error(const unsigned char *ar, size_t cut,
			       size_t block, size_t fail_at, int want_err)
{
	struct src s = src_of(ar, cut, block);
	struct tarstream *t = NULL;
	struct tar_entry e;
	size_t k = 0;
	int err = 0;

	s.fail_at = fail_at;
	if (want_err)
		s.fail_errno = want_err;
	err = tarstream_open(src_read, &s, &t);
	while (!err) {
		long long got;
		bool ok;

		err = tarstream_next(t, &e);
		if (err)
			break;
		if (k >= NWANTS) {
			CHECK(!"more entries than written");
			break;
		}
		CHECK_STR(e.name, wants[k].name);
		got = read_data(t, k, &ok);
		if (got < 0) {
			err = (int)got;
			break;
		}
		if (got != wants[k].size)
			fprintf(stderr, "cut at %zu: %s silently short: %lld\n",
				cut, wants[k].name, got);
		CHECK_INT(got, wants[k].size);
		CHECK(ok);
		k++;
	}
	if (err >= 0)
		fprintf(stderr,
			"cut at %zu (fail at %zu): no error after %zu "
			"entries\n",
			cut, fail_at, k);
	CHECK(err < 0);
	if (want_err)
		CHECK_INT(err, -want_err);
	if (t) {
		const char *msg = tarstream_error(t);
		struct tar_entry again;

		CHECK(msg != NULL && msg[0] != '\0');
		/* Once broken, it stays broken. */
		CHECK(tarstream_next(t, &again) < 0);
		tarstream_free(t);
	}
	src_done(&s);
	return k;
}

/* Offset in the archive of the first data byte of the entry named name. */
static size_t data_offset(const unsigned char *ar, size_t len, const char *name)
{
	struct archive *a = archive_read_new();
	struct archive_entry *e;
	size_t off = 0;

	archive_read_support_format_tar(a);
	archive_read_open_memory(a, ar, len);
	while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
		if (strcmp(archive_entry_pathname(e), name) == 0) {
			off = (size_t)archive_read_header_position(a);
			break;
		}
	}
	archive_read_free(a);
	/* The header position is that of the ustar header; data follows. */
	return off + 512;
}

static void test_truncated_in_data(const unsigned char *ar, size_t len)
{
	size_t big = data_offset(ar, len, wants[BIG].name);
	size_t cuts[] = {big + 1,    big + 511,	   big + 512,
			 big + 4096, big + 524288, big + 1048575};

	/* The offset is right: the big file's pattern starts there. */
	CHECK(ar[big] == pattern(BIG, 0) && ar[big + 1] == pattern(BIG, 1));

	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		CHECK_INT(read_until_error(ar, cuts[i], 4096, (size_t)-1, 0),
			  BIG);
		CHECK_INT(read_until_error(ar, cuts[i], 65537, (size_t)-1, 0),
			  BIG);
	}
}

static void test_truncated_small_file(const unsigned char *ar, size_t len)
{
	size_t off = data_offset(ar, len, wants[5].name);

	/* size-513 cut after 300 of its bytes. */
	CHECK_INT(read_until_error(ar, off + 300, 7, (size_t)-1, 0), 5);
}

static void test_truncated_in_header(const unsigned char *ar, size_t len)
{
	size_t big = data_offset(ar, len, wants[BIG].name);

	/* Inside the ustar header of the big file. */
	CHECK_INT(read_until_error(ar, big - 200, 4096, (size_t)-1, 0), BIG);
	CHECK_INT(read_until_error(ar, big - 1, 1, (size_t)-1, 0), BIG);
	/* Inside the first header of all. */
	CHECK_INT(read_until_error(ar, 100, 4096, (size_t)-1, 0), 0);
}

static void test_source_error_in_data(const unsigned char *ar, size_t len)
{
	size_t big = data_offset(ar, len, wants[BIG].name);
	size_t at[] = {big + 1, big + 4096, big + 700000};

	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		CHECK_INT(read_until_error(ar, len, 4096, at[i], EIO), BIG);
		CHECK_INT(read_until_error(ar, len, 1000, at[i], EIO), BIG);
	}
}

static void test_source_error_in_header(const unsigned char *ar, size_t len)
{
	size_t big = data_offset(ar, len, wants[BIG].name);

	size_t one = data_offset(ar, len, wants[2].name);

	CHECK_INT(read_until_error(ar, len, 4096, big - 100, EIO), BIG);
	/* Inside the header of size-1, the third entry. */
	CHECK_INT(read_until_error(ar, len, 4096, one - 412, EIO), 2);
}

static void test_source_error_at_start(const unsigned char *ar, size_t len)
{
	CHECK_INT(read_until_error(ar, len, 4096, 0, EIO), 0);
}

static void test_source_other_errno(const unsigned char *ar, size_t len)
{
	size_t big = data_offset(ar, len, wants[BIG].name);

	/* An errno other than EIO is passed through as it is. */
	CHECK_INT(read_until_error(ar, len, 4096, big + 10000, ECONNRESET),
		  BIG);
	CHECK_INT(read_until_error(ar, len, 4096, big - 100, ECONNRESET), BIG);
}

/* Opens a stream over buf and returns the first error, or 0 if none. */
static int first_error(const unsigned char *buf, size_t len, size_t block)
{
	struct src s = src_of(buf, len, block);
	struct tarstream *t = NULL;
	struct tar_entry e;
	int r = tarstream_open(src_read, &s, &t);
	int entries = 0;

	while (r == 0 && entries < 1000) {
		r = tarstream_next(t, &e);
		entries++;
	}
	tarstream_free(t);
	src_done(&s);
	return r == 1 ? 0 : r;
}

static void test_garbage_text(void)
{
	char text[8192];

	for (size_t i = 0; i < sizeof(text); i++)
		text[i] = "this is not a tar archive\n"[i % 26];
	CHECK(first_error((unsigned char *)text, sizeof(text), 4096) < 0);
	CHECK(first_error((unsigned char *)text, sizeof(text), 3) < 0);
}

static void test_garbage_random(void)
{
	unsigned char bytes[20000];
	unsigned seed = 42;

	for (size_t i = 0; i < sizeof(bytes); i++)
		bytes[i] = (unsigned char)rand_r(&seed);
	CHECK(first_error(bytes, sizeof(bytes), 4096) < 0);
	CHECK(first_error(bytes, 513, 1) < 0);
}

static void test_garbage_after_header(const unsigned char *ar, size_t len)
{
	/* A valid first entry, then a header with a broken checksum. */
	size_t off = data_offset(ar, len, wants[2].name);
	unsigned char *copy = malloc(len);

	memcpy(copy, ar, len);
	/* size-1's data block, then size-511's header: scribble on it. */
	memset(copy + off + 512, 'X', 512);
	CHECK(first_error(copy, len, 4096) < 0);
	free(copy);
}

int main(void)
{
	unsigned char *ar;
	size_t len = 0;

	setlocale(LC_CTYPE, "C.UTF-8");
	init_names();
	ar = build_archive(&len);
	CHECK(ar != NULL);
	if (!ar)
		return check_report();

	test_blocks_of_1(ar, len);
	test_blocks_of_7(ar, len);
	test_blocks_of_511(ar, len);
	test_blocks_of_4096(ar, len);
	test_blocks_of_65537(ar, len);
	test_one_block(ar, len);
	test_skip_all_data(ar, len);
	test_skip_partly_read(ar, len);
	test_data_after_end(ar, len);
	test_free_mid_entry(ar, len);
	test_truncated_in_data(ar, len);
	test_truncated_small_file(ar, len);
	test_truncated_in_header(ar, len);
	test_source_error_in_data(ar, len);
	test_source_error_in_header(ar, len);
	test_source_error_at_start(ar, len);
	test_source_other_errno(ar, len);
	test_garbage_text();
	test_garbage_random();
	test_garbage_after_header(ar, len);
	free(ar);
	return check_report();
}
