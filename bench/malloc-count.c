/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * malloc-count: an LD_PRELOAD library that counts calls to malloc, calloc,
 * realloc (and the aligned allocators) with atomics, for bench/suite.
 *
 *   gcc -O2 -shared -fPIC -o malloc-count.so malloc-count.c -ldl
 *   MALLOC_COUNT_OUT=/tmp/mc LD_PRELOAD=./malloc-count.so prog ...
 *
 * On SIGUSR2 and at exit the counts are written to $MALLOC_COUNT_OUT.<pid>
 * (the pid keeps a wrapper such as /usr/bin/time from overwriting the file
 * of the process it runs) as "name value" lines; "dumps" counts the dumps,
 * so a reader can tell that a new one has arrived.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static atomic_ulong n_malloc, n_calloc, n_realloc, n_aligned, n_free, n_dumps;

static void *(*real_malloc)(size_t);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static void (*real_free)(void *);
static int (*real_posix_memalign)(void **, size_t, size_t);
static void *(*real_aligned_alloc)(size_t, size_t);
static void *(*real_memalign)(size_t, size_t);

/* dlsym() may allocate before the real functions are known. */
static _Alignas(16) char boot[1 << 16];
static atomic_size_t boot_used;
static int resolving;

static int in_boot(const void *p)
{
	return (const char *)p >= boot && (const char *)p < boot + sizeof(boot);
}

static void *boot_alloc(size_t n)
{
	size_t off = atomic_fetch_add(&boot_used, (n + 15) & ~(size_t)15);

	if (off + n > sizeof(boot))
		return NULL;
	return boot + off; /* static storage: already zero */
}

static char out_path[4096];

static void put_line(int fd, const char *name, unsigned long v)
{
	char buf[64];
	char num[24];
	size_t len = strlen(name), i = 0, k;

	memcpy(buf, name, len);
	buf[len++] = ' ';
	do {
		num[i++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (k = 0; k < i; k++)
		buf[len++] = num[i - 1 - k];
	buf[len++] = '\n';
	(void)!write(fd, buf, len);
}

/* Async-signal-safe: open, write, rename, close and atomics only. */
static void dump(void)
{
	char tmp[sizeof(out_path) + 8];
	size_t n = strlen(out_path);
	int fd;

	if (!n)
		return;
	memcpy(tmp, out_path, n);
	memcpy(tmp + n, ".tmp", 5);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	put_line(fd, "malloc", atomic_load(&n_malloc));
	put_line(fd, "calloc", atomic_load(&n_calloc));
	put_line(fd, "realloc", atomic_load(&n_realloc));
	put_line(fd, "aligned", atomic_load(&n_aligned));
	put_line(fd, "free", atomic_load(&n_free));
	put_line(fd, "dumps", atomic_fetch_add(&n_dumps, 1) + 1);
	close(fd);
	rename(tmp, out_path);
}

static void on_usr2(int sig)
{
	int saved = errno;
	(void)sig;
	dump();
	errno = saved;
}

static void find_real_allocators(void)
{
	resolving = 1;
	real_malloc = dlsym(RTLD_NEXT, "malloc");
	real_calloc = dlsym(RTLD_NEXT, "calloc");
	real_realloc = dlsym(RTLD_NEXT, "realloc");
	real_free = dlsym(RTLD_NEXT, "free");
	real_posix_memalign = dlsym(RTLD_NEXT, "posix_memalign");
	real_aligned_alloc = dlsym(RTLD_NEXT, "aligned_alloc");
	real_memalign = dlsym(RTLD_NEXT, "memalign");
	resolving = 0;
}

__attribute__((constructor)) static void init(void)
{
	const char *p = getenv("MALLOC_COUNT_OUT");
	struct sigaction sa;
	char pid[24];
	size_t n, i = 0, k;
	pid_t v = getpid();

	if (!real_malloc)
		find_real_allocators();
	if (p && (n = strlen(p)) + 24 < sizeof(out_path)) {
		memcpy(out_path, p, n);
		out_path[n++] = '.';
		do {
			pid[i++] = (char)('0' + v % 10);
			v /= 10;
		} while (v);
		for (k = 0; k < i; k++)
			out_path[n++] = pid[i - 1 - k];
		out_path[n] = '\0';
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr2;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR2, &sa, NULL);
}

__attribute__((destructor)) static void fini(void)
{
	dump();
}

void *malloc(size_t n)
{
	if (!real_malloc) {
		if (resolving)
			return boot_alloc(n);
		find_real_allocators();
	}
	atomic_fetch_add_explicit(&n_malloc, 1, memory_order_relaxed);
	return real_malloc(n);
}

void *calloc(size_t n, size_t m)
{
	if (!real_calloc) {
		if (resolving)
			return boot_alloc(n * m);
		find_real_allocators();
	}
	atomic_fetch_add_explicit(&n_calloc, 1, memory_order_relaxed);
	return real_calloc(n, m);
}

void *realloc(void *p, size_t n)
{
	if (!real_realloc)
		find_real_allocators();
	atomic_fetch_add_explicit(&n_realloc, 1, memory_order_relaxed);
	if (in_boot(p)) {
		void *q = real_malloc(n);
		size_t room = (size_t)(boot + sizeof(boot) - (char *)p);
		if (q)
			memcpy(q, p, n < room ? n : room);
		return q;
	}
	return real_realloc(p, n);
}

void free(void *p)
{
	if (!p || in_boot(p))
		return;
	if (!real_free)
		find_real_allocators();
	atomic_fetch_add_explicit(&n_free, 1, memory_order_relaxed);
	real_free(p);
}

int posix_memalign(void **out, size_t align, size_t n)
{
	if (!real_posix_memalign)
		find_real_allocators();
	atomic_fetch_add_explicit(&n_aligned, 1, memory_order_relaxed);
	return real_posix_memalign(out, align, n);
}

void *aligned_alloc(size_t align, size_t n)
{
	if (!real_aligned_alloc)
		find_real_allocators();
	atomic_fetch_add_explicit(&n_aligned, 1, memory_order_relaxed);
	return real_aligned_alloc(align, n);
}

void *memalign(size_t align, size_t n)
{
	if (!real_memalign)
		find_real_allocators();
	atomic_fetch_add_explicit(&n_aligned, 1, memory_order_relaxed);
	return real_memalign(align, n);
}
