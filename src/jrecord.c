// SPDX-License-Identifier: GPL-2.0-or-later
#include "jrecord.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAGIC "ctrfs-journal 1\n"

uint32_t jrecord_crc32c(uint32_t crc, const void *buf, size_t len)
{
	const unsigned char *p = buf;

	crc = ~crc;
	while (len--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0x82f63b78 & (0 - (crc & 1)));
	}
	return ~crc;
}

/* The writing side: appends to buf, remembering when it did not fit. */
struct out {
	char *buf;
	size_t len, used;
	bool full;
};

static void put(struct out *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->full)
		return;
	va_start(ap, fmt);
	n = vsnprintf(o->buf + o->used, o->len - o->used, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= o->len - o->used)
		o->full = true;
	else
		o->used += (size_t)n;
}

/* "key VALUE\n" with the bytes a line cannot hold (controls, spaces,
 * '%', and all from 0x7f on) as %XX. */
static void put_str(struct out *o, const char *key, const char *s)
{
	put(o, "%s ", key);
	for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
		if (*c <= ' ' || *c == '%' || *c >= 0x7f)
			put(o, "%%%02X", *c);
		else
			put(o, "%c", *c);
	}
	put(o, "\n");
}

ssize_t jrecord_encode(const struct jrecord *r, char *buf, size_t len)
{
	struct out o = {.buf = buf, .len = len};

	if (len == 0)
		return -ENAMETOOLONG;
	put(&o, "%s", MAGIC);
	put_str(&o, "engine", r->engine);
	put_str(&o, "id", r->ctr_id);
	put_str(&o, "name", r->ctr_name);
	put_str(&o, "path", r->path);
	put_str(&o, "data", r->data);
	put(&o, "seq %llu\n", r->seq);
	put(&o, "mode %o\n", (unsigned)(r->mode & 07777));
	put(&o, "uid %u\n", (unsigned)r->uid);
	put(&o, "gid %u\n", (unsigned)r->gid);
	put(&o, "mtime %lld.%09ld\n", (long long)r->mtime.tv_sec,
	    r->mtime.tv_nsec);
	put(&o, "size %lld\n", r->size);
	if (r->has_atime)
		put(&o, "atime %lld.%09ld\n", (long long)r->atime.tv_sec,
		    r->atime.tv_nsec);
	if (r->xattrs_len > sizeof(r->xattrs))
		return -ENAMETOOLONG;
	if (r->xattrs_len) {
		put(&o, "xattrs ");
		for (size_t i = 0; i < r->xattrs_len; i++)
			put(&o, "%02X", (unsigned char)r->xattrs[i]);
		put(&o, "\n");
	}
	if (r->type == 'd' || r->type == 'l') {
		put(&o, "type %c\n", r->type);
		if (r->type == 'l')
			put_str(&o, "link", r->link);
	}
	if (!o.full)
		put(&o, "crc32c %08" PRIx32 "\n",
		    jrecord_crc32c(0, buf, o.used));
	return o.full ? -ENAMETOOLONG : (ssize_t)o.used;
}

/* The reading side: one line at a time from p to end. */
struct in {
	const char *p, *end;
};

/* The value of the next line, which must be "key VALUE": its start, with
 * its length in *n; NULL when the line is not that. */
static const char *line(struct in *in, const char *key, size_t *n)
{
	size_t klen = strlen(key);
	const char *nl = memchr(in->p, '\n', (size_t)(in->end - in->p)), *v;

	if (!nl || (size_t)(nl - in->p) <= klen ||
	    memcmp(in->p, key, klen) != 0 || in->p[klen] != ' ')
		return NULL;
	v = in->p + klen + 1;
	*n = (size_t)(nl - v);
	in->p = nl + 1;
	return v;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static bool get_str(struct in *in, const char *key, char *out, size_t len)
{
	size_t n, k = 0;
	const char *v = line(in, key, &n);

	if (!v)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)v[i];

		if (c <= ' ' || c >= 0x7f)
			return false;
		if (c == '%') {
			int hi, lo;

			if (i + 2 >= n)
				return false;
			hi = hexval(v[i + 1]);
			lo = hexval(v[i + 2]);
			if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
				return false;
			c = (unsigned char)(hi << 4 | lo);
			i += 2;
		}
		if (k + 1 >= len)
			return false;
		out[k++] = (char)c;
	}
	out[k] = '\0';
	return true;
}

/* An unsigned number in base, all of the line's value, at most max. */
static bool get_num(struct in *in, const char *key, int base,
		    unsigned long long max, unsigned long long *out)
{
	char buf[32], *e;
	size_t n;
	const char *v = line(in, key, &n);

	/* digits only: strtoull would take a sign or blanks */
	if (!v || n == 0 || n >= sizeof(buf) ||
	    strspn(v, base == 16 ? "0123456789abcdef" : "0123456789") < n)
		return false;
	memcpy(buf, v, n);
	buf[n] = '\0';
	errno = 0;
	*out = strtoull(buf, &e, base);
	return errno == 0 && *e == '\0' && *out <= max;
}

