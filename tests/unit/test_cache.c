// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * cache: round trips, the merge rules of cache_put(), directory listings,
 * removal, namespaces, the size bound and a concurrency smoke test.
 */
#include "cache.h"

#include <errno.h>
#include <locale.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

static struct cache_attr attr_of(mode_t mode, time_t mtime, off_t size,
				 unsigned flags)
{
	struct cache_attr a;

	memset(&a, 0, sizeof(a));
	a.st.st_mode = mode;
	a.st.st_mtim.tv_sec = mtime;
	a.st.st_mtim.tv_nsec = 250;
	a.st.st_size = size;
	a.st.st_nlink = 1;
	a.validated = 17.5;
	a.flags = flags;
	return a;
}

static struct cache_attr owned(mode_t mode, time_t mtime, uid_t uid, gid_t gid,
			       nlink_t nlink)
{
	struct cache_attr a = attr_of(mode, mtime, 0, CACHE_OWNER);

	a.st.st_uid = uid;
	a.st.st_gid = gid;
	a.st.st_nlink = nlink;
	return a;
}

static void put_dir(struct cache *c, const char *ns, const char *path,
		    time_t mtime)
{
	struct cache_attr a = attr_of(S_IFDIR | 0755, mtime, 4096, 0);

	cache_put(c, ns, path, &a, NULL);
}

static void put_file(struct cache *c, const char *ns, const char *path,
		     off_t size)
{
	struct cache_attr a = attr_of(S_IFREG | 0644, 1000, size, 0);

	cache_put(c, ns, path, &a, NULL);
}

/* /d holding files a (size 1), b (size 2) and c (size 3), listed. */
static void put_listed_dir(struct cache *c, time_t mtime, long snapshot)
{
	put_dir(c, "ns", "/d", mtime);
	put_file(c, "ns", "/d/a", 1);
	put_file(c, "ns", "/d/b", 2);
	put_file(c, "ns", "/d/c", 3);
	CHECK_INT(cache_set_listing(c, "ns", "/d", "a\0b\0c", 3, 6, snapshot),
		  0);
}

static void test_empty(void)
{
	struct cache *c = cache_new(100);
	struct cache_attr a;

	CHECK(c != NULL);
	CHECK_INT(cache_count(c), 0);
	CHECK_INT(cache_get(c, "ns", "/", &a, NULL, 0), -ENOENT);
	cache_free(c);
	cache_free(NULL);
}

static void test_put_get_round_trip(void)
{
	struct cache *c = cache_new(100);
	struct cache_attr in = owned(S_IFREG | 0640, 1700000000, 1234, 5678, 2);
	struct cache_attr out;

	in.st.st_size = 123456789;
	in.st.st_mtim.tv_nsec = 999999999;
	in.validated = 42.25;
	CHECK(!cache_put(c, "ctr1", "/etc/passwd", &in, NULL));
	CHECK_INT(cache_count(c), 1);
	memset(&out, 0xa5, sizeof(out));
	CHECK_INT(cache_get(c, "ctr1", "/etc/passwd", &out, NULL, 0), 0);
	CHECK_INT(out.st.st_mode, S_IFREG | 0640);
	CHECK_INT(out.st.st_size, 123456789);
	CHECK_INT(out.st.st_uid, 1234);
	CHECK_INT(out.st.st_gid, 5678);
	CHECK_INT(out.st.st_nlink, 2);
	CHECK_INT(out.st.st_mtim.tv_sec, 1700000000);
	CHECK_INT(out.st.st_mtim.tv_nsec, 999999999);
	CHECK(out.validated == 42.25);
	CHECK_INT(out.flags, CACHE_OWNER);
	cache_free(c);
}

static void test_get_other_key(void)
{
	struct cache *c = cache_new(100);
	struct cache_attr a;

	put_file(c, "ctr1", "/x", 1);
	CHECK_INT(cache_get(c, "ctr2", "/x", &a, NULL, 0), -ENOENT);
	CHECK_INT(cache_get(c, "ctr1", "/y", &a, NULL, 0), -ENOENT);
	CHECK_INT(cache_get(c, "ctr1", "/x/", &a, NULL, 0), -ENOENT);
	CHECK_INT(cache_get(c, "ctr", "1/x", &a, NULL, 0), -ENOENT);
	CHECK_INT(cache_get(c, "ctr1", "/x", &a, NULL, 0), 0);
	cache_free(c);
}

static void test_put_replaces(void)
{
	struct cache *c = cache_new(100);
	struct cache_attr a;

	put_file(c, "ns", "/f", 1);
	put_file(c, "ns", "/f", 2);
	CHECK_INT(cache_count(c), 1);
	CHECK_INT(cache_get(c, "ns", "/f", &a, NULL, 0), 0);
	CHECK_INT(a.st.st_size, 2);
	cache_free(c);
}

static void test_symlink_target(void)
{
	struct cache *c = cache_new(100);
	struct cache_attr in = attr_of(S_IFLNK | 0777, 1000, 12, 0), out;
	char link[64];

	cache_put(c, "ns", "/bin/sh", &in, "/bin/busybox");
	CHECK_INT(cache_get(c, "ns", "/bin/sh", &out, link, sizeof(link)), 0);
	CHECK(out.flags & CACHE_LINK);
	CHECK_STR(link, "/bin/busybox");
	/* Without a buffer the attributes still come out. */
	CHECK_INT(cache_get(c, "ns", "/bin/sh", &out, NULL, 0), 0);
	CHECK_INT(out.st.st_mode, S_IFLNK | 0777);
	cache_free(c);
}

static void test_symlink_target_small_buffer(void)
{
	struct cache *c = cache_new(100);
	struct cache_attr in = attr_of(S_IFLNK | 0777, 1000, 12, 0), out;
	char link[8];

	memset(link, 'Z', sizeof(link));
	cache_put(c, "ns", "/bin/sh", &in, "/bin/busybox");
	CHECK_INT(cache_get(c, "ns", "/bin/sh", &out, link, 5), 0);
	/* Never a truncated target presented as the link. */
	CHECK(!(out.flags & CACHE_LINK));
	CHECK(link[5] == 'Z' && link[6] == 'Z' && link[7] == 'Z');
	cache_free(c);
}

static void test_put_flag_link_without_target(void)
{
	struct cache *c = cache_new(100);
	struct cache_attr in = attr_of(S_IFLNK | 0777, 1000, 3, CACHE_LINK);
	struct cache_attr out;
	char link[16];

	cache_put(c, "ns", "/l", &in, NULL);
	CHECK_INT(cache_get(c, "ns", "/l", &out, link, sizeof(link)), 0);
	CHECK(!(out.flags & CACHE_LINK));
	cache_free(c);
}

static time_t clock_now;

static void fixed_clock(void *arg, struct timespec *now)
{
	(void)arg;
	now->tv_sec = clock_now;
	now->tv_nsec = 0;
}

static time_t ctime_after(struct cache *c, struct cache_attr a)
{
	a.st.st_ctim = a.st.st_mtim; /* as a source gives it */
	cache_put(c, "ns", "/f", &a, NULL);
	CHECK_INT(cache_get(c, "ns", "/f", &a, NULL, 0), 0);
	return a.st.st_ctim.tv_sec;
}

