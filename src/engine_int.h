/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What engine.c shares with engine_exec.c, and with no one else: a curl
 * handle set up for the engine, a POST of JSON, and the bookkeeping every
 * call does. Not part of the engine's API (engine.h).
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

#endif
