// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The engine's connection: curl handles and their pools, the engine's clock,
 * errno for a transport failure and for a reply, whole requests and their
 * replies, the version ping, and the stall clock every call runs on (struct
 * waiter). The archive calls, exec and raw connections build on it.
 */
#include "engine.h"
#include "engine_int.h"
#include "callcost.h"
#include "clocklag.h"
#include "errmap.h"
#include "hostcfg.h"
#include "log.h"

#include <curl/curl.h>
#include <errno.h>
#include <json-c/json.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define POOL_MAX	16
#define REPLY_MAX	(64 * 1024 * 1024)
#define CONNECT_TIMEOUT 10L

/* What a HEAD, a GET's first byte and an exec cost until measured
 * (callcost.h): Docker 20.10's, where a GET starts a helper process
 * (docs/design.md, "What differs between engine versions"; an exec 45-330
 * ms on 20.10 and 26 alike), and Podman 4.3's (its exec not measured: the
 * first one says) */
#define DOCKER_HEAD_S 0.0015
#define DOCKER_GET_S  0.050
#define DOCKER_EXEC_S 0.150
#define PODMAN_HEAD_S 0.056
#define PODMAN_GET_S  0.381
#define PODMAN_EXEC_S 0.300

/* TCP keep-alive on remote engines: a path that dies without a reset (a
 * host gone, a NAT entry dropped) is found after about a minute instead of
 * never on a quiet connection (the event stream, a pooled one). */
enum { KEEPIDLE = 30, KEEPINTVL = 10, KEEPCNT = 3 };

/* Idle objects kept for the next call, under the engine's pool_lock. */
struct pool {
	void *item[POOL_MAX];
	int n, max;
};

struct engine {
	char *url;	 /* as given, for messages */
	char *base;	 /* "http://localhost" or "http://host:port" */
	char *unix_path; /* or NULL */
	char prefix[32]; /* "/v1.41" once negotiated */
	long timeout;
	CURLSH *share;
	pthread_mutex_t share_locks[CURL_LOCK_DATA_LAST];
	pthread_mutex_t pool_lock;
	/* Connections are not shared between handles: curl does not support
	 * a shared connection cache used by concurrent threads (the
	 * CURLSHOPT_SHARE documentation; its KNOWN_BUGS), and a crash in a
	 * mounted filesystem costs more than a connect. A connection stays
	 * with the handle that made it: an easy handle's own for
	 * curl_easy_perform(), a stream's multi handle for GETs. */
	struct pool easy_pool;	/* idle easy handles, with their connection */
	struct pool multi_pool; /* idle stream multis, with their connection */
	struct pool buf_pool;	/* stream buffers */
	/* open GETs, so a call queued behind one on its container can tell
	 * a wait from a stall (struct waiter) */
	pthread_mutex_t streams_lock;
	struct open_get *streams;
	atomic_bool down; /* the last attempt failed to reach the engine */
	/* engine_ping() runs: its caller says a failure to reach the engine
	 * in one line of its own (with ping_cc, curl's reason), so
	 * engine_note_reach() does not */
	atomic_bool pinging;
	CURLcode ping_cc;
	bool podman;		       /* the ping said Libpod-Api-Version */
	engine_preempt_fn preempt;     /* frees a container for our next call */
	engine_abandoned_fn abandoned; /* the caller of a GET gave up */
	bool tls;
	bool tls_verify;
	char *ca, *cert, *key; /* or NULL */
	/* How far our clock runs ahead of the engine's (clocklag.h) */
	pthread_mutex_t clock_lock;
	struct clocklag lag;
	long lag_logged; /* the last lag said in the log */
	/* what its calls cost here (callcost.h) */
	pthread_mutex_t cost_lock;
	struct callcost cost;
};

static void share_lock(CURL *h, curl_lock_data data, curl_lock_access a,
		       void *ctx)
{
	struct engine *e = ctx;

	pthread_mutex_lock(&e->share_locks[data]);
}

static void share_unlock(CURL *h, curl_lock_data data, void *ctx)
{
	struct engine *e = ctx;

	pthread_mutex_unlock(&e->share_locks[data]);
}