/* Whether the next line has key. */
static bool next_is(const struct in *in, const char *key)
{
	size_t klen = strlen(key);

	return (size_t)(in->end - in->p) > klen &&
	       memcmp(in->p, key, klen) == 0 && in->p[klen] == ' ';
}

/* "xattrs HEX", at most sizeof(r->xattrs) bytes */
static bool get_xattrs(struct in *in, struct jrecord *r)
{
	size_t n;
	const char *v = line(in, "xattrs", &n);

	if (!v || n == 0 || n % 2 || n / 2 > sizeof(r->xattrs))
		return false;
	for (size_t i = 0; i < n; i += 2) {
		int hi = hexval(v[i]), lo = hexval(v[i + 1]);

		if (hi < 0 || lo < 0)
			return false;
		r->xattrs[i / 2] = (char)(hi << 4 | lo);
	}
	r->xattrs_len = n / 2;
	return true;
}

/* "KEY SECS.NNNNNNNNN" */
static bool get_time(struct in *in, const char *key, struct timespec *ts)
{
	char buf[40], *dot, *e;
	unsigned long long s, ns;
	size_t n;
	const char *v = line(in, key, &n);

	if (!v || n == 0 || n >= sizeof(buf))
		return false;
	memcpy(buf, v, n);
	buf[n] = '\0';
	dot = strchr(buf, '.');
	if (!dot || strlen(dot + 1) != 9 || buf[0] < '0' || buf[0] > '9' ||
	    dot[1] < '0' || dot[1] > '9')
		return false;
	*dot = '\0';
	errno = 0;
	s = strtoull(buf, &e, 10);
	if (errno || *e || s > (unsigned long long)INT64_MAX)
		return false;
	ns = strtoull(dot + 1, &e, 10);
	if (errno || *e || ns >= 1000000000ULL)
		return false;
	ts->tv_sec = (time_t)s;
	ts->tv_nsec = (long)ns;
	return true;
}

int jrecord_decode(const char *buf, size_t len, struct jrecord *r)
{
	struct in in = {.p = buf, .end = buf + len};
	unsigned long long seq, mode, uid, gid, size, crc;
	size_t body;

	memset(r, 0, sizeof(*r));
	if (len < strlen(MAGIC) || memcmp(buf, MAGIC, strlen(MAGIC)) != 0)
		return -EBADMSG;
	in.p += strlen(MAGIC);
	if (!get_str(&in, "engine", r->engine, sizeof(r->engine)) ||
	    !get_str(&in, "id", r->ctr_id, sizeof(r->ctr_id)) ||
	    !get_str(&in, "name", r->ctr_name, sizeof(r->ctr_name)) ||
	    !get_str(&in, "path", r->path, sizeof(r->path)) ||
	    !get_str(&in, "data", r->data, sizeof(r->data)) ||
	    !get_num(&in, "seq", 10, UINT64_MAX, &seq) ||
	    !get_num(&in, "mode", 8, 07777, &mode) ||
	    !get_num(&in, "uid", 10, UINT32_MAX - 1, &uid) ||
	    !get_num(&in, "gid", 10, UINT32_MAX - 1, &gid) ||
	    !get_time(&in, "mtime", &r->mtime) ||
	    !get_num(&in, "size", 10, INT64_MAX, &size))
		return -EBADMSG;
	/* lines a record may lack (older records lack both) */
	if (next_is(&in, "atime")) {
		if (!get_time(&in, "atime", &r->atime))
			return -EBADMSG;
		r->has_atime = true;
	}
	if (next_is(&in, "xattrs") && !get_xattrs(&in, r))
		return -EBADMSG;
	r->type = 'f';
	if (in.end - in.p > 7 && memcmp(in.p, "type ", 5) == 0) {
		/* an entry without data: "type d", or "type l" and its link */
		r->type = in.p[5];
		if ((r->type != 'd' && r->type != 'l') || in.p[6] != '\n')
			return -EBADMSG;
		in.p += 7;
		if (r->type == 'l' &&
		    !get_str(&in, "link", r->link, sizeof(r->link)))
			return -EBADMSG;
	}
	body = (size_t)(in.p - buf);
	if (!get_num(&in, "crc32c", 16, UINT32_MAX, &crc) || in.p != in.end ||
	    crc != jrecord_crc32c(0, buf, body))
		return -EBADMSG;
	/* what replaying it relies on */
	if (r->path[0] != '/' || !r->ctr_id[0] || !r->data[0] ||
	    strchr(r->data, '/'))
		return -EBADMSG;
	r->seq = seq;
	r->mode = (mode_t)mode;
	r->uid = (uid_t)uid;
	r->gid = (gid_t)gid;
	r->size = (long long)size;
	return 0;
}
