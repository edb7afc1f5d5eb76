// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The only program in the shell-less test image ctrfs-test/static: it sleeps
 * until SIGTERM or SIGINT, then exits 0, so that stopping the container is
 * quick and clean even though it runs as PID 1.
 */
#include <signal.h>
#include <stddef.h>

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

int main(void)
{
	struct sigaction sa = {.sa_handler = on_signal};
	sigset_t block, old;

	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	/* Block the signals between the check and the wait, so none is lost. */
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigprocmask(SIG_BLOCK, &block, &old);
	while (!stop)
		sigsuspend(&old);
	return 0;
}