static int parse_url(struct engine *e, const char *url)
{
	char buf[1024];
	const char *scheme = e->tls ? "https" : "http";

	if (strncmp(url, "unix://", 7) == 0) {
		if (url[7] != '/')
			return -EINVAL;
		e->unix_path = strdup(url + 7);
		e->base = strdup("http://localhost");
	} else if (strncmp(url, "tcp://", 6) == 0) {
		const char *hp = url + 6;

		if (!*hp)
			return -EINVAL;
		snprintf(buf, sizeof(buf), "%s://%s%s", scheme, hp,
			 strchr(hp, ':') ? ""
			 : e->tls	 ? ":2376"
					 : ":2375");
		e->base = strdup(buf);
	} else if (strncmp(url, "http://", 7) == 0 && !e->tls) {
		e->base = strdup(url);
	} else if (strncmp(url, "https://", 8) == 0) {
		e->tls = true;
		e->base = strdup(url);
	} else {
		return -EINVAL;
	}
	if (!e->base)
		return -ENOMEM;
	/* no trailing slash: paths start with one */
	while (strlen(e->base) > 7 && e->base[strlen(e->base) - 1] == '/')
		e->base[strlen(e->base) - 1] = '\0';
	return 0;
}

static char *dup_nonempty(const char *s)
{
	return (s && *s) ? strdup(s) : NULL;
}

