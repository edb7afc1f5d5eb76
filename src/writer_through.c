// SPDX-License-Identifier: GPL-2.0-or-later
/* A file with other names (hard links) is written through them: the
 * container's own `head` copies the spool into the file, over one exec's
 * standard input, so the file keeps its number and every name shows the
 * new content. A PUT would put a new file under the one name written
 * (docs/design.md, "Writing a file that has hard links"). */
#include "writer.h"
#include "writer_int.h"
#include "agent.h"
#include "engine.h"
#include "log.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* $1 path, $2 size, $3 owner to set ("" when unchanged), $4 mode, $5 the
 * mtime (and atime) as touch -d takes it, $6 an atime of its own or "".
 * `head -c` is tried first: a head without it fails before the file is
 * truncated (97, then the caller PUTs); so does a file the container's
 * user may not write, its input read all the same (Podman's attach fails
 * a process that ends before its input is read, with words of its own).
 * chown before chmod: chown clears setuid and setgid. A touch that takes
 * no fraction sets the times to the second (98). */
static const char script[] =
    "head -c 0 </dev/null >/dev/null 2>&1 || exit 97\n"
    ": >>\"$1\" || { s=$?; head -c \"$2\" >/dev/null; exit $s; }\n"
    "head -c \"$2\" >\"$1\" || exit\n"
    "[ -z \"$3\" ] || chown \"$3\" \"$1\" </dev/null || exit\n"
    "chmod \"$4\" \"$1\" </dev/null || exit\n"
    "r=0\n"
    "t() { touch -c $1 -d \"$2\" -- \"$3\" </dev/null 2>/dev/null ||"
    " { touch -c $1 -d \"${2%.*}\" -- \"$3\" </dev/null && r=98; }; }\n"
    "t '' \"$5\" \"$1\" || exit\n"
    "[ -z \"$6\" ] || t -a \"$6\" \"$1\" || exit\n"
    "exit $r\n";

#define THROUGH_NO_HEAD 97
#define THROUGH_SECONDS 98

int writer_commit_through(struct wfile *f)
{
	char size[32], owner[64] = "", mode[16], mtime[48], atime[48] = "";
	char msg[512];
	const char *argv[11];
	struct stat sp;
	int status = 0, ret;

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
	 * archive API is root's): a PUT, as before */
	if (status == THROUGH_NO_HEAD || ret == -EOPNOTSUPP || ret == -EACCES ||
	    ret == -EPERM) {
		log_info("'%s' in container '%s' cannot be written through its "
			 "hard links there: %s",
			 f->path, f->ctr.name,
			 status == THROUGH_NO_HEAD ? "its head takes no -c"
			 : *msg			   ? msg
						   : strerror(-ret));
		return -EOPNOTSUPP;
	}
	if (ret < 0) {
		log_err("cannot write '%s' in container '%s' through its hard "
			"links: %s",
			f->path, f->ctr.name, *msg ? msg : strerror(-ret));
		return ret;
	}
	log_dbg("wrote '%s' in container '%s' through its %lu names (%s "
		"bytes)",
		f->path, f->ctr.name, (unsigned long)f->links, size);
	f->through = true;
	return 0;
}
