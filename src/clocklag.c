// SPDX-License-Identifier: GPL-2.0-or-later
/* The engine's clock lag, see clocklag.h. */
#include "clocklag.h"

long clocklag_get(const struct clocklag *c)
{
	if (c->seen[0] && c->seen[1])
		return c->min[0] < c->min[1] ? c->min[0] : c->min[1];
	return c->seen[0] ? c->min[0] : c->seen[1] ? c->min[1] : 0;
}

long clocklag_add(struct clocklag *c, double t, long d)
{
	if (t - c->since >= CLOCKLAG_WINDOW) {
		/* a new window; the last one stays only if it just ended */
		c->min[1] = c->min[0];
		c->seen[1] = c->seen[0] && t - c->since < 2 * CLOCKLAG_WINDOW;
		c->seen[0] = false;
		c->since = t;
	}
	if (!c->seen[0] || d < c->min[0]) {
		c->min[0] = d;
		c->seen[0] = true;
	}
	return clocklag_get(c);
}
