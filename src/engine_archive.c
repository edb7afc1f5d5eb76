// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The archive calls: HEAD, a GET as a pull stream, and a PUT of a tar body
 * through curl (or, big and without TLS, by sendfile(): engine_put.c).
 */
#include "engine.h"
#include "errmap.h"
#include "engine_int.h"
#include "log.h"
#include "nap.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

struct engine_stream {
	struct engine *e;
	struct open_get get; /* on the engine's list of open GETs */
	struct waiter wait;
	CURL *easy;
	CURLM *multi;
	char *buf;
	size_t len;
	bool paused;
	bool handed; /* buf was given to the reader, who is done with it */
	bool done;
	bool headers_done;
	CURLcode result;
	long status;
	char errbody[1024];
	size_t errlen;
	double t0;
	double t_body; /* when the first byte of the body came */
	char what[256];
};

static int archive_url(struct engine *e, const char *ctr, const char *path,
		       char *url, size_t len)
{
	char *esc;
	int n;

	if (engine_quirks(e)->glob_paths && strpbrk(path, "*?[\\"))
		return -EOPNOTSUPP; /* ENGINE_PATTERN_MSG */
	engine_preempt(e, ctr);
	esc = engine_escape(path);
	if (!esc)
		return -ENOMEM;
	n = snprintf(url, len, "%s%s/containers/%s/archive?path=%s",
		     engine_base(e), engine_prefix(e), ctr, esc);
	engine_free_string(esc);
	return (size_t)n < len ? 0 : -ENAMETOOLONG;
}

int engine_archive_head(struct engine *e, const char *ctr, const char *path,
			struct engine_reply *r)
{
	char url[16384];
	int ret = archive_url(e, ctr, path, url, sizeof(url));
	double t0 = now_mono();

	if (ret < 0)
		return ret;
	ret = engine_request_url(e, "HEAD", url, ctr, r);
	if (ret == 0 && (r->status == 200 || r->status == 404))
		engine_cost_note(e, CALL_HEAD, now_mono() - t0);
	return ret;
}

static size_t stream_header(char *p, size_t size, size_t nmemb, void *data)
{
	struct engine_stream *s = data;
	size_t n = size * nmemb;

	if (n <= 2 && (p[0] == '\r' || p[0] == '\n')) {
		curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &s->status);
		if (s->status >= 200)
			s->headers_done = true;
	}
	return n;
}

static size_t stream_write(char *p, size_t size, size_t nmemb, void *data)
{
	struct engine_stream *s = data;
	size_t n = size * nmemb;

	if (s->status != 200) {
		size_t room = sizeof(s->errbody) - 1 - s->errlen;
		size_t k = n < room ? n : room;

		memcpy(s->errbody + s->errlen, p, k);
		s->errlen += k;
		s->errbody[s->errlen] = '\0';
		return n;
	}
	if (n > ENGINE_STREAM_BUFSIZE - s->len) {
		s->paused = true;
		return CURL_WRITEFUNC_PAUSE;
	}
	if (s->get.total == 0)
		s->t_body = now_mono();
	memcpy(s->buf + s->len, p, n);
	s->len += n;
	s->get.total += (off_t)n;
	return n;
}

/* The wait for the next bytes of a long body (nap.h): true when it slept. */
static bool nap(struct engine_stream *s)
{
	double t = nap_seconds(s->get.total, now_mono() - s->t_body);
	struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)(t * 1e9)};

	if (t <= 0)
		return false;
	nanosleep(&ts, NULL);
	return true;
}

/* Drives the transfer until it has data for the reader, has seen the
 * response headers (when headers is set), or is over. */
