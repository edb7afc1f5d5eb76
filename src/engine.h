/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The HTTP client of the engine API (Docker Engine, or Podman's compatible
 * API), over a unix socket or TCP. Its files (engine*.c, engine_int.h) are
 * the only ones that include curl.
 *
 * Simple calls (JSON, HEAD) are whole requests with a bounded reply. An
 * archive GET is a pull stream: the caller asks for the next block and the
 * transfer advances only as far as that, so memory stays bounded by one
 * stream buffer whatever the size of the body. Buffers and connections are
 * pooled and reused across requests.
 */
#ifndef CTRFS_ENGINE_H
#define CTRFS_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

#define ENGINE_API_MAX "1.47"
/* The oldest API whose archive, exec and inspect calls ctrfs relies on
 * (Docker 1.12; the oldest that Docker 26 itself still serves). */
#define ENGINE_API_MIN "1.24"

struct engine;
struct engine_stream;
struct hostcfg;

struct engine_reply {
	long status;
	char *body; /* NUL-terminated, or NULL */
	size_t len;
	/* X-Docker-Container-Path-Stat, or "": base64 of JSON that names a
	 * symlink's resolved target, up to PATH_MAX and then some */
	char stat[12288];
};

/*
 * hc->url: unix:///path, tcp://host[:port], http(s)://host:port; with
 * hc->tls a tcp:// URL is HTTPS (default port 2376), checked against
 * hc->ca and presenting hc->cert/hc->key; never a plaintext fallback.
 * timeout: seconds a call may stall before it fails. Returns 0 or -errno
 * (-EINVAL: bad URL).
 */
int engine_new(const struct hostcfg *hc, unsigned timeout, struct engine **out);
void engine_free(struct engine *e);

/*
 * The engine's wall-clock second now, as far as its replies tell: our
 * time(NULL) less the lag of its clock behind ours, rounded so that the
 * true lag is below it plus one second (0 until a reply has a Date header).
 * Use it wherever a second of ours is compared with an mtime the engine
 * reports; a remote engine's clock may be off by any amount.
 */
long engine_now(struct engine *e);
/* The last call failed to reach the engine (no connection, or the
 * connection broke without an answer). */
bool engine_down(struct engine *e);
/* The same as a time for an mtime ctrfs sets (a new file's, `touch`'s):
 * the engine's clock, as a file made inside the container would have. */
void engine_clock(struct engine *e, struct timespec *ts);

/* A time as the engine will keep it from a PUT's tar header: Podman sets
 * times with utimes(), to the microsecond rounded up (Go's
 * NsecToTimeval: quirk times_us); Docker keeps nanoseconds. What ctrfs puts,
 * and caches, goes through this, so its record and the engine's agree. */
void engine_time_fit(const struct engine *e, struct timespec *ts);

/*
 * What an engine's API does unlike Docker's, one named fact each, so that
 * a caller asks for the fact and not for the engine's brand. Set by
 * engine_ping() (before it, Docker's); docs/design.md "Podman" has each
 * measured and what ctrfs does about it.
 */
struct engine_quirks {
	const char *name; /* "Docker", "Podman" */
	/* a GET's tar (and a listing's) reports every owner as 0:0; a PUT
	 * applies the tar's, so one that puts an entry back must take the
	 * owner from the container */
	bool owners_zero;
	/* ?path= is taken for a glob: a path holding * ? [ \ is refused */
	bool glob_paths;
	/* a PUT into a missing directory makes it (Docker: 404) */
	bool put_makes_dirs;
	/* a HEAD of a dangling symlink answers 404, with the link's header */
	bool head_dangling_404;
	/* a GET of a symlink gives its target's file, not the link */
	bool get_follows_links;
	/* a tar hard link to a symlink is made to the link's target */
	bool hardlink_to_target;
	/* a GET's tar times are rounded to the nearest second, not cut */
	bool tar_rounds_seconds;
	/* a PUT sets times to the microsecond, rounded up */
	bool times_us;
	/* a write-back batch takes every pending entry of the container,
	 * however recently changed: a directory's attributes change at once
	 * on Podman (owners_zero), outside the batches, and leaving out what
	 * changed a moment ago (writer_wb.c) let a file land in a directory
	 * after its times were set (its mtime a second late; Podman's PUT
	 * of a directory's entry also moves the mtime of the directory it
	 * goes into) */
	bool batch_whole;
	/* a HEAD costs a good part of a GET (56 against 381 ms on Podman;
	 * about 1 against 60-150 on Docker): a walk lists again sooner */
	bool head_dear;
};

