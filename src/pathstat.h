/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Decoding of the engine's X-Docker-Container-Path-Stat header: base64
 * (standard or URL-safe alphabet, padded or not) of a JSON object
 * {name, size, mode, mtime, linkTarget}, with mode a Go os.FileMode.
 * Pure code: no I/O.
 */
#ifndef CTRFS_PATHSTAT_H
#define CTRFS_PATHSTAT_H

#include <stdint.h>
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

#endif
