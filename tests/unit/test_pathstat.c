// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pathstat: decoding of the X-Docker-Container-Path-Stat header, Go file
 * modes and RFC 3339 times.
 */
#include "pathstat.h"

#include <errno.h>
#include <locale.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "check.h"

/* Go os.FileMode bits, spelled out here independently of src/. */
#define GO_DIR	      0x80000000ULL
#define GO_SYMLINK    0x08000000ULL
#define GO_DEVICE     0x04000000ULL
#define GO_NAMEDPIPE  0x02000000ULL
#define GO_SOCKET     0x01000000ULL
#define GO_SETUID     0x00800000ULL
#define GO_SETGID     0x00400000ULL
#define GO_CHARDEVICE 0x00200000ULL
#define GO_STICKY     0x00100000ULL

/* 2026-12-02T13:55:33Z in seconds since the epoch. */
#define T_20261202 1796219733L

/* A real header sent by Docker for /etc/os-release (a 10 byte file). */
static const char docker_os_release[] =
    "eyJuYW1lIjoib3MtcmVsZWFzZSIsInNpemUiOjEwLCJtb2RlIjo0MjAsIm10aW1lIjoiMj"
    "AyNi0xMi0wMlQxMzo1NTozM1oiLCJsaW5rVGFyZ2V0IjoiIn0=";