static int pump(struct engine_stream *s, bool headers)
{
	bool napped = false;

	while (!s->done) {
		CURLMsg *msg;
		int running, left;
		CURLMcode mc = curl_multi_perform(s->multi, &running);

		if (mc != CURLM_OK)
			return -EIO;
		while ((msg = curl_multi_info_read(s->multi, &left))) {
			if (msg->msg == CURLMSG_DONE) {
				s->done = true;
				s->result = msg->data.result;
			}
		}
		if (s->len > 0 || s->paused)
			break;
		if (headers && s->headers_done)
			break;
		if (s->done)
			break;
		if (!headers && !napped && nap(s)) {
			napped = true;
			continue;
		}
		mc = curl_multi_poll(s->multi, NULL, 0, 1000, NULL);
		if (mc != CURLM_OK)
			return -EIO;
		if (engine_caller_abandoned(s->e))
			return -EINTR;
	}
	return 0;
}

int engine_archive_get(struct engine *e, const char *ctr, const char *path,
		       struct engine_stream **out, char *msg, size_t msglen)
{
	struct engine_stream *s = calloc(1, sizeof(*s));
	char url[16384];
	double t_sent;
	int ret;

	msg[0] = '\0';
	if (!s)
		return -ENOMEM;
	s->e = e;
	s->t0 = now_mono();
	snprintf(s->what, sizeof(s->what), "GET %s:%s", ctr, path);
	snprintf(s->get.ctr, sizeof(s->get.ctr), "%s", ctr);
	engine_open_get_add(e, &s->get);
	ret = archive_url(e, ctr, path, url, sizeof(url));
	if (ret == -EOPNOTSUPP)
		snprintf(msg, msglen, "%s", ENGINE_PATTERN_MSG);
	if (ret < 0)
		goto out_free;
	ret = -ENOMEM;
	s->buf = engine_buf_get(e);
	s->easy = engine_easy_get(e);
	s->multi = engine_multi_get(e);
	if (!s->buf || !s->easy || !s->multi)
		goto out_free;
	curl_easy_setopt(s->easy, CURLOPT_URL, url);
	curl_easy_setopt(s->easy, CURLOPT_WRITEFUNCTION, stream_write);
	curl_easy_setopt(s->easy, CURLOPT_WRITEDATA, s);
	curl_easy_setopt(s->easy, CURLOPT_HEADERFUNCTION, stream_header);
	curl_easy_setopt(s->easy, CURLOPT_HEADERDATA, s);
	/* a stalled body fails after the timeout; a slow one does not */
	engine_waiter_init(&s->wait, e, s->get.ctr, &s->get);
	engine_waiter_setopt(s->easy, &s->wait);
	curl_multi_add_handle(s->multi, s->easy);
	t_sent = now_mono();
	ret = pump(s, true);
	if (ret < 0)
		goto out_free;
	if (!s->headers_done) {
		engine_note_reach(e, s->result);
		ret = s->result ? errmap_curl(s->result,
					      curl_easy_strerror(s->result))
				: -EIO;
		snprintf(msg, msglen, "%s",
			 s->result ? curl_easy_strerror(s->result)
				   : "no reply");
		goto out_free;
	}
	engine_note_reach(e, CURLE_OK);
	if (s->status == 200) /* the first byte: what a GET costs besides */
		engine_cost_note(e, CALL_GET, now_mono() - t_sent);
	if (s->status != 200) {
		struct engine_reply r = {.status = s->status};

		while (!s->done && pump(s, false) == 0)
			;
		r.body = s->errbody;
		engine_reply_message(&r, msg, msglen);
		ret = errmap_http(s->status, msg, 0);
		if (ret == 0)
			ret = -EIO; /* a 2xx other than 200 */
		goto out_free;
	}
	*out = s;
	return 0;
out_free:
	engine_stream_free(s);
	return ret;
}

