// SPDX-License-Identifier: GPL-2.0-or-later
/* One `sh` per container for the tools, see agent.h and docs/design.md. */
#include "agent.h"
#include "engine.h"
#include "errmap.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* seconds before a container where no shell started is asked again */
#define NO_SHELL_RETRY 60.0
/* seconds unused before an agent is forgotten (its container may be gone) */
#define FORGET_AFTER 600.0
/* stderr kept to find a marker in */
#define TAIL 128

struct agent {
	const struct engine *e; /* with ctr, the key: a mount's engines may */
	char ctr[80];		/* share a container id (a copied data root) */
	pthread_mutex_t lock;
	struct engine_raw *raw; /* NULL: no shell now */
	char nonce[33];
	double last_used;
	double no_shell_until;
	/* the frame being read from the engine's stream */
	unsigned char hdr[8];
	size_t hdrlen;
	size_t left; /* payload bytes of the frame still to come */
	int stream;  /* 1 stdout, 2 stderr */
	char tail[TAIL];
	size_t taillen;
	bool touch_whole; /* under agents_lock: agent_touch_whole() */
	struct agent *next;
};

static pthread_mutex_t agents_lock = PTHREAD_MUTEX_INITIALIZER;
static struct agent *agents;

/* The agent of container ctr of engine e, or NULL; agents_lock held. */
static struct agent *find(const struct engine *e, const char *ctr)
{
	struct agent *a;

	for (a = agents; a; a = a->next)
		if (a->e == e && strcmp(a->ctr, ctr) == 0)
			break;
	return a;
}

/* The container's agent, made on first use, locked; NULL when another
 * thread holds it (or no memory). Locked under agents_lock, so reap()
 * never frees one between its lookup and its lock. */
static struct agent *agent_of(const struct engine *e, const char *ctr)
{
	struct agent *a;

	pthread_mutex_lock(&agents_lock);
	a = find(e, ctr);
	if (!a && (a = calloc(1, sizeof(*a)))) {
		a->e = e;
		snprintf(a->ctr, sizeof(a->ctr), "%s", ctr);
		pthread_mutex_init(&a->lock, NULL);
		a->last_used = now_mono();
		a->next = agents;
		agents = a;
	}
	if (a && pthread_mutex_trylock(&a->lock) != 0)
		a = NULL;
	pthread_mutex_unlock(&agents_lock);
	return a;
}

/* a->lock held */
static void close_shell(struct agent *a)
{
	engine_raw_free(a->raw);
	a->raw = NULL;
}

