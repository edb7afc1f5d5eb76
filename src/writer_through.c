// SPDX-License-Identifier: GPL-2.0-or-later
/* A file with other names (hard links) is written through them: the
 * container's own `head` copies the spool into the file, over one exec's
 * standard input, so the file keeps its number and every name shows the
 * new content. A PUT would put a new file under the one name written
 * (docs/design.md, "Writing a file that has hard links"). */
#include "writer.h"
#include "writer_int.h"
#include "agent.h"
#include "cache.h"
#include "engine.h"
#include "log.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* $1 path, $2 size, $3 owner to set ("" when unchanged), $4 mode, $5 the
 * mtime (and atime) as touch -d takes it, $6 an atime of its own or "".
 * `head -c` is tried first: a head without it fails before the file is
 * truncated (97, then the caller PUTs); so does a file the container's
 * user may not write (96, said by the status: Podman's attach may put
 * words of its own in the place of the tool's), its input read all the
 * same (Podman's attach fails a process that ends before it is read).
 * `true`, not `:`: a shell exits at a special built-in's failed
 * redirection.
 * chown before chmod: chown clears setuid and setgid. A touch that takes
 * no fraction sets the times to the second (98). */
static const char script[] =
    "head -c 0 </dev/null >/dev/null 2>&1 || exit 97\n"
    "true 2>/dev/null >>\"$1\" || { head -c \"$2\" >/dev/null; exit 96; }\n"
    "head -c \"$2\" >\"$1\" || exit\n"
    "[ -z \"$3\" ] || chown \"$3\" \"$1\" </dev/null || exit\n"
    "chmod \"$4\" \"$1\" </dev/null || exit\n"
    "r=0\n"
    "t() { touch -c $1 -d \"$2\" -- \"$3\" </dev/null 2>/dev/null ||"
    " { touch -c $1 -d \"${2%.*}\" -- \"$3\" </dev/null && r=98; }; }\n"
    "t '' \"$5\" \"$1\" || exit\n"
    "[ -z \"$6\" ] || t -a \"$6\" \"$1\" || exit\n"
    "exit $r\n";

/* seconds a file made here counts as having one name */
#define MADE_FOR 1.0

#define THROUGH_DENIED	96
#define THROUGH_NO_HEAD 97
#define THROUGH_SECONDS 98

void writer_note_made(struct wfile *f)
{
	struct writer *w = f->w;

	pthread_mutex_lock(&w->lock);
	w->made[w->made_next % WRITER_MADE] =
	    (struct made){.hash = f->hash, .at = now_mono()};
	w->made_next++;
	pthread_mutex_unlock(&w->lock);
}

/* Whether f's path is a file made here within the last second (a link to
 * it made inside since is as stale as any attribute the TTL allows), as
 * rsync's times, set by a copy right after its file landed. */
static bool made_lately(struct wfile *f)
{
	struct writer *w = f->w;
	double now = now_mono();
	bool found = false;

	pthread_mutex_lock(&w->lock);
	for (size_t i = 0; i < WRITER_MADE && !found; i++)
		found = w->made[i].hash == f->hash && w->made[i].at > 0 &&
			now - w->made[i].at < MADE_FOR;
	pthread_mutex_unlock(&w->lock);
	return found;
}

/* f (locked, in the container, one name as far as the mount knows: a
 * listing counts only the names within it) gets the link count the
 * container's `stat` says, where its shell runs (one line). */
static void count_names(struct wfile *f)
{
	const char *argv[] = {"stat", "-c", "%h", "--", f->path, NULL};
	unsigned long n;
	char out[128];
	int status = 0;

	if (f->links > 1 || made_lately(f))
		return;
	/* no shell (1): nothing could write through the names anyway */
	if (agent_run_out(f->w->e, f->ctr.id, argv, &status, out,
			  sizeof(out)) != 0 ||
	    sscanf(out, "%lu", &n) != 1)
		return;
	log_dbg("'%s' in container '%s': %lu name(s) there, counted by its "
		"stat",
		f->path, f->ctr.name, n);
	if (n < 2)
		return;
	f->links = (nlink_t)n;
	f->st.st_nlink = (nlink_t)n;
}

/* The PUT after all: a new file under f's name, which leaves its other
 * names (the archive API cannot write through a file). */
static int put_instead(struct wfile *f, const char *why)
{
	log_info("'%s' in container '%s' cannot be written through its hard "
		 "links there: %s",
		 f->path, f->ctr.name, why);
	log_warn("'%s' in container '%s' had %lu hard links: the new content "
		 "is a new file under this name; the other names keep the old "
		 "content (the container's tools could not write through them)",
		 f->path, f->ctr.name, (unsigned long)f->links);
	f->links = 1;
	f->st.st_nlink = 1;
	f->st.st_ino = cache_new_ino();
	return -EOPNOTSUPP;
}

int writer_commit_through(struct wfile *f)
{
	char size[32], owner[64] = "", mode[16], mtime[48], atime[48] = "";
	char msg[512];
	const char *argv[11];
	struct stat sp;
	int status = 0, ret;

	if (!f->in_container || f->fd < 0 || !S_ISREG(f->st.st_mode))
		return -EOPNOTSUPP;
	count_names(f);
	if (f->links <= 1)
		return -EOPNOTSUPP;
	if (fstat(f->fd, &sp) < 0)
		return -errno;
	snprintf(size, sizeof(size), "%lld", (long long)sp.st_size);
	if (f->st.st_uid != f->open_uid || f->st.st_gid != f->open_gid)
		snprintf(owner, sizeof(owner), "%u:%u", (unsigned)f->st.st_uid,
			 (unsigned)f->st.st_gid);
	snprintf(mode, sizeof(mode), "%o", (unsigned)(f->st.st_mode & 07777));
	/* written now: any second of now is now, and no touch refuses it */
	if (!f->mtime_set) {
		engine_clock(f->w->e, &f->st.st_mtim);
		f->st.st_mtim.tv_nsec = 0;
	}
	agent_touch_date(mtime, sizeof(mtime), &f->st.st_mtim);
	if (f->atime_set)
		agent_touch_date(atime, sizeof(atime), &f->st.st_atim);
	argv[0] = "sh";
	argv[1] = "-c";
	argv[2] = script;
	argv[3] = "sh";
	argv[4] = f->path;
	argv[5] = size;
	argv[6] = owner;
	argv[7] = mode;
	argv[8] = mtime;
	argv[9] = atime;
	argv[10] = NULL;
	ret = engine_exec_in(f->w->e, f->ctr.id, argv, f->fd, sp.st_size,
			     &status, msg, sizeof(msg));
	if (status == THROUGH_SECONDS) {
		log_info("'%s' in container '%s': its 'touch' takes no "
			 "fraction: times set to the second",
			 f->path, f->ctr.name);
		agent_set_touch_whole(f->w->e, f->ctr.id);
		f->st.st_mtim.tv_nsec = 0;
		f->st.st_atim.tv_nsec = 0;
		ret = 0;
	}
	/* no tools there, or the container's user may not write it (the
	 * archive API is root's) */
	if (status == THROUGH_NO_HEAD)
		return put_instead(f, "its head takes no -c");
	if (status == THROUGH_DENIED)
		return put_instead(f, "its user may not write it");
	if (ret == -EOPNOTSUPP || ret == -EACCES || ret == -EPERM)
		return put_instead(f, *msg ? msg : strerror(-ret));
	if (ret < 0) {
		log_err("cannot write '%s' in container '%s' through its hard "
			"links: %s",
			f->path, f->ctr.name, *msg ? msg : strerror(-ret));
		return ret;
	}
	log_dbg("wrote '%s' in container '%s' through its %lu names (%s "
		"bytes)",
		f->path, f->ctr.name, (unsigned long)f->links, size);
	return 0;
}
