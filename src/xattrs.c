// SPDX-License-Identifier: GPL-2.0-or-later
#include "xattrs.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>

#define BUCKETS 4096

bool xattrs_next(const char *pack, size_t len, size_t *pos, const char **name,
		 const void **value, size_t *vlen)
{
	size_t p = *pos, n;
	uint32_t l;

	if (!pack || p >= len)
		return false;
	n = strnlen(pack + p, len - p);
	if (p + n + 1 + sizeof(l) > len)
		return false;
	memcpy(&l, pack + p + n + 1, sizeof(l));
	if (p + n + 1 + sizeof(l) + l > len)
		return false;
	*name = pack + p;
	*value = pack + p + n + 1 + sizeof(l);
	*vlen = l;
	*pos = p + n + 1 + sizeof(l) + l;
	return true;
}

ssize_t xattrs_value(const char *pack, size_t len, const char *name,
		     void *value, size_t size)
{
	const char *n;
	const void *v;
	size_t pos = 0, vl;

	while (xattrs_next(pack, len, &pos, &n, &v, &vl)) {
		if (strcmp(n, name) != 0)
			continue;
		if (size == 0)
			return (ssize_t)vl;
		if (vl > size)
			return -ERANGE;
		memcpy(value, v, vl);
		return (ssize_t)vl;
	}
	return -ENODATA;
}

ssize_t xattrs_names(const char *pack, size_t len, char *list, size_t size)
{
	const char *n;
	const void *v;
	size_t pos = 0, vl, total = 0;

	while (xattrs_next(pack, len, &pos, &n, &v, &vl)) {
		size_t k = strlen(n) + 1;

		if (size) {
			if (total + k > size)
				return -ERANGE;
			memcpy(list + total, n, k);
		}
		total += k;
	}
	return (ssize_t)total;
}

int xattrs_edit(char **pack, size_t *len, const char *name, const void *value,
		size_t vlen, int flags)
{
	size_t nl = strlen(name) + 1, pos = 0, at = 0, out = 0, cap;
	bool found = false;
	const char *n;
	const void *v;
	size_t vl;
	uint32_t l = (uint32_t)vlen;
	char *np;

	while (xattrs_next(*pack, *len, &at, &n, &v, &vl)) {
		if (strcmp(n, name) == 0)
			found = true;
	}
	if (found && value && (flags & XATTR_CREATE))
		return -EEXIST;
	if (!found && (!value || (flags & XATTR_REPLACE)))
		return -ENODATA;
	cap = *len + (value ? nl + sizeof(l) + vlen : 0);
	np = cap ? malloc(cap) : NULL;
	if (cap && !np)
		return -ENOMEM;
	at = 0;
	while (pos = at, xattrs_next(*pack, *len, &at, &n, &v, &vl)) {
		if (strcmp(n, name) == 0)
			continue;
		memcpy(np + out, *pack + pos, at - pos);
		out += at - pos;
	}
	if (value) {
		memcpy(np + out, name, nl);
		memcpy(np + out + nl, &l, sizeof(l));
		memcpy(np + out + nl + sizeof(l), value, vlen);
		out += nl + sizeof(l) + vlen;
	}
	free(*pack);
	*pack = out ? np : NULL;
	if (!out)
		free(np);
	*len = out;
	return 0;
}

struct xent {
	struct xent *next;
	char *key; /* namespace, NUL, path */
	size_t klen;
	mode_t type;
	off_t size;
	time_t mtime;
	char *pack;
	size_t len;
};

struct xattrs {
	pthread_mutex_t lock;
	struct xent *b[BUCKETS];
	size_t count, bytes, max_entries, max_bytes;
};

struct xattrs *xattrs_new(size_t max_entries, size_t max_bytes)
{
	struct xattrs *x = calloc(1, sizeof(*x));

	if (!x)
		return NULL;
	pthread_mutex_init(&x->lock, NULL);
	x->max_entries = max_entries;
	x->max_bytes = max_bytes;
	return x;
}

