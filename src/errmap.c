// SPDX-License-Identifier: GPL-2.0-or-later
/* The errno maps of the foreign error domains, one table each (errmap.h).
 * The texts are the ones the engines and tools were seen to print
 * (docs/design.md, "Error mapping"). */
#include "errmap.h"
#include "log.h"

#include <archive.h>
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIRST_MAX  64
#define FIRST_TEXT 160

/* status 0: any failure but a 404 (which names a missing path whatever
 * its words); text NULL: any message. change: the errno when the call
 * changes the container, if it differs. */
static const struct http_row {
	long status;
	const char *text;
	int err, change;
} http_map[] = {
    /* the container went away: nothing to find there, but a change to it
     * failed (not "no such file", which a created file would deny) */
    {404, "no such container", ENOENT, EIO},
    {404, NULL, ENOENT, 0}, /* "Could not find the file P in container C" */
    /* "container rootfs is marked read-only", "mounted volume is marked
     * read-only" (500 before API 1.48, 400 after), "read-only file
     * system" */
    {0, "read-only", EROFS, 0},
    {0, "no space left", ENOSPC, 0},
    {0, "file name too long", ENAMETOOLONG, 0}, /* "lstat P: file name..." */
    /* a symlink loop: Docker 20.10 "evalSymlinksInScope: too many links
     * in P", 26 "EvalSymlinks: too many links" (Go's words, which are
     * also EMLINK's: no other cause was seen), Podman strerror's */
    {0, "too many links", ELOOP, 0},
    {0, "too many levels of symbolic links", ELOOP, 0},
    /* "cannot overwrite non-directory P with directory D" (PUT with
     * noOverwriteDirNonDir), and the reverse */
    {0, "cannot overwrite non-directory", ENOTDIR, 0},
    {0, "cannot overwrite directory", EISDIR, 0},
    /* "extraction point is not a directory", "lstat P: not a directory" */
    {0, "not a directory", ENOTDIR, 0},
    {0, "is a directory", EISDIR, 0},
    {0, "could not find the file", ENOENT, 0},
    {0, "no such file or directory", ENOENT, 0}, /* 20.10: "link A B: ..." */
    {0, "file exists", EEXIST, 0},
    {0, "permission denied", EACCES, 0},
    {0, "operation not permitted", EPERM, 0}, /* a hard link to a dir */
    {0, "directory not empty", ENOTEMPTY, 0},
    {0, "file too large", EFBIG, 0},
    {0, "invalid cross-device link", EXDEV, 0},
    /* exec: "Container C is not running", "... is paused, unpause the
     * container before exec"; Podman "container state improper" */
    {409, "is not running", EOPNOTSUPP, 0},
    {409, "is paused", EOPNOTSUPP, 0},
    {409, "state improper", EOPNOTSUPP, 0},
    {400, NULL, EINVAL, 0},
    {401, NULL, EACCES, 0},
    {403, NULL, EACCES, 0},
    {409, NULL, EBUSY, 0},
};

/* Transport failures. The engine being unreachable (refused, reset, a
 * reply cut short) is EIO: what a file call on a filesystem whose server
 * is away gives (as NFS and sshfs do); ECONNREFUSED or ECONNRESET are no
 * errno that open(2) or read(2) documents, and engine_note_reach() logs
 * the outage once. */
static const struct curl_row {
	int code, err;
} curl_map[] = {
    {CURLE_OK, 0},
    {CURLE_OUT_OF_MEMORY, ENOMEM},
    {CURLE_OPERATION_TIMEDOUT, ETIMEDOUT},
    {CURLE_ABORTED_BY_CALLBACK, ETIMEDOUT}, /* engine_waiter_check(): stall */
    {CURLE_COULDNT_CONNECT, EIO},
    {CURLE_COULDNT_RESOLVE_HOST, EIO},
    {CURLE_SEND_ERROR, EIO},
    {CURLE_RECV_ERROR, EIO},
    {CURLE_GOT_NOTHING, EIO},
    {CURLE_PARTIAL_FILE, EIO},
    {CURLE_WRITE_ERROR, EIO}, /* our write callback refused (a reply cap) */
    {CURLE_READ_ERROR, EIO},  /* our read callback failed (a PUT's body) */
    {CURLE_SSL_CONNECT_ERROR, EIO},
    {CURLE_PEER_FAILED_VERIFICATION, EIO},
};

