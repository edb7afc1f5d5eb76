// SPDX-License-Identifier: GPL-2.0-or-later
#include "hostlist.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int hostlist_url_name(const char *url, char *name, size_t len)
{
	const char *p, *end;
	size_t l;

	if (strncmp(url, "unix://", 7) == 0) {
		p = strrchr(url + 7, '/');
		p = p ? p + 1 : url + 7;
		l = strlen(p);
		if (l > 5 && strcmp(p + l - 5, ".sock") == 0)
			l -= 5;
	} else {
		p = strstr(url, "://");
		p = p ? p + 3 : url;
		end = strchr(p, '/');
		l = end ? (size_t)(end - p) : strlen(p);
	}
	if (l == 0 || l >= len || p[0] == '.')
		return -EINVAL;
	memcpy(name, p, l);
	name[l] = '\0';
	/* host:port, [v6]:port */
	for (char *q = name; *q; q++)
		if (*q == ':')
			*q = '-';
	if (name[0] == '[') {
		char *close = strchr(name, ']');

		memmove(name, name + 1, strlen(name));
		if (close)
			memmove(close - 1, close, strlen(close) + 1);
	}
	return name[0] && name[0] != '.' && !strchr(name, '/') ? 0 : -EINVAL;
}

/* Appends one engine to the list; -ENOMEM. */
static int add(struct hostlist_engine **list, size_t *n, const char *name,
	       const struct hostcfg *hc)
{
	struct hostlist_engine *nl = realloc(*list, (*n + 1) * sizeof(**list));

	if (!nl)
		return -ENOMEM;
	*list = nl;
	snprintf(nl[*n].name, sizeof(nl[*n].name), "%s", name);
	nl[*n].hc = *hc;
	(*n)++;
	return 0;
}

/* The contexts named by spec, added; the number of problems said. */
static int add_contexts(const char *spec, struct hostlist_engine **list,
			size_t *n)
{
	char *names = NULL, *p, *tok, *save = NULL, msg[PATH_MAX + 256];
	struct hostcfg hc;
	size_t count = 0;
	int bad = 0;

	if (strcmp(spec, "all") == 0) {
		hostcfg_contexts(&names, &count);
		if (count == 0) {
			fprintf(stderr,
				"ctrfs: engines=all: no docker "
				"contexts in the docker CLI's config\n");
			return 1;
		}
		p = names;
		for (size_t i = 0; i < count; i++, p += strlen(p) + 1) {
			if (hostcfg_context(p, &hc, msg, sizeof(msg)) < 0) {
				fprintf(stderr, "ctrfs: %s\n", msg);
				bad++;
			} else if (add(list, n, p, &hc) < 0) {
				bad++;
			}
		}
		free(names);
		return bad;
	}
	names = strdup(spec);
	if (!names)
		return 1;
	for (tok = strtok_r(names, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (tok[0] == '.' || strchr(tok, '/')) {
			fprintf(stderr,
				"ctrfs: engines: '%s' cannot name a "
				"directory\n",
				tok);
			bad++;
		} else if (hostcfg_context(tok, &hc, msg, sizeof(msg)) < 0) {
			fprintf(stderr, "ctrfs: %s\n", msg);
			bad++;
		} else if (add(list, n, tok, &hc) < 0) {
			bad++;
		}
	}
	free(names);
	return bad;
}

int hostlist_build(const char *engines, char *const *hosts, size_t nhosts,
		   struct hostlist_engine **out, size_t *n)
{
	struct hostlist_engine *list = NULL;
	size_t count = 0;
	int bad = 0;

	if (engines)
		bad += add_contexts(engines, &list, &count);
	for (size_t i = 0; i < nhosts; i++) {
		struct hostcfg hc;
		char name[256], msg[16];

		if (hostlist_url_name(hosts[i], name, sizeof(name)) < 0) {
			fprintf(stderr,
				"ctrfs: host=%s: no directory name comes "
				"from this URL\n",
				hosts[i]);
			bad++;
			continue;
		}
		/* DOCKER_TLS_VERIFY and DOCKER_CERT_PATH, as for one */
		hostcfg_resolve(hosts[i], &hc, msg, sizeof(msg));
		if (add(&list, &count, name, &hc) < 0)
			bad++;
	}
	if (count == 0 && !bad) {
		fprintf(stderr, "ctrfs: engines: no engine named\n");
		bad++;
	}
	for (size_t i = 0; i < count; i++)
		for (size_t j = 0; j < i; j++)
			if (strcmp(list[i].name, list[j].name) == 0) {
				fprintf(stderr,
					"ctrfs: two engines named '%s': %s "
					"and %s (name them with docker "
					"contexts)\n",
					list[i].name, list[j].hc.url,
					list[i].hc.url);
				bad++;
				break;
			}
	if (bad) {
		free(list);
		return -EINVAL;
	}
	*out = list;
	*n = count;
	return 0;
}
