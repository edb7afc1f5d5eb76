/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Which engine to talk to, found as the docker CLI finds it: -o host, else
 * DOCKER_HOST (with DOCKER_TLS_VERIFY and DOCKER_CERT_PATH), else the
 * context named by DOCKER_CONTEXT or by currentContext in the CLI's
 * config.json (~/.docker, or DOCKER_CONFIG), else the default socket.
 */
#ifndef CTRFS_HOSTCFG_H
#define CTRFS_HOSTCFG_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#define HOSTCFG_DEFAULT "unix:///var/run/docker.sock"

struct hostcfg {
	char url[PATH_MAX];
	bool tls;
	bool tls_verify;
	char ca[PATH_MAX]; /* "" when not given */
	char cert[PATH_MAX];
	char key[PATH_MAX];
	char origin[128]; /* where the URL came from, for messages */
};

/* Fills hc; option_host may be NULL. 0 or -errno (a named context that
 * does not exist: -ENOENT, with a message in msg). */
int hostcfg_resolve(const char *option_host, struct hostcfg *hc, char *msg,
		    size_t msglen);

/* Fills hc from the docker context name ("default": DOCKER_HOST, else
 * the default socket). 0, or -ENOENT with a message in msg: no such
 * context, or its TLS directory lacks a file. */
int hostcfg_context(const char *name, struct hostcfg *hc, char *msg,
		    size_t msglen);

/* The names of every context in the CLI's config, packed NUL-terminated
 * in *names (free() it; NULL when none). 0. */
int hostcfg_contexts(char **names, size_t *count);

#endif
