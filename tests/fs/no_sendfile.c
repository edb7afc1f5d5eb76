// SPDX-License-Identifier: GPL-2.0-or-later
/* Preloaded into ctrfs by test_write_files.py: sendfile() fails with
 * EINVAL, as it does where the spool's filesystem cannot be spliced
 * from; the PUT must then copy the data through a buffer. Each call
 * logged once to $CTRFS_SHIM_LOG (shim_log.h): the test checks that the
 * daemon's PUT did meet the failing sendfile(). */
#define _GNU_SOURCE
#include <errno.h>
#include <sys/sendfile.h>

#include "shim_log.h"

static int called;

ssize_t sendfile(int out, int in, off_t *off, size_t count)
{
	(void)out;
	(void)in;
	(void)off;
	(void)count;
	shim_log_first_call("sendfile", &called);
	errno = EINVAL;
	return -1;
}

ssize_t sendfile64(int out, int in, off_t *off, size_t count)
{
	return sendfile(out, in, off, count);
}

__attribute__((constructor)) static void no_sendfile_loaded(void)
{
	shim_log_interposed("sendfile", (void *)sendfile);
}