int engine_new(const struct hostcfg *hc, unsigned timeout, struct engine **out)
{
	struct engine *e = calloc(1, sizeof(*e));
	int ret;

	if (!e)
		return -ENOMEM;
	e->timeout = timeout ? (long)timeout : 30;
	e->tls = hc->tls;
	e->tls_verify = hc->tls_verify;
	e->ca = dup_nonempty(hc->ca);
	e->cert = dup_nonempty(hc->cert);
	e->key = dup_nonempty(hc->key);
	e->url = strdup(hc->url);
	ret = e->url ? parse_url(e, hc->url) : -ENOMEM;
	if (ret < 0)
		goto out_free;
	for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
		pthread_mutex_init(&e->share_locks[i], NULL);
	pthread_mutex_init(&e->pool_lock, NULL);
	pthread_mutex_init(&e->streams_lock, NULL);
	pthread_mutex_init(&e->clock_lock, NULL);
	pthread_mutex_init(&e->cost_lock, NULL);
	callcost_init(&e->cost, DOCKER_HEAD_S, DOCKER_GET_S, DOCKER_EXEC_S);
	e->easy_pool.max = POOL_MAX;
	e->multi_pool.max = POOL_MAX;
	e->buf_pool.max = POOL_MAX;
	e->share = curl_share_init();
	if (!e->share) {
		ret = -ENOMEM;
		goto out_free;
	}
	curl_share_setopt(e->share, CURLSHOPT_LOCKFUNC, share_lock);
	curl_share_setopt(e->share, CURLSHOPT_UNLOCKFUNC, share_unlock);
	curl_share_setopt(e->share, CURLSHOPT_USERDATA, e);
	curl_share_setopt(e->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
	*out = e;
	return 0;
out_free:
	free(e->url);
	free(e->base);
	free(e->unix_path);
	free(e->ca);
	free(e->cert);
	free(e->key);
	free(e);
	return ret;
}

void engine_free(struct engine *e)
{
	if (!e)
		return;
	for (int i = 0; i < e->easy_pool.n; i++)
		curl_easy_cleanup(e->easy_pool.item[i]);
	for (int i = 0; i < e->multi_pool.n; i++)
		curl_multi_cleanup(e->multi_pool.item[i]);
	for (int i = 0; i < e->buf_pool.n; i++)
		free(e->buf_pool.item[i]);
	curl_share_cleanup(e->share);
	for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
		pthread_mutex_destroy(&e->share_locks[i]);
	pthread_mutex_destroy(&e->pool_lock);
	pthread_mutex_destroy(&e->streams_lock);
	pthread_mutex_destroy(&e->clock_lock);
	pthread_mutex_destroy(&e->cost_lock);
	free(e->url);
	free(e->base);
	free(e->unix_path);
	free(e->ca);
	free(e->cert);
	free(e->key);
	free(e);
}

static const struct engine_quirks docker_quirks = {.name = "Docker"};

static const struct engine_quirks podman_quirks = {
    .name = "Podman",
    .owners_zero = true,
    .glob_paths = true,
    .put_makes_dirs = true,
    .head_dangling_404 = true,
    .get_follows_links = true,
    .hardlink_to_target = true,
    .tar_rounds_seconds = true,
    .times_us = true,
    .batch_whole = true,
    .head_dear = true,
};

const struct engine_quirks *engine_quirks(const struct engine *e)
{
	return e->podman ? &podman_quirks : &docker_quirks;
}

void engine_cost_note(struct engine *e, enum call_kind k, double secs)
{
	pthread_mutex_lock(&e->cost_lock);
	callcost_note(&e->cost, k, secs);
	pthread_mutex_unlock(&e->cost_lock);
}

bool engine_get_pays(struct engine *e, size_t stale, off_t bytes, double *head,
		     double *get)
{
	bool pays;

	pthread_mutex_lock(&e->cost_lock);
	pays = callcost_get_pays(&e->cost, stale, bytes);
	*head = callcost_get(&e->cost, CALL_HEAD);
	*get = callcost_get(&e->cost, CALL_GET);
	pthread_mutex_unlock(&e->cost_lock);
	return pays;
}

off_t engine_list_cap(struct engine *e)
{
	off_t cap;

	pthread_mutex_lock(&e->cost_lock);
	cap = callcost_list_cap(&e->cost);
	pthread_mutex_unlock(&e->cost_lock);
	return cap;
}

static void *pool_take(struct engine *e, struct pool *p)
{
	void *x = NULL;

	pthread_mutex_lock(&e->pool_lock);
	if (p->n > 0)
		x = p->item[--p->n];
	pthread_mutex_unlock(&e->pool_lock);
	return x;
}

/* Keeps x for later; returns it when the pool is full. */
static void *pool_give(struct engine *e, struct pool *p, void *x)
{
	pthread_mutex_lock(&e->pool_lock);
	if (p->n < p->max) {
		p->item[p->n++] = x;
		x = NULL;
	}
	pthread_mutex_unlock(&e->pool_lock);
	return x;
}

static int tcp_sockopt(void *arg, curl_socket_t fd, curlsocktype purpose)
{
	static const int on = 1, idle = KEEPIDLE, intvl = KEEPINTVL,
			 cnt = KEEPCNT;

	(void)arg;
	if (purpose != CURLSOCKTYPE_IPCXN)
		return CURL_SOCKOPT_OK;
	/* best effort: a socket that refuses still works without it */
	(void)setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
	(void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	(void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	(void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
	return CURL_SOCKOPT_OK;
}

/* Takes an easy handle from the pool (keeping its live connection) or
 * makes one, and sets the options common to every call. */
CURL *engine_easy_get(struct engine *e)
{
	CURL *h = pool_take(e, &e->easy_pool);

	if (h)
		curl_easy_reset(h);
	else
		h = curl_easy_init();
	if (!h)
		return NULL;
	curl_easy_setopt(h, CURLOPT_SHARE, e->share);
	if (e->unix_path)
		curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, e->unix_path);
	else
		curl_easy_setopt(h, CURLOPT_SOCKOPTFUNCTION, tcp_sockopt);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, CONNECT_TIMEOUT);
	curl_easy_setopt(h, CURLOPT_BUFFERSIZE, (long)ENGINE_CURL_BUFSIZE);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, e->tls ? "https" : "http");
	if (e->tls) {
		if (e->ca)
			curl_easy_setopt(h, CURLOPT_CAINFO, e->ca);
		if (e->cert)
			curl_easy_setopt(h, CURLOPT_SSLCERT, e->cert);
		if (e->key)
			curl_easy_setopt(h, CURLOPT_SSLKEY, e->key);
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER,
				 e->tls_verify ? 1L : 0L);
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST,
				 e->tls_verify ? 2L : 0L);
	}
	return h;
}

/* Our second now, from the clock that gives new files their mtimes.
 * Not time(): glibc takes it from the kernel's coarse clock, which trails
 * CLOCK_REALTIME by up to a tick, so just after a second begins it still
 * says the last one. Set against the Date of a reply sent in that new
 * second, it made a local engine look a second ahead, and every file
 * made through the mount got an mtime a second in the future. */
static time_t real_sec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec;
}

/* Reads the Date header of h's last reply: the engine's second when it
 * answered, which was before our second now. */
