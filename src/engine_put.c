// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A PUT with a big body, on a connection of its own: the request line, the
 * chunk framing and the reply are ours, and the file ranges of the body go
 * from the spool to the socket with sendfile(), which on a unix socket
 * passes the pages instead of copying them (the sender's system time per
 * GiB fell from 0.37-0.74 s to 0.14-0.17 s). Through curl the
 * same bytes are copied twice in ctrfs (pread into the upload buffer, then
 * send), and the engine, which needs both of this machine's CPUs to unpack
 * a big file, waits for them: 1 GiB from /dev/shm to the dev engine took
 * 0.93-1.49 s with curl (median 1.27) and 0.74-1.25 s with sendfile
 * (median 0.84), alternating, 8 rounds (docs/performance-notes.md).
 */
#include "engine.h"
#include "errmap.h"
#include "engine_int.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define SLICE_MS  1000	      /* how often a wait looks for a stall */
#define REPLY_CAP (64 * 1024) /* of a reply kept; the rest is not read */
#define COPY_BUF  (64 * 1024) /* where sendfile() cannot read the file */

struct rawput {
	int fd;
	struct waiter w;
	curl_off_t moved; /* bytes sent and received */
	size_t got;	  /* bytes of the reply */
	bool answered;	  /* the engine spoke (or hung up) before the end */
};

/* 1 when the socket takes more, 0 when the engine answered or hung up
 * (stop sending, read what it said), -ETIMEDOUT once stalled. */
static int wait_out(struct rawput *p)
{
	for (;;) {
		struct pollfd pf = {.fd = p->fd, .events = POLLOUT | POLLIN};
		int n = poll(&pf, 1, SLICE_MS);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0) {
			if (engine_waiter_check(&p->w, 0, 0, 0, p->moved))
				return -ETIMEDOUT;
			continue;
		}
		if (pf.revents & (POLLIN | POLLHUP | POLLERR)) {
			p->answered = true;
			return 0;
		}
		return 1;
	}
}

static bool hung_up(int err)
{
	return err == EPIPE || err == ECONNRESET || err == ENOTCONN;
}

/* After a send that took nothing (errno says why): 0 to go on, 1 when
 * the engine answered or hung up (stop sending), -errno. */
static int send_wait(struct rawput *p)
{
	int w;

	if (errno == EINTR)
		return 0;
	if (hung_up(errno)) {
		p->answered = true;
		return 1;
	}
	if (errno != EAGAIN)
		return -errno;
	w = wait_out(p);
	return w < 0 ? w : w == 0 ? 1 : 0;
}

/* Sends len bytes of buf: 0, 1 when the engine answered first, -errno.
 * more: the body goes on (on TCP, the kernel may hold a short segment). */
static int send_bytes(struct rawput *p, const void *buf, size_t len, bool more)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = send(p->fd, (const char *)buf + done, len - done,
				 MSG_NOSIGNAL | (more ? MSG_MORE : 0));
		int ret;

		if (n >= 0) {
			done += (size_t)n;
			p->moved += n;
			continue;
		}
		ret = send_wait(p);
		if (ret != 0)
			return ret;
	}
	return 0;
}

static int send_mem(struct rawput *p, const void *buf, size_t len)
{
	return send_bytes(p, buf, len, true);
}

