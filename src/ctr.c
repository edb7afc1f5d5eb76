// SPDX-License-Identifier: GPL-2.0-or-later
#include "ctr.h"
#include "engine.h"
#include "errmap.h"
#include "log.h"
#include "pathmap.h"

#include <errno.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ctr_priv {
	struct ctr pub; /* first: ctr_put() casts back */
	int refs;
	bool listed;
	bool seen;	/* by the listing being applied */
	bool inspected; /* tmpfs mounts are fixed at creation */
	bool warned;
	/* the name before its last rename: paths below it still lead here
	 * (ctr_lookup_below()) */
	char old_name[256];
	char *tmpfs; /* packed NUL-terminated mount points */
	size_t ntmpfs;
	struct ctr_priv *next;
};

struct ctr_table {
	struct engine *e;
	bool all;
	double ttl;
	ctr_gone_fn gone;
	void *gone_ctx;
	pthread_mutex_t lock;
	pthread_mutex_t refresh_lock;
	struct ctr_priv *head;
	double refreshed;
	int last_err;
	/* under refresh_lock: the event stream keeps the list current, and
	 * an access does not list again on age alone (events.c) */
	bool live;
	/* " of engine NAME" in a mount of several, for its lines; or "" */
	char of[280];
};

struct ctr_table *ctr_table_new(struct engine *e, bool all, double ttl,
				ctr_gone_fn gone, void *ctx)
{
	struct ctr_table *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->e = e;
	t->all = all;
	t->ttl = ttl;
	t->gone = gone;
	t->gone_ctx = ctx;
	t->refreshed = -1e9;
	pthread_mutex_init(&t->lock, NULL);
	pthread_mutex_init(&t->refresh_lock, NULL);
	return t;
}

static void priv_free(struct ctr_priv *p)
{
	free(p->tmpfs);
	free(p);
}

void ctr_table_free(struct ctr_table *t)
{
	struct ctr_priv *p, *next;

	if (!t)
		return;
	for (p = t->head; p; p = next) {
		next = p->next;
		priv_free(p);
	}
	pthread_mutex_destroy(&t->lock);
	pthread_mutex_destroy(&t->refresh_lock);
	free(t);
}

static bool visible_state(const char *state, bool all)
{
	return all || strcmp(state, "running") == 0 ||
	       strcmp(state, "paused") == 0 || strcmp(state, "restarting") == 0;
}

static struct ctr_priv *find_id(struct ctr_table *t, const char *id)
{
	for (struct ctr_priv *p = t->head; p; p = p->next)
		if (p->listed && strcmp(p->pub.id, id) == 0)
			return p;
	return NULL;
}

/* Applies one entry of GET /containers/json to the table. */
/* p is called name now; a name it had before is kept as its old one
 * (paths below it still lead here: ctr_lookup_below()). */
static void set_name(struct ctr_priv *p, const char *name)
{
	if (strcmp(p->pub.name, name) == 0)
		return;
	if (p->pub.name[0]) /* renamed */
		memcpy(p->old_name, p->pub.name, sizeof(p->old_name));
	snprintf(p->pub.name, sizeof(p->pub.name), "%s", name);
}

static void apply_entry(struct ctr_table *t, struct json_object *o,
			bool *seen_new)
{
	struct json_object *id, *names, *state, *n0;
	const char *name;
	struct ctr_priv *p;

	if (!json_object_object_get_ex(o, "Id", &id) ||
	    !json_object_object_get_ex(o, "Names", &names) ||
	    !json_object_object_get_ex(o, "State", &state) ||
	    !json_object_is_type(names, json_type_array) ||
	    json_object_array_length(names) < 1)
		return;
	n0 = json_object_array_get_idx(names, 0);
	name = json_object_get_string(n0);
	if (!name)
		return;
	while (*name == '/')
		name++;
	if (!*name || strchr(name, '/'))
		return;
	p = find_id(t, json_object_get_string(id));
	/* just after a rename the engine lists both names (it releases the
	 * old one after the event is sent): the one the event gave stays */
	for (size_t i = 1; p && i < json_object_array_length(names); i++) {
		const char *ni =
		    json_object_get_string(json_object_array_get_idx(names, i));

		while (ni && *ni == '/')
			ni++;
		if (ni && strcmp(ni, p->pub.name) == 0)
			name = p->pub.name;
	}
	if (!p) {
		p = calloc(1, sizeof(*p));
		if (!p)
			return;
		snprintf(p->pub.id, sizeof(p->pub.id), "%s",
			 json_object_get_string(id));
		p->pub.owner = t->gone_ctx;
		p->listed = true;
		p->refs = 1;
		p->next = t->head;
		t->head = p;
		*seen_new = true;
	}
	p->seen = true;
	/* a struct ctr may be read by others while we write: names and
	 * states change rarely, and a torn read only mislabels a log line;
	 * written only when they change, as the event stream's thread lists
	 * while others read */
	set_name(p, name);
	if (strcmp(p->pub.state, json_object_get_string(state)) != 0) {
		bool running;

		snprintf(p->pub.state, sizeof(p->pub.state), "%s",
			 json_object_get_string(state));
		running = strcmp(p->pub.state, "running") == 0 ||
			  strcmp(p->pub.state, "paused") == 0;
		if (p->pub.running != running)
			p->pub.running = running;
	}
}

