// SPDX-License-Identifier: GPL-2.0-or-later
/* Free space (statfs) of a path in a container: docs/design.md, "Free
 * space (statfs)". */
#include "dfree.h"
#include "agent.h"
#include "ctr.h"
#include "engine.h"
#include "log.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The last answers, each kept STATFS_TTL seconds */
#define STATFS_SLOTS 8
#define STATFS_TTL   2.0

static struct {
	pthread_mutex_t lock;
	struct statfs_slot {
		/* engine, container id, NUL, path: a mount's engines may
		 * share an id (a copied data root) */
		char key[PATH_MAX + 100];
		size_t keylen;
		double at;
		struct statvfs sv;
	} slot[STATFS_SLOTS];
	unsigned next;
} statfs_cache = {.lock = PTHREAD_MUTEX_INITIALIZER};

static size_t statfs_key(char *key, size_t len, const struct engine *e,
			 const struct ctr *c, const char *inner)
{
	int n = snprintf(key, len, "%p %s%c%s", (const void *)e, c->id, '\0',
			 inner);

	return n > 0 && (size_t)n < len ? (size_t)n : 0;
}

static bool statfs_cached(const char *key, size_t keylen, struct statvfs *sv)
{
	bool hit = false;

	pthread_mutex_lock(&statfs_cache.lock);
	for (unsigned i = 0; i < STATFS_SLOTS && !hit; i++) {
		struct statfs_slot *s = &statfs_cache.slot[i];

		if (s->keylen == keylen && memcmp(s->key, key, keylen) == 0 &&
		    now_mono() - s->at < STATFS_TTL) {
			*sv = s->sv;
			hit = true;
		}
	}
	pthread_mutex_unlock(&statfs_cache.lock);
	return hit;
}

static void statfs_keep(const char *key, size_t keylen,
			const struct statvfs *sv)
{
	struct statfs_slot *s;

	pthread_mutex_lock(&statfs_cache.lock);
	s = &statfs_cache.slot[statfs_cache.next++ % STATFS_SLOTS];
	memcpy(s->key, key, keylen);
	s->keylen = keylen;
	s->at = now_mono();
	s->sv = *sv;
	pthread_mutex_unlock(&statfs_cache.lock);
}

/* Asks the container for the filesystem holding inner: 0 and sv, or
 * -errno (no `stat` there, not running). */
static int ask(struct engine *e, const struct ctr *c, const char *inner,
	       struct statvfs *sv)
{
	const char *argv[] = {"stat", "-f",  "-c", "%S %s %b %f %a %c %d %l",
			      "--",   inner, NULL};
	unsigned long long v[8];
	char out[512];
	int status = 0;
	int ret = agent_run_text(e, c->id, argv, &status, out, sizeof(out));

	if (ret < 0)
		return ret;
	if (sscanf(out, "%llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
		   &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) != 8)
		return -EIO;
	sv->f_frsize = (unsigned long)v[0];
	sv->f_bsize = (unsigned long)v[1];
	sv->f_blocks = (fsblkcnt_t)v[2];
	sv->f_bfree = (fsblkcnt_t)v[3];
	sv->f_bavail = (fsblkcnt_t)v[4];
	sv->f_files = (fsfilcnt_t)v[5];
	sv->f_ffree = (fsfilcnt_t)v[6];
	sv->f_favail = (fsfilcnt_t)v[6];
	sv->f_namemax = (unsigned long)v[7];
	return 0;
}

void dfree_get(struct engine *e, const struct ctr *c, const char *inner,
	       struct statvfs *sv)
{
	char key[sizeof(statfs_cache.slot[0].key)];
	size_t keylen = statfs_key(key, sizeof(key), e, c, inner);
	struct statvfs got;
	int ret;

	if (keylen && statfs_cached(key, keylen, sv))
		return;
	memset(&got, 0, sizeof(got));
	ret = ask(e, c, inner, &got);
	if (ret == 0)
		*sv = got;
	else
		log_dbg("statfs of '%s' in container '%s': %s", inner, c->name,
			strerror(-ret));
	if (keylen) /* an answer of unknown too: asked once per TTL */
		statfs_keep(key, keylen, sv);
}
