// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * errmap: one check per table row, with the texts the engines and tools
 * printed (Docker 20.10.24 and 26.1.5; Debian 12's busybox and GNU
 * coreutils in a busybox and a Debian container, 2026-12-06), musl's from
 * its strerror table; and an unknown text is EIO, logged once.
 */
#include "errmap.h"

#include "check.h"

#include <archive.h>
#include <curl/curl.h>
#include <errno.h>

#define HOSTP "/var/lib/docker/overlay2/41a3ff4e8c46/merged"

static void test_http_status_and_message(void)
{
	static const struct {
		long status;
		const char *msg;
		int want, want_change;
	} cases[] = {
	    {200, NULL, 0, 0},
	    {204, "", 0, 0},
	    {304, NULL, 0, 0},
	    {404, "No such container: nosuchctr", -ENOENT, -EIO},
	    {404, "Could not find the file /nope/x in container 0e4a28b8",
	     -ENOENT, -ENOENT},
	    {404, NULL, -ENOENT, -ENOENT},
	    /* a 404's words do not matter: Docker 26 says this of a PUT's
	     * missing dir, whatever the tar holds */
	    {404, "link /a /b: permission denied", -ENOENT, -ENOENT},
	    {500, "container rootfs is marked read-only", -EROFS, -EROFS},
	    {500, "mounted volume is marked read-only", -EROFS, -EROFS},
	    {400, "mounted volume is marked read-only", -EROFS, -EROFS},
	    {500, "open /x/f: read-only file system", -EROFS, -EROFS},
	    {500, "write /small/big: no space left on device", -ENOSPC,
	     -ENOSPC},
	    {500, "lstat /tmp/p/aaaa: file name too long", -ENAMETOOLONG,
	     -ENAMETOOLONG},
	    {500,
	     "Error processing tar file(exit status 1): open /tmp/p/aaaa: file "
	     "name too long",
	     -ENAMETOOLONG, -ENAMETOOLONG},
	    {500, "evalSymlinksInScope: too many links in " HOSTP "/tmp/p/la",
	     -ELOOP, -ELOOP},
	    {500, "EvalSymlinks: too many links", -ELOOP, -ELOOP},
	    {500, "lstat /tmp/p/la/x: too many levels of symbolic links",
	     -ELOOP, -ELOOP},
	    {500,
	     "Error processing tar file(exit status 1): cannot overwrite "
	     "non-directory \"/tmp/p/f\" with directory \"/tmp/p\"",
	     -ENOTDIR, -ENOTDIR},
	    {500, "cannot overwrite directory \"/tmp/p/d\" with non-directory",
	     -EISDIR, -EISDIR},
	    {500, "extraction point is not a directory", -ENOTDIR, -ENOTDIR},
	    {500, "lstat " HOSTP "/tmp/p/f/x: not a directory", -ENOTDIR,
	     -ENOTDIR},
	    {500, "not a directory", -ENOTDIR, -ENOTDIR},
	    {500, "open /tmp/p/d: is a directory", -EISDIR, -EISDIR},
	    {500, "Could not find the file /x in container c", -ENOENT,
	     -ENOENT},
	    {500,
	     "Error processing tar file(exit status 1): link /tmp/p/nope "
	     "/tmp/p/h: no such file or directory",
	     -ENOENT, -ENOENT},
	    {500, "mkdir /tmp/p/d: file exists", -EEXIST, -EEXIST},
	    {500, "open /root/x: permission denied", -EACCES, -EACCES},
	    {500, "link /tmp/p/e2 /tmp/p/h2: operation not permitted", -EPERM,
	     -EPERM},
	    {500, "remove /tmp/p/d: directory not empty", -ENOTEMPTY,
	     -ENOTEMPTY},
	    {500, "write /tmp/p/f: file too large", -EFBIG, -EFBIG},
	    {500, "link /a /small/b: invalid cross-device link", -EXDEV,
	     -EXDEV},
	    {409, "Container 722e2d7b is not running", -EOPNOTSUPP,
	     -EOPNOTSUPP},
	    {409, "container 722e2d7b is not running", -EOPNOTSUPP,
	     -EOPNOTSUPP},
	    {409,
	     "Container a96a220c is paused, unpause the container before exec",
	     -EOPNOTSUPP, -EOPNOTSUPP},
	    {409, "container state improper", -EOPNOTSUPP, -EOPNOTSUPP},
	    {400, "bad parameter: pathcannot be empty", -EINVAL, -EINVAL},
	    {401, NULL, -EACCES, -EACCES},
	    {403, "forbidden", -EACCES, -EACCES},
	    {409, "conflict", -EBUSY, -EBUSY},
	    /* unknown: EIO */
	    {500,
	     "Error processing tar file(exit status 1): archive/tar: "
	     "invalid tar header",
	     -EIO, -EIO},
	    {500, NULL, -EIO, -EIO},
	    {502, "", -EIO, -EIO},
	    /* a word below 400 never counts */
	    {301, "read-only", -EIO, -EIO},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int got = errmap_http(cases[i].status, cases[i].msg, 0);
		int chg =
		    errmap_http(cases[i].status, cases[i].msg, ERRMAP_CHANGE);

		if (got != cases[i].want || chg != cases[i].want_change)
			fprintf(stderr, "http case %zu: %ld '%s'\n", i,
				cases[i].status,
				cases[i].msg ? cases[i].msg : "(null)");
		CHECK_INT(got, cases[i].want);
		CHECK_INT(chg, cases[i].want_change);
	}
}