static void drop_all_locked(struct xattrs *x)
{
	for (size_t i = 0; i < BUCKETS; i++) {
		struct xent *e = x->b[i], *n;

		for (; e; e = n) {
			n = e->next;
			free(e->key);
			free(e->pack);
			free(e);
		}
		x->b[i] = NULL;
	}
	x->count = 0;
	x->bytes = 0;
}

void xattrs_free(struct xattrs *x)
{
	if (!x)
		return;
	drop_all_locked(x);
	pthread_mutex_destroy(&x->lock);
	free(x);
}

/* FNV-1a of the key */
static size_t bucket(const char *key, size_t klen)
{
	uint64_t h = 14695981039346656037ull;

	for (size_t i = 0; i < klen; i++)
		h = (h ^ (unsigned char)key[i]) * 1099511628211ull;
	return (size_t)(h % BUCKETS);
}

static char *make_key(const char *ns, const char *path, size_t *klen)
{
	size_t a = strlen(ns) + 1, b = strlen(path);
	char *k = malloc(a + b + 1);

	if (!k)
		return NULL;
	memcpy(k, ns, a);
	memcpy(k + a, path, b + 1);
	*klen = a + b;
	return k;
}

static struct xent **find_locked(struct xattrs *x, const char *key, size_t klen)
{
	struct xent **p = &x->b[bucket(key, klen)];

	for (; *p; p = &(*p)->next)
		if ((*p)->klen == klen && memcmp((*p)->key, key, klen) == 0)
			break;
	return p;
}

void xattrs_put(struct xattrs *x, const char *ns, const char *path,
		const struct stat *st, const char *pack, size_t len)
{
	size_t klen;
	char *key = make_key(ns, path, &klen), *copy = NULL;
	struct xent **p, *e;

	if (!key)
		return;
	if (len && !(copy = malloc(len))) {
		free(key);
		return;
	}
	if (len)
		memcpy(copy, pack, len);
	pthread_mutex_lock(&x->lock);
	p = find_locked(x, key, klen);
	e = *p;
	if (e) {
		x->bytes -= e->len;
		free(e->pack);
		free(key);
	} else {
		if (x->count >= x->max_entries ||
		    x->bytes + len > x->max_bytes) {
			if (!len) {
				free(key);
				goto out_unlock;
			}
			drop_all_locked(x);
			p = find_locked(x, key, klen);
		}
		e = calloc(1, sizeof(*e));
		if (!e) {
			free(key);
			free(copy);
			goto out_unlock;
		}
		e->key = key;
		e->klen = klen;
		*p = e;
		x->count++;
	}
	e->type = st->st_mode & S_IFMT;
	e->size = st->st_size;
	e->mtime = st->st_mtim.tv_sec;
	e->pack = copy;
	e->len = len;
	x->bytes += len;
out_unlock:
	pthread_mutex_unlock(&x->lock);
}

int xattrs_get(struct xattrs *x, const char *ns, const char *path,
	       const struct stat *st, char **pack, size_t *len)
{
	size_t klen;
	char *key = make_key(ns, path, &klen);
	struct xent *e;
	int ret = -ENOENT;

	if (!key)
		return -ENOMEM;
	pthread_mutex_lock(&x->lock);
	e = *find_locked(x, key, klen);
	if (e && e->type == (st->st_mode & S_IFMT) && e->size == st->st_size &&
	    e->mtime == st->st_mtim.tv_sec) {
		ret = 0;
		*pack = NULL;
		*len = e->len;
		if (e->len && !(*pack = malloc(e->len)))
			ret = -ENOMEM;
		else if (e->len)
			memcpy(*pack, e->pack, e->len);
	}
	pthread_mutex_unlock(&x->lock);
	free(key);
	return ret;
}

size_t xattrs_count(struct xattrs *x)
{
	size_t n;

	pthread_mutex_lock(&x->lock);
	n = x->count;
	pthread_mutex_unlock(&x->lock);
	return n;
}