const struct engine_quirks *engine_quirks(const struct engine *e);

/* Whether one GET of a subtree of bytes bytes costs less than stale HEADs
 * here, from what the two have cost so far (callcost.h: a HEAD, a GET's
 * first byte; start values per engine until measured); *head and *get
 * say the estimates, in seconds. */
bool engine_get_pays(struct engine *e, size_t stale, off_t bytes, double *head,
		     double *get);

/* The tar a listing may stream before listing by exec costs less, from the
 * same estimates (callcost.h). */
off_t engine_list_cap(struct engine *e);

/*
 * The engine serializes archive calls (and exec) per container: a call
 * waits until an open GET on the same container has been read to its end.
 * fn is called with the engine and the container's id before each such
 * call, to close transfers of ours that sit idle on it.
 */
typedef void (*engine_preempt_fn)(const struct engine *e, const char *ctr_id);
void engine_set_preempt(struct engine *e, engine_preempt_fn fn);

/*
 * fn says whether the caller of a streamed GET has given up (its process
 * is being killed): a GET that waits for the engine then ends with
 * -EINTR, checked after every wait of at most a second, but only in a
 * thread that has called engine_set_abortable(true): work done for
 * others (another reader's drain, a copy a second opener shares) must not
 * end because one caller died. Returns the thread's previous setting.
 */
typedef bool (*engine_abandoned_fn)(void);
void engine_set_abandoned(struct engine *e, engine_abandoned_fn fn);
bool engine_set_abortable(bool on);

/* Negotiates the API version with GET /_ping (DOCKER_API_VERSION pins
 * it). 0 or -errno, with a message in msg: -EPROTO for an engine that
 * gives no version, one that is not a version, or one older than
 * ENGINE_API_MIN. An engine it cannot reach is not logged (the "does not
 * answer" line of engine_note_reach()): msg says it, with curl's reason,
 * the one line of a refused start; the engine counts as down until a
 * call reaches it (then "answers again" is logged). */
int engine_ping(struct engine *e, char *msg, size_t msglen);

/*
 * One whole request; path is below the version prefix ("/containers/json")
 * and already escaped. Returns 0 when the engine replied (whatever the
 * status; see errmap_http()), or -errno when it could not be
 * reached. Free the reply with engine_reply_free().
 */
int engine_request(struct engine *e, const char *method, const char *path,
		   struct engine_reply *r);
void engine_reply_free(struct engine_reply *r);

/* The "message" of an engine error body, or a generic text. */
const char *engine_reply_message(const struct engine_reply *r, char *buf,
				 size_t len);

/* URL-escapes s for a query value; free with engine_free_string(). */
char *engine_escape(const char *s);
void engine_free_string(char *s);

/*
 * Podman's archive calls take the path for a glob (Go's filepath.Glob):
 * the archive calls refuse, with -EOPNOTSUPP, a path that holds one of
 * its pattern characters ('*', '?', '[', '\\'), which would reach other
 * files or none; the caller logs ENGINE_PATTERN_MSG once as the reason.
 */
#define ENGINE_PATTERN_MSG                                                     \
	"Podman's archive API takes '*', '?', '[' and '\\' in a path for a "   \
	"pattern"

/* HEAD /containers/{id}/archive?path=P. */
int engine_archive_head(struct engine *e, const char *ctr, const char *path,
			struct engine_reply *r);

/*
 * GET /containers/{id}/archive?path=P as a stream. 0 when the engine
 * answered 200 and the body can be read; else -errno (-ENOENT for 404),
 * and msg holds the engine's reason.
 */
int engine_archive_get(struct engine *e, const char *ctr, const char *path,
		       struct engine_stream **out, char *msg, size_t msglen);

/*
 * PUT /containers/{id}/archive?path=DIR with a tar body pulled from fn
 * piece by piece: bytes in memory, or a range of an open file. fn fills
 * *p and returns 1, 0 at the end, or -errno to abort; with p NULL it starts
 * the body again from its first piece (curl sends a request again when the
 * kept-alive connection it reused closed before any reply). The body is sent
 * chunked, in constant memory. bulk is how many of its bytes are file
 * data: from ENGINE_RAW_PUT_MIN on, and where no TLS is in the way, the PUT
 * goes on a connection of its own and the file ranges go to the socket with
 * sendfile() (engine_put.c). Returns 0 when the engine accepted it, else
 * -errno (-EROFS for a read-only root filesystem or volume) with the
 * engine's reason in msg.
 */