static void observe_clock(struct engine *e, CURL *h)
{
	struct curl_header *hd;
	time_t now = real_sec(), date;
	double t = now_mono();
	long lag;

	if (curl_easy_header(h, "Date", 0, CURLH_HEADER, -1, &hd) != CURLHE_OK)
		return;
	date = curl_getdate(hd->value, NULL);
	if (date == -1)
		return;
	pthread_mutex_lock(&e->clock_lock);
	lag = clocklag_add(&e->lag, t, (long)(now - date));
	if (lag != e->lag_logged &&
	    (lag >= 2 || lag <= -2 || e->lag_logged >= 2 ||
	     e->lag_logged <= -2)) {
		e->lag_logged = lag;
		log_info("engine clock: %ld s %s this host's (the freshness "
			 "of cached metadata allows for it)",
			 lag < 0 ? -lag : lag, lag < 0 ? "ahead of" : "behind");
	}
	pthread_mutex_unlock(&e->clock_lock);
}

static long engine_lag(struct engine *e)
{
	long lag;

	pthread_mutex_lock(&e->clock_lock);
	lag = clocklag_get(&e->lag);
	pthread_mutex_unlock(&e->clock_lock);
	return lag;
}

long engine_now(struct engine *e)
{
	return (long)real_sec() - engine_lag(e);
}

void engine_clock(struct engine *e, struct timespec *ts)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec -= engine_lag(e);
	engine_time_fit(e, ts);
}

void engine_time_fit(const struct engine *e, struct timespec *ts)
{
	if (!engine_quirks(e)->times_us || ts->tv_nsec < 0 ||
	    ts->tv_nsec % 1000 == 0)
		return;
	ts->tv_nsec = (ts->tv_nsec / 1000 + 1) * 1000;
	if (ts->tv_nsec >= 1000000000) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000;
	}
}

/* Pools h once its transfer has ended well. */
void engine_easy_put(struct engine *e, CURL *h)
{
	observe_clock(e, h);
	h = pool_give(e, &e->easy_pool, h);
	if (h)
		curl_easy_cleanup(h);
}

char *engine_buf_get(struct engine *e)
{
	char *b = pool_take(e, &e->buf_pool);

	return b ? b : malloc(ENGINE_STREAM_BUFSIZE);
}

void engine_buf_put(struct engine *e, char *b)
{
	free(pool_give(e, &e->buf_pool, b));
}

CURLM *engine_multi_get(struct engine *e)
{
	CURLM *m = pool_take(e, &e->multi_pool);

	return m ? m : curl_multi_init();
}

/* Pools m once its stream has ended well: it keeps the connection. */
void engine_multi_put(struct engine *e, CURLM *m)
{
	m = pool_give(e, &e->multi_pool, m);
	if (m)
		curl_multi_cleanup(m);
}

const char *engine_base(const struct engine *e)
{
	return e->base;
}

const char *engine_prefix(const struct engine *e)
{
	return e->prefix;
}

bool engine_tls(const struct engine *e)
{
	return e->tls;
}

long engine_timeout(const struct engine *e)
{
	return e->timeout;
}

bool engine_down(struct engine *e)
{
	return atomic_load(&e->down);
}

/* Logs the transitions between reachable and unreachable once each. */
void engine_note_reach(struct engine *e, CURLcode cc)
{
	bool unreachable = cc == CURLE_COULDNT_CONNECT ||
			   cc == CURLE_COULDNT_RESOLVE_HOST ||
			   cc == CURLE_RECV_ERROR || cc == CURLE_SEND_ERROR ||
			   cc == CURLE_GOT_NOTHING;

	bool was;

	if (atomic_load(&e->pinging))
		e->ping_cc = cc; /* engine_ping()'s caller says it */
	if (!unreachable && cc != CURLE_OK)
		return; /* says nothing about reaching it */
	/* calls end on many threads: one of them says that it changed */
	was = atomic_exchange(&e->down, unreachable);
	if (atomic_load(&e->pinging))
		return;
	if (unreachable && !was)
		log_err("engine at %s does not answer: %s", e->url,
			curl_easy_strerror(cc));
	else if (!unreachable && was)
		log_info("engine at %s answers again", e->url);
}

void engine_open_get_add(struct engine *e, struct open_get *g)
{
	pthread_mutex_lock(&e->streams_lock);
	g->prev = NULL;
	g->next = e->streams;
	if (g->next)
		g->next->prev = g;
	e->streams = g;
	pthread_mutex_unlock(&e->streams_lock);
}

