// SPDX-License-Identifier: GPL-2.0-or-later
/* A connection of our own to the engine: curl opens it (CONNECT_ONLY), and
 * what goes on it is ours (an attached exec's stream, engine_exec.c; a PUT
 * by sendfile(), engine_put.c; a GET whose body has no end, the event
 * stream, events.c). */
#include "engine.h"
#include "errmap.h"
#include "engine_int.h"
#include "log.h"

#include <curl/curl.h>
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

struct engine_raw {
	CURL *h;
	curl_socket_t fd;
	char *rest; /* bytes given back (engine_raw_unread()) */
	size_t restlen, restoff;
};

/* Waits up to ms for fd to be ready for events; 1, 0 on time out, -errno. */
static int wait_fd(curl_socket_t fd, short events, int ms)
{
	struct pollfd p = {.fd = fd, .events = events};
	int n;

	do
		n = poll(&p, 1, ms);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

ssize_t engine_raw_send(struct engine_raw *r, const void *buf, size_t len,
			int ms)
{
	size_t done = 0;

	while (done < len) {
		size_t n = 0;
		CURLcode cc = curl_easy_send(r->h, (const char *)buf + done,
					     len - done, &n);

		if (cc == CURLE_AGAIN) {
			int w = wait_fd(r->fd, POLLOUT, ms);

			if (w <= 0)
				return w < 0 ? w : -ETIMEDOUT;
			continue;
		}
		if (cc != CURLE_OK)
			return -EIO;
		done += n;
	}
	return (ssize_t)done;
}

ssize_t engine_raw_recv(struct engine_raw *r, void *buf, size_t len, int ms)
{
	for (;;) {
		size_t n = 0;
		CURLcode cc;
		int w;

		if (r->restoff < r->restlen) {
			n = r->restlen - r->restoff;
			if (n > len)
				n = len;
			memcpy(buf, r->rest + r->restoff, n);
			r->restoff += n;
			return (ssize_t)n;
		}
		cc = curl_easy_recv(r->h, buf, len, &n);
		if (cc == CURLE_OK)
			return (ssize_t)n; /* 0: the engine closed it */
		if (cc != CURLE_AGAIN)
			return -EIO;
		w = wait_fd(r->fd, POLLIN, ms);
		if (w <= 0)
			return w < 0 ? w : -ETIMEDOUT;
	}
}

bool engine_raw_quiet(struct engine_raw *r)
{
	char c;
	size_t n = 0;
	CURLcode cc;

	if (r->restoff < r->restlen)
		return false;
	if (wait_fd(r->fd, POLLIN, 0) == 0)
		return true;
	/* readable: the engine closed it (the process ended), or sent
	 * something nobody asked for */
	cc = curl_easy_recv(r->h, &c, 1, &n);
	return cc == CURLE_AGAIN;
}

void engine_raw_free(struct engine_raw *r)
{
	if (!r)
		return;
	curl_easy_cleanup(r->h);
	free(r->rest);
	free(r);
}

int engine_raw_connect(struct engine *e, struct engine_raw **out, char *msg,
		       size_t msglen)
{
	struct engine_raw *r = calloc(1, sizeof(*r));
	char url[1024];
	curl_socket_t fd;
	CURLcode cc;

	*out = NULL;
	if (r)
		r->h = engine_easy_get(e);
	if (!r || !r->h) {
		free(r);
		snprintf(msg, msglen, "%s", strerror(ENOMEM));
		return -ENOMEM;
	}
	/* curl only opens it: the request and what follows are ours */
	snprintf(url, sizeof(url), "%s/", engine_base(e));
	curl_easy_setopt(r->h, CURLOPT_URL, url);
	curl_easy_setopt(r->h, CURLOPT_CONNECT_ONLY, 1L);
	cc = curl_easy_perform(r->h);
	engine_note_reach(e, cc);
	if (cc != CURLE_OK ||
	    curl_easy_getinfo(r->h, CURLINFO_ACTIVESOCKET, &fd) != CURLE_OK ||
	    fd == CURL_SOCKET_BAD) {
		snprintf(msg, msglen, "%s", curl_easy_strerror(cc));
		engine_raw_free(r);
		return -EIO;
	}
	r->fd = fd;
	*out = r;
	return 0;
}

int engine_raw_fd(const struct engine_raw *r)
{
	return r->fd;
}

int engine_raw_unread(struct engine_raw *r, const char *buf, size_t len)
{
	if (len == 0)
		return 0;
	r->rest = malloc(len);
	if (!r->rest)
		return -ENOMEM;
	memcpy(r->rest, buf, len);
	r->restlen = len;
	return 0;
}

void engine_raw_shutdown(struct engine_raw *r)
{
	shutdown(r->fd, SHUT_RDWR);
}

/* Whether the head (NUL-terminated, ending at its blank line) says the
 * body comes in chunks. */
static bool head_chunked(const char *head)
{
	static const char te[] = "transfer-encoding:";
	const char *l;

	for (l = strstr(head, "\r\n"); l; l = strstr(l, "\r\n")) {
		l += 2;
		if (strncasecmp(l, te, sizeof(te) - 1) == 0) {
			l += sizeof(te) - 1;
			l += strspn(l, " \t");
			return strncasecmp(l, "chunked", 7) == 0;
		}
	}
	return false;
}

int engine_raw_get(struct engine *e, const char *path, int ms,
		   struct engine_raw **out, bool *chunked, char *msg,
		   size_t msglen)
{
	char req[2048], head[8192], why[256];
	const char *host = strstr(engine_base(e), "://") + 3;
	struct engine_raw *r;
	size_t len = 0;
	char *end = NULL;
	long status = 0;
	int ret, n;

	*out = NULL;
	ret = engine_raw_connect(e, &r, why, sizeof(why));
	if (ret < 0) {
		snprintf(msg, msglen, "%s", why);
		return ret;
	}
	n = snprintf(req, sizeof(req), "GET %s%s HTTP/1.1\r\nHost: %s\r\n\r\n",
		     engine_prefix(e), path, host);
	if (n < 0 || (size_t)n >= sizeof(req) ||
	    engine_raw_send(r, req, (size_t)n, ms) < 0) {
		snprintf(msg, msglen, "cannot send the request");
		ret = -EIO;
		goto out_free;
	}
	while (!end) {
		ssize_t got;

		if (len == sizeof(head) - 1) {
			snprintf(msg, msglen, "reply headers too long");
			ret = -EIO;
			goto out_free;
		}
		got =
		    engine_raw_recv(r, head + len, sizeof(head) - 1 - len, ms);
		if (got <= 0) {
			snprintf(msg, msglen, "%s",
				 got == 0 ? "connection closed"
					  : strerror((int)-got));
			ret = got == 0 ? -EIO : (int)got;
			goto out_free;
		}
		len += (size_t)got;
		head[len] = '\0';
		end = strstr(head, "\r\n\r\n");
	}
	end[2] = '\0'; /* the head, its last line's CRLF kept */
	if (sscanf(head, "HTTP/1.%*d %ld", &status) != 1 || status != 200) {
		head[strcspn(head, "\r\n")] = '\0';
		snprintf(msg, msglen, "%s", head);
		ret = status ? errmap_http(status, NULL, 0) : -EIO;
		if (ret == 0)
			ret = -EIO;
		goto out_free;
	}
	*chunked = head_chunked(head);
	ret = engine_raw_unread(r, end + 4, len - (size_t)(end + 4 - head));
	if (ret < 0)
		goto out_free;
	log_dbg("engine: GET %s%s -> 200, a stream%s", engine_prefix(e), path,
		*chunked ? " in chunks" : "");
	*out = r;
	return 0;
out_free:
	log_dbg("engine: GET %s%s -> %s", engine_prefix(e), path, msg);
	engine_raw_free(r);
	return ret;
}
