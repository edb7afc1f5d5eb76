/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The one map from each foreign error domain to an errno: the engine's
 * HTTP status with its message, a CURLcode, a libarchive status, and what
 * a tool run in the container (busybox, GNU coreutils) exits with and
 * prints. Each is a table (errmap.c, listed in docs/design.md "Error
 * mapping"); what no row names is -EIO, and its text is logged once.
 */
#ifndef CTRFS_ERRMAP_H
#define CTRFS_ERRMAP_H

#include <stdbool.h>

/* errmap_http(): the call changes the container (a PUT, an exec). */
#define ERRMAP_CHANGE 1u

/* The errno for an engine reply: 0 for 2xx and 304, else -errno from the
 * message's words (msg may be NULL) and then the status. */
int errmap_http(long status, const char *msg, unsigned flags);

/* The errno for a transfer's CURLcode (text: curl_easy_strerror()). */
int errmap_curl(int code, const char *text);

/* The errno for a failed libarchive call: its status, archive_errno()
 * and archive_error_string() (text may be NULL). header: the status of
 * archive_write_header(), whose refusal is a name it cannot store. */
int errmap_archive(int status, int err, const char *text, bool header);

/* The errno for a tool run in the container: its exit status and stderr
 * (0 for 0; -EOPNOTSUPP when the tool is missing, 126 or 127). */
int errmap_tool(int status, const char *err);

/* True the first time domain and text are seen: an unknown text is
 * logged once, not once per call (bounded: past a few dozen texts,
 * false). */
bool errmap_first(const char *domain, const char *text);

#endif