/* A chmod, chown or link made inside the container: the same size and
 * mtime, another mode, owner or link count; the ctime is when it was seen,
 * never back. */
static void test_ctime_of_a_change_seen(void)
{
	struct cache *c = cache_new(100);
	struct cache_attr f = owned(S_IFREG | 0644, 1000, 1, 2, 1);

	cache_set_clock(c, fixed_clock, NULL);
	clock_now = 5000;
	CHECK_INT(ctime_after(c, f), 1000); /* first seen: the mtime */
	CHECK_INT(ctime_after(c, f), 1000); /* the same */
	f.st.st_mode = S_IFREG | 0600;
	CHECK_INT(ctime_after(c, f), 5000);
	clock_now = 6000;
	CHECK_INT(ctime_after(c, f), 5000); /* the same again */
	f.st.st_uid = 7;
	CHECK_INT(ctime_after(c, f), 6000);
	clock_now = 7000;
	f.st.st_nlink = 2;
	CHECK_INT(ctime_after(c, f), 7000);
	/* an answer without an owner (a HEAD) says nothing of one */
	clock_now = 8000;
	f.flags = 0;
	f.st.st_uid = 9;
	CHECK_INT(ctime_after(c, f), 7000);
	/* never back */
	clock_now = 100;
	f.st.st_mode = S_IFREG | 0640;
	CHECK_INT(ctime_after(c, f), 7000);
	/* a directory's link count is ctrfs's own count */
	f = owned(S_IFDIR | 0755, 1000, 1, 2, 2);
	clock_now = 9000;
	cache_remove(c, "ns", "/f");
	CHECK_INT(ctime_after(c, f), 1000);
	f.st.st_nlink = 3;
	CHECK_INT(ctime_after(c, f), 1000);
	f.st.st_gid = 3;
	CHECK_INT(ctime_after(c, f), 9000);
	cache_free(c);
}

/* The names of one file show one ctime, the latest any was given: a
 * record copied to a new name before a change of the first does not take
 * that change back. */
static void test_ctime_of_linked_names_never_back(void)
{
	struct cache *c = cache_new(100);
	struct cache_attr a = owned(S_IFREG | 0644, 1000, 1, 2, 2);

	a.st.st_ino = cache_new_ino();
	a.st.st_ctim.tv_sec = 5000;
	cache_put(c, "ns", "/a", &a, NULL);
	a.st.st_ctim.tv_sec = 1000;
	cache_put(c, "ns", "/b", &a, NULL);
	CHECK_INT(cache_get(c, "ns", "/a", &a, NULL, 0), 0);
	CHECK_INT(a.st.st_ctim.tv_sec, 5000);
	CHECK_INT(cache_get(c, "ns", "/b", &a, NULL, 0), 0);
	CHECK_INT(a.st.st_ctim.tv_sec, 5000);
	cache_free(c);
}

static void test_merge_keeps_owner(void)
{
	struct cache *c = cache_new(100);
	struct cache_attr a = owned(S_IFREG | 0644, 1000, 1000, 100, 3);

	cache_put(c, "ns", "/f", &a, NULL);
	a = attr_of(S_IFREG | 0600, 2000, 99, 0);
	cache_put(c, "ns", "/f", &a, NULL);
	CHECK_INT(cache_get(c, "ns", "/f", &a, NULL, 0), 0);
	CHECK_INT(a.st.st_uid, 1000);
	CHECK_INT(a.st.st_gid, 100);
	CHECK_INT(a.st.st_nlink, 3);
	CHECK(a.flags & CACHE_OWNER);
	/* The rest is the new attr's. */
	CHECK_INT(a.st.st_mode, S_IFREG | 0600);
	CHECK_INT(a.st.st_size, 99);
	CHECK_INT(a.st.st_mtim.tv_sec, 2000);
	cache_free(c);
}

static void test_merge_owner_dropped_on_type_change(void)
{
	struct cache *c = cache_new(100);
	struct cache_attr a = owned(S_IFREG | 0644, 1000, 1000, 100, 3);

	cache_put(c, "ns", "/f", &a, NULL);
	a = attr_of(S_IFDIR | 0755, 1000, 4096, 0);
	cache_put(c, "ns", "/f", &a, NULL);
	CHECK_INT(cache_get(c, "ns", "/f", &a, NULL, 0), 0);
	CHECK_INT(a.st.st_mode, S_IFDIR | 0755);
	CHECK_INT(a.st.st_uid, 0);
	CHECK_INT(a.st.st_gid, 0);
	CHECK_INT(a.st.st_nlink, 1);
	CHECK(!(a.flags & CACHE_OWNER));
	cache_free(c);
}

static void test_merge_new_owner_wins(void)
{
	struct cache *c = cache_new(100);
	struct cache_attr a = owned(S_IFREG | 0644, 1000, 1000, 100, 3);

	cache_put(c, "ns", "/f", &a, NULL);
	a = owned(S_IFREG | 0644, 1000, 2000, 200, 1);
	cache_put(c, "ns", "/f", &a, NULL);
	CHECK_INT(cache_get(c, "ns", "/f", &a, NULL, 0), 0);
	CHECK_INT(a.st.st_uid, 2000);
	CHECK_INT(a.st.st_gid, 200);
	CHECK_INT(a.st.st_nlink, 1);
	cache_free(c);
}

static void test_merge_keeps_link_same_mtime(void)
{
	struct cache *c = cache_new(100);
	struct cache_attr a = attr_of(S_IFLNK | 0777, 1000, 7, 0);
	char link[64];

	cache_put(c, "ns", "/l", &a, "busybox");
	cache_put(c, "ns", "/l", &a, NULL);
	CHECK_INT(cache_get(c, "ns", "/l", &a, link, sizeof(link)), 0);
	CHECK(a.flags & CACHE_LINK);
	CHECK_STR(link, "busybox");
	cache_free(c);
}

static void test_merge_drops_link_new_mtime(void)
{
	struct cache *c = cache_new(100);
	struct cache_attr a = attr_of(S_IFLNK | 0777, 1000, 7, 0);
	char link[64];

	cache_put(c, "ns", "/l", &a, "busybox");
	a = attr_of(S_IFLNK | 0777, 1001, 4, 0);
	cache_put(c, "ns", "/l", &a, NULL);
	CHECK_INT(cache_get(c, "ns", "/l", &a, link, sizeof(link)), 0);
	CHECK(!(a.flags & CACHE_LINK));
	cache_free(c);
}

static void test_merge_drops_link_type_change(void)
{
	struct cache *c = cache_new(100);
	struct cache_attr a = attr_of(S_IFLNK | 0777, 1000, 7, 0);
	char link[64];

	cache_put(c, "ns", "/l", &a, "busybox");
	a = attr_of(S_IFREG | 0644, 1000, 7, 0);
	cache_put(c, "ns", "/l", &a, NULL);
	CHECK_INT(cache_get(c, "ns", "/l", &a, link, sizeof(link)), 0);
	CHECK(!(a.flags & CACHE_LINK));
	cache_free(c);
}