void engine_open_get_remove(struct engine *e, struct open_get *g)
{
	pthread_mutex_lock(&e->streams_lock);
	if (g->prev)
		g->prev->next = g->next;
	else
		e->streams = g->next;
	if (g->next)
		g->next->prev = g->prev;
	pthread_mutex_unlock(&e->streams_lock);
}

/* The bytes moved so far by the open GETs on container ctr but self. */
static long long others_moved(struct engine *e, const char *ctr,
			      const struct open_get *self)
{
	long long sum = 0;

	pthread_mutex_lock(&e->streams_lock);
	for (struct open_get *g = e->streams; g; g = g->next)
		if (g != self && strcmp(g->ctr, ctr) == 0)
			sum += (long long)atomic_load(&g->total);
	pthread_mutex_unlock(&e->streams_lock);
	return sum;
}

void engine_waiter_init(struct waiter *w, struct engine *e, const char *ctr,
			const struct open_get *self)
{
	w->e = e;
	w->ctr = ctr;
	w->self = self;
	w->last = now_mono();
	w->moved = 0;
	w->others = ctr ? others_moved(e, ctr, self) : 0;
}

/* CURLOPT_XFERINFOFUNCTION (about once a second when nothing moves):
 * aborts the call once nothing has moved for the timeout (struct waiter). */
int engine_waiter_check(void *data, curl_off_t dltotal, curl_off_t dlnow,
			curl_off_t ultotal, curl_off_t ulnow)
{
	struct waiter *w = data;
	double now = now_mono();

	if (dlnow + ulnow != w->moved) {
		w->moved = dlnow + ulnow;
		w->last = now;
	} else if (w->ctr) {
		long long o = others_moved(w->e, w->ctr, w->self);

		if (o != w->others) {
			w->others = o;
			w->last = now;
		}
	}
	return now - w->last > (double)w->e->timeout;
}

/* A call on container ctr (or NULL) that ends once stalled for the
 * timeout, as struct waiter says. */
void engine_waiter_setopt(CURL *h, struct waiter *w)
{
	curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, engine_waiter_check);
	curl_easy_setopt(h, CURLOPT_XFERINFODATA, w);
	curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
}

size_t engine_reply_write(char *p, size_t size, size_t nmemb, void *data)
{
	struct reply_ctx *c = data;
	struct engine_reply *r = c->r;
	size_t n = size * nmemb;
	char *nb;

	if (r->len + n > REPLY_MAX) {
		c->too_big = true;
		return 0;
	}
	nb = realloc(r->body, r->len + n + 1);
	if (!nb)
		return 0;
	memcpy(nb + r->len, p, n);
	r->body = nb;
	r->len += n;
	r->body[r->len] = '\0';
	return n;
}

/* Keeps the header value of name in out when line is that header. */
static void grab_header(const char *line, size_t n, const char *name, char *out,
			size_t outlen)
{
	size_t nl = strlen(name);
	size_t vlen;

	if (n <= nl + 1 || strncasecmp(line, name, nl) != 0 || line[nl] != ':')
		return;
	line += nl + 1;
	n -= nl + 1;
	while (n > 0 && (*line == ' ' || *line == '\t')) {
		line++;
		n--;
	}
	while (n > 0 && (line[n - 1] == '\r' || line[n - 1] == '\n'))
		n--;
	vlen = n < outlen - 1 ? n : outlen - 1;
	memcpy(out, line, vlen);
	out[vlen] = '\0';
}

static size_t reply_header(char *p, size_t size, size_t nmemb, void *data)
{
	struct reply_ctx *c = data;
	size_t n = size * nmemb;

	grab_header(p, n, "X-Docker-Container-Path-Stat", c->r->stat,
		    sizeof(c->r->stat));
	return n;
}

