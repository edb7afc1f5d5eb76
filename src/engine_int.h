/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What engine.c shares with engine_raw.c, engine_put.c and engine_exec.c,
 * and with no one else: a curl handle set up for the engine, a POST of
 * JSON, the bookkeeping every call does, and a raw connection. Not part of
 * the engine's API (engine.h).
 */
#ifndef CTRFS_ENGINE_INT_H
#define CTRFS_ENGINE_INT_H

#include "engine.h"

#include <curl/curl.h>

/* An easy handle set up for the engine's socket or address and TLS. */
CURL *engine_easy_get(struct engine *e);
/* "http://localhost" or "http[s]://host:port", and "/v1.41" */
const char *engine_base(const struct engine *e);
const char *engine_prefix(const struct engine *e);
/* Logs the transitions between reachable and unreachable. */
void engine_note_reach(struct engine *e, CURLcode cc);
/* Frees container ctr of our own GETs before a call that would wait. */
void engine_preempt(struct engine *e, const char *ctr);
/* The errno for an engine reply's status and reason. */
int engine_reply_errno(long status, const char *msg);
/* POST with a JSON body; the reply as engine_request(). */
int engine_post_json(struct engine *e, const char *ctr, const char *path,
		     const char *json, struct engine_reply *r);

/*
 * The engine runs one archive call (or exec) per container at a time; a
 * call made while a GET of ours on that container is open waits, without
 * a byte, until that GET ends, which for a big file may take longer than
 * the stall timeout. Such a call is not stalled while the GET it waits
 * for moves: its clock runs only while neither its own bytes nor those of
 * another open GET of the container move. Before, a PUT at a close, made
 * while a reader of 400 MiB was inside a read (not drained first), failed
 * with EIO after the timeout.
 */
struct engine_stream;
struct waiter {
	struct engine *e;
	const char *ctr;		  /* or NULL: no other GET counts */
	const struct engine_stream *self; /* a GET does not wait for itself */
	double last;			  /* when something last moved */
	curl_off_t moved;		  /* its own bytes, both ways */
	long long others;		  /* other GETs' bytes, as last seen */
};

void engine_waiter_init(struct waiter *w, struct engine *e, const char *ctr,
			const struct engine_stream *self);
/* Whether w has waited past the timeout: dlnow + ulnow are its own bytes
 * moved so far (a CURLOPT_XFERINFOFUNCTION). */
int engine_waiter_check(void *data, curl_off_t dltotal, curl_off_t dlnow,
			curl_off_t ultotal, curl_off_t ulnow);

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
/* PUT of target (path and query) with a chunked body from fn on a
 * connection of its own, file ranges by sendfile(); the reply in r. */
int engine_put_raw(struct engine *e, const char *ctr, const char *target,
		   engine_piece_fn fn, void *ctx, struct engine_reply *r,
		   char *msg, size_t msglen);

#endif