/* Base64 of in, standard ("+/") or URL-safe ("-_") alphabet, "=" or not. */
static char *b64(const char *in, bool urlsafe, bool pad)
{
	static const char std[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const unsigned char *s = (const unsigned char *)in;
	size_t len = strlen(in), o = 0;
	char *out = malloc(len / 3 * 4 + 5);

	for (size_t i = 0; i < len; i += 3) {
		unsigned long v = (unsigned long)s[i] << 16;
		size_t n = len - i < 3 ? len - i : 3;

		if (n > 1)
			v |= (unsigned long)s[i + 1] << 8;
		if (n > 2)
			v |= s[i + 2];
		for (size_t k = 0; k < 4; k++) {
			char c = std[(v >> (18 - 6 * k)) & 63];

			if (k > n) {
				if (pad)
					out[o++] = '=';
				continue;
			}
			if (urlsafe && c == '+')
				c = '-';
			else if (urlsafe && c == '/')
				c = '_';
			out[o++] = c;
		}
	}
	out[o] = '\0';
	return out;
}

/* Encodes json the given way and decodes it with pathstat_decode(). */
static int decode_json(const char *json, bool urlsafe, bool pad,
		       struct pathstat *ps)
{
	char *h = b64(json, urlsafe, pad);
	int ret = pathstat_decode(h, ps);

	free(h);
	return ret;
}

/* A JSON object as the engine sends it, for a path with the given mode. */
static void stat_json(char *buf, size_t len, const char *name,
		      unsigned long long mode, long long size,
		      const char *mtime, const char *link)
{
	snprintf(buf, len,
		 "{\"name\":\"%s\",\"size\":%lld,\"mode\":%llu,"
		 "\"mtime\":\"%s\",\"linkTarget\":\"%s\"}",
		 name, size, mode, mtime, link);
}

static void test_encoder_self_check(void)
{
	char *s;

	s = b64("hello", false, true);
	CHECK_STR(s, "aGVsbG8=");
	free(s);
	s = b64("hello", false, false);
	CHECK_STR(s, "aGVsbG8");
	free(s);
	s = b64("~~~???", false, true);
	CHECK_STR(s, "fn5+Pz8/");
	free(s);
	s = b64("~~~???", true, true);
	CHECK_STR(s, "fn5-Pz8_");
	free(s);
}

static void test_docker_header(void)
{
	struct pathstat ps;

	CHECK_INT(pathstat_decode(docker_os_release, &ps), 0);
	CHECK_INT(ps.mode, S_IFREG | 0644);
	CHECK_INT(ps.size, 10);
	CHECK_INT(ps.mtime.tv_sec, T_20261202);
	CHECK_INT(ps.mtime.tv_nsec, 0);
}

static void test_docker_header_unpadded(void)
{
	char h[sizeof(docker_os_release)];
	struct pathstat ps;

	strcpy(h, docker_os_release);
	*strchr(h, '=') = '\0';
	CHECK_INT(pathstat_decode(h, &ps), 0);
	CHECK_INT(ps.mode, S_IFREG | 0644);
	CHECK_INT(ps.size, 10);
	CHECK_INT(ps.mtime.tv_sec, T_20261202);
}

/* Every alphabet and padding choice decodes to the same stat. */
static void test_alphabets_and_padding(void)
{
	/* "~~~???" makes the standard encoding contain both '+' and '/'. */
	const char *json = "{\"name\":\"~~~???\",\"size\":7,\"mode\":416,"
			   "\"mtime\":\"2026-12-02T13:55:33Z\","
			   "\"linkTarget\":\"\"}";

	for (int url = 0; url <= 1; url++) {
		for (int pad = 0; pad <= 1; pad++) {
			struct pathstat ps;
			char *h = b64(json, url, pad);

			CHECK(strpbrk(h, url ? "-_" : "+/") != NULL);
			CHECK_INT(pathstat_decode(h, &ps), 0);
			CHECK_INT(ps.mode, S_IFREG | 0640);
			CHECK_INT(ps.size, 7);
			CHECK_INT(ps.mtime.tv_sec, T_20261202);
			free(h);
		}
	}
}

/* Decodes a header built for mode and checks the resulting st_mode. */
static void check_type(unsigned long long gomode, mode_t want, const char *link)
{
	char json[512];

	stat_json(json, sizeof(json), "x", gomode, 0, "2026-12-02T13:55:33Z",
		  link);
	for (int url = 0; url <= 1; url++) {
		for (int pad = 0; pad <= 1; pad++) {
			struct pathstat ps;

			memset(&ps, 0xa5, sizeof(ps));
			CHECK_INT(decode_json(json, url, pad, &ps), 0);
			CHECK_INT(ps.mode, want);
		}
	}
}

static void test_directory(void)
{
	CHECK_INT(2147484141ULL, GO_DIR | 0755);
	check_type(2147484141ULL, S_IFDIR | 0755, "");
}

static void test_symlink(void)
{
	CHECK_INT(134218239ULL, GO_SYMLINK | 0777);
	check_type(134218239ULL, S_IFLNK | 0777, "/usr/bin/busybox");
}

static void test_setuid_file(void)
{
	check_type(GO_SETUID | 0755, S_IFREG | S_ISUID | 0755, "");
}

static void test_setgid_dir(void)
{
	check_type(GO_DIR | GO_SETGID | 0775, S_IFDIR | S_ISGID | 0775, "");
}

static void test_sticky_dir(void)
{
	check_type(GO_DIR | GO_STICKY | 0777, S_IFDIR | S_ISVTX | 0777, "");
}

static void test_char_device(void)
{
	check_type(GO_DEVICE | GO_CHARDEVICE | 0666, S_IFCHR | 0666, "");
}

static void test_block_device(void)
{
	check_type(GO_DEVICE | 0660, S_IFBLK | 0660, "");
}

static void test_fifo(void)
{
	check_type(GO_NAMEDPIPE | 0644, S_IFIFO | 0644, "");
}

static void test_socket(void)
{
	check_type(GO_SOCKET | 0755, S_IFSOCK | 0755, "");
}

static void test_regular_file_no_type_bit(void)
{
	check_type(0, S_IFREG, "");
	check_type(0600, S_IFREG | 0600, "");
}

static void test_mode_from_go(void)
{
	CHECK_INT(pathstat_mode_from_go(420), S_IFREG | 0644);
	CHECK_INT(pathstat_mode_from_go(GO_DIR | 0755), S_IFDIR | 0755);
	CHECK_INT(pathstat_mode_from_go(GO_SYMLINK | 0777), S_IFLNK | 0777);
	CHECK_INT(pathstat_mode_from_go(GO_NAMEDPIPE | 0600), S_IFIFO | 0600);
	CHECK_INT(pathstat_mode_from_go(GO_SOCKET | 0700), S_IFSOCK | 0700);
	CHECK_INT(pathstat_mode_from_go(GO_DEVICE | GO_CHARDEVICE | 0620),
		  S_IFCHR | 0620);
	CHECK_INT(pathstat_mode_from_go(GO_DEVICE | 0640), S_IFBLK | 0640);
	CHECK_INT(
	    pathstat_mode_from_go(GO_SETUID | GO_SETGID | GO_STICKY | 0755),
	    S_IFREG | S_ISUID | S_ISGID | S_ISVTX | 0755);
}

static void test_size_large(void)
{
	char json[512];
	struct pathstat ps;

	stat_json(json, sizeof(json), "big", 0644, 5000000000LL,
		  "2026-12-02T13:55:33Z", "");
	CHECK_INT(decode_json(json, false, true, &ps), 0);
	CHECK_INT(ps.size, 5000000000LL);
}

static void test_mtime_with_fraction_and_offset(void)
{
	char json[512];
	struct pathstat ps;

	stat_json(json, sizeof(json), "f", 0644, 1,
		  "2026-12-02T15:55:33.123456789+02:00", "");
	CHECK_INT(decode_json(json, true, false, &ps), 0);
	CHECK_INT(ps.mtime.tv_sec, T_20261202);
	CHECK_INT(ps.mtime.tv_nsec, 123456789);
}

/* Parses s and checks the UTC result. */
static void check_time(const char *s, long sec, long nsec)
{
	struct timespec ts = {-7, -7};

	CHECK_INT(pathstat_parse_time(s, &ts), 0);
	CHECK_INT(ts.tv_sec, sec);
	CHECK_INT(ts.tv_nsec, nsec);
}

static void test_time_utc(void)
{
	check_time("2026-12-02T13:55:33Z", T_20261202, 0);
	check_time("2024-02-29T23:59:59Z", 1709251199L, 0);
	check_time("1970-01-01T00:00:00Z", 0, 0);
	check_time("1969-12-31T23:59:59Z", -1, 0);
}

static void test_time_go_zero(void)
{
	/* Go's zero time.Time, which an engine may send for odd files. */
	check_time("0001-01-01T00:00:00Z", -62135596800L, 0);
}

static void test_time_nanoseconds(void)
{
	check_time("2026-12-02T13:55:33.123456789Z", T_20261202, 123456789);
	check_time("2026-12-02T13:55:33.5Z", T_20261202, 500000000);
	check_time("2026-12-02T13:55:33.000000001Z", T_20261202, 1);
	check_time("2026-12-02T13:55:33.010Z", T_20261202, 10000000);
}

static void test_time_more_than_nine_digits(void)
{
	/* Precision beyond nanoseconds is dropped, not carried. */
	check_time("2026-12-02T13:55:33.1234567899Z", T_20261202, 123456789);
}

static void test_time_positive_offset(void)
{
	check_time("2026-12-02T15:55:33+02:00", T_20261202, 0);
	check_time("2026-12-02T15:55:33.25+02:00", T_20261202, 250000000);
	/* Crossing midnight and the new year backwards. */
	check_time("2026-01-01T00:30:00+01:00", 1767225600L - 1800, 0);
}

static void test_time_negative_offset(void)
{
	check_time("2026-12-02T08:25:33-05:30", T_20261202, 0);
	check_time("2026-12-02T08:25:33.999999999-05:30", T_20261202,
		   999999999);
	check_time("2025-12-31T23:30:00-00:30", 1767225600L, 0);
}

static void test_time_zero_offset(void)
{
	check_time("2026-12-02T13:55:33+00:00", T_20261202, 0);
	check_time("2026-12-02T13:55:33-00:00", T_20261202, 0);
}

static void test_time_garbage(void)
{
	static const char *const bad[] = {
	    "",
	    "garbage",
	    "2026",
	    "2026-12-02",
	    "2026-12-02T13:55:33",
	    "2026-12-02T13:55:33Zjunk",
	    "2026-12-02T13:55:33 Z",
	    "2026-12-02T13:55:33+0200",
	    "2026-12-02T13:55:33+02",
	    "2026-12-02T13:55:33+2:00",
	    "2026/12/02T13:55:33Z",
	    "26-12-02T13:55:33Z",
	    "2026-12-02T13:55Z",
	    "2026-12-02X13:55:33Z",
	    "2026-1-02T13:55:33Z",
	    "2026-12-02T13:5a:33Z",
	    "-026-12-02T13:55:33Z",
	    "2026-12-02T13:55:33.12.3Z",
	    "2026-12-02T13:55:33.123",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct timespec ts;
		int r = pathstat_parse_time(bad[i], &ts);

		if (r != -EINVAL)
			fprintf(stderr, "accepted time \"%s\"\n", bad[i]);
		CHECK_INT(r, -EINVAL);
	}
}

/* Fields out of range and an empty fraction are not RFC 3339 either. */
static void test_time_out_of_range(void)
{
	static const char *const bad[] = {
	    "2026-13-02T13:55:33Z",	 "2026-00-02T13:55:33Z",
	    "2026-12-32T13:55:33Z",	 "2026-12-00T13:55:33Z",
	    "2026-12-02T24:55:33Z",	 "2026-12-02T13:60:33Z",
	    "2026-12-02T13:55:61Z",	 "2026-12-02T13:55:33.Z",
	    "2026-12-02T13:55:33+24:00",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct timespec ts;
		int r = pathstat_parse_time(bad[i], &ts);

		if (r != -EINVAL)
			fprintf(stderr, "accepted time \"%s\"\n", bad[i]);
		CHECK_INT(r, -EINVAL);
	}
}

static void test_base64_direct(void)
{
	unsigned char out[16];

	CHECK_INT(pathstat_base64("aGVsbG8=", out, sizeof(out)), 5);
	CHECK(memcmp(out, "hello", 5) == 0);
	CHECK_INT(pathstat_base64("aGVsbG8", out, sizeof(out)), 5);
	CHECK(memcmp(out, "hello", 5) == 0);
	CHECK_INT(pathstat_base64("+/8=", out, sizeof(out)), 2);
	CHECK(out[0] == 0xfb && out[1] == 0xff);
	CHECK_INT(pathstat_base64("-_8", out, sizeof(out)), 2);
	CHECK(out[0] == 0xfb && out[1] == 0xff);
	CHECK_INT(pathstat_base64("", out, sizeof(out)), 0);
	CHECK_INT(pathstat_base64("aGV*bG8=", out, sizeof(out)), -1);
	/* The output buffer is never overrun. */
	CHECK_INT(pathstat_base64("aGVsbG8=", out, 4), -1);
}

/* Each malformed header gives -EINVAL. */
static void check_bad_header(const char *h)
{
	struct pathstat ps;
	int r = pathstat_decode(h, &ps);

	if (r != -EINVAL)
		fprintf(stderr, "accepted header \"%s\"\n", h);
	CHECK_INT(r, -EINVAL);
}

static void check_bad_json(const char *json)
{
	for (int url = 0; url <= 1; url++) {
		for (int pad = 0; pad <= 1; pad++) {
			char *h = b64(json, url, pad);

			check_bad_header(h);
			free(h);
		}
	}
}

static void test_header_not_base64(void)
{
	check_bad_header("");
	check_bad_header("not base64!");
	check_bad_header("eyJuYW1lIjoib3Mt*mVsZWFzZSJ9");
	check_bad_header("{\"name\":\"x\",\"size\":1,\"mode\":420}");
	check_bad_header("====");
}

static void test_header_not_json(void)
{
	check_bad_json("not json");
	check_bad_json("{\"name\":");
	check_bad_json("[1,2,3]");
	check_bad_json("42");
	check_bad_json("\"a string\"");
	check_bad_json("null");
}

static void test_header_truncated(void)
{
	char h[sizeof(docker_os_release)];

	memcpy(h, docker_os_release, 40);
	h[40] = '\0';
	check_bad_header(h);
}

static void test_header_missing_fields(void)
{
	check_bad_json("{}");
	check_bad_json(
	    "{\"name\":\"x\",\"mode\":420,"
	    "\"mtime\":\"2026-12-02T13:55:33Z\",\"linkTarget\":\"\"}");
	check_bad_json(
	    "{\"name\":\"x\",\"size\":1,"
	    "\"mtime\":\"2026-12-02T13:55:33Z\",\"linkTarget\":\"\"}");
	check_bad_json("{\"name\":\"x\",\"size\":1,\"mode\":420,"
		       "\"linkTarget\":\"\"}");
}

static void test_header_wrong_types(void)
{
	check_bad_json(
	    "{\"name\":\"x\",\"size\":\"1\",\"mode\":420,"
	    "\"mtime\":\"2026-12-02T13:55:33Z\",\"linkTarget\":\"\"}");
	check_bad_json(
	    "{\"name\":\"x\",\"size\":1,\"mode\":\"420\","
	    "\"mtime\":\"2026-12-02T13:55:33Z\",\"linkTarget\":\"\"}");
	check_bad_json(
	    "{\"name\":\"x\",\"size\":1,\"mode\":420.5,"
	    "\"mtime\":\"2026-12-02T13:55:33Z\",\"linkTarget\":\"\"}");
	check_bad_json("{\"name\":\"x\",\"size\":1,\"mode\":420,"
		       "\"mtime\":1796219733,\"linkTarget\":\"\"}");
	check_bad_json(
	    "{\"name\":\"x\",\"size\":null,\"mode\":420,"
	    "\"mtime\":\"2026-12-02T13:55:33Z\",\"linkTarget\":\"\"}");
	check_bad_json(
	    "{\"name\":\"x\",\"size\":1,\"mode\":[420],"
	    "\"mtime\":\"2026-12-02T13:55:33Z\",\"linkTarget\":\"\"}");
}

static void test_header_bad_mtime(void)
{
	check_bad_json("{\"name\":\"x\",\"size\":1,\"mode\":420,"
		       "\"mtime\":\"yesterday\",\"linkTarget\":\"\"}");
	check_bad_json("{\"name\":\"x\",\"size\":1,\"mode\":420,"
		       "\"mtime\":\"\",\"linkTarget\":\"\"}");
}

static void test_header_too_long(void)
{
	/* A header far bigger than any stat: rejected, not overrun. */
	static const char head[] = "{\"name\":\"";
	static const char tail[] = "\",\"size\":1,\"mode\":420,"
				   "\"mtime\":\"2026-12-02T13:55:33Z\","
				   "\"linkTarget\":\"\"}";
	static char json[sizeof(head) + 65536 + sizeof(tail)];

	memcpy(json, head, sizeof(head) - 1);
	memset(json + sizeof(head) - 1, 'a', 65536);
	memcpy(json + sizeof(head) - 1 + 65536, tail, sizeof(tail));
	check_bad_json(json);
}

/* Lines as busybox and GNU stat print them for PATHSTAT_STAT_FMT. */
static int stat_line(const char *text, const char *prefix, bool deep,
		     struct stat *st, char *path, size_t pathlen)
{
	char line[512], *p;
	int ret;

	snprintf(line, sizeof(line), "%s", text);
	ret = pathstat_stat_line(line, prefix, deep, st, &p);
	if (ret == 0)
		snprintf(path, pathlen, "%s", p);
	return ret;
}

static void test_stat_line_file(void)
{
	struct stat st;
	char path[256];

	CHECK_INT(stat_line("81a4 12 34 1048576 1796392129 2 0 0 /bd/zz",
			    "/bd/", false, &st, path, sizeof(path)),
		  0);
	CHECK(strcmp(path, "/bd/zz") == 0);
	CHECK(S_ISREG(st.st_mode));
	CHECK_INT(st.st_mode & 07777, 0644);
	CHECK_INT(st.st_uid, 12);
	CHECK_INT(st.st_gid, 34);
	CHECK_INT(st.st_size, 1048576);
	CHECK_INT(st.st_mtim.tv_sec, 1796392129);
	CHECK_INT(st.st_mtim.tv_nsec, 0);
	CHECK_INT(st.st_nlink, 2);
	CHECK_INT(st.st_rdev, 0);
}

static void test_stat_line_types(void)
{
	struct stat st;
	char path[256];

	/* a directory has no size, as in a tar header */
	CHECK_INT(stat_line("41ed 0 0 4096 1 2 0 0 /d/sub", "/d/", false, &st,
			    path, sizeof(path)),
		  0);
	CHECK(S_ISDIR(st.st_mode));
	CHECK_INT(st.st_size, 0);
	/* a symlink's size is its target's length */
	CHECK_INT(stat_line("a1ff 0 0 2 1 1 0 0 /d/lnk", "/d/", false, &st,
			    path, sizeof(path)),
		  0);
	CHECK(S_ISLNK(st.st_mode));
	CHECK_INT(st.st_size, 2);
	CHECK_INT(stat_line("21a4 0 0 0 1 1 1 3 /d/nul", "/d/", false, &st,
			    path, sizeof(path)),
		  0);
	CHECK(S_ISCHR(st.st_mode));
	CHECK_INT(major(st.st_rdev), 1);
	CHECK_INT(minor(st.st_rdev), 3);
	CHECK_INT(stat_line("61b0 0 6 0 1 1 8 1f /d/sda1", "/d/", false, &st,
			    path, sizeof(path)),
		  0);
	CHECK(S_ISBLK(st.st_mode));
	CHECK_INT(major(st.st_rdev), 8);
	CHECK_INT(minor(st.st_rdev), 31);
	CHECK_INT(stat_line("11a4 0 0 0 1 1 0 0 /d/fifo", "/d/", false, &st,
			    path, sizeof(path)),
		  0);
	CHECK(S_ISFIFO(st.st_mode));
}

static void test_stat_line_names(void)
{
	struct stat st;
	char path[256];

	/* spaces are part of a name, at its start and end too */
	CHECK_INT(stat_line("81a4 0 0 1 1 1 0 0 /d/ lead", "/d/", false, &st,
			    path, sizeof(path)),
		  0);
	CHECK(strcmp(path, "/d/ lead") == 0);
	CHECK_INT(stat_line("81a4 0 0 1 1 1 0 0 /d/a  b ", "/d/", false, &st,
			    path, sizeof(path)),
		  0);
	CHECK(strcmp(path, "/d/a  b ") == 0);
	/* the root's children */
	CHECK_INT(stat_line("41ed 0 0 4096 1 2 0 0 /bin", "/", false, &st, path,
			    sizeof(path)),
		  0);
	CHECK(strcmp(path, "/bin") == 0);
	/* deeper paths: only when asked for */
	CHECK_INT(stat_line("81a4 0 0 1 1 1 0 0 /d/a/b", "/d/", false, &st,
			    path, sizeof(path)),
		  -EINVAL);
	CHECK_INT(stat_line("81a4 0 0 1 1 1 0 0 /d/a/b", "/d/", true, &st, path,
			    sizeof(path)),
		  0);
	CHECK(strcmp(path, "/d/a/b") == 0);
}

static void test_stat_line_garbage(void)
{
	static const char *const bad[] = {
	    "",
	    "81a4 0 0 1 1 1 0 0",	  /* no path */
	    "81a4 0 0 1 1 1 0 0 ",	  /* an empty one */
	    "81a4 0 0 1 1 1 0 /d/x",	  /* a field short */
	    "81a4 0 0 -1 1 1 0 0 /d/x",	  /* a negative size */
	    "1a4 0 0 1 1 1 0 0 /d/x",	  /* no file type */
	    "zz 0 0 1 1 1 0 0 /d/x",	  /* not hex */
	    "81a4 0 0 1 1 1 0 0 /e/x",	  /* not below the directory */
	    "81a4 0 0 1 1 1 0 0 /d",	  /* the directory itself */
	    "81a4 0 0 1 1 1 0 0 /d/",	  /* nothing after the slash */
	    "b\n81a4 0 0 1 1 1 0 0 /d/a", /* the tail of a name */
	    "stat: cannot stat '/d/x': No such file or directory",
	};
	struct stat st;
	char path[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK_INT(
		    stat_line(bad[i], "/d/", true, &st, path, sizeof(path)),
		    -EINVAL);
}

int main(void)
{
	setlocale(LC_CTYPE, "C.UTF-8");

	test_encoder_self_check();
	test_docker_header();
	test_docker_header_unpadded();
	test_alphabets_and_padding();
	test_directory();
	test_symlink();
	test_setuid_file();
	test_setgid_dir();
	test_sticky_dir();
	test_char_device();
	test_block_device();
	test_fifo();
	test_socket();
	test_regular_file_no_type_bit();
	test_mode_from_go();
	test_size_large();
	test_mtime_with_fraction_and_offset();
	test_time_utc();
	test_time_go_zero();
	test_time_nanoseconds();
	test_time_more_than_nine_digits();
	test_time_positive_offset();
	test_time_negative_offset();
	test_time_zero_offset();
	test_time_garbage();
	test_time_out_of_range();
	test_base64_direct();
	test_header_not_base64();
	test_header_not_json();
	test_header_truncated();
	test_header_missing_fields();
	test_header_wrong_types();
	test_header_bad_mtime();
	test_header_too_long();
	test_stat_line_file();
	test_stat_line_types();
	test_stat_line_names();
	test_stat_line_garbage();
	return check_report();
}