static int do_request(struct engine *e, const char *method, const char *url,
		      const char *ctr, struct engine_reply *r, char *api,
		      size_t apilen, bool *podman)
{
	struct reply_ctx ctx = {.r = r};
	struct waiter w;
	double t0 = now_mono();
	CURLcode cc;
	CURL *h;
	int ret;

	memset(r, 0, sizeof(*r));
	h = engine_easy_get(e);
	if (!h)
		return -ENOMEM;
	curl_easy_setopt(h, CURLOPT_URL, url);
	engine_waiter_init(&w, e, ctr, NULL);
	engine_waiter_setopt(h, &w);
	if (strcmp(method, "HEAD") == 0)
		curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	else if (strcmp(method, "GET") != 0)
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, engine_reply_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &ctx);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, reply_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, &ctx);
	cc = curl_easy_perform(h);
	engine_note_reach(e, cc);
	if (cc == CURLE_OK) {
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
		if (api) {
			struct curl_header *hd;

			api[0] = '\0';
			if (curl_easy_header(h, "Api-Version", 0, CURLH_HEADER,
					     -1, &hd) == CURLHE_OK)
				snprintf(api, apilen, "%s", hd->value);
			*podman = curl_easy_header(h, "Libpod-Api-Version", 0,
						   CURLH_HEADER, -1,
						   &hd) == CURLHE_OK;
		}
		ret = 0;
	} else if (ctx.too_big) {
		ret = -EFBIG;
	} else {
		ret = errmap_curl(cc, curl_easy_strerror(cc));
	}
	log_dbg("engine: %s %s -> %ld (%s) in %.1f ms", method, url, r->status,
		curl_easy_strerror(cc), (now_mono() - t0) * 1e3);
	if (cc == CURLE_OK)
		engine_easy_put(e, h);
	else
		curl_easy_cleanup(h);
	if (ret < 0)
		engine_reply_free(r);
	return ret;
}

int engine_request_url(struct engine *e, const char *method, const char *url,
		       const char *ctr, struct engine_reply *r)
{
	return do_request(e, method, url, ctr, r, NULL, 0, NULL);
}

int engine_request(struct engine *e, const char *method, const char *path,
		   struct engine_reply *r)
{
	char url[8192];

	if ((size_t)snprintf(url, sizeof(url), "%s%s%s", e->base, e->prefix,
			     path) >= sizeof(url))
		return -ENAMETOOLONG;
	return do_request(e, method, url, NULL, r, NULL, 0, NULL);
}

void engine_reply_free(struct engine_reply *r)
{
	free(r->body);
	r->body = NULL;
	r->len = 0;
}

/* Whether s is an API version: digits, a dot, digits ("1.45"). */
static bool is_version(const char *s)
{
	size_t a = strspn(s, "0123456789"), b;

	if (a == 0 || a > 4 || s[a] != '.')
		return false;
	b = strspn(s + a + 1, "0123456789");
	return b > 0 && b <= 4 && s[a + 1 + b] == '\0';
}

/* Compares dotted versions "1.41" and "1.47". */
static int version_cmp(const char *a, const char *b)
{
	unsigned long amaj = strtoul(a, (char **)&a, 10), bmaj;

	bmaj = strtoul(b, (char **)&b, 10);
	if (amaj != bmaj)
		return amaj < bmaj ? -1 : 1;
	amaj = *a == '.' ? strtoul(a + 1, NULL, 10) : 0;
	bmaj = *b == '.' ? strtoul(b + 1, NULL, 10) : 0;
	return amaj < bmaj ? -1 : amaj > bmaj;
}

int engine_ping(struct engine *e, char *msg, size_t msglen)
{
	struct engine_reply r;
	const char *pin = getenv("DOCKER_API_VERSION");
	char url[2048], api[24];
	const char *use;
	int ret;

	snprintf(url, sizeof(url), "%s/_ping", e->base);
	atomic_store(&e->pinging, true);
	e->ping_cc = CURLE_OK;
	ret = do_request(e, "GET", url, NULL, &r, api, sizeof(api), &e->podman);
	atomic_store(&e->pinging, false);
	if (ret < 0) {
		snprintf(msg, msglen, "cannot connect to engine at %s: %s",
			 e->url,
			 e->ping_cc != CURLE_OK ? curl_easy_strerror(e->ping_cc)
						: strerror(-ret));
		return ret;
	}
	if (r.status != 200) {
		snprintf(msg, msglen,
			 "cannot connect to engine at %s: /_ping answered %ld",
			 e->url, r.status);
		engine_reply_free(&r);
		return -EIO;
	}
	engine_reply_free(&r);
	if (!is_version(api)) {
		for (char *q = api; *q; q++) /* one line, whatever it sent */
			if (*q < 0x20 || *q > 0x7e)
				*q = '?';
		snprintf(msg, msglen,
			 "the engine at %s gives no API version ('%.16s' in "
			 "/_ping's Api-Version): not a Docker engine?",
			 e->url, api);
		return -EPROTO;
	}
	if (version_cmp(api, ENGINE_API_MIN) < 0) {
		snprintf(msg, msglen,
			 "the engine at %s speaks API %s, older than the %s "
			 "ctrfs needs (Docker 1.12)",
			 e->url, api, ENGINE_API_MIN);
		return -EPROTO;
	}
	if (pin && *pin &&
	    (!is_version(pin) || version_cmp(pin, ENGINE_API_MIN) < 0)) {
		snprintf(msg, msglen,
			 "DOCKER_API_VERSION=%.16s: want a version from %s on",
			 pin, ENGINE_API_MIN);
		return -EINVAL;
	}
	if (pin && *pin)
		use = pin;
	else if (version_cmp(api, ENGINE_API_MAX) < 0)
		use = api;
	else
		use = ENGINE_API_MAX;
	snprintf(e->prefix, sizeof(e->prefix), "/v%s", use);
	if (e->podman) {
		pthread_mutex_lock(&e->cost_lock);
		callcost_init(&e->cost, PODMAN_HEAD_S, PODMAN_GET_S,
			      PODMAN_EXEC_S);
		pthread_mutex_unlock(&e->cost_lock);
	}
	snprintf(msg, msglen, "%s at %s speaks API %s, using %s",
		 e->podman ? "Podman" : "engine", e->url, api, use);
	return 0;
}