#define ENGINE_RAW_PUT_MIN (1024 * 1024)
struct engine_piece {
	const void *buf; /* len bytes here, or */
	int fd;		 /* with buf NULL: len bytes of fd from off */
	off_t off;
	size_t len;
};
typedef int (*engine_piece_fn)(void *ctx, struct engine_piece *p);
int engine_archive_put(struct engine *e, const char *ctr, const char *dir,
		       engine_piece_fn fn, void *ctx, off_t bulk, char *msg,
		       size_t msglen);

/*
 * Runs argv (no shell) in the container and waits for it: 0 when it exited
 * 0; else -errno: the tool's failure (its stderr, bounded, in msg, and its
 * exit status in *status) or -EOPNOTSUPP when the container is not running
 * or lacks the tool.
 */
int engine_exec(struct engine *e, const char *ctr, const char *const *argv,
		int *status, char *msg, size_t msglen);

/* The same, keeping the tool's standard output: on success *out holds
 * *outlen bytes and a NUL after them (free() it); on failure *out is NULL.
 * The output is bounded by the size of a reply the engine may send. */
int engine_exec_out(struct engine *e, const char *ctr, const char *const *argv,
		    int *status, char *msg, size_t msglen, char **out,
		    size_t *outlen);

/* Seconds without progress after which a call fails (-o timeout). */
long engine_timeout(const struct engine *e);

/*
 * Starts argv in the container with stdin, stdout and stderr attached, on
 * a connection of its own: 0 and *out, the raw stream (stdin one way, the
 * engine's multiplexed stdout/stderr frames the other), or -errno with the
 * reason in msg. ms bounds each wait for the engine.
 */
struct engine_raw;
int engine_exec_attach(struct engine *e, const char *ctr,
		       const char *const *argv, int ms, struct engine_raw **out,
		       char *msg, size_t msglen);
/* Runs argv in the container with the size bytes at the start of fd as
 * its standard input, and waits for it: as engine_exec() (0 when it
 * exited 0, else -errno, its stderr in msg and its status in *status). A
 * tool that ends before it read them all is not fed the rest. */
int engine_exec_in(struct engine *e, const char *ctr, const char *const *argv,
		   int fd, off_t size, int *status, char *msg, size_t msglen);
/* All of buf, or -errno (-ETIMEDOUT after ms without progress). */
ssize_t engine_raw_send(struct engine_raw *r, const void *buf, size_t len,
			int ms);
/* Up to len bytes, 0 when the engine closed the stream, or -errno
 * (-ETIMEDOUT after ms without a byte). */
ssize_t engine_raw_recv(struct engine_raw *r, void *buf, size_t len, int ms);
/* Whether nothing has come on the stream and it is still open: a shell
 * that ended closes it; true means it was alive a moment ago. */
bool engine_raw_quiet(struct engine_raw *r);
void engine_raw_free(struct engine_raw *r);

/*
 * GET path (below the version prefix, already escaped) on a connection of
 * its own, for a body without end (the event stream): 0 when the engine
 * answered 200, *out then reads the body (engine_raw_recv()) and *chunked
 * says whether it comes in chunks; else -errno with the reason in msg. ms
 * bounds each wait for the reply's head.
 */
int engine_raw_get(struct engine *e, const char *path, int ms,
		   struct engine_raw **out, bool *chunked, char *msg,
		   size_t msglen);
/* Ends what engine_raw_recv() waits for on r, from any thread: it returns
 * 0, as if the engine had closed the connection. r stays to be freed. */
void engine_raw_shutdown(struct engine_raw *r);

/* Next block of the body: its length, 0 at a clean end, or -errno. The
 * block stays valid until the next call. */
ssize_t engine_stream_read(struct engine_stream *s, const void **buf);

/* Bytes of the body received so far. */
off_t engine_stream_bytes(const struct engine_stream *s);

/* Ends the stream; a transfer not read to the end is aborted, which
 * releases the container's lock in the engine at once. */
void engine_stream_free(struct engine_stream *s);

#endif