/* Where the kernel cannot splice from the file's filesystem. */
static int copy_file(struct rawput *p, int fd, off_t off, size_t len)
{
	char buf[COPY_BUF];

	while (len > 0) {
		ssize_t n =
		    pread(fd, buf, len < sizeof(buf) ? len : sizeof(buf), off);
		int ret;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO; /* shrank under us */
		ret = send_mem(p, buf, (size_t)n);
		if (ret != 0)
			return ret;
		off += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Whether the engine has spoken (or hung up) already, without waiting:
 * a reader that keeps up never lets the socket fill, so wait_out() would
 * not see an early answer until the whole body had gone. */
static bool answered_now(struct rawput *p)
{
	struct pollfd pf = {.fd = p->fd, .events = POLLIN};

	if (poll(&pf, 1, 0) > 0 && (pf.revents & (POLLIN | POLLHUP | POLLERR)))
		p->answered = true;
	return p->answered;
}

/* Sends len bytes of fd from off: 0, 1 when the engine answered first,
 * -errno. */
static int send_file(struct rawput *p, int fd, off_t off, size_t len)
{
	bool first = true;

	while (len > 0) {
		ssize_t n = sendfile(p->fd, fd, &off, len);
		int ret;

		if (n > 0) {
			len -= (size_t)n;
			p->moved += n;
			first = false;
			/* one poll per socket buffer's worth */
			if (len > 0 && answered_now(p))
				return 1;
			continue;
		}
		if (n == 0)
			return -EIO; /* the file shrank under us */
		if (first &&
		    (errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP))
			return copy_file(p, fd, off, len);
		ret = send_wait(p);
		if (ret != 0)
			return ret;
	}
	return 0;
}

/* One piece as one chunk: 0, 1 when the engine answered first, -errno. */
static int send_chunk(struct rawput *p, const struct engine_piece *pc)
{
	char line[32];
	int ret;

	snprintf(line, sizeof(line), "%zx\r\n", pc->len);
	ret = send_mem(p, line, strlen(line));
	if (ret == 0)
		ret = pc->buf ? send_mem(p, pc->buf, pc->len)
			      : send_file(p, pc->fd, pc->off, pc->len);
	if (ret == 0)
		ret = send_mem(p, "\r\n", 2);
	return ret;
}

/* Sends the whole body: 0, 1 when the engine answered before its end,
 * -errno (the piece's, or the socket's). */
static int send_body(struct rawput *p, engine_piece_fn fn, void *ctx)
{
	for (;;) {
		struct engine_piece pc = {.fd = -1};
		int ret = fn(ctx, &pc);

		if (ret < 0)
			return ret;
		if (ret == 0)
			return send_bytes(p, "0\r\n\r\n", 5, false);
		if (pc.len == 0)
			continue;
		ret = send_chunk(p, &pc);
		if (ret != 0)
			return ret;
	}
}

/* The header's value in the head of a reply (NUL-terminated), or NULL. */
static const char *header(const char *head, const char *name, char *out,
			  size_t outlen)
{
	size_t nl = strlen(name);

	for (const char *l = strstr(head, "\r\n"); l && l[2] != '\r';
	     l = strstr(l + 2, "\r\n")) {
		const char *v = l + 2;
		size_t k;

		if (strncasecmp(v, name, nl) != 0 || v[nl] != ':')
			continue;
		v += nl + 1;
		v += strspn(v, " \t");
		k = strcspn(v, "\r");
		if (k >= outlen)
			k = outlen - 1;
		memcpy(out, v, k);
		out[k] = '\0';
		return out;
	}
	return NULL;
}

/* Whether the chunked body from in to lim has ended; with decode, its
 * data is moved together at in, *blen bytes. */
static bool chunks_whole(char *in, const char *lim, bool decode, size_t *blen)
{
	char *start = in, *out = in;

	for (;;) {
		char *eol = memmem(in, (size_t)(lim - in), "\r\n", 2);
		unsigned long k;

		if (!eol)
			return false;
		k = strtoul(in, NULL, 16);
		if (k == 0) {
			*blen = (size_t)(out - start);
			return true;
		}
		in = eol + 2;
		if ((size_t)(lim - in) < k + 2)
			return false;
		if (decode)
			memmove(out, in, k);
		out += k;
		in += k + 2;
	}
}

/*
 * Whether buf (len bytes, a NUL after them) holds a whole reply; when it
 * does, *body and *blen are its body (a chunked one decoded in place). A
 * reply with neither a length nor chunks ends with the connection (eof).
 */
static bool reply_whole(char *buf, size_t len, bool eof, char **body,
			size_t *blen)
{
	char *end = strstr(buf, "\r\n\r\n");
	bool chunked = false, sized = false;
	unsigned long long cl = 0;
	char v[64];
	size_t have;

	if (!end)
		return false;
	*body = end + 4;
	have = len - (size_t)(*body - buf);
	end[2] = '\0'; /* the head alone, for header() */
	if (header(buf, "Content-Length", v, sizeof(v))) {
		sized = true;
		cl = strtoull(v, NULL, 10);
	} else if (header(buf, "Transfer-Encoding", v, sizeof(v))) {
		chunked = strcasecmp(v, "chunked") == 0;
	}
	end[2] = '\r';
	if (sized) {
		*blen = have < cl ? have : (size_t)cl;
		return have >= cl || eof;
	}
	if (chunked) {
		if (!chunks_whole(*body, buf + len, false, blen))
			return false; /* cut short, even at eof */
		return chunks_whole(*body, buf + len, true, blen);
	}
	*blen = have;
	return eof;
}

/* Reads the engine's reply into r: 0, or -errno with the reason in msg. */
static int read_reply(struct rawput *p, struct engine_reply *r, char *msg,
		      size_t msglen)
{
	char *buf = malloc(REPLY_CAP + 1), *body = NULL;
	size_t len = 0, blen = 0;
	bool whole = false;
	int ret = 0;

	if (!buf)
		return -ENOMEM;
	buf[0] = '\0';
	while (!whole) {
		struct pollfd pf = {.fd = p->fd, .events = POLLIN};
		ssize_t n;
		int k;

		if (len == REPLY_CAP) { /* enough for a status and reason */
			whole = reply_whole(buf, len, true, &body, &blen);
			break;
		}
		n = recv(p->fd, buf + len, REPLY_CAP - len, 0);
		if (n > 0) {
			len += (size_t)n;
			buf[len] = '\0';
			p->moved += n;
			p->got = len;
			whole = reply_whole(buf, len, false, &body, &blen);
			continue;
		}
		if (n == 0 || hung_up(errno)) {
			whole = reply_whole(buf, len, true, &body, &blen);
			break;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN) {
			ret = -errno;
			break;
		}
		k = poll(&pf, 1, SLICE_MS);
		if (k < 0 && errno != EINTR) {
			ret = -errno;
			break;
		}
		if (k == 0 && engine_waiter_check(&p->w, 0, 0, 0, p->moved)) {
			ret = -ETIMEDOUT;
			break;
		}
	}
	if (ret == 0 &&
	    (!whole || sscanf(buf, "HTTP/1.%*d %ld", &r->status) != 1))
		ret = -EIO;
	if (ret < 0) {
		snprintf(msg, msglen, "%s",
			 ret != -EIO ? strerror(-ret)
			 : len	     ? "malformed reply"
				     : "the engine closed the connection "
				       "without a reply");
		free(buf);
		return ret;
	}
	memmove(buf, body, blen);
	buf[blen] = '\0';
	r->body = buf;
	r->len = blen;
	return 0;
}

/* Sends with SIGPIPE blocked: sendfile() has no MSG_NOSIGNAL, and once
 * libfuse's handlers are gone (the flush at unmount) it would kill us. */
static int send_body_quietly(struct rawput *p, engine_piece_fn fn, void *ctx)
{
	sigset_t pipe, old;
	struct timespec zero = {0};
	int ret;

	sigemptyset(&pipe);
	sigaddset(&pipe, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe, &old);
	ret = send_body(p, fn, ctx);
	while (sigtimedwait(&pipe, NULL, &zero) == SIGPIPE)
		;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return ret;
}

int engine_put_raw(struct engine *e, const char *ctr, const char *target,
		   engine_piece_fn fn, void *ctx, struct engine_reply *r,
		   char *msg, size_t msglen)
{
	struct rawput p = {0};
	struct engine_raw *raw;
	const char *host = strstr(engine_base(e), "://") + 3;
	char req[16384 + 512];
	int n, ret, sent;

	memset(r, 0, sizeof(*r));
	ret = engine_raw_connect(e, &raw, msg, msglen);
	if (ret < 0)
		return ret;
	p.fd = engine_raw_fd(raw);
	fcntl(p.fd, F_SETFL, fcntl(p.fd, F_GETFL) | O_NONBLOCK);
	engine_waiter_init(&p.w, e, ctr, NULL);
	n = snprintf(req, sizeof(req),
		     "PUT %s HTTP/1.1\r\n"
		     "Host: %s\r\n"
		     "Content-Type: application/x-tar\r\n"
		     "Transfer-Encoding: chunked\r\n"
		     "Connection: close\r\n\r\n",
		     target, host);
	if (n < 0 || (size_t)n >= sizeof(req)) {
		engine_raw_free(raw);
		snprintf(msg, msglen, "%s", strerror(ENAMETOOLONG));
		return -ENAMETOOLONG;
	}
	sent = send_mem(&p, req, (size_t)n);
	if (sent == 0)
		sent = send_body_quietly(&p, fn, ctx);
	if (sent < 0) {
		/* a piece failed, or the socket did, or it stalled: the
		 * engine takes a body cut short for a failed PUT (as it
		 * takes curl's abort) */
		engine_raw_free(raw);
		snprintf(msg, msglen, "%s", strerror(-sent));
		return sent;
	}
	ret = read_reply(&p, r, msg, msglen);
	engine_raw_free(raw);
	if (ret == 0)
		engine_note_reach(e, CURLE_OK);
	else if (ret == -EIO && p.got == 0) /* closed without a word */
		engine_note_reach(e, CURLE_GOT_NOTHING);
	if (ret < 0)
		return ret;
	engine_reply_message(r, msg, msglen);
	ret = errmap_http(r->status, msg, ERRMAP_CHANGE);
	if (ret == 0 && sent != 0) {
		/* a success before the end of the archive we sent */
		snprintf(msg, msglen,
			 "the engine answered before the end of "
			 "the body");
		ret = -EIO;
	}
	return ret;
}
