/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The engines of a mount that serves several: `-o engines=NAME[,NAME...]`
 * (docker contexts, or `all`) and `-o host=URL` given more than once, each
 * resolved (hostcfg.c) and named for its directory of the mount's root
 * (docs/design.md, "Past one host").
 */
#ifndef CTRFS_HOSTLIST_H
#define CTRFS_HOSTLIST_H

#include "hostcfg.h"

#include <stddef.h>

struct hostlist_engine {
	char name[256]; /* its directory's */
	struct hostcfg hc;
};

/*
 * The directory name of an engine given by URL: `host-port` for tcp,
 * http and https, the socket file's base name without `.sock` for unix.
 * 0, or -EINVAL when no usable name comes out (empty, or a dot first).
 */
int hostlist_url_name(const char *url, char *name, size_t len);

/*
 * The engines of the contexts named in engines (comma-separated, or
 * `all`; NULL: none), then those of the nhosts URLs, in *out (free() it)
 * and their number in *n. 0, or -EINVAL after one line on stderr for each
 * problem: a context that does not exist or lacks TLS files, a URL
 * without a usable name, two engines of one name.
 */
int hostlist_build(const char *engines, char *const *hosts, size_t nhosts,
		   struct hostlist_engine **out, size_t *n);

#endif
