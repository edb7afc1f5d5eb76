// SPDX-License-Identifier: GPL-2.0-or-later
/* The wait between the reads of a long GET body, see nap.h. */
#include "nap.h"

double nap_seconds(long long body, double took)
{
	double t;

	if (body < NAP_AFTER || took <= 0)
		return 0;
	t = NAP_BATCH * took / (double)body;
	return t < NAP_MAX ? t : NAP_MAX;
}