const char *engine_reply_message(const struct engine_reply *r, char *buf,
				 size_t len)
{
	struct json_object *root, *m;

	snprintf(buf, len, "engine answered %ld", r->status);
	if (!r->body)
		return buf;
	root = json_tokener_parse(r->body);
	if (root && json_object_object_get_ex(root, "message", &m) &&
	    json_object_is_type(m, json_type_string)) {
		const char *s = json_object_get_string(m);
		size_t n = strlen(s), head = len / 4;

		/* the reason is at the end ("lstat <path>: file name too
		 * long"): a long path in the middle gives way first */
		if (n < len || len < 16)
			snprintf(buf, len, "%s", s);
		else
			snprintf(buf, len, "%.*s...%s", (int)head, s,
				 s + n - (len - head - 4));
	}
	json_object_put(root);
	return buf;
}

char *engine_escape(const char *s)
{
	return curl_easy_escape(NULL, s, 0);
}

void engine_free_string(char *s)
{
	curl_free(s);
}

void engine_set_preempt(struct engine *e, engine_preempt_fn fn)
{
	e->preempt = fn;
}

void engine_set_abandoned(struct engine *e, engine_abandoned_fn fn)
{
	e->abandoned = fn;
}

static __thread bool abortable;

bool engine_set_abortable(bool on)
{
	bool was = abortable;

	abortable = on;
	return was;
}

bool engine_caller_abandoned(struct engine *e)
{
	return abortable && e->abandoned && e->abandoned();
}

/* The engine runs one archive call per container at a time: let go of
 * what we hold open on it before asking for more. */
void engine_preempt(struct engine *e, const char *ctr)
{
	if (e->preempt)
		e->preempt(e, ctr);
}

/* Sends a JSON body with method POST; the reply as engine_request(). */
int engine_post_json(struct engine *e, const char *ctr, const char *path,
		     const char *json, struct engine_reply *r)
{
	struct reply_ctx ctx = {.r = r};
	struct waiter w;
	struct curl_slist *hdrs = NULL;
	char url[8192];
	double t0 = now_mono();
	CURLcode cc;
	CURL *h;
	int ret = 0;

	memset(r, 0, sizeof(*r));
	if ((size_t)snprintf(url, sizeof(url), "%s%s%s", e->base, e->prefix,
			     path) >= sizeof(url))
		return -ENAMETOOLONG;
	h = engine_easy_get(e);
	if (!h)
		return -ENOMEM;
	hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, json);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	engine_waiter_init(&w, e, ctr, NULL);
	engine_waiter_setopt(h, &w);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, engine_reply_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &ctx);
	cc = curl_easy_perform(h);
	engine_note_reach(e, cc);
	if (cc == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
	else
		ret = errmap_curl(cc, curl_easy_strerror(cc));
	log_dbg("engine: POST %s -> %ld in %.1f ms", path, r->status,
		(now_mono() - t0) * 1e3);
	if (cc == CURLE_OK)
		engine_easy_put(e, h);
	else
		curl_easy_cleanup(h);
	curl_slist_free_all(hdrs);
	if (ret < 0)
		engine_reply_free(r);
	return ret;
}