ssize_t engine_stream_read(struct engine_stream *s, const void **buf)
{
	int ret;

	/* the time the consumer took since its last read is no stall of
	 * the engine: a paused GET has moved nothing meanwhile */
	s->wait.last = now_mono();
	if (s->handed) {
		s->len = 0;
		s->handed = false;
	}
	if (s->paused) {
		s->paused = false;
		curl_easy_pause(s->easy, CURLPAUSE_CONT);
	}
	ret = pump(s, false);
	if (ret < 0)
		return ret;
	if (s->len > 0) {
		*buf = s->buf;
		s->handed = true;
		return (ssize_t)s->len;
	}
	if (s->result != CURLE_OK) {
		log_dbg("engine: %s failed after %lld bytes: %s", s->what,
			(long long)s->get.total, curl_easy_strerror(s->result));
		engine_note_reach(s->e, s->result);
		return errmap_curl(s->result, curl_easy_strerror(s->result));
	}
	return 0;
}

off_t engine_stream_bytes(const struct engine_stream *s)
{
	return s->get.total;
}

void engine_stream_free(struct engine_stream *s)
{
	if (!s)
		return;
	log_dbg("engine: %s -> %ld, %lld bytes%s in %.1f ms", s->what,
		s->status, (long long)s->get.total, s->done ? "" : " (aborted)",
		(now_mono() - s->t0) * 1e3);
	engine_open_get_remove(s->e, &s->get);
	if (s->multi && s->easy)
		curl_multi_remove_handle(s->multi, s->easy);
	if (s->done && s->result == CURLE_OK) {
		/* the multi keeps the connection for the next stream */
		if (s->multi)
			engine_multi_put(s->e, s->multi);
		s->multi = NULL;
		if (s->easy)
			engine_easy_put(s->e, s->easy);
		s->easy = NULL;
	}
	if (s->multi)
		curl_multi_cleanup(s->multi);
	if (s->easy)
		curl_easy_cleanup(s->easy);
	if (s->buf)
		engine_buf_put(s->e, s->buf);
	free(s);
}

/* The pieces of a PUT's body, copied into curl's upload buffer. */
struct put_ctx {
	engine_piece_fn fn;
	void *ctx;
	struct engine_piece p;
	size_t done; /* of p */
	off_t taken; /* bytes of the body given to curl */
	bool end;
	int err;
};

static size_t put_read(char *buf, size_t size, size_t nmemb, void *data)
{
	struct put_ctx *c = data;
	size_t len = size * nmemb, n = 0;

	while (n < len && !c->end) {
		size_t k = c->p.len - c->done;
		int ret;

		if (k == 0) {
			c->p = (struct engine_piece){.fd = -1};
			c->done = 0;
			ret = c->fn(c->ctx, &c->p);
			if (ret < 0) {
				c->err = ret;
				return CURL_READFUNC_ABORT;
			}
			c->end = ret == 0;
			continue;
		}
		if (k > len - n)
			k = len - n;
		if (c->p.buf) {
			memcpy(buf + n, (const char *)c->p.buf + c->done, k);
		} else {
			ssize_t got = pread(c->p.fd, buf + n, k,
					    c->p.off + (off_t)c->done);

			if (got <= 0) { /* 0: the file shrank under us */
				c->err = got < 0 ? -errno : -EIO;
				return CURL_READFUNC_ABORT;
			}
			k = (size_t)got;
		}
		c->done += k;
		n += k;
	}
	c->taken += (off_t)n;
	return n;
}

/* The body from its start again (the PUT is sent once more): the pieces
 * start over. false when they cannot. */
static bool put_restart(struct put_ctx *c)
{
	if (c->err)
		return false;
	c->fn(c->ctx, NULL);
	c->p = (struct engine_piece){.fd = -1};
	c->done = 0;
	c->taken = 0;
	c->end = false;
	return true;
}

/* curl's own resend of a request whose reused connection was found
 * closed: only before any of the body was taken (nothing of it can have
 * reached the engine); past that, CURLE_SEND_FAIL_REWIND, and
 * engine_archive_put() resends with care (lost_on_reuse()). */
static int put_seek(void *data, curl_off_t offset, int origin)
{
	struct put_ctx *c = data;

	if (offset != 0 || origin != SEEK_SET || c->taken > 0 || c->err)
		return CURL_SEEKFUNC_CANTSEEK;
	return put_restart(c) ? CURL_SEEKFUNC_OK : CURL_SEEKFUNC_CANTSEEK;
}

