// SPDX-License-Identifier: GPL-2.0-or-later
#include "events.h"
#include "ctr.h"
#include "engine.h"
#include "log.h"

#include <errno.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* "?filters={"type":["container"]}", escaped */
#define EVENTS_PATH    "/events?filters=%7B%22type%22%3A%5B%22container%22%5D%7D"
#define LINE_MAX_BYTES (64 * 1024)
#define BACKOFF_FIRST  0.1
#define BACKOFF_LAST   5.0
/* a stream that lived this long was not one of a series of failures */
#define LIVED_WELL 5.0

struct events {
	struct engine *e;
	struct ctr_table *t;
	/* how its lines name the engine: "the engine's" and "events" with
	 * one engine in the mount, "engine NAME's" and "events (NAME)" with
	 * several */
	char whose[280];
	char tag[280];
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stopping;		/* under lock */
	struct engine_raw *raw; /* under lock: the open stream, or NULL */
};

/* The body of the stream as it is read: chunks undone, then lines. */
struct reader {
	struct events *ev;
	struct engine_raw *raw;
	bool chunked;
	size_t left;	/* bytes left in the current chunk */
	bool need_crlf; /* after a chunk's data */
	char in[8192];
	size_t inlen, inoff;
	bool dirty; /* events seen since the table was last listed */
};

/* The actions that change a container's name, state or presence: what the
 * root directory shows. Others (exec_*, archive-path, extract-to-dir of our
 * own calls; attach, resize, top, health_status, kill before die) do not. */
static bool action_changes_list(const char *a)
{
	static const char *const acts[] = {
	    "create", "start",	 "restart", "die",    "died",	"stop",
	    "pause",  "unpause", "destroy", "remove", "rename", "oom",
	};

	for (size_t i = 0; i < sizeof(acts) / sizeof(acts[0]); i++)
		if (strcmp(a, acts[i]) == 0)
			return true;
	return false;
}

/* A rename event's new name (Actor.Attributes.name) for its container
 * (Actor.ID): the engine lists the old name too until a moment after. */
static void renamed(struct ctr_table *t, struct json_object *o)
{
	struct json_object *actor, *id, *attrs, *name;

	if (json_object_object_get_ex(o, "Actor", &actor) &&
	    json_object_object_get_ex(actor, "ID", &id) &&
	    json_object_object_get_ex(actor, "Attributes", &attrs) &&
	    json_object_object_get_ex(attrs, "name", &name) &&
	    json_object_get_string(id) && json_object_get_string(name))
		ctr_renamed(t, json_object_get_string(id),
			    json_object_get_string(name));
}

/* The next byte of the connection, or -errno (-EPIPE: it closed). Before
 * waiting for more, the table is listed again if events came: one GET for
 * each burst of events that arrived together. */
static int in_byte(struct reader *d)
{
	ssize_t n;

	if (d->inoff == d->inlen) {
		if (d->dirty) {
			d->dirty = false;
			if (ctr_refresh(d->ev->t) < 0)
				return -EIO;
		}
		n = engine_raw_recv(d->raw, d->in, sizeof(d->in), -1);
		if (n <= 0)
			return n == 0 ? -EPIPE : (int)n;
		d->inlen = (size_t)n;
		d->inoff = 0;
	}
	return (unsigned char)d->in[d->inoff++];
}

/* Reads a chunk's size line; 0, or -errno (-EBADMSG: not a size). */
static int chunk_head(struct reader *d)
{
	size_t size = 0;
	int c, digits = 0;

	if (d->need_crlf) {
		if ((c = in_byte(d)) < 0)
			return c;
		if (c == '\r' && (c = in_byte(d)) < 0)
			return c;
		if (c != '\n')
			return -EBADMSG;
		d->need_crlf = false;
	}
	for (;;) {
		if ((c = in_byte(d)) < 0)
			return c;
		if (c >= '0' && c <= '9')
			size = size * 16 + (size_t)(c - '0');
		else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
			size = size * 16 + (size_t)((c | 0x20) - 'a' + 10);
		else
			break;
		if (++digits > 8)
			return -EBADMSG;
	}
	while (c != '\n') /* chunk extensions, CR */
		if ((c = in_byte(d)) < 0)
			return c;
	if (digits == 0)
		return -EBADMSG;
	if (size == 0)
		return -EPIPE; /* the last chunk: the engine ended it */
	d->left = size;
	d->need_crlf = true;
	return 0;
}

/* The next byte of the body, or -errno. */
static int body_byte(struct reader *d)
{
	int ret;

	if (!d->chunked)
		return in_byte(d);
	if (d->left == 0 && (ret = chunk_head(d)) < 0)
		return ret;
	d->left--;
	return in_byte(d);
}

/* Takes one line of the stream, one event; 0 or -EBADMSG. */
static int take_event(struct reader *d, const char *line)
{
	struct json_object *o, *v;
	const char *type = "container", *action = NULL;
	int ret = 0;

	o = json_tokener_parse(line);
	if (!o || !json_object_is_type(o, json_type_object)) {
		ret = -EBADMSG;
		goto out;
	}
	if (json_object_object_get_ex(o, "Type", &v))
		type = json_object_get_string(v);
	/* "status" is the action of the old API (before 1.22) */
	if (json_object_object_get_ex(o, "Action", &v) ||
	    json_object_object_get_ex(o, "status", &v))
		action = json_object_get_string(v);
	if (!type || !action) {
		ret = -EBADMSG;
		goto out;
	}
	if (strcmp(type, "container") == 0 && action_changes_list(action)) {
		log_dbg("%s: container %s", d->ev->tag, action);
		d->dirty = true;
	}
	if (strcmp(type, "container") == 0 && strcmp(action, "rename") == 0)
		renamed(d->ev->t, o);
out:
	json_object_put(o);
	return ret;
}