static void test_merge_new_link_wins(void)
{
	struct cache *c = cache_new(100);
	struct cache_attr a = attr_of(S_IFLNK | 0777, 1000, 7, 0);
	char link[64];

	cache_put(c, "ns", "/l", &a, "busybox");
	cache_put(c, "ns", "/l", &a, "toybox");
	CHECK_INT(cache_get(c, "ns", "/l", &a, link, sizeof(link)), 0);
	CHECK(a.flags & CACHE_LINK);
	CHECK_STR(link, "toybox");
	cache_free(c);
}

static void test_listing(void)
{
	struct cache *c = cache_new(100);
	struct cache_listing l;

	put_listed_dir(c, 1000, 5000);
	CHECK_INT(cache_listing(c, "ns", "/d", &l), 0);
	CHECK_INT(l.n, 3);
	if (l.n == 3) {
		CHECK_STR(l.ents[0].name, "a");
		CHECK_STR(l.ents[1].name, "b");
		CHECK_STR(l.ents[2].name, "c");
		CHECK_INT(l.ents[0].st.st_size, 1);
		CHECK_INT(l.ents[1].st.st_size, 2);
		CHECK_INT(l.ents[2].st.st_size, 3);
		CHECK_INT(l.ents[2].st.st_mode, S_IFREG | 0644);
	}
	cache_listing_free(&l);
	cache_free(c);
}

static void test_listing_sees_child_updates(void)
{
	struct cache *c = cache_new(100);
	struct cache_listing l;

	put_listed_dir(c, 1000, 5000);
	put_file(c, "ns", "/d/b", 222);
	CHECK_INT(cache_listing(c, "ns", "/d", &l), 0);
	CHECK_INT(l.n, 3);
	if (l.n == 3)
		CHECK_INT(l.ents[1].st.st_size, 222);
	cache_listing_free(&l);
	cache_free(c);
}

static void test_listing_names_copied(void)
{
	struct cache *c = cache_new(100);
	struct cache_listing l;
	char names[] = "x\0yy";

	put_dir(c, "ns", "/d", 1000);
	put_file(c, "ns", "/d/x", 1);
	put_file(c, "ns", "/d/yy", 2);
	CHECK_INT(
	    cache_set_listing(c, "ns", "/d", names, 2, sizeof(names), 5000), 0);
	memset(names, 'q', sizeof(names));
	CHECK_INT(cache_listing(c, "ns", "/d", &l), 0);
	CHECK_INT(l.n, 2);
	if (l.n == 2) {
		CHECK_STR(l.ents[0].name, "x");
		CHECK_STR(l.ents[1].name, "yy");
	}
	cache_listing_free(&l);
	cache_free(c);
}

static void test_listing_root(void)
{
	struct cache *c = cache_new(100);
	struct cache_listing l;

	put_dir(c, "ns", "/", 1000);
	put_file(c, "ns", "/etc", 5);
	CHECK_INT(cache_set_listing(c, "ns", "/", "etc", 1, 4, 5000), 0);
	CHECK_INT(cache_listing(c, "ns", "/", &l), 0);
	CHECK_INT(l.n, 1);
	if (l.n == 1) {
		CHECK_STR(l.ents[0].name, "etc");
		CHECK_INT(l.ents[0].st.st_size, 5);
	}
	cache_listing_free(&l);
	cache_free(c);
}

static void test_listing_empty_dir(void)
{
	struct cache *c = cache_new(100);
	struct cache_listing l;

	put_dir(c, "ns", "/empty", 1000);
	CHECK_INT(cache_set_listing(c, "ns", "/empty", "", 0, 0, 5000), 0);
	CHECK_INT(cache_listing(c, "ns", "/empty", &l), 0);
	CHECK_INT(l.n, 0);
	cache_listing_free(&l);
	cache_free(c);
}

static void test_listing_absent(void)
{
	struct cache *c = cache_new(100);
	struct cache_listing l;

	CHECK_INT(cache_listing(c, "ns", "/d", &l), -ENOENT);
	put_dir(c, "ns", "/d", 1000);
	CHECK_INT(cache_listing(c, "ns", "/d", &l), -ENOENT);
	cache_free(c);
}

static void test_set_listing_needs_cached_dir(void)
{
	struct cache *c = cache_new(100);
	struct cache_listing l;

	CHECK(cache_set_listing(c, "ns", "/nodir", "a", 1, 2, 5000) < 0);
	put_file(c, "ns", "/file", 1);
	put_file(c, "ns", "/file/a", 1);
	CHECK(cache_set_listing(c, "ns", "/file", "a", 1, 2, 5000) < 0);
	CHECK_INT(cache_listing(c, "ns", "/file", &l), -ENOENT);
	cache_free(c);
}

static void test_listing_stale_child(void)
{
	struct cache *c = cache_new(100);
	struct cache_listing l;

	put_dir(c, "ns", "/d", 1000);
	put_file(c, "ns", "/d/a", 1);
	/* "b" was never cached (or was evicted): the listing is stale. */
	CHECK_INT(cache_set_listing(c, "ns", "/d", "a\0b", 2, 4, 5000), 0);
	CHECK_INT(cache_listing(c, "ns", "/d", &l), -ESTALE);
	CHECK_INT(l.n, 0);
	cache_listing_free(&l);
	cache_free(c);
}

static void test_listing_survives_put_old_mtime(void)
{
	struct cache *c = cache_new(100);
	struct cache_listing l;

	put_listed_dir(c, 1000, 1002);
	put_dir(c, "ns", "/d", 1000);
	CHECK_INT(cache_listing(c, "ns", "/d", &l), 0);
	CHECK_INT(l.n, 3);
	cache_listing_free(&l);
	cache_free(c);
}

static void test_listing_dropped_put_recent_mtime(void)
{
	struct cache *c = cache_new(100);
	struct cache_listing l;

	/* mtime + 1 == snapshot: a change in that second may be missing. */
	put_listed_dir(c, 1000, 1001);
	put_dir(c, "ns", "/d", 1000);
	CHECK_INT(cache_listing(c, "ns", "/d", &l), -ENOENT);
	cache_free(c);

	c = cache_new(100);
	put_listed_dir(c, 1000, 1000);
	put_dir(c, "ns", "/d", 1000);
	CHECK_INT(cache_listing(c, "ns", "/d", &l), -ENOENT);
	cache_free(c);
}

static void test_listing_dropped_put_new_mtime(void)
{
	struct cache *c = cache_new(100);
	struct cache_listing l;

	put_listed_dir(c, 1000, 5000);
	put_dir(c, "ns", "/d", 1001);
	CHECK_INT(cache_listing(c, "ns", "/d", &l), -ENOENT);
	cache_free(c);
}

static void test_listing_dropped_put_other_type(void)
{
	struct cache *c = cache_new(100);
	struct cache_listing l;
	struct cache_attr a = attr_of(S_IFREG | 0644, 1000, 0, 0);

	put_listed_dir(c, 1000, 5000);
	cache_put(c, "ns", "/d", &a, NULL);
	CHECK_INT(cache_listing(c, "ns", "/d", &l), -ENOENT);
	cache_free(c);
}