/*
 * Whether a request failed because the kept-alive connection it reused
 * was closed before any reply: the engine (or a proxy) dropped an idle
 * connection while we began to send. Such a PUT is sent again on a new
 * connection, once, by us; curl resends by itself only what had not
 * begun its body (put_seek()), and fails with CURLE_SEND_FAIL_REWIND
 * past that, which lands here.
 * A PUT is safe to repeat: each entry is created anew. But not in any
 * order: the engine may unpack a cut one after the whole one (its
 * handler had not started yet, or something between us and the engine
 * still held the cut bytes), leaving the cut file in place of the whole
 * one: seen on Docker 26 and 20.10 behind the tests' proxy, 3 runs in 8
 * under load, when curl resent at once. So when part of the body had
 * gone, the resend waits PUT_SETTLE first, and once it has landed the
 * same body goes once more after PUT_SETTLE: a cut request still on its
 * way by then is the only case left.
 */
static bool lost_on_reuse(CURL *h, CURLcode cc)
{
	long conns = -1, code = 0;

	if (cc == CURLE_SEND_FAIL_REWIND) /* curl wanted to resend */
		return true;
	if (cc != CURLE_SEND_ERROR && cc != CURLE_RECV_ERROR &&
	    cc != CURLE_GOT_NOTHING)
		return false;
	curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &conns);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	return conns == 0 && code == 0;
}

#define PUT_SETTLE 0.3 /* seconds */

static void sleep_seconds(double sec)
{
	struct timespec ts = {.tv_sec = (time_t)sec,
			      .tv_nsec =
				  (long)((sec - (double)(time_t)sec) * 1e9)};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Podman's PUT makes a missing directory (Docker's answers 404): a
 * directory removed in the container would come back with the file in it.
 * A HEAD first: ENOENT as on Docker (a removal between the two calls is
 * not seen). */
static int dir_there(struct engine *e, const char *ctr, const char *dir,
		     const char *url, char *msg, size_t msglen)
{
	struct engine_reply r = {0};
	char root[16384];
	int ret = engine_request_url(e, "HEAD", url, ctr, &r);

	if (ret == 0 && r.status == 404) {
		/* or no such container: then the PUT says so, as on Docker */
		engine_reply_free(&r);
		ret = archive_url(e, ctr, "/", root, sizeof(root));
		if (ret == 0)
			ret = engine_request_url(e, "HEAD", root, ctr, &r);
		if (ret == 0 && r.status != 404) {
			snprintf(msg, msglen,
				 "no directory %s (Podman's PUT would make it)",
				 dir);
			ret = -ENOENT;
		}
	}
	engine_reply_free(&r);
	return ret < 0 ? ret : 0;
}

/* Longer than a screen: the two ways of sending (sendfile, curl), the one
 * resend on a new connection and the reading of the reply share the
 * handle, the headers and one exit path. */
