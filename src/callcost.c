// SPDX-License-Identifier: GPL-2.0-or-later
#include "callcost.h"

void callcost_init(struct callcost *c, double head, double get, double exec)
{
	c->est[CALL_HEAD] = head;
	c->est[CALL_GET] = get;
	c->est[CALL_EXEC] = exec;
	for (int k = 0; k < CALL_KINDS; k++)
		c->n[k] = 0;
}

void callcost_note(struct callcost *c, enum call_kind k, double secs)
{
	double est = c->est[k];

	if (secs < 0)
		return;
	if (c->n[k] > 0 && secs > 4 * est)
		secs = 4 * est;
	if (c->n[k] < CALLCOST_WEIGHT)
		c->n[k]++;
	/* the first measure replaces the start value */
	c->est[k] = est + (secs - est) / c->n[k];
}

double callcost_get(const struct callcost *c, enum call_kind k)
{
	return c->est[k];
}

bool callcost_get_pays(const struct callcost *c, size_t stale, off_t bytes)
{
	double get = c->est[CALL_GET] + (double)bytes / CALLCOST_LOAD_RATE;

	return (double)stale * c->est[CALL_HEAD] > get;
}

off_t callcost_list_cap(const struct callcost *c)
{
	return (off_t)(c->est[CALL_EXEC] * CALLCOST_STREAM_RATE);
}