/* ctrfs's own change of a directory's times (rsync sets an old mtime): the
 * entries are as ctrfs left them, so the names stay, as confirmed before;
 * the engine's next answer with that mtime confirms them again. */
static void test_listing_kept_by_own_attr_change(void)
{
	struct cache *c = cache_new(100);
	struct cache_attr a = attr_of(S_IFDIR | 0700, 700, 4096,
				      CACHE_OWNER | CACHE_SAME_ENTRIES);
	struct cache_listing l;

	put_listed_dir(c, 4990, 5000); /* listed at 17.5 */
	a.validated = 40.0;
	cache_put(c, "ns", "/d", &a, NULL);
	CHECK_INT(cache_listing(c, "ns", "/d", &l), 0);
	CHECK_INT(l.n, 3);
	cache_listing_free(&l);
	CHECK_INT(cache_in_listing(c, "ns", "/d/new", 10.0), 0);
	CHECK_INT(cache_in_listing(c, "ns", "/d/new", 30.0), -1);
	CHECK_INT(cache_get(c, "ns", "/d", &a, NULL, 0), 0);
	CHECK_INT(a.flags, CACHE_OWNER); /* the flag is not stored */
	CHECK_INT(a.st.st_mtim.tv_sec, 700);
	/* the engine then reports that old mtime: confirmed as of then */
	a = attr_of(S_IFDIR | 0700, 700, 4096, 0);
	a.validated = 50.0;
	cache_put(c, "ns", "/d", &a, NULL);
	CHECK_INT(cache_in_listing(c, "ns", "/d/new", 45.0), 0);
	cache_free(c);
}

/* A HEAD that finds a listed directory unchanged confirms the listing as of
 * its answer, for names the listing lacks; cache_touch() likewise. */
static void test_listing_confirmed_again(void)
{
	struct cache *c = cache_new(100);
	struct cache_attr a = attr_of(S_IFDIR | 0755, 1000, 4096, 0);
	struct cache_listing l;

	put_listed_dir(c, 1000, 5000); /* listed at 17.5 */
	CHECK_INT(cache_in_listing(c, "ns", "/d/x", 20.0), -1);
	a.validated = 30.0;
	cache_put(c, "ns", "/d", &a, NULL);
	CHECK_INT(cache_in_listing(c, "ns", "/d/x", 20.0), 0);
	CHECK_INT(cache_in_listing(c, "ns", "/d/a", 20.0), 1);
	cache_touch(c, "ns", "/d", 50.0);
	CHECK_INT(cache_in_listing(c, "ns", "/d/x", 40.0), 0);
	cache_free(c);

	/* an mtime within a second of the listing cannot be confirmed: the
	 * listing goes, so that the next readdir lists again */
	c = cache_new(100);
	put_listed_dir(c, 1000, 1001);
	cache_touch(c, "ns", "/d", 50.0);
	CHECK_INT(cache_in_listing(c, "ns", "/d/x", 0.0), -1);
	CHECK_INT(cache_listing(c, "ns", "/d", &l), -ENOENT);
	cache_free(c);
}

static void test_remove(void)
{
	struct cache *c = cache_new(100);
	struct cache_attr a;

	put_file(c, "ns", "/f", 1);
	put_file(c, "ns", "/g", 1);
	cache_remove(c, "ns", "/f");
	CHECK_INT(cache_get(c, "ns", "/f", &a, NULL, 0), -ENOENT);
	CHECK_INT(cache_get(c, "ns", "/g", &a, NULL, 0), 0);
	CHECK_INT(cache_count(c), 1);
	/* Removing what is not there is harmless. */
	cache_remove(c, "ns", "/nothing");
	cache_remove(c, "other", "/g");
	CHECK_INT(cache_count(c), 1);
	cache_free(c);
}

static void test_remove_child_drops_parent_listing(void)
{
	struct cache *c = cache_new(100);
	struct cache_listing l;
	struct cache_attr a;

	put_listed_dir(c, 1000, 5000);
	cache_remove(c, "ns", "/d/b");
	CHECK_INT(cache_get(c, "ns", "/d/b", &a, NULL, 0), -ENOENT);
	/* The directory itself stays; only its listing is forgotten. */
	CHECK_INT(cache_get(c, "ns", "/d", &a, NULL, 0), 0);
	CHECK_INT(cache_listing(c, "ns", "/d", &l), -ENOENT);
	cache_free(c);
}

static void test_remove_uncached_child_drops_parent_listing(void)
{
	struct cache *c = cache_new(100);
	struct cache_listing l;

	put_listed_dir(c, 1000, 5000);
	cache_remove(c, "ns", "/d/new");
	CHECK_INT(cache_listing(c, "ns", "/d", &l), -ENOENT);
	cache_free(c);
}

static void test_remove_root_child_drops_root_listing(void)
{
	struct cache *c = cache_new(100);
	struct cache_listing l;

	put_dir(c, "ns", "/", 1000);
	put_file(c, "ns", "/a", 1);
	CHECK_INT(cache_set_listing(c, "ns", "/", "a", 1, 2, 5000), 0);
	cache_remove(c, "ns", "/a");
	CHECK_INT(cache_listing(c, "ns", "/", &l), -ENOENT);
	cache_free(c);
}

/* A directory the engine says is gone takes what was cached below it: no
 * stale entry of it outlives it (cache_forget() walks below cached
 * directories alone, and relies on this). */
static void test_remove_dir_takes_what_is_below(void)
{
	struct cache *c = cache_new(100);
	struct cache_attr a;

	put_listed_dir(c, 1000, 5000);
	put_dir(c, "ns", "/d2", 1000);
	put_file(c, "ns", "/d2/a", 1);
	put_file(c, "ns", "/d2x", 1);
	cache_remove(c, "ns", "/d");
	CHECK_INT(cache_get(c, "ns", "/d/a", &a, NULL, 0), -ENOENT);
	CHECK_INT(cache_get(c, "ns", "/d/c", &a, NULL, 0), -ENOENT);
	cache_remove(c, "ns", "/d2x"); /* a file: its namesake stays */
	CHECK_INT(cache_get(c, "ns", "/d2/a", &a, NULL, 0), 0);
	cache_forget(c, "ns", "/d2", true);
	CHECK_INT(cache_get(c, "ns", "/d2/a", &a, NULL, 0), -ENOENT);
	CHECK_INT(cache_count(c), 0);
	cache_free(c);
}

static void test_remove_keeps_other_listings(void)
{
	struct cache *c = cache_new(100);
	struct cache_listing l;

	put_listed_dir(c, 1000, 5000);
	put_file(c, "ns", "/x", 1);
	cache_remove(c, "ns", "/x");
	CHECK_INT(cache_listing(c, "ns", "/d", &l), 0);
	cache_listing_free(&l);
	cache_remove(c, "other", "/d/a");
	CHECK_INT(cache_listing(c, "ns", "/d", &l), 0);
	cache_listing_free(&l);
	cache_free(c);
}

