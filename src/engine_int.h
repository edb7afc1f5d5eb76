/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the engine's files share with each other, and with no one else. Not
 * part of the engine's API (engine.h). Each file uses only those below it:
 *
 *   engine_exec.c     exec, and an exec attached on a raw connection
 *   engine_archive.c  archive HEAD, GET stream, PUT (engine_put.c: by
 *                     sendfile() on a raw connection)
 *   engine_raw.c      a raw connection of our own
 *   engine.c          curl handles and pools, errno, requests, the ping
 *
 * struct engine is engine.c's: the others reach it through the functions
 * below.
 */
#ifndef CTRFS_ENGINE_INT_H
#define CTRFS_ENGINE_INT_H

#include "callcost.h"
#include "engine.h"

#include <curl/curl.h>

/* curl's buffer for each transfer, and a GET stream's (two of curl's). */
#define ENGINE_CURL_BUFSIZE   (256 * 1024)
#define ENGINE_STREAM_BUFSIZE (2 * ENGINE_CURL_BUFSIZE)

/* engine.c. One measure of what a call of kind k cost (callcost.h). */
void engine_cost_note(struct engine *e, enum call_kind k, double secs);

/* engine.c. An easy handle set up for the engine's socket or address and
 * TLS; engine_easy_put() pools it once its transfer has ended well, else
 * the caller frees it with curl_easy_cleanup(). */
CURL *engine_easy_get(struct engine *e);
void engine_easy_put(struct engine *e, CURL *h);
/* A multi handle for a GET stream (with the connection its last stream
 * kept), and its return once the stream ended well; else the caller frees
 * it with curl_multi_cleanup(). */
CURLM *engine_multi_get(struct engine *e);
void engine_multi_put(struct engine *e, CURLM *m);
/* A stream buffer of ENGINE_STREAM_BUFSIZE bytes (malloc()), and its
 * return. */
char *engine_buf_get(struct engine *e);
void engine_buf_put(struct engine *e, char *b);
/* "http://localhost" or "http[s]://host:port", and "/v1.41" */
const char *engine_base(const struct engine *e);
const char *engine_prefix(const struct engine *e);
/* Whether the engine is reached through TLS. */
bool engine_tls(const struct engine *e);
/* Logs the transitions between reachable and unreachable. */
void engine_note_reach(struct engine *e, CURLcode cc);
/* Frees container ctr of our own GETs before a call that would wait. */
void engine_preempt(struct engine *e, const char *ctr);
/* Whether the caller of this thread's call has given up
 * (engine_set_abandoned(), engine_set_abortable()). */
bool engine_caller_abandoned(struct engine *e);
/* A whole request to url (base, prefix and path) for container ctr (or
 * NULL), the reply as engine_request(). */
int engine_request_url(struct engine *e, const char *method, const char *url,
		       const char *ctr, struct engine_reply *r);
/* POST with a JSON body; the reply as engine_request(). */
int engine_post_json(struct engine *e, const char *ctr, const char *path,
		     const char *json, struct engine_reply *r);

/* A reply's body kept by engine_reply_write(), a CURLOPT_WRITEFUNCTION
 * (too_big: it passed the bound of a reply, and the transfer failed). */
struct reply_ctx {
	struct engine_reply *r;
	bool too_big;
};
size_t engine_reply_write(char *p, size_t size, size_t nmemb, void *data);

/*
 * engine.c. An open GET, on the engine's list from engine_open_get_add()
 * to engine_open_get_remove(): the caller owns it (engine_archive.c's
 * stream holds one) and counts its bytes in total.
 */
struct open_get {
	struct open_get *prev, *next;
	char ctr[80];
	_Atomic off_t total; /* bytes of the body received so far */
};
void engine_open_get_add(struct engine *e, struct open_get *g);
void engine_open_get_remove(struct engine *e, struct open_get *g);

/*
 * engine.c. The engine runs one archive call (or exec) per container at a
 * time; a call made while a GET of ours on that container is open waits,
 * without a byte, until that GET ends, which for a big file may take
 * longer than the stall timeout. Such a call is not stalled while the GET
 * it waits for moves: its clock runs only while neither its own bytes nor
 * those of another open GET of the container move. Before, a PUT at a
 * close, made while a reader of 400 MiB was inside a read (not drained
 * first), failed with EIO after the timeout.
 */
struct waiter {
	struct engine *e;
	const char *ctr;	     /* or NULL: no other GET counts */
	const struct open_get *self; /* a GET does not wait for itself */
	double last;		     /* when something last moved */
	curl_off_t moved;	     /* its own bytes, both ways */
	long long others;	     /* other GETs' bytes, as last seen */
};

void engine_waiter_init(struct waiter *w, struct engine *e, const char *ctr,
			const struct open_get *self);
/* Whether w has waited past the timeout: dlnow + ulnow are its own bytes
 * moved so far (a CURLOPT_XFERINFOFUNCTION). */
int engine_waiter_check(void *data, curl_off_t dltotal, curl_off_t dlnow,
			curl_off_t ultotal, curl_off_t ulnow);
/* Has h end once stalled past the timeout, as w says. */
void engine_waiter_setopt(CURL *h, struct waiter *w);

/* engine_raw.c. A connection of our own to the engine, opened by curl
 * (CONNECT_ONLY): what goes on it is ours (engine_raw_send() and
 * engine_raw_recv()). -errno with the reason in msg. The caller frees it
 * with engine_raw_free(). */
int engine_raw_connect(struct engine *e, struct engine_raw **out, char *msg,
		       size_t msglen);
int engine_raw_fd(const struct engine_raw *r);
/* Gives back len bytes of buf, read past the head of a reply: the next
 * engine_raw_recv() calls return them first. Once per connection; 0 or
 * -ENOMEM. */
int engine_raw_unread(struct engine_raw *r, const char *buf, size_t len);

/* engine_put.c. PUT of target (path and query) with a chunked body from fn
 * on a connection of its own, file ranges by sendfile(); the reply in r. */
int engine_put_raw(struct engine *e, const char *ctr, const char *target,
		   engine_piece_fn fn, void *ctx, struct engine_reply *r,
		   char *msg, size_t msglen);

#endif
