// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * jrecord: a journal record reads back as written, with every byte of its
 * names; one cut short, changed or not ours is refused.
 */
#include "jrecord.h"

#include "check.h"

#include <errno.h>
#include <stdlib.h>

static void sample(struct jrecord *r)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->engine, sizeof(r->engine), "unix:///run/docker.sock");
	snprintf(
	    r->ctr_id, sizeof(r->ctr_id), "%s",
	    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcd"
	    "ef");
	snprintf(r->ctr_name, sizeof(r->ctr_name), "web");
	/* spaces, a newline, '%', UTF-8 and a tab in the path */
	snprintf(r->path, sizeof(r->path), "/srv/a b\n%%c/\xc3\xa9\tz");
	snprintf(r->data, sizeof(r->data), "e3.7.data");
	r->seq = 7;
	r->mode = 04755;
	r->uid = 1000;
	r->gid = 4294967294u;
	r->mtime.tv_sec = 1700000000;
	r->mtime.tv_nsec = 123456789;
	r->size = 1LL << 40;
}

static void test_round_trip(void)
{
	struct jrecord r, back;
	char *buf = malloc(JRECORD_MAX);
	ssize_t n;

	sample(&r);
	n = jrecord_encode(&r, buf, JRECORD_MAX);
	CHECK(n > 0);
	CHECK_INT(jrecord_decode(buf, (size_t)n, &back), 0);
	CHECK_STR(back.engine, r.engine);
	CHECK_STR(back.ctr_id, r.ctr_id);
	CHECK_STR(back.ctr_name, r.ctr_name);
	CHECK_STR(back.path, r.path);
	CHECK_STR(back.data, r.data);
	CHECK_INT(back.seq, 7);
	CHECK_INT(back.mode, 04755);
	CHECK_INT(back.uid, 1000);
	CHECK_INT(back.gid, 4294967294u);
	CHECK_INT(back.mtime.tv_sec, 1700000000);
	CHECK_INT(back.mtime.tv_nsec, 123456789);
	CHECK_INT(back.size, 1LL << 40);
	/* one line per field: nothing of the path breaks a line */
	CHECK(memchr(buf, '\t', (size_t)n) == NULL);
	free(buf);
}

/* Whatever its checksum's digits (hex letters first, say). */
static void test_every_checksum_reads_back(void)
{
	struct jrecord r, back;
	char *buf = malloc(JRECORD_MAX);

	sample(&r);
	for (unsigned long long seq = 0; seq < 200; seq++) {
		ssize_t n;

		r.seq = seq;
		n = jrecord_encode(&r, buf, JRECORD_MAX);
		CHECK_INT(jrecord_decode(buf, (size_t)n, &back), 0);
		CHECK_INT(back.seq, seq);
	}
	free(buf);
}

/* The n bytes of record buf are refused cut anywhere (as a crash
 * mid-write leaves them) or with any one byte changed. */
static void check_cut_or_changed(char *buf, ssize_t n)
{
	struct jrecord back;

	for (ssize_t len = 0; len < n; len++)
		CHECK_INT(jrecord_decode(buf, (size_t)len, &back), -EBADMSG);
	for (ssize_t i = 0; i < n; i++) {
		buf[i] ^= 0x01;
		CHECK_INT(jrecord_decode(buf, (size_t)n, &back), -EBADMSG);
		buf[i] ^= 0x01;
	}
}

static void test_cut_or_changed_is_refused(void)
{
	struct jrecord r, back;
	char *buf = malloc(JRECORD_MAX);
	ssize_t n;

	sample(&r);
	n = jrecord_encode(&r, buf, JRECORD_MAX);
	check_cut_or_changed(buf, n);
	CHECK_INT(jrecord_decode(buf, (size_t)n, &back), 0);
	/* garbage, and a record with more after it */
	CHECK_INT(jrecord_decode("hello\n", 6, &back), -EBADMSG);
	buf[n] = 'x';
	CHECK_INT(jrecord_decode(buf, (size_t)n + 1, &back), -EBADMSG);
	free(buf);
}