static void test_drop_ns(void)
{
	struct cache *c = cache_new(100);
	struct cache_attr a;

	put_file(c, "A", "/f", 1);
	put_file(c, "A", "/g", 1);
	put_file(c, "AB", "/f", 1);
	put_file(c, "B", "/f", 1);
	cache_drop_ns(c, "A");
	CHECK_INT(cache_get(c, "A", "/f", &a, NULL, 0), -ENOENT);
	CHECK_INT(cache_get(c, "A", "/g", &a, NULL, 0), -ENOENT);
	CHECK_INT(cache_get(c, "AB", "/f", &a, NULL, 0), 0);
	CHECK_INT(cache_get(c, "B", "/f", &a, NULL, 0), 0);
	CHECK_INT(cache_count(c), 2);
	cache_drop_ns(c, "nothing");
	CHECK_INT(cache_count(c), 2);
	cache_free(c);
}

static void test_touch(void)
{
	struct cache *c = cache_new(100);
	struct cache_attr a = owned(S_IFREG | 0644, 1000, 7, 8, 1);

	cache_put(c, "ns", "/f", &a, NULL);
	cache_touch(c, "ns", "/f", 99.5);
	cache_touch(c, "ns", "/absent", 99.5);
	CHECK_INT(cache_get(c, "ns", "/f", &a, NULL, 0), 0);
	CHECK(a.validated == 99.5);
	CHECK_INT(a.st.st_uid, 7);
	CHECK_INT(cache_count(c), 1);
	cache_free(c);
}

static void test_bounded(void)
{
	struct cache *c = cache_new(100);
	size_t max_seen = 0;
	int full_seen = 0, full_early = 0, lost = 0;

	for (int i = 0; i < 1000; i++) {
		struct cache_attr a = attr_of(S_IFREG | 0644, 1000, i, 0);
		char path[32];
		bool full;
		size_t n;

		snprintf(path, sizeof(path), "/f%d", i);
		full = cache_put(c, "ns", path, &a, NULL);
		n = cache_count(c);
		if (n > max_seen)
			max_seen = n;
		if (full)
			full_seen++;
		if (full && n < 50)
			full_early++;
		if (n == 100 && !full)
			CHECK(!"cache_put said not full at max");
		/* What was just put is there, eviction or not. */
		if (cache_get(c, "ns", path, &a, NULL, 0) != 0 ||
		    a.st.st_size != i)
			lost++;
	}
	CHECK(max_seen <= 100);
	CHECK(max_seen >= 90);
	CHECK(full_seen > 0);
	CHECK_INT(full_early, 0);
	CHECK_INT(lost, 0);
	cache_free(c);
}

static void test_first_put_not_full(void)
{
	struct cache *c = cache_new(100);
	struct cache_attr a = attr_of(S_IFREG | 0644, 1000, 1, 0);

	CHECK(!cache_put(c, "ns", "/f", &a, NULL));
	cache_free(c);
}

struct worker {
	struct cache *c;
	int id;
	atomic_int *stop;
	long ops;
	int bad;
};

static void *worker_run(void *arg)
{
	struct worker *w = arg;
	unsigned seed = (unsigned)w->id * 7919u;
	char ns[8];

	snprintf(ns, sizeof(ns), "n%d", w->id % 2);
	while (!atomic_load(w->stop)) {
		char path[32], link[32];
		struct cache_attr a;
		struct cache_listing l;
		int k = rand_r(&seed) % 64, r;

		snprintf(path, sizeof(path), "/d/f%d", k);
		switch (rand_r(&seed) % 8) {
		case 0:
			put_dir(w->c, ns, "/d", 1000);
			cache_set_listing(w->c, ns, "/d", "f1\0f2", 2, 6, 5000);
			break;
		case 1:
			r = cache_listing(w->c, ns, "/d", &l);
			if (r != 0 && r != -ENOENT && r != -ESTALE)
				w->bad++;
			cache_listing_free(&l);
			break;
		case 2:
			cache_remove(w->c, ns, path);
			break;
		case 3:
			a = attr_of(S_IFLNK | 0777, 1000, 3, 0);
			cache_put(w->c, ns, path, &a, "abc");
			break;
		case 4:
			if (rand_r(&seed) % 100 == 0)
				cache_drop_ns(w->c, ns);
			cache_touch(w->c, ns, path, 1.0);
			break;
		case 5:
			r = cache_get(w->c, ns, path, &a, link, sizeof(link));
			if (r != 0 && r != -ENOENT)
				w->bad++;
			break;
		default:
			a = attr_of(S_IFREG | 0644, 1000, k, 0);
			cache_put(w->c, ns, path, &a, NULL);
			break;
		}
		w->ops++;
	}
	return NULL;
}

static void test_threads(void)
{
	struct cache *c = cache_new(50);
	struct worker w[4];
	pthread_t th[4];
	atomic_int stop = 0;
	struct timespec one_second = {1, 0};
	long ops = 0;
	int bad = 0;

	for (int i = 0; i < 4; i++) {
		w[i] = (struct worker){.c = c, .id = i, .stop = &stop};
		CHECK_INT(pthread_create(&th[i], NULL, worker_run, &w[i]), 0);
	}
	nanosleep(&one_second, NULL);
	atomic_store(&stop, 1);
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		ops += w[i].ops;
		bad += w[i].bad;
	}
	CHECK(ops > 1000);
	CHECK_INT(bad, 0);
	CHECK(cache_count(c) <= 50);
	cache_free(c);
}

/* Content from a tar (mtime in whole seconds, no nanoseconds) is kept
 * across a put of the same header only when that second lies more than a
 * second before the content's GET; equal zero nanoseconds say nothing. */
static void test_data_same_second_from_a_tar(void)
{
	struct cache *c = cache_new(100);
	FILE *f = tmpfile();
	struct cache_blob *b = cache_blob_new(dup(fileno(f)));
	struct cache_attr a = attr_of(S_IFREG | 0644, 5000, 3, CACHE_OWNER);
	off_t off, len;
	int fd;

	cache_set_data_budget(c, 1 << 20);
	a.st.st_mtim.tv_nsec = 0;
	cache_put(c, "ns", "/old", &a, NULL);
	CHECK(cache_set_data(c, "ns", "/old", b, 0, 3, 5002));
	cache_put(c, "ns", "/old", &a, NULL);
	CHECK_INT(cache_get_data(c, "ns", "/old", &fd, &off, &len), 0);
	close(fd);
	cache_put(c, "ns", "/new", &a, NULL);
	CHECK(cache_set_data(c, "ns", "/new", b, 0, 3, 5001));
	cache_put(c, "ns", "/new", &a, NULL); /* the same second: unsure */
	CHECK_INT(cache_get_data(c, "ns", "/new", &fd, &off, &len), -1);
	cache_blob_put(b);
	fclose(f);
	cache_free(c);
}

/* Podman's tar gives a time rounded to the nearest second: its second
 * after an exact time that rounds to it is the same time, and the exact
 * one stays (no flip between the two forms); Docker's cuts it. */
