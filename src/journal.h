/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The write-back journal: in write-back mode a file whose close returned
 * before its data is in the container has an entry on the host that
 * outlives the daemon, so a later start commits it (or keeps it in the
 * rescue directory). An entry is the spool file itself, linked under a
 * name (or a copy where it cannot be linked), and a record (jrecord.h) of
 * what it is to become, replaced atomically. Each run of the daemon keeps
 * its entries in a directory of its own, locked while it lives; the next
 * start replays those of runs that are gone. Layout and guarantees:
 * docs/design.md, "Durable write-back".
 */
#ifndef CTRFS_JOURNAL_H
#define CTRFS_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>

struct engine;
struct jrecord;
struct journal;
struct jentry; /* one file's entry, owned by its wfile */

/*
 * Opens the journal directory dir (NULL: $TMPDIR/ctrfs-journal-UID, else
 * /var/tmp/ctrfs-journal-UID) for the engine at engine_url, and with create
 * makes it when missing (mode 0700); without, a missing one means no
 * journal: 0 and *out NULL. A directory that is not this user's, or open
 * to others, is refused (-EPERM), as is its twin on /dev/shm: the reason is
 * in msg. The caller frees *out with journal_free().
 */
int journal_open(const char *dir, bool create, const char *engine_url,
		 struct journal **out, char *msg, size_t msglen);

/*
 * Commits what runs that are gone left in the journal: an entry of this
 * engine whose container is there goes in with one PUT; one whose
 * container is gone, whose record is damaged or whose data does not have
 * the recorded size goes to the rescue directory (spool_rescue()), one log
 * line each. Entries of other engines are left for a mount of theirs.
 */
void journal_replay(struct journal *j, struct engine *e);

/* Entries without data (directories, symlinks and their attributes) are
 * recorded on the tmpfs twin (on), beside the memory spool's files, not
 * on disk: they outlive the daemon, not a reboot, and cost no fsync
 * (rsync -a records each directory twice, at its mkdir and when it sets
 * its times last). Off (-o mem_spool=0) keeps them on disk. */
void journal_entries_in_memory(struct journal *j, bool on);

/* Makes this run's directory, locked until journal_free(). 0 or -errno,
 * with the reason in msg. */
int journal_start(struct journal *j, char *msg, size_t msglen);

/* Removes this run's directory when nothing is left in it, and frees. */
void journal_free(struct journal *j);

const char *journal_path(const struct journal *j);

/*
 * Writes the entry of the file whose spool file is fd (*ent: NULL the
 * first time, made here; fd -1: a directory or a symlink, r->type 'd' or
 * 'l', whose entry is its record alone): its data (a link to fd's file,
 * or a copy) and
 * the record r, whose engine, data, seq and size are filled in here. The
 * record replaces the last one in one step (written aside, synced,
 * renamed, the directory synced). 0 or -errno; on failure the last record
 * stays.
 */
int journal_put(struct journal *j, struct jentry **ent, int fd,
		struct jrecord *r);

/* Whether ent has a record (its file is to be committed). */
bool journal_recorded(const struct jentry *ent);

/* The file landed (or was removed, or rescued): its record goes; its data
 * link stays until journal_release(), for the next journal_put(). */
void journal_drop(struct journal *j, struct jentry *ent);

/* The file is done with: its entry goes (keep: the data and the record
 * stay for the next start, the only place the data is left). Frees *ent
 * and sets it NULL. */
void journal_release(struct journal *j, struct jentry **ent, bool keep);

#endif