static void test_unusable_fields_are_refused(void)
{
	struct jrecord r, back;
	char buf[JRECORD_MAX];
	ssize_t n;

	sample(&r);
	snprintf(r.path, sizeof(r.path), "relative");
	n = jrecord_encode(&r, buf, sizeof(buf));
	CHECK_INT(jrecord_decode(buf, (size_t)n, &back), -EBADMSG);
	sample(&r);
	snprintf(r.data, sizeof(r.data), "../x");
	n = jrecord_encode(&r, buf, sizeof(buf));
	CHECK_INT(jrecord_decode(buf, (size_t)n, &back), -EBADMSG);
	sample(&r);
	CHECK_INT(jrecord_encode(&r, buf, 100), -ENAMETOOLONG);
}

static void test_crc32c(void)
{
	/* the standard check value of CRC-32C */
	CHECK_INT(jrecord_crc32c(0, "123456789", 9), 0xe3069283);
	CHECK_INT(jrecord_crc32c(jrecord_crc32c(0, "1234", 4), "56789", 5),
		  0xe3069283);
}

/* An entry without data (a directory, a symlink) reads back with its type
 * and target; a file's record says type 'f' (and has no such lines, as
 * records written before entries existed). */
static void test_entries(void)
{
	struct jrecord r, back;
	char *buf = malloc(JRECORD_MAX);
	ssize_t n;

	sample(&r);
	n = jrecord_encode(&r, buf, JRECORD_MAX);
	CHECK(memmem(buf, (size_t)n, "\ntype ", 6) == NULL);
	CHECK_INT(jrecord_decode(buf, (size_t)n, &back), 0);
	CHECK_INT(back.type, 'f');
	r.type = 'l';
	snprintf(r.link, sizeof(r.link), "../a b/%%x");
	snprintf(r.data, sizeof(r.data), "-");
	n = jrecord_encode(&r, buf, JRECORD_MAX);
	CHECK_INT(jrecord_decode(buf, (size_t)n, &back), 0);
	CHECK_INT(back.type, 'l');
	CHECK_STR(back.link, "../a b/%x");
	r.type = 'd';
	n = jrecord_encode(&r, buf, JRECORD_MAX);
	CHECK_INT(jrecord_decode(buf, (size_t)n, &back), 0);
	CHECK_INT(back.type, 'd');
	CHECK_STR(back.link, "");
	/* a type that is none of ours */
	n = jrecord_encode(&r, buf, JRECORD_MAX);
	*(char *)memmem(buf, (size_t)n, "type d", 6) = 'T';
	CHECK_INT(jrecord_decode(buf, (size_t)n, &back), -EBADMSG);
	free(buf);
}

/* An atime set by utimensat and the extended attributes (bytes of every
 * value, NULs included) read back; a record without them (as every record
 * written before them) has none; a cut or changed one is refused. */
static void test_atime_and_xattrs(void)
{
	static const char pack[] = "security.capability\0\x14\0\0\0"
				   "\x01\0\0\x02\xff\n%";
	struct jrecord r, back;
	char *buf = malloc(JRECORD_MAX);
	ssize_t n;

	sample(&r);
	n = jrecord_encode(&r, buf, JRECORD_MAX);
	CHECK_INT(jrecord_decode(buf, (size_t)n, &back), 0);
	CHECK(!back.has_atime);
	CHECK_INT(back.xattrs_len, 0);
	r.has_atime = true;
	r.atime.tv_sec = 1600000000;
	r.atime.tv_nsec = 5;
	memcpy(r.xattrs, pack, sizeof(pack));
	r.xattrs_len = sizeof(pack);
	n = jrecord_encode(&r, buf, JRECORD_MAX);
	CHECK(n > 0);
	CHECK_INT(jrecord_decode(buf, (size_t)n, &back), 0);
	CHECK(back.has_atime);
	CHECK_INT(back.atime.tv_sec, 1600000000);
	CHECK_INT(back.atime.tv_nsec, 5);
	CHECK_INT(back.mtime.tv_nsec, 123456789);
	CHECK_INT(back.xattrs_len, sizeof(pack));
	CHECK(memcmp(back.xattrs, pack, sizeof(pack)) == 0);
	check_cut_or_changed(buf, n);
	/* more than a record holds: not written */
	r.xattrs_len = sizeof(r.xattrs) + 1;
	CHECK_INT(jrecord_encode(&r, buf, JRECORD_MAX), -ENAMETOOLONG);
	free(buf);
}

int main(void)
{
	test_round_trip();
	test_atime_and_xattrs();
	test_entries();
	test_every_checksum_reads_back();
	test_cut_or_changed_is_refused();
	test_unusable_fields_are_refused();
	test_crc32c();
	return check_report();
}
