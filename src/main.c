// SPDX-License-Identifier: GPL-2.0-or-later
/* ctrfs: mounts the containers of a Docker (or Podman) engine. */
#include "config.h"

#include "engine.h"
#include "fs.h"
#include "hostcfg.h"
#include "hostlist.h"
#include "journal.h"
#include "log.h"

#include <curl/curl.h>
#include <errno.h>
/* option parsing only: the filesystem itself is in fs.c */
#include <fuse.h>
#include <fuse_lowlevel.h>
#include <limits.h>
#include <locale.h>
#include <malloc.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEFAULT_HOST HOSTCFG_DEFAULT

struct options {
	char **hosts; /* every -o host, in order */
	size_t nhosts;
	char *engines;	 /* -o engines, its names joined by commas */
	bool in_engines; /* the option before was one of its names */
	char *pos[2];	 /* [SOURCE] MOUNTPOINT */
	int npos;
	int all;
	int allow_other;
	double attr_timeout;
	unsigned timeout;
	double writeback;
	int mem_spool; /* MiB; -1: the default */
	char *spool;   /* write-back's journal directory, or NULL */
};

enum { KEY_ALLOW_OTHER, KEY_DISCARD, KEY_HOST, KEY_ENGINES };

#define OPT(t, p)                                                              \
	{                                                                      \
		t, offsetof(struct options, p), 1                              \
	}
static const struct fuse_opt ctrfs_opts[] = {
    FUSE_OPT_KEY("host=", KEY_HOST),
    FUSE_OPT_KEY("engines=", KEY_ENGINES),
    OPT("all", all),
    OPT("attr_timeout=%lf", attr_timeout),
    OPT("timeout=%u", timeout),
    OPT("writeback=%lf", writeback),
    OPT("mem_spool=%d", mem_spool),
    OPT("spool=%s", spool),
    FUSE_OPT_KEY("allow_other", KEY_ALLOW_OTHER),
    /* fstab-only options */
    FUSE_OPT_KEY("_netdev", KEY_DISCARD),
    FUSE_OPT_KEY("noauto", KEY_DISCARD),
    FUSE_OPT_KEY("auto", KEY_DISCARD),
    FUSE_OPT_KEY("user", KEY_DISCARD),
    FUSE_OPT_KEY("users", KEY_DISCARD),
    FUSE_OPT_KEY("nofail", KEY_DISCARD),
    FUSE_OPT_END,
};

/* Appends an engine URL to o's list; 0 or -1. */
static int add_host(struct options *o, const char *url)
{
	char **nh = realloc(o->hosts, (o->nhosts + 1) * sizeof(*nh));

	if (!nh)
		return -1;
	o->hosts = nh;
	nh[o->nhosts] = strdup(url);
	if (!nh[o->nhosts])
		return -1;
	o->nhosts++;
	return 0;
}

/* Appends an engine's name to o's list; 0 or -1. */
static int add_engine(struct options *o, const char *name)
{
	size_t have = o->engines ? strlen(o->engines) + 1 : 0;
	size_t len = strlen(name) + 1;
	char *ne = realloc(o->engines, have + len);

	if (!ne)
		return -1;
	if (have)
		ne[have - 1] = ',';
	memcpy(ne + have, name, len);
	o->engines = ne;
	o->in_engines = true;
	return 0;
}

static int opt_proc(void *data, const char *arg, int key,
		    struct fuse_args *outargs)
{
	struct options *o = data;
	bool in_engines = o->in_engines;

	o->in_engines = false;
	switch (key) {
	case KEY_ENGINES:
		return add_engine(o, arg + strlen("engines="));
	case FUSE_OPT_KEY_OPT:
		/* FUSE splits -o engines=a,b at its comma: the words after
		 * it, up to an option with a value, are more names */
		if (in_engines && arg[0] != '-' && !strchr(arg, '='))
			return add_engine(o, arg);
		return 1;
	case KEY_HOST:
		return add_host(o, arg + strlen("host="));
	case FUSE_OPT_KEY_NONOPT:
		if (o->npos == 2) {
			fprintf(stderr, "ctrfs: too many arguments: '%s'\n",
				arg);
			return -1;
		}
		o->pos[o->npos] = strdup(arg);
		return o->pos[o->npos++] ? 0 : -1;
	case KEY_ALLOW_OTHER:
		o->allow_other = 1;
		return 1; /* keep it for FUSE */
	case KEY_DISCARD:
		return 0;
	default:
		return 1;
	}
}

