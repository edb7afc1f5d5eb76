// SPDX-License-Identifier: GPL-2.0-or-later
#include "pathstat.h"

#include <ctype.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

/* Go os.FileMode bits. */
#define GO_DIR	      (1ULL << 31)
#define GO_SYMLINK    (1ULL << 27)
#define GO_DEVICE     (1ULL << 26)
#define GO_NAMEDPIPE  (1ULL << 25)
#define GO_SOCKET     (1ULL << 24)
#define GO_SETUID     (1ULL << 23)
#define GO_SETGID     (1ULL << 22)
#define GO_CHARDEVICE (1ULL << 21)
#define GO_STICKY     (1ULL << 20)

mode_t pathstat_mode_from_go(uint64_t gomode)
{
	mode_t m = gomode & 0777;

	if (gomode & GO_DIR)
		m |= S_IFDIR;
	else if (gomode & GO_SYMLINK)
		m |= S_IFLNK;
	else if (gomode & GO_NAMEDPIPE)
		m |= S_IFIFO;
	else if (gomode & GO_SOCKET)
		m |= S_IFSOCK;
	else if (gomode & GO_DEVICE)
		m |= (gomode & GO_CHARDEVICE) ? S_IFCHR : S_IFBLK;
	else
		m |= S_IFREG;
	if (gomode & GO_SETUID)
		m |= S_ISUID;
	if (gomode & GO_SETGID)
		m |= S_ISGID;
	if (gomode & GO_STICKY)
		m |= S_ISVTX;
	return m;
}

static int b64_value(int c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+' || c == '-')
		return 62;
	if (c == '/' || c == '_')
		return 63;
	return -1;
}

long pathstat_base64(const char *in, unsigned char *out, size_t outlen)
{
	unsigned long acc = 0;
	int bits = 0;
	size_t n = 0;

	for (; *in; in++) {
		int v;

		if (*in == '=' || isspace((unsigned char)*in))
			continue;
		v = b64_value((unsigned char)*in);
		if (v < 0)
			return -1;
		acc = (acc << 6) | (unsigned long)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (n >= outlen)
				return -1;
			out[n++] = (unsigned char)(acc >> bits);
			acc &= (1UL << bits) - 1;
		}
	}
	return (long)n;
}

static int parse_digits(const char **p, int n)
{
	int v = 0;

	for (int i = 0; i < n; i++, (*p)++) {
		if (!isdigit((unsigned char)**p))
			return -1;
		v = v * 10 + (**p - '0');
	}
	return v;
}

int pathstat_parse_time(const char *s, struct timespec *ts)
{
	struct tm tm = {0};
	const char *p = s;
	long nsec = 0;
	long off = 0;
	time_t t;

	tm.tm_year = parse_digits(&p, 4) - 1900;
	if (*p++ != '-')
		return -EINVAL;
	tm.tm_mon = parse_digits(&p, 2) - 1;
	if (*p++ != '-')
		return -EINVAL;
	tm.tm_mday = parse_digits(&p, 2);
	if (*p != 'T' && *p != 't' && *p != ' ')
		return -EINVAL;
	p++;
	tm.tm_hour = parse_digits(&p, 2);
	if (*p++ != ':')
		return -EINVAL;
	tm.tm_min = parse_digits(&p, 2);
	if (*p++ != ':')
		return -EINVAL;
	tm.tm_sec = parse_digits(&p, 2);
	if (tm.tm_year < -1900 || tm.tm_mon < 0 || tm.tm_mon > 11 ||
	    tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour < 0 ||
	    tm.tm_hour > 23 || tm.tm_min < 0 || tm.tm_min > 59 ||
	    tm.tm_sec < 0 || tm.tm_sec > 60)
		return -EINVAL;
	if (*p == '.') {
		long scale = 100000000;

		if (!isdigit((unsigned char)p[1]))
			return -EINVAL;
		for (p++; isdigit((unsigned char)*p); p++) {
			nsec += (*p - '0') * scale;
			scale /= 10;
		}
	}
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		int sign = *p++ == '-' ? -1 : 1;
		int hh = parse_digits(&p, 2);
		int mm;

		if (hh < 0 || *p++ != ':')
			return -EINVAL;
		mm = parse_digits(&p, 2);
		if (mm < 0 || mm > 59 || hh > 23)
			return -EINVAL;
		off = sign * (hh * 3600L + mm * 60L);
	} else {
		return -EINVAL;
	}
	if (*p)
		return -EINVAL;
	t = timegm(&tm);
	{
		struct tm check;

		/* timegm() rolls 31 April over into May: refuse such dates */
		if (!gmtime_r(&t, &check) || check.tm_mday != tm.tm_mday)
			return -EINVAL;
	}
	ts->tv_sec = t - off;
	ts->tv_nsec = nsec;
	return 0;
}

int pathstat_decode(const char *header, struct pathstat *ps)
{
	unsigned char buf[8192];
	struct json_object *root, *v;
	long n;
	int ret = -EINVAL;

	n = pathstat_base64(header, buf, sizeof(buf) - 1);
	if (n <= 0)
		return -EINVAL;
	buf[n] = '\0';
	root = json_tokener_parse((const char *)buf);
	if (!root || !json_object_is_type(root, json_type_object))
		goto out_put;
	if (!json_object_object_get_ex(root, "mode", &v) ||
	    !json_object_is_type(v, json_type_int))
		goto out_put;
	ps->mode = pathstat_mode_from_go((uint64_t)json_object_get_int64(v));
	if (!json_object_object_get_ex(root, "size", &v) ||
	    !json_object_is_type(v, json_type_int))
		goto out_put;
	ps->size = json_object_get_int64(v);
	if (!json_object_object_get_ex(root, "mtime", &v) ||
	    !json_object_is_type(v, json_type_string))
		goto out_put;
	if (pathstat_parse_time(json_object_get_string(v), &ps->mtime) < 0)
		goto out_put;
	ret = 0;
out_put:
	json_object_put(root);
	return ret;
}

int pathstat_stat_line(char *line, const char *prefix, bool deep,
		       struct stat *st, char **path)
{
	unsigned int mode, dmaj, dmin;
	unsigned long uid, gid, nlink;
	long long size, mtime;
	size_t plen = strlen(prefix);
	int used = -1;

	/* %n, not a space before it: a name may begin with a space */
	if (sscanf(line, "%x %lu %lu %lld %lld %lu %x %x%n", &mode, &uid, &gid,
		   &size, &mtime, &nlink, &dmaj, &dmin, &used) != 8 ||
	    used < 0 || line[used] != ' ' || size < 0 || !(mode & S_IFMT))
		return -EINVAL;
	*path = line + used + 1;
	if (strncmp(*path, prefix, plen) != 0 || !(*path)[plen] ||
	    (!deep && strchr(*path + plen, '/')))
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	st->st_mode = (mode_t)mode;
	st->st_uid = (uid_t)uid;
	st->st_gid = (gid_t)gid;
	st->st_size = S_ISDIR(st->st_mode) ? 0 : (off_t)size;
	st->st_mtim.tv_sec = (time_t)mtime;
	st->st_nlink = (nlink_t)nlink;
	if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode))
		st->st_rdev = makedev(dmaj, dmin);
	return 0;
}