static void test_curl_codes(void)
{
	static const struct {
		int code, want;
	} cases[] = {
	    {CURLE_OK, 0},
	    {CURLE_OUT_OF_MEMORY, -ENOMEM},
	    {CURLE_OPERATION_TIMEDOUT, -ETIMEDOUT},
	    {CURLE_ABORTED_BY_CALLBACK, -ETIMEDOUT},
	    {CURLE_COULDNT_CONNECT, -EIO},
	    {CURLE_COULDNT_RESOLVE_HOST, -EIO},
	    {CURLE_SEND_ERROR, -EIO},
	    {CURLE_RECV_ERROR, -EIO},
	    {CURLE_GOT_NOTHING, -EIO},
	    {CURLE_PARTIAL_FILE, -EIO},
	    {CURLE_WRITE_ERROR, -EIO},
	    {CURLE_READ_ERROR, -EIO},
	    {CURLE_SSL_CONNECT_ERROR, -EIO},
	    {CURLE_PEER_FAILED_VERIFICATION, -EIO},
	    {CURLE_UNSUPPORTED_PROTOCOL, -EIO}, /* unknown */
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		CHECK_INT(errmap_curl(cases[i].code, "text"), cases[i].want);
}

static void test_archive_status(void)
{
	CHECK_INT(errmap_archive(ARCHIVE_OK, 0, NULL, false), 0);
	CHECK_INT(errmap_archive(ARCHIVE_EOF, 0, NULL, false), 0);
	CHECK_INT(errmap_archive(ARCHIVE_WARN, 0, NULL, false), 0);
	CHECK_INT(errmap_archive(ARCHIVE_FATAL, ENOMEM, "no memory", false),
		  -ENOMEM);
	CHECK_INT(errmap_archive(ARCHIVE_FATAL, EILSEQ, "Truncated tar archive",
				 false),
		  -EIO);
	CHECK_INT(errmap_archive(ARCHIVE_FAILED, -1, "misc", false), -EIO);
	CHECK_INT(errmap_archive(ARCHIVE_RETRY, EINVAL, "programmer", false),
		  -EIO);
	CHECK_INT(errmap_archive(ARCHIVE_FATAL, EPERM, "odd", false), -EIO);
	/* a header the pax writer refused: a name it cannot store */
	CHECK_INT(errmap_archive(ARCHIVE_WARN, 0, "name", true), -ENAMETOOLONG);
	CHECK_INT(errmap_archive(ARCHIVE_FAILED, -1, "name", true),
		  -ENAMETOOLONG);
	CHECK_INT(errmap_archive(ARCHIVE_FATAL, ENOMEM, "no memory", true),
		  -ENOMEM);
}

static void test_tool_texts(void)
{
	static const struct {
		int status;
		const char *err;
		int want;
	} cases[] = {
	    {0, "", 0},
	    {127, "sh: nosuchtool: not found", -EOPNOTSUPP},
	    {127, "/tools.sh: 2: nosuchtool: not found", -EOPNOTSUPP},
	    {126, "sh: /bin/x: Permission denied", -EOPNOTSUPP},
	    /* busybox */
	    {1, "rm: can't remove '/tmp/p/nope': No such file or directory",
	     -ENOENT},
	    {1, "truncate: /tmp/p/nope/x: open: No such file or directory",
	     -ENOENT},
	    {1, "rm: can't remove '/tmp/p/d/x': Permission denied", -EACCES},
	    {1, "chmod: /tmp/p/f: Operation not permitted", -EPERM},
	    {1, "rm: can't remove '/ro/f': Read-only file system", -EROFS},
	    {1, "rmdir: '/tmp/p/d': Directory not empty", -ENOTEMPTY},
	    {1, "rm: can't stat '/tmp/p/f/x': Not a directory", -ENOTDIR},
	    {1, "truncate: /tmp/p/d: open: Is a directory", -EISDIR},
	    {1, "mkdir: can't create directory '/tmp/p/d': File exists",
	     -EEXIST},
	    {1,
	     "dd: error writing '/small/big': No space left on device\n"
	     "257+0 records in\n256+0 records out",
	     -ENOSPC},
	    {1, "mv: can't rename '/tmp/p/d': Invalid argument", -EINVAL},
	    {1, "rm: can't remove '/m': Device or resource busy", -EBUSY},
	    {1, "ln: /small/f: Invalid cross-device link", -EXDEV},
	    {1, "truncate: /tmp/p/f: truncate: File too large", -EFBIG},
	    {1, "chmod: /tmp/p/la/x: Too many levels of symbolic links",
	     -ELOOP},
	    {1, "touch: /tmp/p/0000: File name too long", -ENAMETOOLONG},
	    {1, "truncate: /tmp/p/sl: open: Text file busy", -ETXTBSY},
	    {1, "truncate: /q/f: open: Disk quota exceeded", -EDQUOT},
	    {1, "mv: can't rename '/a': Too many links", -EMLINK},
	    {1, "truncate: /f: truncate: Cannot allocate memory", -ENOMEM},
	    {1, "chmod: /f: Input/output error", -EIO},
	    {1, "chmod: /f: Operation not supported", -EOPNOTSUPP},
	    {1, "stat: /f: Value too large for defined data type", -EOVERFLOW},
	    {1, "rm: '/tmp/p/d' is a directory", -EISDIR},
	    {1, "mv: '/tmp/p/d' is a directory", -EISDIR},
	    /* GNU coreutils */
	    {1, "rm: cannot remove '/tmp/p/nope': No such file or directory",
	     -ENOENT},
	    {1,
	     "mv: cannot move '/tmp/p/d/x' to '/tmp/p/d/y': Permission denied",
	     -EACCES},
	    {1,
	     "chmod: changing permissions of '/tmp/p/f': Operation not "
	     "permitted",
	     -EPERM},
	    {1, "touch: setting times of '/ro/f': Read-only file system",
	     -EROFS},
	    {1,
	     "mv: cannot move '/tmp/p/e2' to '/tmp/p/d': Directory not empty",
	     -ENOTEMPTY},
	    {1, "chmod: cannot access '/tmp/p/f/x': Not a directory", -ENOTDIR},
	    {1, "rm: cannot remove '/tmp/p/d': Is a directory", -EISDIR},
	    {1, "mkdir: cannot create directory '/tmp/p/d': File exists",
	     -EEXIST},
	    {1,
	     "truncate: failed to truncate '/tmp/p/f' at 999999999999999 "
	     "bytes: "
	     "File too large",
	     -EFBIG},
	    {1,
	     "mv: cannot stat '/tmp/p/la/x': Too many levels of symbolic links",
	     -ELOOP},
	    {1, "touch: setting times of '/tmp/p/0000': File name too long",
	     -ENAMETOOLONG},
	    {1,
	     "ln: failed to create hard link '/small/f' => '/tmp/p/f': Invalid "
	     "cross-device link",
	     -EXDEV},
	    {1, "truncate: cannot open '/tmp/p/sl' for writing: Text file busy",
	     -ETXTBSY},
	    {1, "mv: '/tmp/p/f' and '/tmp/p/f2' are the same file", -EALREADY},
	    {1, "touch: invalid date '@1600000000.123456789'", -EINVAL},
	    {1,
	     "mv: cannot overwrite non-directory '/tmp/p/f' with directory "
	     "'/tmp/p/e'",
	     -ENOTDIR},
	    {1, "mv: cannot overwrite directory '/tmp/p/d' with non-directory",
	     -EISDIR},
	    {1,
	     "mv: cannot move '/tmp/p/d' to a subdirectory of itself, "
	     "'/tmp/p/d/sub'",
	     -EINVAL},
	    /* musl (Alpine's busybox) */
	    {1, "rm: can't remove '/m': Resource busy", -EBUSY},
	    {1, "ln: /small/f: Cross-device link", -EXDEV},
	    {1, "chmod: /tmp/p/la/x: Symbolic link loop", -ELOOP},
	    {1, "touch: /tmp/p/0000: Filename too long", -ENAMETOOLONG},
	    {1, "truncate: /q/f: open: Quota exceeded", -EDQUOT},
	    {1, "truncate: /f: truncate: Out of memory", -ENOMEM},
	    {1, "chmod: /f: I/O error", -EIO},
	    {1, "chmod: /f: Not supported", -EOPNOTSUPP},
	    /* the reason is the end of the line: a name that holds one of
	     * the texts does not count */
	    {1, "rm: can't remove '/File exists/x': Permission denied",
	     -EACCES},
	    {1,
	     "rm: can't remove '/x: Is a directory': No such file or "
	     "directory",
	     -ENOENT},
	    /* unknown */
	    {1, "chown: unknown user/group 99999999999:0", -EIO},
	    {1, "", -EIO},
	    {2, "something odd", -EIO},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int got = errmap_tool(cases[i].status, cases[i].err);

		if (got != cases[i].want)
			fprintf(stderr, "tool case %zu: '%s'\n", i,
				cases[i].err);
		CHECK_INT(got, cases[i].want);
	}
}

static void test_unknown_logged_once(void)
{
	CHECK(errmap_first("test", "a text"));
	CHECK(!errmap_first("test", "a text"));
	CHECK(errmap_first("test", "another"));
	CHECK(errmap_first("other domain", "a text"));
	/* the first call of the tests above took this one's place */
	CHECK(!errmap_first("engine reply", "invalid tar header"));
	CHECK(!errmap_first("tool in the container",
			    "unknown user/group 99999999999:0"));
	/* bounded: past the table's room nothing is new any more */
	for (int i = 0; i < 100; i++) {
		char t[16];

		snprintf(t, sizeof(t), "t%d", i);
		(void)errmap_first("fill", t);
	}
	CHECK(!errmap_first("fill", "one more"));
}

int main(void)
{
	test_http_status_and_message();
	test_curl_codes();
	test_archive_status();
	test_tool_texts();
	test_unknown_logged_once();
	return check_report();
}