static void test_podman_rounded_second(void)
{
	struct cache *c = cache_new(100);
	struct cache_attr head = attr_of(S_IFREG | 0644, 5000, 3, CACHE_OWNER),
			  tar = head, out;
	struct timespec t7 = {5000, 700000000}, t3 = {5000, 300000000};
	struct timespec s5000 = {5000, 0}, s5001 = {5001, 0};

	head.st.st_mtim = t7;
	tar.st.st_mtim = s5001;
	cache_set_tar_rounding(c, true);
	CHECK(cache_same_second(c, &s5001, &t7));
	CHECK(!cache_same_second(c, &s5000, &t7));
	CHECK(cache_same_second(c, &t3, &s5000));
	cache_put(c, "ns", "/f", &head, NULL);
	cache_put(c, "ns", "/f", &tar, NULL);
	CHECK_INT(cache_get(c, "ns", "/f", &out, NULL, 0), 0);
	CHECK_INT(out.st.st_mtim.tv_sec, 5000);
	CHECK_INT(out.st.st_mtim.tv_nsec, 700000000);
	cache_set_tar_rounding(c, false);
	CHECK(!cache_same_second(c, &s5001, &t7));
	CHECK(cache_same_second(c, &s5000, &t7));
	cache_free(c);
}

/* Two engines of one mount, a cache each: the Podman engine's rounding
 * is its cache's alone. A Docker tar's cut second after a HEAD's exact
 * time keeps the exact time in the Docker engine's cache, however the
 * Podman engine's cache was set up after it (sites_new()'s order). */
static void test_rounding_per_cache(void)
{
	struct cache *docker = cache_new(100), *podman = cache_new(100);
	struct cache_attr head = attr_of(S_IFREG | 0644, 5000, 3, CACHE_OWNER),
			  cut = head, rounded = head, out;
	struct timespec t7 = {5000, 700000000};

	head.st.st_mtim = t7;
	cut.st.st_mtim = (struct timespec){5000, 0};
	rounded.st.st_mtim = (struct timespec){5001, 0};
	cache_set_tar_rounding(docker, false);
	cache_set_tar_rounding(podman, true);
	CHECK(cache_same_second(docker, &cut.st.st_mtim, &t7));
	CHECK(cache_same_second(podman, &rounded.st.st_mtim, &t7));
	cache_put(docker, "ns", "/f", &head, NULL);
	cache_put(docker, "ns", "/f", &cut, NULL);
	CHECK_INT(cache_get(docker, "ns", "/f", &out, NULL, 0), 0);
	CHECK_INT(out.st.st_mtim.tv_sec, 5000);
	CHECK_INT(out.st.st_mtim.tv_nsec, 700000000);
	cache_put(podman, "ns", "/f", &head, NULL);
	cache_put(podman, "ns", "/f", &rounded, NULL);
	CHECK_INT(cache_get(podman, "ns", "/f", &out, NULL, 0), 0);
	CHECK_INT(out.st.st_mtim.tv_sec, 5000);
	CHECK_INT(out.st.st_mtim.tv_nsec, 700000000);
	cache_free(docker);
	cache_free(podman);
}

/* A HEAD that confirms an entry keeps its attributes (a tar's whole
 * second stays), and its content only where cache_put()'s rule holds. */
static void test_confirm(void)
{
	struct cache *c = cache_new(100);
	FILE *f = tmpfile();
	struct cache_blob *b = cache_blob_new(dup(fileno(f)));
	struct cache_attr a = attr_of(S_IFREG | 0644, 5000, 3, CACHE_OWNER),
			  out;
	struct stat head = a.st;
	off_t off, len;
	int fd;

	cache_set_data_budget(c, 1 << 20);
	a.st.st_mtim.tv_nsec = 0;
	head.st_mtim.tv_nsec = 123456789;
	cache_put(c, "ns", "/old", &a, NULL);
	CHECK(cache_set_data(c, "ns", "/old", b, 0, 3, 5002));
	cache_confirm(c, "ns", "/old", &head, 40.0);
	CHECK_INT(cache_get(c, "ns", "/old", &out, NULL, 0), 0);
	CHECK_INT(out.st.st_mtim.tv_nsec, 0);
	CHECK(out.validated == 40.0);
	CHECK_INT(cache_get_data(c, "ns", "/old", &fd, &off, &len), 0);
	close(fd);
	cache_put(c, "ns", "/new", &a, NULL);
	CHECK(cache_set_data(c, "ns", "/new", b, 0, 3, 5001));
	cache_confirm(c, "ns", "/new", &head, 40.0); /* the same second */
	CHECK_INT(cache_get_data(c, "ns", "/new", &fd, &off, &len), -1);
	CHECK_INT(cache_get(c, "ns", "/new", &out, NULL, 0), 0);
	CHECK_INT(out.st.st_mtim.tv_nsec, 0);
	cache_blob_put(b);
	fclose(f);
	cache_free(c);
}

/* /t: files x (100 bytes) and y, and directory s holding z (600 bytes);
 * everything confirmed at 17.5 but x, confirmed at 50. */
static void put_tree(struct cache *c)
{
	struct cache_attr a;

	put_dir(c, "ns", "/t", 1000);
	put_dir(c, "ns", "/t/s", 1000);
	a = attr_of(S_IFREG | 0644, 1000, 100, CACHE_OWNER);
	a.validated = 50;
	cache_put(c, "ns", "/t/x", &a, NULL);
	put_file(c, "ns", "/t/y", 0);
	put_file(c, "ns", "/t/s/z", 600);
	CHECK_INT(cache_set_listing(c, "ns", "/t", "s\0x\0y", 3, 6, 2000), 0);
	CHECK_INT(cache_set_listing(c, "ns", "/t/s", "z", 1, 2, 2000), 0);
}

static void test_subtree(void)
{
	struct cache *c = cache_new(100);
	struct cache_subtree t;

	put_tree(c);
	CHECK_INT(cache_subtree(c, "ns", "/t", 100, 1 << 20, 20, &t), 0);
	CHECK_INT((long)t.entries, 4);
	CHECK_INT((long)t.stale, 3);
	CHECK_INT((long)t.stale_children, 2);
	/* four headers, 512 of x's data, 1024 of z's */
	CHECK_INT((long)t.bytes, 4 * 1024 + 512 + 1024);
	CHECK_INT(cache_subtree(c, "ns", "/t", 3, 1 << 20, 20, &t), -E2BIG);
	CHECK_INT(cache_subtree(c, "ns", "/t", 100, 4096, 20, &t), -E2BIG);
	CHECK_INT(cache_subtree(c, "ns", "/t/s", 100, 1 << 20, 20, &t), 0);
	CHECK_INT((long)t.entries, 1);
	/* a directory below without its listing: unknown */
	put_dir(c, "ns", "/t/s", 1001);
	CHECK_INT(cache_subtree(c, "ns", "/t", 100, 1 << 20, 20, &t), -ENOENT);
	CHECK_INT(cache_subtree(c, "other", "/t", 100, 1 << 20, 20, &t),
		  -ENOENT);
	cache_free(c);
}

static void test_subtree_root(void)
{
	struct cache *c = cache_new(100);
	struct cache_subtree t;

	put_dir(c, "ns", "/", 1000);
	put_file(c, "ns", "/f", 1);
	put_dir(c, "ns", "/d", 1000);
	CHECK_INT(cache_set_listing(c, "ns", "/", "d\0f", 2, 4, 2000), 0);
	CHECK_INT(cache_set_listing(c, "ns", "/d", "", 0, 0, 2000), 0);
	CHECK_INT(cache_subtree(c, "ns", "/", 100, 1 << 20, 20, &t), 0);
	CHECK_INT((long)t.entries, 2);
	CHECK_INT((long)t.stale_children, 2);
	cache_free(c);
}