static void usage(const char *prog)
{
	printf(
	    "usage: %s [options] [SOURCE] MOUNTPOINT\n\n"
	    "Mounts every container of a Docker Engine (or Podman's Docker-"
	    "compatible API)\nas a directory named after the container.\n\n"
	    "ctrfs options:\n"
	    "    -o host=URL            engine: unix:///path, tcp://host:port"
	    " or https://\n"
	    "                           (default: $DOCKER_HOST, else the "
	    "docker CLI's\n"
	    "                           context, else %s);\n"
	    "                           more than once: several engines, a "
	    "directory\n"
	    "                           each (host-port, or the socket's name"
	    "\n"
	    "                           without .sock)\n"
	    "    -o engines=NAME,...    docker contexts (all: every one), a "
	    "directory\n"
	    "                           each, -o host too (last in an -o "
	    "list)\n"
	    "    -o all                 also show stopped containers "
	    "(default: running only)\n"
	    "    -o attr_timeout=SECS   how long metadata is trusted "
	    "before it is\n"
	    "                           revalidated (default: 1)\n"
	    "    -o timeout=SECS        how long an engine call may stall "
	    "(default: 30)\n"
	    "    -o writeback=SECS      opt-in: close() returns at once and "
	    "files closed\n"
	    "                           within SECS share one PUT (default: "
	    "0, off: close\n"
	    "                           returns when the data is in the "
	    "container)\n"
	    "    -o mem_spool=MIB       data being written is kept in "
	    "memory (/dev/shm)\n"
	    "                           up to MIB in all, beyond on disk "
	    "(default: an\n"
	    "                           eighth of the RAM, at most 1024; "
	    "0: disk only)\n"
	    "    -o spool=DIR           write-back's journal: files closed "
	    "but not yet\n"
	    "                           committed, kept for a restart after "
	    "a crash\n"
	    "                           (default: $TMPDIR/ctrfs-journal-UID,"
	    " else\n"
	    "                           /var/tmp/ctrfs-journal-UID)\n"
	    "    -o allow_other         let other users in, with "
	    "permission checks\n"
	    "                           (default: only the user who "
	    "mounted)\n"
	    "    -f                     stay in the foreground, log to "
	    "stderr\n"
	    "                           (default: background, log to "
	    "syslog)\n"
	    "    -d                     debug: log every engine call with "
	    "its duration\n"
	    "                           (implies -f)\n"
	    "    -s                     single-threaded (default: "
	    "multi-threaded)\n"
	    "    --status MOUNTPOINT    what write-back holds and what it "
	    "failed to commit;\n"
	    "                           exit 0: nothing, 1: pending, 2: "
	    "failed\n"
	    "    -h, --help             this help\n"
	    "    -V, --version          the version\n\n"
	    "SOURCE, as mount(8) passes it: an engine URL, or any word "
	    "(e.g. docker)\nfor the default engine.\n\n",
	    prog, DEFAULT_HOST);
}

/* A clearer reason than curl's when a unix socket is not usable. */
static int check_socket(const char *url, char *msg, size_t len)
{
	const char *path;
	struct stat st;

	if (strncmp(url, "unix://", 7) != 0)
		return 0;
	path = url + 7;
	if (stat(path, &st) < 0) {
		snprintf(msg, len, "cannot connect to engine at %s: %s", url,
			 strerror(errno));
		return -errno;
	}
	if (!S_ISSOCK(st.st_mode)) {
		snprintf(msg, len,
			 "cannot connect to engine at %s: not a "
			 "socket",
			 url);
		return -ENOTSOCK;
	}
	if (access(path, R_OK | W_OK) < 0) {
		snprintf(msg, len, "cannot connect to engine at %s: %s", url,
			 strerror(errno));
		return -errno;
	}
	return 0;
}

/* An eighth of the RAM, at most 1 GiB: what files being written may keep
 * in memory at once by default. */
static long long default_mem_spool(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
	long long ram = pages > 0 && size > 0 ? (long long)pages * size : 0;

	return ram / 8 < (1LL << 30) ? ram / 8 : 1LL << 30;
}

/* Every open file and every spool file of kept contents is a descriptor:
 * take what the hard limit allows (1024 soft is common), as a server does. */
static void raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/*
 * `ctrfs --status MOUNTPOINT`: prints what write-back holds and what it
 * failed to commit (the mount's hidden status file) and exits 0 when
 * nothing is pending or failed, 1 when something is pending, 2 when
 * something failed, 3 when the mount cannot be read.
 */