int engine_archive_put(struct engine *e, const char *ctr, const char *dir,
		       engine_piece_fn fn, void *ctx, off_t bulk, char *msg,
		       size_t msglen)
{
	struct put_ctx p = {.fn = fn, .ctx = ctx};
	struct engine_reply r = {0};
	struct waiter w;
	struct reply_ctx rc = {.r = &r};
	struct curl_slist *hdrs = NULL;
	char url[16384];
	double t0 = now_mono();
	bool fresh = false, cut = false, settled = false;
	off_t taken;
	CURLcode cc;
	CURL *h;
	int ret;

	msg[0] = '\0';
	ret = archive_url(e, ctr, dir, url, sizeof(url));
	if (ret == -EOPNOTSUPP)
		snprintf(msg, msglen, "%s", ENGINE_PATTERN_MSG);
	if (ret == 0 && engine_quirks(e)->put_makes_dirs)
		ret = dir_there(e, ctr, dir, url, msg, msglen);
	if (ret < 0)
		return ret;
	if (bulk >= ENGINE_RAW_PUT_MIN && !engine_tls(e)) {
		ret = engine_put_raw(e, ctr, url + strlen(engine_base(e)), fn,
				     ctx, &r, msg, msglen);
		log_dbg("engine: PUT %s:%s -> %ld (%s) in %.1f ms, %lld bytes "
			"of file data by sendfile",
			ctr, dir, r.status, msg[0] ? msg : "ok",
			(now_mono() - t0) * 1e3, (long long)bulk);
		engine_reply_free(&r);
		return ret;
	}
	h = engine_easy_get(e);
	if (!h)
		return -ENOMEM;
	hdrs = curl_slist_append(hdrs, "Content-Type: application/x-tar");
	hdrs = curl_slist_append(hdrs, "Transfer-Encoding: chunked");
	hdrs = curl_slist_append(hdrs, "Expect:");
again:
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
	curl_easy_setopt(h, CURLOPT_UPLOAD_BUFFERSIZE,
			 (long)ENGINE_CURL_BUFSIZE);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(h, CURLOPT_READFUNCTION, put_read);
	curl_easy_setopt(h, CURLOPT_READDATA, &p);
	curl_easy_setopt(h, CURLOPT_SEEKFUNCTION, put_seek);
	curl_easy_setopt(h, CURLOPT_SEEKDATA, &p);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, engine_reply_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &rc);
	engine_waiter_init(&w, e, ctr, NULL);
	engine_waiter_setopt(h, &w);
	cc = curl_easy_perform(h);
	taken = p.taken; /* part of it may have reached the engine */
	if (!fresh && lost_on_reuse(h, cc) && put_restart(&p)) {
		cut = taken > 0;
		log_dbg("engine: PUT %s:%s: the kept-alive connection closed "
			"before any reply (%s): once more on a new one",
			ctr, dir, curl_easy_strerror(cc));
		curl_easy_cleanup(h);
		engine_reply_free(&r);
		h = engine_easy_get(e);
		if (!h) {
			curl_slist_free_all(hdrs);
			return -ENOMEM;
		}
		curl_easy_setopt(h, CURLOPT_FRESH_CONNECT, 1L);
		fresh = true;
		if (cut)
			sleep_seconds(PUT_SETTLE);
		goto again;
	}
	engine_note_reach(e, cc);
	if (p.err) {
		ret = p.err;
		snprintf(msg, msglen, "%s", strerror(-ret));
	} else if (cc != CURLE_OK) {
		ret = errmap_curl(cc, curl_easy_strerror(cc));
		snprintf(msg, msglen, "%s", curl_easy_strerror(cc));
	} else {
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r.status);
		engine_reply_message(&r, msg, msglen);
		ret = errmap_http(r.status, msg, ERRMAP_CHANGE);
		if (ret == 0 && !p.end) { /* as engine_put_raw() says */
			snprintf(msg, msglen,
				 "the engine answered before the end of "
				 "the body");
			ret = -EIO;
		}
	}
	log_dbg("engine: PUT %s:%s -> %ld (%s) in %.1f ms", ctr, dir, r.status,
		msg[0] ? msg : "ok", (now_mono() - t0) * 1e3);
	if (ret == 0 && cut && !settled && put_restart(&p)) {
		log_dbg("engine: PUT %s:%s: sent again after a cut; once "
			"more, after the cut one may have been unpacked",
			ctr, dir);
		engine_reply_free(&r);
		engine_easy_put(e, h);
		settled = true;
		sleep_seconds(PUT_SETTLE);
		h = engine_easy_get(e);
		if (!h) {
			curl_slist_free_all(hdrs);
			return -ENOMEM;
		}
		goto again;
	}
	if (cc == CURLE_OK && p.end)
		engine_easy_put(e, h);
	else
		curl_easy_cleanup(h);
	curl_slist_free_all(hdrs);
	engine_reply_free(&r);
	return ret;
}
