// SPDX-License-Identifier: GPL-2.0-or-later
/* Preloaded into ctrfs by test_write_files.py: sendfile() fails with
 * EINVAL, as it does where the spool's filesystem cannot be spliced
 * from; the PUT must then copy the data through a buffer. */
#define _GNU_SOURCE
#include <errno.h>
#include <sys/sendfile.h>

ssize_t sendfile(int out, int in, off_t *off, size_t count)
{
	(void)out;
	(void)in;
	(void)off;
	(void)count;
	errno = EINVAL;
	return -1;
}

ssize_t sendfile64(int out, int in, off_t *off, size_t count)
{
	return sendfile(out, in, off, count);
}