static int print_status(const char *mnt)
{
	char path[PATH_MAX], line[PATH_MAX + 1024];
	bool pending = false, failed = false;
	FILE *f;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", mnt,
			     CTRFS_STATUS_NAME) >= sizeof(path)) {
		fprintf(stderr, "ctrfs: %s: path too long\n", mnt);
		return 3;
	}
	f = fopen(path, "re");
	if (!f) {
		fprintf(
		    stderr, "ctrfs: cannot read the status of '%s': %s\n", mnt,
		    errno == ENOENT ? "not a ctrfs mount" : strerror(errno));
		return 3;
	}
	while (fgets(line, sizeof(line), f)) {
		fputs(line, stdout);
		if (strncmp(line, "pending\t", 8) == 0)
			pending = true;
		else
			failed = true; /* retrying, failed */
	}
	if (ferror(f)) {
		fprintf(stderr, "ctrfs: cannot read the status of '%s': %s\n",
			mnt, strerror(errno));
		fclose(f);
		return 3;
	}
	fclose(f);
	return failed ? 2 : pending ? 1 : 0;
}

/* The engines to serve: one as hostcfg.c finds it (its name unused), or
 * the list of -o engines and the -o host given more than once. 0, or 2
 * (the reasons said on stderr). */
static int engines_list(const struct options *o, struct hostlist_engine **hl,
			size_t *n)
{
	char msg[PATH_MAX + 512];

	if (o->engines || o->nhosts > 1)
		return hostlist_build(o->engines, o->hosts, o->nhosts, hl, n) <
			       0
			   ? 2
			   : 0;
	*hl = calloc(1, sizeof(**hl));
	if (!*hl)
		return 1;
	*n = 1;
	if (hostcfg_resolve(o->nhosts ? o->hosts[0] : NULL, &(*hl)->hc, msg,
			    sizeof(msg)) < 0) {
		fprintf(stderr, "ctrfs: %s\n", msg);
		free(*hl);
		*hl = NULL;
		return 2;
	}
	return 0;
}

/*
 * One engine made, pinged and its journal replayed (files an earlier
 * mount that died left pending go in, or to the rescue directory, before
 * anything new is written) and started: fe's engine and journal, freed by
 * the caller whatever the outcome. 0, or 2 with the reason on stderr.
 * One of several engines that does not answer is not refused: one line
 * says so, and fe->down leaves its ping and journal to fs_sites.c.
 */
static int engine_open(const struct hostcfg *hc, const struct options *o,
		       bool several, struct fs_engine *fe)
{
	char msg[PATH_MAX + 512];
	int ret;

	if (engine_new(hc, o->timeout, &fe->e) < 0) {
		fprintf(stderr,
			"ctrfs: cannot connect to engine at %s: "
			"unsupported URL\n",
			hc->url);
		return 2;
	}
	ret = check_socket(hc->url, msg, sizeof(msg));
	if (ret == 0)
		ret = engine_ping(fe->e, msg, sizeof(msg));
	/* one of several that does not answer (no socket yet, nobody at
	 * it): mounted empty, served once it answers (fs_sites.c) */
	fe->down =
	    several && (ret == -ENOENT || (ret < 0 && engine_down(fe->e)));
	if (fe->down)
		fprintf(stderr,
			"ctrfs: %s; its directory '%s' is empty until it "
			"answers\n",
			msg, fe->name);
	else if (ret < 0) {
		fprintf(stderr, "ctrfs: %s\n", msg);
		return 2;
	} else
		log_dbg("%s", msg);
	if (journal_open(o->spool, o->writeback > 0, hc->url, &fe->journal, msg,
			 sizeof(msg)) < 0) {
		fprintf(stderr, "ctrfs: %s\n", msg);
		return 2;
	}
	journal_entries_in_memory(fe->journal, o->mem_spool != 0);
	if (fe->down)
		return 0; /* replayed and started once it answers */
	if (fe->journal)
		journal_replay(fe->journal, fe->e);
	if (fe->journal && o->writeback > 0 &&
	    journal_start(fe->journal, msg, sizeof(msg)) < 0) {
		fprintf(stderr, "ctrfs: %s\n", msg);
		return 2;
	}
	/* said once the start is sure: a refused start says one line */
	if (engine_quirks(fe->e)->owners_zero)
		fprintf(stderr,
			"ctrfs: the engine%s%s is Podman: its archive API "
			"reports every owner as 0:0, and ctrfs shows what it "
			"reports\n",
			fe->name && *fe->name ? " " : "",
			fe->name ? fe->name : "");
	return 0;
}

/* Start-up in the order it must happen (options, engine, version, mount),
 * read top to bottom with one exit path: longer than a screen on purpose,
 * each step's failure an exit status of its own. */
