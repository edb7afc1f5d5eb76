/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * agent: the tools ctrfs runs in a container (rm, mv, chmod...) go to one
 * long-lived `sh` per container, a line each, instead of an exec each
 * (docs/design.md, "A shell per container"). A container is its engine
 * and its id: two engines of a mount that hold one id (a copied data
 * root) have a shell each.
 */
#ifndef CTRFS_AGENT_H
#define CTRFS_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

struct engine;

/*
 * Runs argv (a tool and its arguments, never a shell string) in container
 * ctr through its shell. As engine_exec(): 0, or -errno with the tool's
 * stderr in msg and its exit status in *status. 1 when it did not run
 * (no shell there, or the shell is busy or failed before the line was
 * sent): the caller runs a plain exec instead.
 */
int agent_run(struct engine *e, const char *ctr, const char *const *argv,
	      int *status, char *msg, size_t msglen);

/* The same for a tool whose output is wanted: its stdout, with its
 * stderr, in out (bounded, NUL-terminated), whatever its exit status. */
int agent_run_out(struct engine *e, const char *ctr, const char *const *argv,
		  int *status, char *out, size_t outlen);

/* agent_run_out(), and where no shell runs (1) a plain exec of the tool:
 * 0 with its status and output, or -errno. */
int agent_run_text(struct engine *e, const char *ctr, const char *const *argv,
		   int *status, char *out, size_t outlen);

/*
 * The owner of path in container ctr as its `stat` says (through its
 * shell, else an exec): for Podman, whose archive API reports every owner
 * as 0:0, before a PUT that puts an existing entry back. 0, or -errno
 * (-EOPNOTSUPP: no `stat` runs there, or the container is not running).
 */
int agent_owner(struct engine *e, const char *ctr, const char *path, uid_t *uid,
		gid_t *gid);

/* Whether container ctr (of engine e)'s `touch` was seen to refuse a time with
 * a fraction of a second (busybox's takes whole seconds), and the note that it
 * did: a call that needs one then goes another way at once, without a line that
 * fails first. Forgotten with the container's agent. */
bool agent_touch_whole(const struct engine *e, const char *ctr);
void agent_set_touch_whole(const struct engine *e, const char *ctr);

/* t as `touch -d` takes it: "@SECONDS", with ".NANOSECONDS" when it has
 * a fraction. */
void agent_touch_date(char *buf, size_t len, const struct timespec *t);

/* Closes the shells idle for idle seconds or more. */
void agent_reap(double idle);

/* Closes every shell (unmount). */
void agent_free_all(void);

#endif