/* Reads the stream until it ends: -EPIPE when the engine closed it (or we
 * did, to stop), -EBADMSG for what is not an event stream, else -errno. */
static int read_events(struct reader *d)
{
	char *line = malloc(LINE_MAX_BYTES + 1);
	size_t len = 0;
	bool too_long = false;
	int c, ret = 0;

	if (!line)
		return -ENOMEM;
	while (ret == 0) {
		c = body_byte(d);
		if (c < 0) {
			ret = c;
		} else if (c != '\n') {
			if (len < LINE_MAX_BYTES)
				line[len++] = (char)c;
			else
				too_long = true;
		} else if (too_long) {
			/* an event with more labels than we keep: whatever
			 * it was, list again */
			d->dirty = true;
			too_long = false;
			len = 0;
		} else {
			while (len > 0 && line[len - 1] == '\r')
				len--;
			line[len] = '\0';
			if (len > 0)
				ret = take_event(d, line);
			len = 0;
		}
	}
	free(line);
	return ret;
}

static bool stopping(struct events *ev)
{
	bool s;

	pthread_mutex_lock(&ev->lock);
	s = ev->stopping;
	pthread_mutex_unlock(&ev->lock);
	return s;
}

/* Waits secs, or less when asked to stop. */
static void nap_or_stop(struct events *ev, double secs)
{
	struct timespec ts;

	time_after(secs, &ts);
	pthread_mutex_lock(&ev->lock);
	while (!ev->stopping &&
	       pthread_cond_timedwait(&ev->cond, &ev->lock, &ts) == 0)
		;
	pthread_mutex_unlock(&ev->lock);
}

/* One life of the stream: open, list, follow. 0 when it was asked to stop,
 * else -errno with the reason in msg. */
static int follow(struct events *ev, bool *opened, char *msg, size_t msglen)
{
	struct reader d = {.ev = ev};
	int ret;

	*opened = false;
	ret = engine_raw_get(ev->e, EVENTS_PATH,
			     (int)engine_timeout(ev->e) * 1000, &d.raw,
			     &d.chunked, msg, msglen);
	if (ret < 0)
		return ret;
	pthread_mutex_lock(&ev->lock);
	if (ev->stopping) {
		pthread_mutex_unlock(&ev->lock);
		engine_raw_free(d.raw);
		return 0;
	}
	ev->raw = d.raw;
	pthread_mutex_unlock(&ev->lock);
	/* what changed before the stream opened is not on it */
	ret = ctr_refresh(ev->t);
	if (ret == 0) {
		*opened = true;
		ctr_set_live(ev->t, true);
		ret = read_events(&d);
		ctr_set_live(ev->t, false);
	}
	pthread_mutex_lock(&ev->lock);
	ev->raw = NULL;
	if (ev->stopping)
		ret = 0;
	pthread_mutex_unlock(&ev->lock);
	engine_raw_free(d.raw);
	snprintf(msg, msglen, "%s",
		 ret == -EPIPE	   ? "the engine closed it"
		 : ret == -EBADMSG ? "it sent what is not an event"
				   : strerror(-ret));
	return ret;
}

static void *events_main(void *arg)
{
	struct events *ev = arg;
	double backoff = BACKOFF_FIRST, t0;
	bool down = false, opened;
	char msg[512];

	while (!stopping(ev)) {
		t0 = now_mono();
		if (follow(ev, &opened, msg, sizeof(msg)) == 0)
			break;
		if (opened) /* an outage before it ended when it opened */
			down = false;
		if (!down)
			log_err("cannot follow %s events: %s; the "
				"container list is read again on access until "
				"the stream is back",
				ev->whose, msg);
		else
			log_dbg("%s: still down: %s", ev->tag, msg);
		down = true;
		if (opened && now_mono() - t0 >= LIVED_WELL)
			backoff = BACKOFF_FIRST;
		/* events may have been lost: the list is as old as that */
		if (opened && ctr_refresh(ev->t) < 0)
			log_dbg("%s: cannot list the containers", ev->tag);
		nap_or_stop(ev, backoff);
		backoff =
		    backoff * 2 > BACKOFF_LAST ? BACKOFF_LAST : backoff * 2;
	}
	return NULL;
}

struct events *events_start(struct engine *e, struct ctr_table *t,
			    const char *name)
{
	struct events *ev = calloc(1, sizeof(*ev));

	if (!ev)
		return NULL;
	ev->e = e;
	ev->t = t;
	if (*name) {
		snprintf(ev->whose, sizeof(ev->whose), "engine %s's", name);
		snprintf(ev->tag, sizeof(ev->tag), "events (%s)", name);
	} else {
		snprintf(ev->whose, sizeof(ev->whose), "the engine's");
		snprintf(ev->tag, sizeof(ev->tag), "events");
	}
	pthread_mutex_init(&ev->lock, NULL);
	pthread_cond_init(&ev->cond, NULL);
	if (pthread_create(&ev->thread, NULL, events_main, ev) != 0) {
		pthread_mutex_destroy(&ev->lock);
		pthread_cond_destroy(&ev->cond);
		free(ev);
		return NULL;
	}
	return ev;
}

void events_stop(struct events *ev)
{
	if (!ev)
		return;
	pthread_mutex_lock(&ev->lock);
	ev->stopping = true;
	if (ev->raw)
		engine_raw_shutdown(ev->raw);
	pthread_cond_signal(&ev->cond);
	pthread_mutex_unlock(&ev->lock);
	pthread_join(ev->thread, NULL);
	pthread_mutex_destroy(&ev->lock);
	pthread_cond_destroy(&ev->cond);
	free(ev);
}