int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct options o = {
	    .attr_timeout = 1.0, .timeout = 30, .mem_spool = -1};
	struct fuse_cmdline_opts co;
	struct fs_config cfg;
	struct hostlist_engine *hl = NULL;
	struct fs_engine *fe = NULL;
	size_t i = 0, n = 0;
	int ret = 1;

	setlocale(LC_CTYPE, "C.UTF-8");
	/* glibc gives each of up to 8 x CPUs threads an arena of its own, and
	 * FUSE's 32 threads touch many: a mount that had listed a Debian root
	 * and taken an rsync -a of 5,120 files peaked at 35.9 MiB, 26.5 MiB
	 * with two arenas (docs/performance-notes.md). The data path does not
	 * allocate per chunk, so the shared arenas cost no contention there. */
	if (!getenv("MALLOC_ARENA_MAX"))
		mallopt(M_ARENA_MAX, 2);
	if (argc >= 2 && strcmp(argv[1], "--status") == 0) {
		if (argc != 3) {
			fprintf(stderr, "usage: %s --status MOUNTPOINT\n",
				argv[0]);
			return 1;
		}
		return print_status(argv[2]);
	}
	log_init(true, false);
	raise_fd_limit();
	if (fuse_opt_parse(&args, &o, ctrfs_opts, opt_proc) != 0)
		goto out_args;
	/* "ctrfs SOURCE MOUNTPOINT" is how mount(8) and fstab call us: a
	 * SOURCE that is an engine URL selects the engine, any other (e.g.
	 * "docker") means the default one */
	if (o.npos == 2 && !o.nhosts && strstr(o.pos[0], "://") &&
	    add_host(&o, o.pos[0]) < 0)
		goto out_args;
	if (o.npos > 0 && fuse_opt_add_arg(&args, o.pos[o.npos - 1]) != 0)
		goto out_args;
	if (fuse_parse_cmdline(&args, &co) != 0) {
		/* FUSE refuses a mount point it cannot resolve: that is a
		 * failed mount, not a usage error */
		if (o.npos > 0 && access(o.pos[o.npos - 1], F_OK) != 0)
			ret = 3;
		goto out_args;
	}
	if (co.show_help) {
		usage(argv[0]);
		fs_lib_help();
		ret = 0;
		goto out_cmdline;
	}
	if (co.show_version) {
		printf("ctrfs %s\n", PACKAGE_VERSION);
		printf("libfuse %s, %s\n", fuse_pkgversion(), curl_version());
		ret = 0;
		goto out_cmdline;
	}
	if (!co.mountpoint) {
		fprintf(stderr, "ctrfs: no mountpoint given (see --help)\n");
		goto out_cmdline;
	}
	if (o.attr_timeout < 0 || o.timeout == 0 || o.writeback < 0 ||
	    o.writeback > 60 || o.mem_spool < -1) {
		fprintf(stderr, "ctrfs: bad attr_timeout, timeout, writeback "
				"or mem_spool\n");
		goto out_cmdline;
	}
	log_init(true, co.debug);

	ret = engines_list(&o, &hl, &n);
	if (ret)
		goto out_cmdline;
	fe = calloc(n, sizeof(*fe));
	if (!fe) {
		ret = 1;
		goto out_list;
	}
	curl_global_init(CURL_GLOBAL_ALL);
	for (i = 0; i < n; i++) {
		fe[i].name = hl[i].name;
		ret = engine_open(&hl[i].hc, &o, n > 1, &fe[i]);
		if (ret)
			goto out_engines;
	}

	fuse_opt_add_arg(&args, "-osubtype=ctrfs,fsname=ctrfs");
	if (o.allow_other)
		fuse_opt_add_arg(&args, "-odefault_permissions");
	cfg.all = o.all;
	cfg.attr_timeout = o.attr_timeout;
	cfg.idle_close = 2.0;
	cfg.writeback = o.writeback;
	cfg.mem_spool = o.mem_spool >= 0 ? (long long)o.mem_spool << 20
					 : default_mem_spool();
	ret = fs_main(args.argc, args.argv, co.mountpoint, co.foreground,
		      co.debug, co.singlethread, co.max_idle_threads, fe, n,
		      &cfg);
out_engines:
	/* engines opened, and the one that failed halfway */
	for (size_t k = 0; k < n && k <= i; k++) {
		journal_free(fe[k].journal);
		engine_free(fe[k].e);
	}
	curl_global_cleanup();
	free(fe);
out_list:
	free(hl);
out_cmdline:
	free(co.mountpoint);
out_args:
	fuse_opt_free_args(&args);
	for (i = 0; i < o.nhosts; i++)
		free(o.hosts[i]);
	free(o.hosts);
	free(o.engines);
	free(o.spool);
	free(o.pos[0]);
	free(o.pos[1]);
	return ret;
}