/* archive_errno() of a failed call (status FATAL, FAILED or RETRY). */
static const struct archive_row {
	int err, to;
} archive_map[] = {
    {ENOMEM, ENOMEM},
    {EILSEQ, EIO}, /* ARCHIVE_ERRNO_FILE_FORMAT: a damaged or cut tar */
    {-1, EIO},	   /* ARCHIVE_ERRNO_MISC */
    {EINVAL, EIO}, /* ARCHIVE_ERRNO_PROGRAMMER */
};

/* What a tool prints: strerror() texts, matched as the whole reason at
 * the end of a line ("rm: can't remove 'P': Directory not empty"), glibc's
 * (Debian's busybox and coreutils) then musl's (Alpine's busybox) where
 * they differ; phrases, matched anywhere in a line, for messages that
 * carry no strerror text. */
static const struct tool_row {
	const char *text;
	int err;
	bool phrase;
} tool_map[] = {
    {"No such file or directory", ENOENT, false},
    {"Permission denied", EACCES, false},
    {"Operation not permitted", EPERM, false},
    {"Read-only file system", EROFS, false},
    {"Directory not empty", ENOTEMPTY, false},
    {"Not a directory", ENOTDIR, false},
    {"Is a directory", EISDIR, false},
    {"File exists", EEXIST, false},
    {"No space left on device", ENOSPC, false},
    {"Invalid argument", EINVAL, false},
    {"Device or resource busy", EBUSY, false},
    {"Resource busy", EBUSY, false},
    {"Invalid cross-device link", EXDEV, false},
    {"Cross-device link", EXDEV, false},
    {"File too large", EFBIG, false}, /* truncate -s past the fs's limit */
    {"Too many levels of symbolic links", ELOOP, false},
    {"Symbolic link loop", ELOOP, false},
    {"File name too long", ENAMETOOLONG, false},
    {"Filename too long", ENAMETOOLONG, false},
    {"Text file busy", ETXTBSY, false},
    {"Disk quota exceeded", EDQUOT, false},
    {"Quota exceeded", EDQUOT, false},
    {"Too many links", EMLINK, false},
    {"Cannot allocate memory", ENOMEM, false},
    {"Out of memory", ENOMEM, false},
    {"Input/output error", EIO, false},
    {"I/O error", EIO, false},
    {"Operation not supported", EOPNOTSUPP, false},
    {"Not supported", EOPNOTSUPP, false},
    {"Value too large for defined data type", EOVERFLOW, false},
    /* GNU mv of two names of one file (busybox's renames: a no-op) */
    {"are the same file", EALREADY, true},
    /* busybox touch -d of a time with a fraction: "invalid date '@S.N'" */
    {"invalid date", EINVAL, true},
    /* busybox rm and mv: "'P' is a directory" */
    {"' is a directory", EISDIR, true},
    /* GNU mv: "cannot overwrite non-directory 'T' with directory 'F'",
     * "cannot overwrite directory 'T' with non-directory", "cannot move
     * 'D' to a subdirectory of itself, 'D/x'" */
    {"cannot overwrite non-directory", ENOTDIR, true},
    {"cannot overwrite directory", EISDIR, true},
    {"a subdirectory of itself", EINVAL, true},
};

#define N(a) (sizeof(a) / sizeof((a)[0]))

static pthread_mutex_t first_lock = PTHREAD_MUTEX_INITIALIZER;
static char first_seen[FIRST_MAX][FIRST_TEXT];
static size_t first_n;

