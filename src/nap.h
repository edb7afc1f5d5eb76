/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * How long a reader that found no new bytes of a GET's body sleeps before
 * it polls the socket. A GET whose engine sends slower than its reader
 * takes would otherwise wake the reader at each of the engine's writes
 * (about 32 KiB), and the engine does the waking: on two CPUs each
 * wake-up is time taken from it. So past the first NAP_AFTER bytes the
 * reader sleeps as long as the engine takes to send NAP_BATCH at the rate
 * seen so far, at most NAP_MAX, and then takes what came at once. A faster
 * engine leaves data waiting at each read and causes no nap; a slow one
 * costs at most NAP_MAX per wait.
 */
#ifndef CTRFS_NAP_H
#define CTRFS_NAP_H

#define NAP_AFTER (1LL << 20) /* body bytes before the rate is trusted */
#define NAP_BATCH (64 * 1024)
#define NAP_MAX	  500e-6 /* seconds */

/* Seconds to sleep after body bytes came in took seconds; 0: poll now. */
double nap_seconds(long long body, double took);

#endif
