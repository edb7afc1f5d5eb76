// SPDX-License-Identifier: GPL-2.0-or-later
/* For the preloaded shims (no_sendfile.c, coarse_time.c): a line to the
 * file named by $CTRFS_SHIM_LOG, so that a test can tell that the shim
 * was loaded into the daemon, that its function is the one the process
 * calls, and that it was called. A test that ran without the shim
 * (no LD_PRELOAD, a build that resolves the call elsewhere) finds no
 * line and fails instead of passing for the wrong reason. */
#ifndef SHIM_LOG_H
#define SHIM_LOG_H

#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void shim_log(const char *what)
{
	const char *path = getenv("CTRFS_SHIM_LOG");
	int saved = errno, fd;
	char line[256];

	if (path && *path) {
		fd =
		    open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		if (fd >= 0) {
			snprintf(line, sizeof(line), "%ld %s\n", (long)getpid(),
				 what);
			if (write(fd, line, strlen(line)) < 0) {
				/* nothing to do: the test finds no line */
			}
			close(fd);
		}
	}
	errno = saved;
}

/* Logs "NAME interposed" at load when the process's lookup of NAME
 * finds the shim's own function (addr). */
static void shim_log_interposed(const char *name, void *addr)
{
	char what[128];

	if (dlsym(RTLD_DEFAULT, name) == addr) {
		snprintf(what, sizeof(what), "%s interposed", name);
		shim_log(what);
	}
}

/* Logs "NAME called" the first time only. */
static void shim_log_first_call(const char *name, int *done)
{
	char what[128];

	if (!__atomic_exchange_n(done, 1, __ATOMIC_RELAXED)) {
		snprintf(what, sizeof(what), "%s called", name);
		shim_log(what);
	}
}

#endif