/* Once the seconds of a change of ours are over, a listing that holds for
 * an mtime in them is taken again, once (someone else may have changed the
 * directory in those seconds too). */
static void test_listing_own_window_listed_again_once(void)
{
	struct cache *c = cache_new(100);
	struct cache_attr a = attr_of(S_IFDIR | 0755, 2001, 4096, 0);
	struct cache_listing l;

	put_listed_dir(c, 1000, 1500);
	cache_dir_changed(c, "ns", "/d", 2000, 2002, 20.0);
	a.validated = 21.0; /* within the seconds: ours */
	cache_put(c, "ns", "/d", &a, NULL);
	CHECK_INT(cache_listing(c, "ns", "/d", &l), 0);
	cache_listing_free(&l);
	cache_touch(c, "ns", "/d", 22.0);
	CHECK_INT(cache_listing(c, "ns", "/d", &l), 0);
	cache_listing_free(&l);
	cache_touch(c, "ns", "/d", 23.5); /* over: listed again */
	CHECK_INT(cache_listing(c, "ns", "/d", &l), -ENOENT);
	CHECK_INT(cache_set_listing(c, "ns", "/d", "a\0b\0c", 3, 6, 2005), 0);
	a.validated = 30.0;
	cache_put(c, "ns", "/d", &a, NULL);
	cache_touch(c, "ns", "/d", 31.0);
	CHECK_INT(cache_listing(c, "ns", "/d", &l), 0);
	cache_listing_free(&l);
	cache_free(c);
}

/* Inode numbers: new ones for new entries, in the order they come (a
 * listing's order: `cp -r` reads a directory in inode order), kept across
 * answers; a shared one given with a link count over 1 is kept while
 * nothing changes and given up when the file changes. */
static void test_inode_numbers(void)
{
	struct cache *c = cache_new(100);
	struct cache_attr a = attr_of(S_IFREG | 0644, 1000, 5, 0);
	ino_t f, g, shared;

	cache_put(c, "ns", "/f", &a, NULL);
	cache_put(c, "ns", "/g", &a, NULL);
	CHECK_INT(cache_get(c, "ns", "/f", &a, NULL, 0), 0);
	f = a.st.st_ino;
	CHECK_INT(cache_get(c, "ns", "/g", &a, NULL, 0), 0);
	g = a.st.st_ino;
	CHECK(f > 1 && g > f);
	a = attr_of(S_IFREG | 0644, 1001, 6, 0); /* a HEAD: changed */
	cache_put(c, "ns", "/f", &a, NULL);
	CHECK_INT(cache_get(c, "ns", "/f", &a, NULL, 0), 0);
	CHECK(a.st.st_ino == f);
	/* two names of one file: g takes f's number */
	a = owned(S_IFREG | 0644, 1001, 0, 0, 2);
	a.st.st_size = 6;
	a.st.st_ino = f;
	cache_put(c, "ns", "/f", &a, NULL);
	cache_put(c, "ns", "/g", &a, NULL);
	a = owned(S_IFREG | 0644, 1001, 0, 0, 1); /* a tar of g alone */
	a.st.st_size = 6;
	cache_put(c, "ns", "/g", &a, NULL);
	CHECK_INT(cache_get(c, "ns", "/g", &a, NULL, 0), 0);
	CHECK(a.st.st_ino == f && (a.flags & CACHE_SHARED_INO));
	a = attr_of(S_IFREG | 0644, 1002, 9, 0); /* a HEAD: g changed */
	cache_put(c, "ns", "/g", &a, NULL);
	CHECK_INT(cache_get(c, "ns", "/g", &a, NULL, 0), 0);
	shared = a.st.st_ino;
	CHECK(shared != f && shared > g && !(a.flags & CACHE_SHARED_INO));
	/* another type, another number; a directory keeps its own */
	a = attr_of(S_IFDIR | 0755, 1000, 4096, 0);
	cache_put(c, "ns", "/f", &a, NULL);
	CHECK_INT(cache_get(c, "ns", "/f", &a, NULL, 0), 0);
	CHECK(a.st.st_ino > shared);
	f = a.st.st_ino;
	put_dir(c, "ns", "/f", 2000);
	CHECK_INT(cache_get(c, "ns", "/f", &a, NULL, 0), 0);
	CHECK(a.st.st_ino == f);
	cache_free(c);
}

/* Three names of one file show one record: a change stored under one
 * name shows under all, a name ctrfs removes counts one link less. */
static void test_hard_link_names(void)
{
	struct cache *c = cache_new(100);
	struct cache_attr a = owned(S_IFREG | 0644, 1000, 0, 0, 3);
	char names[4][PATH_MAX];
	ino_t ino = cache_new_ino();

	a.st.st_ino = ino;
	cache_put(c, "ns", "/n0", &a, NULL);
	cache_put(c, "ns", "/n1", &a, NULL);
	cache_put(c, "ns", "/n2", &a, NULL);
	put_file(c, "ns", "/other", 1);
	CHECK_INT((int)cache_names_of(c, "ns", "/n1", names, 4), 2);
	CHECK(strcmp(names[0], "/n1") != 0 && strcmp(names[1], "/n1") != 0);
	CHECK_INT((int)cache_names_of(c, "ns", "/other", names, 4), 0);
	/* chmod and chown through n1 (meta_update keeps the number) */
	a = owned(S_IFREG | 0201, 1000, 65534, 65533, 3);
	a.st.st_ino = ino;
	cache_put(c, "ns", "/n1", &a, NULL);
	CHECK_INT(cache_get(c, "ns", "/n0", &a, NULL, 0), 0);
	CHECK(a.st.st_mode == (S_IFREG | 0201) && a.st.st_uid == 65534 &&
	      a.st.st_gid == 65533 && a.st.st_nlink == 3 && a.st.st_ino == ino);
	/* a HEAD of n2 (no owner, no number) that saw a new mode */
	a = attr_of(S_IFREG | 0600, 1000, 0, 0);
	cache_put(c, "ns", "/n2", &a, NULL);
	CHECK_INT(cache_get(c, "ns", "/n0", &a, NULL, 0), 0);
	CHECK(a.st.st_mode == (S_IFREG | 0600) && a.st.st_uid == 65534);
	/* unlink n2: the others count two links */
	cache_forget(c, "ns", "/n2", false);
	CHECK_INT(cache_get(c, "ns", "/n0", &a, NULL, 0), 0);
	CHECK_INT((int)a.st.st_nlink, 2);
	CHECK_INT((int)cache_names_of(c, "ns", "/n0", names, 4), 1);
	CHECK(strcmp(names[0], "/n1") == 0);
	/* evicted or forgotten without being removed: no name is lost */
	cache_remove(c, "ns", "/n1");
	CHECK_INT(cache_get(c, "ns", "/n0", &a, NULL, 0), 0);
	CHECK_INT((int)a.st.st_nlink, 2);
	CHECK_INT((int)cache_names_of(c, "ns", "/n0", names, 4), 0);
	cache_drop_ns(c, "ns");
	CHECK_INT((int)cache_count(c), 0);
	cache_free(c);
}

