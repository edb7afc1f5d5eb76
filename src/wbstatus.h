/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What write-back failed to commit, kept for those who must hear of it:
 * the next fsync or fsyncdir in the container and, apart from it, the next
 * close of a file written there (each once per failure), and the status
 * that `ctrfs --status` prints (the files given up, with their rescue
 * copies). The writer owns one; every call takes its own lock.
 */
#ifndef CTRFS_WBSTATUS_H
#define CTRFS_WBSTATUS_H

#include <stdbool.h>
#include <stddef.h>

struct wbstatus;

struct wbstatus *wbstatus_new(void);
void wbstatus_free(struct wbstatus *s);

/* A write-back commit of a file of container ctr_id failed with err
 * (-errno): arms the container's latch for both kinds of caller. */
void wbstatus_failed(struct wbstatus *s, const char *ctr_id, int err);

/* Write-back gave up on path in container ctr_name; rescue names the copy
 * of its data (NULL: none could be made); reason says why it failed. */
void wbstatus_gave_up(struct wbstatus *s, const char *ctr_name,
		      const char *path, const char *reason, const char *rescue);

/* The error that this fsync/fsyncdir (sync) or close (!sync) in container
 * ctr_id (NULL: any container) must return, once per failure; 0 when
 * nothing failed unheard. */
int wbstatus_take(struct wbstatus *s, const char *ctr_id, bool sync);

/* Appends one "failed" status line per file given up to buf (which holds
 * *len bytes of len_max); whether there were any. */
bool wbstatus_lines(struct wbstatus *s, char *buf, size_t *len, size_t len_max);

#endif