static int refresh(struct ctr_table *t)
{
	struct engine_reply r;
	struct json_object *root;
	struct ctr_priv **pp;
	bool seen_new = false;
	char msg[256];
	int ret;

	ret = engine_request(t->e, "GET", "/containers/json?all=1", &r);
	if (ret < 0)
		return -EIO;
	if (r.status != 200) {
		log_err("cannot list containers%s: %s", t->of,
			engine_reply_message(&r, msg, sizeof(msg)));
		engine_reply_free(&r);
		return -EIO;
	}
	root = r.body ? json_tokener_parse(r.body) : NULL;
	engine_reply_free(&r);
	if (!root || !json_object_is_type(root, json_type_array)) {
		log_err("cannot list containers%s: malformed reply", t->of);
		json_object_put(root);
		return -EIO;
	}
	pthread_mutex_lock(&t->lock);
	for (struct ctr_priv *p = t->head; p; p = p->next)
		p->seen = false;
	for (size_t i = 0; i < json_object_array_length(root); i++)
		apply_entry(t, json_object_array_get_idx(root, i), &seen_new);
	for (pp = &t->head; *pp;) {
		struct ctr_priv *p = *pp;

		if (!p->seen && p->listed) {
			p->listed = false;
			if (t->gone)
				t->gone(t->gone_ctx, p->pub.id);
			p->refs--;
		}
		if (!p->listed && p->refs == 0) {
			*pp = p->next;
			priv_free(p);
		} else {
			pp = &p->next;
		}
	}
	pthread_mutex_unlock(&t->lock);
	json_object_put(root);
	return 0;
}

/* Refreshes the list when older than the TTL (unless the event stream
 * keeps it current), or begun before since (a now_mono() time); one
 * refresher at a time, and those that waited for it take its answer. */
static int ensure_fresh(struct ctr_table *t, double since)
{
	double t0;
	int ret;

	pthread_mutex_lock(&t->refresh_lock);
	t0 = now_mono();
	if ((t->live || t0 - t->refreshed < t->ttl) && t->refreshed >= since) {
		ret = t->last_err;
	} else {
		ret = refresh(t);
		t->last_err = ret;
		t->refreshed = t0; /* what it says is as of its start */
	}
	pthread_mutex_unlock(&t->refresh_lock);
	return ret;
}

int ctr_refresh(struct ctr_table *t)
{
	return ensure_fresh(t, now_mono());
}

void ctr_set_live(struct ctr_table *t, bool live)
{
	pthread_mutex_lock(&t->refresh_lock);
	t->live = live;
	pthread_mutex_unlock(&t->refresh_lock);
}

void ctr_table_name(struct ctr_table *t, const char *name)
{
	if (*name)
		snprintf(t->of, sizeof(t->of), " of engine %s", name);
}

/* A reference to the listed, visible container called name (with old,
 * called so before its last rename) into *out; -ENOENT when none is. */
static int find_name(struct ctr_table *t, const char *name, bool old,
		     struct ctr **out)
{
	int ret = -ENOENT;

	pthread_mutex_lock(&t->lock);
	for (struct ctr_priv *p = t->head; p; p = p->next) {
		if (p->listed &&
		    strcmp(old ? p->old_name : p->pub.name, name) == 0 &&
		    visible_state(p->pub.state, t->all)) {
			p->refs++;
			*out = &p->pub;
			ret = 0;
			break;
		}
	}
	pthread_mutex_unlock(&t->lock);
	return ret;
}

void ctr_renamed(struct ctr_table *t, const char *id, const char *name)
{
	struct ctr_priv *p;

	while (*name == '/')
		name++;
	if (!*name || strchr(name, '/'))
		return;
	pthread_mutex_lock(&t->lock);
	p = find_id(t, id);
	if (p)
		set_name(p, name);
	pthread_mutex_unlock(&t->lock);
}

int ctr_lookup_below(struct ctr_table *t, const char *name, struct ctr **out)
{
	int ret = ctr_lookup(t, name, out);

	if (ret == -ENOENT)
		ret = find_name(t, name, true, out);
	return ret;
}

int ctr_lookup(struct ctr_table *t, const char *name, struct ctr **out)
{
	double asked = now_mono();
	int ret = ensure_fresh(t, -1e9);

	if (ret == 0)
		ret = find_name(t, name, false, out);
	/* a name the list lacks may be a container made since the list was
	 * taken (`docker run -d x` and at once `cat <mnt>/x/f`, after an
	 * `ls <mnt>`): no ENOENT without a list begun after this lookup */
	if (ret == -ENOENT) {
		ret = ensure_fresh(t, asked);
		if (ret == 0)
			ret = find_name(t, name, false, out);
	}
	return ret;
}