/* A directory's link count is 2 and one per subdirectory while its
 * listing is known, 1 when a child is not cached. */
static void test_dir_nlink(void)
{
	struct cache *c = cache_new(100);
	struct cache_attr a;

	put_dir(c, "ns", "/d", 1000);
	put_dir(c, "ns", "/d/x", 1000);
	put_dir(c, "ns", "/d/y", 1000);
	put_file(c, "ns", "/d/f", 1);
	CHECK_INT(cache_set_listing(c, "ns", "/d", "f\0x\0y", 3, 6, 5000), 0);
	CHECK_INT(cache_get(c, "ns", "/d", &a, NULL, 0), 0);
	CHECK_INT((int)a.st.st_nlink, 4);
	CHECK(!(a.flags & CACHE_SHARED_INO));
	put_dir(c, "ns", "/d", 1000); /* a tar header again: nlink 1 */
	CHECK_INT(cache_get(c, "ns", "/d", &a, NULL, 0), 0);
	CHECK_INT((int)a.st.st_nlink, 4);
	put_dir(c, "ns", "/d/z", 1000); /* mkdir through the mount */
	cache_listing_add(c, "ns", "/d/z");
	CHECK_INT(cache_get(c, "ns", "/d", &a, NULL, 0), 0);
	CHECK_INT((int)a.st.st_nlink, 5);
	cache_forget(c, "ns", "/d/x", true); /* rmdir */
	CHECK_INT(cache_get(c, "ns", "/d", &a, NULL, 0), 0);
	CHECK_INT((int)a.st.st_nlink, 4);
	cache_listing_add(c, "ns", "/d/new"); /* not cached: cannot count */
	CHECK_INT(cache_get(c, "ns", "/d", &a, NULL, 0), 0);
	CHECK_INT((int)a.st.st_nlink, 1);
	put_file(c, "ns", "/d/new", 1); /* known now: the next add counts */
	put_dir(c, "ns", "/d/w", 1000);
	cache_listing_add(c, "ns", "/d/w");
	CHECK_INT(cache_get(c, "ns", "/d", &a, NULL, 0), 0);
	CHECK_INT((int)a.st.st_nlink, 5);
	cache_forget(c, "ns", "/d/new", false);	 /* a file: no change */
	cache_forget(c, "ns", "/d/gone", false); /* not listed: no change */
	CHECK_INT(cache_get(c, "ns", "/d", &a, NULL, 0), 0);
	CHECK_INT((int)a.st.st_nlink, 5);
	cache_forget(c, "ns", "/d/w", true);
	CHECK_INT(cache_get(c, "ns", "/d", &a, NULL, 0), 0);
	CHECK_INT((int)a.st.st_nlink, 4);
	cache_free(c);
}

/* A PUT below a directory proves its attributes as of now, unless ctrfs
 * moved its mtime since it was last asked (a mkdir in it): then they stay
 * to be asked (rsync -a saw the time it had set before its mkdir). */
static void test_proven_not_after_own_change(void)
{
	struct cache *c = cache_new(100);
	struct cache_attr a;

	put_dir(c, "ns", "/d", 700); /* validated at 17.5 */
	cache_proven(c, "ns", "/d", 30.0);
	CHECK_INT(cache_get(c, "ns", "/d", &a, NULL, 0), 0);
	CHECK(a.validated == 30.0);
	cache_dir_changed(c, "ns", "/d", 800, 802, 31.0);
	cache_proven(c, "ns", "/d", 32.0);
	CHECK_INT(cache_get(c, "ns", "/d", &a, NULL, 0), 0);
	CHECK(a.validated == 0);
	cache_free(c);
}

/* A HEAD asked before ctrfs's own change of a directory was over but
 * answered after it (a stat racing a rename in it) may carry the mtime
 * from before: neither stored nor confirmed as validated, so the next
 * stat asks again (rsync -a skipped its last time fix on the old mtime). */
static void test_answer_asked_before_own_change_is_not_kept(void)
{
	struct cache *c = cache_new(100);
	struct cache_attr a = attr_of(S_IFDIR | 0755, 700, 4096, 0);
	struct cache_attr got;

	cache_put(c, "ns", "/d", &a, NULL);
	cache_dir_changed(c, "ns", "/d", 800, 802, 31.0);
	a.validated = 30.5; /* asked at 30.5, answered after 31.0 */
	cache_put(c, "ns", "/d", &a, NULL);
	CHECK_INT(cache_get(c, "ns", "/d", &got, NULL, 0), 0);
	CHECK(got.validated == 0);
	cache_confirm(c, "ns", "/d", &a.st, 30.5);
	CHECK_INT(cache_get(c, "ns", "/d", &got, NULL, 0), 0);
	CHECK(got.validated == 0);
	a.validated = 31.5; /* asked after it */
	cache_put(c, "ns", "/d", &a, NULL);
	CHECK_INT(cache_get(c, "ns", "/d", &got, NULL, 0), 0);
	CHECK(got.validated == 31.5);
	cache_free(c);
}

int main(void)
{
	setlocale(LC_CTYPE, "C.UTF-8");

	test_empty();
	test_put_get_round_trip();
	test_get_other_key();
	test_put_replaces();
	test_symlink_target();
	test_symlink_target_small_buffer();
	test_put_flag_link_without_target();
	test_merge_keeps_owner();
	test_merge_owner_dropped_on_type_change();
	test_merge_new_owner_wins();
	test_merge_keeps_link_same_mtime();
	test_merge_drops_link_new_mtime();
	test_merge_drops_link_type_change();
	test_merge_new_link_wins();
	test_listing();
	test_listing_sees_child_updates();
	test_listing_names_copied();
	test_listing_root();
	test_listing_empty_dir();
	test_listing_absent();
	test_set_listing_needs_cached_dir();
	test_listing_stale_child();
	test_listing_survives_put_old_mtime();
	test_listing_dropped_put_recent_mtime();
	test_listing_dropped_put_new_mtime();
	test_listing_dropped_put_other_type();
	test_listing_kept_by_own_attr_change();
	test_proven_not_after_own_change();
	test_listing_confirmed_again();
	test_remove();
	test_remove_child_drops_parent_listing();
	test_remove_uncached_child_drops_parent_listing();
	test_remove_root_child_drops_root_listing();
	test_remove_dir_takes_what_is_below();
	test_remove_keeps_other_listings();
	test_drop_ns();
	test_touch();
	test_bounded();
	test_first_put_not_full();
	test_threads();
	test_data_same_second_from_a_tar();
	test_subtree();
	test_subtree_root();
	test_confirm();
	test_podman_rounded_second();
	test_rounding_per_cache();
	test_listing_own_window_listed_again_once();
	test_inode_numbers();
	test_hard_link_names();
	test_dir_nlink();
	test_ctime_of_a_change_seen();
	test_ctime_of_linked_names_never_back();
	test_answer_asked_before_own_change_is_not_kept();
	return check_report();
}
