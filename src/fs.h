/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The FUSE filesystem: fs*.c are the only files that include the FUSE
 * headers. */
#ifndef CTRFS_FS_H
#define CTRFS_FS_H

#include <stdbool.h>
#include <stddef.h>

struct engine;
struct journal;

/* The hidden file of the mount's root that holds write-back's status
 * (docs/design.md, Write-back), read by `ctrfs --status`. */
#define CTRFS_STATUS_NAME ".ctrfs-status"

struct fs_config {
	bool all;	     /* show stopped containers too */
	double attr_timeout; /* seconds metadata is trusted */
	double idle_close;   /* seconds before an idle GET is closed */
	double writeback; /* seconds a closed file waits (0: commit at close) */
	long long mem_spool; /* bytes of written data kept in memory, in all */
};

/* An engine of the mount, answering already. */
struct fs_engine {
	const char *name;	 /* its directory's (with several engines) */
	struct engine *e;	 /* borrowed */
	struct journal *journal; /* write-back's journal (borrowed), or NULL */
	/* it did not answer at start (a mount of several engines only): its
	 * journal is not replayed yet, its API version not known; served
	 * once a ping of fs_sites.c's gets an answer */
	bool down;
};

/*
 * Mounts on mountpoint with the FUSE arguments in argv (which must hold
 * the program name first) and serves until unmounted: the containers of
 * the one engine at the root, or of each of n engines in a directory of
 * its name. The engines must answer already; they are used after
 * daemonizing. Returns the exit status.
 */
int fs_main(int argc, char **argv, const char *mountpoint, bool foreground,
	    bool debug, bool single_thread, unsigned max_idle_threads,
	    const struct fs_engine *engines, size_t n,
	    const struct fs_config *cfg);

/* Writes the FUSE library's own options to stdout. */
void fs_lib_help(void);

#endif