bool errmap_first(const char *domain, const char *text)
{
	char key[FIRST_TEXT];
	bool first = false;
	size_t i;

	snprintf(key, sizeof(key), "%s\t%s", domain, text);
	pthread_mutex_lock(&first_lock);
	for (i = 0; i < first_n; i++)
		if (strcmp(first_seen[i], key) == 0)
			break;
	if (i == first_n && first_n < FIRST_MAX) {
		memcpy(first_seen[first_n++], key, sizeof(key));
		first = true;
	}
	pthread_mutex_unlock(&first_lock);
	return first;
}

/* The reason of an error text: what follows its last ": " (a path or an
 * id before it differs from call to call), so one cause logs once. */
static const char *reason_of(const char *text)
{
	const char *r = text, *p;

	while ((p = strstr(r, ": ")))
		r = p + 2;
	return r;
}

static void unknown(const char *domain, const char *text, int code)
{
	char key[FIRST_TEXT];

	if (text && text[0])
		snprintf(key, sizeof(key), "%s", reason_of(text));
	else
		snprintf(key, sizeof(key), "code %d", code);
	if (errmap_first(domain, key))
		log_warn("%s: an error ctrfs does not know (%d), taken for EIO "
			 "(logged once): %s",
			 domain, code, text && text[0] ? text : "(no text)");
}

int errmap_http(long status, const char *msg, unsigned flags)
{
	if ((status >= 200 && status < 300) || status == 304)
		return 0;
	for (size_t i = 0; i < N(http_map); i++) {
		const struct http_row *r = &http_map[i];

		if (r->status ? r->status != status
			      : status < 400 || status == 404)
			continue;
		if (r->text && (!msg || !strcasestr(msg, r->text)))
			continue;
		return -((flags & ERRMAP_CHANGE) && r->change ? r->change
							      : r->err);
	}
	if (msg && msg[0])
		unknown("engine reply", msg, (int)status);
	return -EIO;
}

int errmap_curl(int code, const char *text)
{
	for (size_t i = 0; i < N(curl_map); i++)
		if (curl_map[i].code == code)
			return -curl_map[i].err;
	unknown("engine transfer", text, code);
	return -EIO;
}

int errmap_archive(int status, int err, const char *text, bool header)
{
	if (status == ARCHIVE_OK || status == ARCHIVE_EOF)
		return 0;
	if (status == ARCHIVE_WARN && !header)
		return 0;
	if (err == ENOMEM)
		return -ENOMEM;
	if (header)
		return -ENAMETOOLONG; /* a name (or link) pax cannot carry */
	for (size_t i = 0; i < N(archive_map); i++)
		if (archive_map[i].err == err)
			return -archive_map[i].to;
	unknown("tar", text, err);
	return -EIO;
}

/* The errno one line of a tool's stderr names, or 0. */
static int tool_line(const char *line, size_t len)
{
	char *buf = strndup(line, len);
	const char *reason;
	int ret = 0;

	if (!buf)
		return -ENOMEM;
	while (len > 0 && (buf[len - 1] == ' ' || buf[len - 1] == '\r'))
		buf[--len] = '\0';
	reason = reason_of(buf);
	for (size_t i = 0; i < N(tool_map) && !ret; i++) {
		const struct tool_row *r = &tool_map[i];

		if (r->phrase ? strcasestr(buf, r->text) != NULL
			      : strcasecmp(reason, r->text) == 0)
			ret = -r->err;
	}
	free(buf);
	return ret;
}

int errmap_tool(int status, const char *err)
{
	const char *line = err;

	if (status == 0)
		return 0;
	if (status == 126 || status == 127)
		return -EOPNOTSUPP; /* the container lacks the tool */
	while (line && *line) {
		size_t len = strcspn(line, "\n");
		int ret = tool_line(line, len);

		if (ret < 0)
			return ret;
		line += len + (line[len] == '\n');
	}
	unknown("tool in the container", err, status);
	return -EIO;
}
