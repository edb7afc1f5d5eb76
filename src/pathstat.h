/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Decoding of the engine's X-Docker-Container-Path-Stat header: base64
 * (standard or URL-safe alphabet, padded or not) of a JSON object
 * {name, size, mode, mtime, linkTarget}, with mode a Go os.FileMode.
 * Pure code: no I/O.
 */
#ifndef CTRFS_PATHSTAT_H
#define CTRFS_PATHSTAT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

struct pathstat {
	mode_t mode; /* POSIX st_mode: type and permission bits */
	off_t size;
	struct timespec mtime;
};

/* Returns 0, or -EINVAL when the header is not what the engine sends. */
int pathstat_decode(const char *header, struct pathstat *ps);

/* Converts a Go os.FileMode to a POSIX st_mode. */
mode_t pathstat_mode_from_go(uint64_t gomode);

/* Parses RFC 3339 with optional fraction and any offset. 0 or -EINVAL. */
int pathstat_parse_time(const char *s, struct timespec *ts);

/* Decodes base64 of either alphabet into out; returns the length or -1. */
long pathstat_base64(const char *in, unsigned char *out, size_t outlen);

/*
 * What ctrfs has `stat -c` print for each path that `find` gives (busybox
 * and GNU alike): raw mode in hex, uid, gid, size, mtime in seconds, link
 * count, device major and minor in hex, and the path, last.
 */
#define PATHSTAT_STAT_FMT "%f %u %g %s %Y %h %t %T %n"

/*
 * Parses one line of that output (without its newline) for a path below a
 * directory: prefix is the directory and a slash ("/" for the root); the
 * path must be a child of it, or (deep) lie anywhere below it. Fills st
 * (type and mode, owner, size, mtime, link count, device; a directory's
 * size is 0, as in a tar header) and points *path into line. 0, or
 * -EINVAL for a line that is not such a line: a name with a newline in it
 * spans two lines, and neither parses as a whole one.
 */
int pathstat_stat_line(char *line, const char *prefix, bool deep,
		       struct stat *st, char **path);

#endif