void ctr_put(struct ctr_table *t, struct ctr *c)
{
	struct ctr_priv *p = (struct ctr_priv *)c;

	if (!c)
		return;
	pthread_mutex_lock(&t->lock);
	p->refs--;
	pthread_mutex_unlock(&t->lock);
	/* unlisted, unreferenced entries are reaped by the next refresh */
}

int ctr_names(struct ctr_table *t, char **names, size_t *count)
{
	size_t bytes = 0, n = 0;
	char *buf, *w;
	int ret = ensure_fresh(t, -1e9);

	if (ret < 0)
		return ret;
	pthread_mutex_lock(&t->lock);
	for (struct ctr_priv *p = t->head; p; p = p->next)
		if (p->listed && visible_state(p->pub.state, t->all))
			bytes += strlen(p->pub.name) + 1;
	buf = malloc(bytes + 1);
	if (!buf) {
		pthread_mutex_unlock(&t->lock);
		return -ENOMEM;
	}
	w = buf;
	for (struct ctr_priv *p = t->head; p; p = p->next) {
		if (p->listed && visible_state(p->pub.state, t->all)) {
			size_t l = strlen(p->pub.name) + 1;

			memcpy(w, p->pub.name, l);
			w += l;
			n++;
		}
	}
	pthread_mutex_unlock(&t->lock);
	*names = buf;
	*count = n;
	return 0;
}

/* Appends a mount point to a packed list of NUL-terminated strings. */
static void add_mount(char **buf, size_t *bytes, size_t *n, const char *dst)
{
	size_t l = strlen(dst) + 1;
	char *nb = realloc(*buf, *bytes + l);

	if (!nb)
		return; /* the list stays as it was */
	memcpy(nb + *bytes, dst, l);
	*buf = nb;
	*bytes += l;
	(*n)++;
}

/* Collects the container's tmpfs mount points from GET /containers/{id}/json
 * (HostConfig.Tmpfs and Mounts of type tmpfs). */
static int inspect(struct ctr_table *t, struct ctr_priv *p)
{
	struct json_object *root, *hc, *tmpfs, *mounts;
	struct engine_reply r;
	char path[256], *buf = NULL;
	size_t bytes = 0, n = 0;
	int ret;

	snprintf(path, sizeof(path), "/containers/%s/json", p->pub.id);
	ret = engine_request(t->e, "GET", path, &r);
	if (ret < 0)
		return -EIO;
	ret = errmap_http(r.status, NULL, 0);
	root = (ret == 0 && r.body) ? json_tokener_parse(r.body) : NULL;
	engine_reply_free(&r);
	if (ret < 0)
		return ret;
	if (!root)
		return -EIO;
	if (json_object_object_get_ex(root, "HostConfig", &hc) &&
	    json_object_object_get_ex(hc, "Tmpfs", &tmpfs) &&
	    json_object_is_type(tmpfs, json_type_object)) {
		json_object_object_foreach(tmpfs, key, val)
		{
			(void)val;
			add_mount(&buf, &bytes, &n, key);
		}
	}
	if (json_object_object_get_ex(root, "Mounts", &mounts) &&
	    json_object_is_type(mounts, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(mounts); i++) {
			struct json_object *m, *type, *dst;

			m = json_object_array_get_idx(mounts, i);
			if (json_object_object_get_ex(m, "Type", &type) &&
			    json_object_object_get_ex(m, "Destination", &dst) &&
			    strcmp(json_object_get_string(type), "tmpfs") == 0)
				add_mount(&buf, &bytes, &n,
					  json_object_get_string(dst));
		}
	}
	json_object_put(root);
	pthread_mutex_lock(&t->lock);
	if (!p->inspected) {
		p->tmpfs = buf;
		p->ntmpfs = n;
		p->inspected = true;
		buf = NULL;
	}
	pthread_mutex_unlock(&t->lock);
	free(buf);
	return 0;
}

int ctr_check_path(struct ctr_table *t, struct ctr *c, const char *path)
{
	struct ctr_priv *p = (struct ctr_priv *)c;
	const char *m;
	int ret = 0;

	if (!p->inspected) {
		ret = inspect(t, p);
		if (ret < 0)
			return ret;
	}
	m = p->tmpfs;
	for (size_t i = 0; i < p->ntmpfs; i++, m += strlen(m) + 1) {
		if (pathmap_is_under(path, m)) {
			if (!p->warned)
				log_err(
				    "cannot serve '%s' in container '%s': it "
				    "lies "
				    "on the tmpfs mounted at '%s', which the "
				    "archive API cannot see",
				    path, c->name, m);
			p->warned = true;
			ret = -EOPNOTSUPP;
			break;
		}
	}
	return ret;
}