static bool new_nonce(char *out)
{
	unsigned char b[16];
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	bool ok = fd >= 0 && read(fd, b, sizeof(b)) == (ssize_t)sizeof(b);

	if (fd >= 0)
		close(fd);
	for (size_t i = 0; ok && i < sizeof(b); i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
	return ok;
}

/* The line that ends every call: the marker and the status, on stderr
 * after whatever the tool wrote there. */
static int marker_cmd(const struct agent *a, char *buf, size_t len,
		      const char *status)
{
	return snprintf(buf, len, "printf '\\n%%s %%d\\n' %s %s >&2\n",
			a->nonce, status);
}

/* Whether the stderr kept in a->tail, which just got a newline, ends with
 * a marker line, "\n<nonce> +\n" before the tool (START) or
 * "\n<nonce> <status>\n" after it (END, *status set); else 0. */
enum { START = 1, END = 2 };

static int at_marker(const struct agent *a, int *status)
{
	size_t end = a->taillen - 1, st = end;
	char digits[16];
	size_t n;

	while (st > 0 && a->tail[st - 1] != '\n')
		st--;
	n = end - st;
	if (st == 0 || n < 34 || n - 33 >= sizeof(digits) ||
	    memcmp(a->tail + st, a->nonce, 32) != 0 || a->tail[st + 32] != ' ')
		return 0;
	memcpy(digits, a->tail + st + 33, n - 33);
	digits[n - 33] = '\0';
	if (strcmp(digits, "+") == 0)
		return START;
	return sscanf(digits, "%d", status) == 1 ? END : 0;
}

/*
 * Reads the stream until the end marker: 0 and *status, or -errno. The
 * stderr between the markers goes to msg (its start, bounded). *started
 * tells whether the start marker came (the tool may have run); *extra,
 * whether bytes came after the end marker (the next call would misread
 * them).
 */
static int read_to_marker(struct agent *a, int ms, int *status, char *msg,
			  size_t msglen, bool *started, bool *extra)
{
	char buf[4096];
	size_t mlen = 0;

	a->taillen = 0;
	for (;;) {
		ssize_t n = engine_raw_recv(a->raw, buf, sizeof(buf), ms);
		size_t off = 0;

		if (n <= 0)
			return n == 0 ? -EPIPE : (int)n;
		while (off < (size_t)n) {
			char c;
			int m;

			if (a->left == 0) { /* a frame header */
				a->hdr[a->hdrlen++] = (unsigned char)buf[off++];
				if (a->hdrlen < 8)
					continue;
				a->hdrlen = 0;
				a->stream = a->hdr[0];
				a->left = (size_t)a->hdr[4] << 24 |
					  (size_t)a->hdr[5] << 16 |
					  (size_t)a->hdr[6] << 8 | a->hdr[7];
				continue;
			}
			c = buf[off++];
			a->left--;
			if (a->stream != 2)
				continue; /* stdout: the tools' goes nowhere */
			if (mlen + 1 < msglen)
				msg[mlen++] = c;
			if (a->taillen == TAIL) {
				memmove(a->tail, a->tail + 1, TAIL - 1);
				a->taillen--;
			}
			a->tail[a->taillen++] = c;
			if (c != '\n')
				continue;
			m = at_marker(a, status);
			if (m == START) {
				*started = true;
				mlen = 0; /* the tool's text starts here */
				continue;
			}
			if (m != END)
				continue;
			*extra = a->left > 0 || off < (size_t)n;
			if (msglen) {
				char *q;

				msg[mlen] = '\0';
				q = strstr(msg, a->nonce);
				if (q)
					q[q > msg ? -1 : 0] = '\0';
				q = msg + strlen(msg);
				while (q > msg && q[-1] == '\n')
					*--q = '\0';
			}
			return 0;
		}
	}
}

/* a->lock held: starts the shell and checks that it answers. */
static int start_shell(struct agent *a, struct engine *e, int ms)
{
	static const char *const sh[] = {"sh", NULL};
	char msg[256], line[128];
	int status = -1, ret;
	bool started = false, extra = false;

	if (!new_nonce(a->nonce))
		return -EIO;
	a->hdrlen = 0;
	a->left = 0;
	ret = engine_exec_attach(e, a->ctr, sh, ms, &a->raw, msg, sizeof(msg));
	if (ret < 0) {
		log_dbg("agent: no shell in %.12s: %s", a->ctr, msg);
		return ret;
	}
	marker_cmd(a, line, sizeof(line), "0");
	if (engine_raw_send(a->raw, line, strlen(line), ms) < 0 ||
	    read_to_marker(a, ms, &status, msg, sizeof(msg), &started, &extra) <
		0 ||
	    status != 0 || extra) {
		log_dbg("agent: no shell in %.12s (it did not answer)", a->ctr);
		close_shell(a);
		return -EOPNOTSUPP;
	}
	log_dbg("agent: shell started in %.12s", a->ctr);
	return 0;
}

/* argv as one line for sh: every word single-quoted ('\'' for a quote);
 * inside single quotes sh takes every other byte as it is. */
static char *command_line(const struct agent *a, const char *const *argv,
			  bool keep_out)
{
	/* stdout, when kept, goes where the markers go, between them */
	const char *redir = keep_out ? " </dev/null >&2; "
				     : " </dev/null "
				       ">/dev/null; ";
	size_t rlen = strlen(redir), len = rlen + 256;
	char *line, *p;

	for (size_t i = 0; argv[i]; i++)
		len += 3 + 4 * strlen(argv[i]);
	line = malloc(len);
	if (!line)
		return NULL;
	/* the start marker: until it comes, the tool has not begun */
	p = line +
	    snprintf(line, len, "printf '\\n%%s +\\n' %s >&2; ", a->nonce);
	for (size_t i = 0; argv[i]; i++) {
		if (i)
			*p++ = ' ';
		*p++ = '\'';
		for (const char *s = argv[i]; *s; s++) {
			if (*s == '\'') {
				memcpy(p, "'\\''", 4);
				p += 4;
			} else {
				*p++ = *s;
			}
		}
		*p++ = '\'';
	}
	memcpy(p, redir, rlen);
	p += rlen;
	marker_cmd(a, p, len - (size_t)(p - line), "\"$?\"");
	return line;
}

static int run(struct engine *e, const char *ctr, const char *const *argv,
	       bool keep_out, int *status, char *msg, size_t msglen)
{
	int ms = (int)engine_timeout(e) * 1000;
	struct agent *a = agent_of(e, ctr);
	char *line;
	int ret;

	msg[0] = '\0';
	*status = 0;
	if (!a)
		return 1; /* busy with a call of another thread */
	for (int tries = 0; tries < 2; tries++) {
		bool started = false, extra = false;

		if (a->raw && !engine_raw_quiet(a->raw)) {
			/* it ended while idle (the container restarted,
			 * someone killed it) */
			log_dbg("agent: shell in %.12s is gone", a->ctr);
			close_shell(a);
		}
		if (!a->raw) {
			if (now_mono() < a->no_shell_until)
				break;
			if (start_shell(a, e, ms) < 0) {
				a->no_shell_until = now_mono() + NO_SHELL_RETRY;
				break;
			}
		}
		line = command_line(a, argv, keep_out);
		if (!line)
			break;
		ret = (int)engine_raw_send(a->raw, line, strlen(line), ms);
		if (ret >= 0)
			ret = read_to_marker(a, ms, status, msg, msglen,
					     &started, &extra);
		free(line);
		if (ret < 0 && !started) {
			/* the tool never began: the shell had ended (and the
			 * engine had not closed its stream yet); a new one */
			log_dbg("agent: shell in %.12s ended before the call",
				a->ctr);
			close_shell(a);
			*status = 0;
			continue;
		}
		if (ret < 0) {
			/* it may have run: EIO, not a second try (a mv is
			 * not to be made twice) */
			snprintf(msg, msglen, "the container's shell: %s",
				 strerror(-ret));
			*status = 0;
			ret = -EIO;
			close_shell(a);
		} else {
			ret = errmap_tool(*status, msg);
			if (extra) /* out of step: a new one next time */
				close_shell(a);
		}
		log_dbg("agent: %s in %.12s -> %d (%s)", argv[0], ctr, *status,
			ret < 0 ? strerror(-ret) : "ok");
		a->last_used = now_mono();
		pthread_mutex_unlock(&a->lock);
		return ret;
	}
	pthread_mutex_unlock(&a->lock);
	msg[0] = '\0';
	return 1;
}

int agent_run(struct engine *e, const char *ctr, const char *const *argv,
	      int *status, char *msg, size_t msglen)
{
	return run(e, ctr, argv, false, status, msg, msglen);
}

int agent_run_out(struct engine *e, const char *ctr, const char *const *argv,
		  int *status, char *out, size_t outlen)
{
	return run(e, ctr, argv, true, status, out, outlen);
}

static void reap(double idle)
{
	double now = now_mono();
	struct agent **pp = &agents;

	pthread_mutex_lock(&agents_lock);
	while (*pp) {
		struct agent *a = *pp;

		if (pthread_mutex_trylock(&a->lock) != 0) {
			pp = &a->next;
			continue;
		}
		if (a->raw && now - a->last_used >= idle) {
			log_dbg("agent: shell in %.12s closed, idle", a->ctr);
			close_shell(a);
		}
		/* a container long unused (maybe gone): forget it */
		if (!a->raw && now - a->last_used >= FORGET_AFTER &&
		    now >= a->no_shell_until) {
			*pp = a->next;
			pthread_mutex_unlock(&a->lock);
			pthread_mutex_destroy(&a->lock);
			free(a);
			continue;
		}
		pthread_mutex_unlock(&a->lock);
		pp = &a->next;
	}
	pthread_mutex_unlock(&agents_lock);
}

void agent_touch_date(char *buf, size_t len, const struct timespec *t)
{
	if (t->tv_nsec)
		snprintf(buf, len, "@%lld.%09ld", (long long)t->tv_sec,
			 t->tv_nsec);
	else
		snprintf(buf, len, "@%lld", (long long)t->tv_sec);
}

bool agent_touch_whole(const struct engine *e, const char *ctr)
{
	struct agent *a;
	bool whole;

	pthread_mutex_lock(&agents_lock);
	a = find(e, ctr);
	whole = a && a->touch_whole;
	pthread_mutex_unlock(&agents_lock);
	return whole;
}

void agent_set_touch_whole(const struct engine *e, const char *ctr)
{
	struct agent *a;

	pthread_mutex_lock(&agents_lock);
	a = find(e, ctr);
	if (a)
		a->touch_whole = true;
	pthread_mutex_unlock(&agents_lock);
}

void agent_reap(double idle)
{
	reap(idle);
}

void agent_free_all(void)
{
	pthread_mutex_lock(&agents_lock);
	while (agents) {
		struct agent *a = agents;

		agents = a->next;
		pthread_mutex_lock(&a->lock);
		close_shell(a);
		pthread_mutex_unlock(&a->lock);
		pthread_mutex_destroy(&a->lock);
		free(a);
	}
	pthread_mutex_unlock(&agents_lock);
}

int agent_run_text(struct engine *e, const char *ctr, const char *const *argv,
		   int *status, char *out, size_t outlen)
{
	int ret = agent_run_out(e, ctr, argv, status, out, outlen);

	if (ret == 1) {
		char *o = NULL;
		size_t olen = 0;

		ret = engine_exec_out(e, ctr, argv, status, out, outlen, &o,
				      &olen);
		if (ret == 0)
			snprintf(out, outlen, "%s", o);
		free(o);
	}
	return ret;
}

int agent_owner(struct engine *e, const char *ctr, const char *path, uid_t *uid,
		gid_t *gid)
{
	const char *argv[] = {"stat", "-c", "%u %g", "--", path, NULL};
	unsigned long u, g;
	char out[256];
	int status = 0;
	int ret = agent_run_text(e, ctr, argv, &status, out, sizeof(out));

	if (ret < 0)
		return ret;
	if (status != 0 || sscanf(out, "%lu %lu", &u, &g) != 2)
		return -EOPNOTSUPP;
	*uid = (uid_t)u;
	*gid = (gid_t)g;
	return 0;
}
