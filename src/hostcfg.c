// SPDX-License-Identifier: GPL-2.0-or-later
#include "hostcfg.h"

#include <dirent.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The docker CLI's config directory ($DOCKER_CONFIG, else ~/.docker) and
 * below it ("" or "/NAME..."), into out (len bytes, cut if longer). */
static void config_path(char *out, size_t len, const char *below)
{
	const char *d = getenv("DOCKER_CONFIG");
	const char *home = getenv("HOME");

	if (d && *d)
		snprintf(out, len, "%s%s", d, below);
	else
		snprintf(out, len, "%s/.docker%s",
			 home && *home ? home : "/root", below);
}

/* TLS files of a directory holding ca.pem, cert.pem and key.pem. */
static void tls_files(struct hostcfg *hc, const char *dir)
{
	snprintf(hc->ca, sizeof(hc->ca), "%s/ca.pem", dir);
	snprintf(hc->cert, sizeof(hc->cert), "%s/cert.pem", dir);
	snprintf(hc->key, sizeof(hc->key), "%s/key.pem", dir);
	if (access(hc->ca, R_OK) != 0)
		hc->ca[0] = '\0';
	if (access(hc->cert, R_OK) != 0 || access(hc->key, R_OK) != 0)
		hc->cert[0] = hc->key[0] = '\0';
}

/* A context's TLS directory that exists but holds neither a CA nor a
 * client certificate with its key, or one of those two alone. */
static bool tls_incomplete(const char *dir)
{
	char f[PATH_MAX * 2 + 16];
	bool ca, cert, key;

	snprintf(f, sizeof(f), "%s/ca.pem", dir);
	ca = access(f, R_OK) == 0;
	snprintf(f, sizeof(f), "%s/cert.pem", dir);
	cert = access(f, R_OK) == 0;
	snprintf(f, sizeof(f), "%s/key.pem", dir);
	key = access(f, R_OK) == 0;
	return cert != key || (!ca && !cert);
}

static void from_env(struct hostcfg *hc, const char *host)
{
	const char *verify = getenv("DOCKER_TLS_VERIFY");
	const char *certs = getenv("DOCKER_CERT_PATH");
	char dir[PATH_MAX];

	snprintf(hc->url, sizeof(hc->url), "%s", host);
	if (verify && *verify && strcmp(verify, "0") != 0) {
		hc->tls = true;
		hc->tls_verify = true;
		if (certs && *certs)
			snprintf(dir, sizeof(dir), "%s", certs);
		else
			config_path(dir, sizeof(dir), "");
		tls_files(hc, dir);
	}
}

/* The name of the context to use: DOCKER_CONTEXT, else currentContext. */
static int context_name(char *out, size_t len)
{
	const char *env = getenv("DOCKER_CONTEXT");
	struct json_object *root, *cur;
	char path[PATH_MAX + 16];
	int ret = -ENOENT;

	if (env && *env) {
		snprintf(out, len, "%s", env);
		return 0;
	}
	config_path(path, sizeof(path), "/config.json");
	root = json_object_from_file(path);
	if (root && json_object_object_get_ex(root, "currentContext", &cur) &&
	    json_object_is_type(cur, json_type_string) &&
	    *json_object_get_string(cur)) {
		snprintf(out, len, "%s", json_object_get_string(cur));
		ret = 0;
	}
	json_object_put(root);
	return ret;
}

/* The docker CLI's contexts, one meta.json each in a directory named by a
 * digest of the context's Name: that directory opened (its path into dir,
 * PATH_MAX bytes), or NULL when there is none. */
static DIR *contexts_open(char *dir)
{
	config_path(dir, PATH_MAX, "/contexts/meta");
	return opendir(dir);
}

/* The next context of d: its meta.json parsed (the caller puts it), its
 * Name in *name and its directory in *de; NULL at the end. A damaged
 * file (no Name, or not a string) is skipped like one of another name. */
static struct json_object *contexts_next(DIR *d, const char *dir,
					 const char **name, struct dirent **de)
{
	char meta[PATH_MAX * 2];

	while (d && (*de = readdir(d))) {
		struct json_object *root, *v;

		if ((*de)->d_name[0] == '.')
			continue;
		snprintf(meta, sizeof(meta), "%s/%s/meta.json", dir,
			 (*de)->d_name);
		root = json_object_from_file(meta);
		if (root && json_object_object_get_ex(root, "Name", &v) &&
		    json_object_is_type(v, json_type_string)) {
			*name = json_object_get_string(v);
			return root;
		}
		json_object_put(root);
	}
	return NULL;
}

/* Finds the context's meta.json by its Name and takes its docker
 * endpoint. */
static int from_context(struct hostcfg *hc, const char *name, char *msg,
			size_t msglen)
{
	char dir[PATH_MAX], tls[PATH_MAX * 2];
	struct json_object *root;
	struct dirent *de;
	const char *found;
	DIR *d = contexts_open(dir);
	int ret = -ENOENT;

	while ((root = contexts_next(d, dir, &found, &de))) {
		struct json_object *ep, *host, *skip;

		/* a damaged endpoint is skipped like another name */
		if (strcmp(found, name) != 0 ||
		    !json_object_object_get_ex(root, "Endpoints", &ep) ||
		    !json_object_object_get_ex(ep, "docker", &ep) ||
		    !json_object_object_get_ex(ep, "Host", &host) ||
		    !json_object_is_type(host, json_type_string)) {
			json_object_put(root);
			continue;
		}
		snprintf(hc->url, sizeof(hc->url), "%s",
			 json_object_get_string(host));
		snprintf(tls, sizeof(tls), "%.*s/tls/%s/docker",
			 (int)(strlen(dir) - strlen("/meta")), dir, de->d_name);
		if (access(tls, F_OK) == 0 && tls_incomplete(tls)) {
			snprintf(msg, msglen,
				 "docker context '%s': TLS files missing in %s "
				 "(ca.pem, or cert.pem with key.pem)",
				 name, tls);
			json_object_put(root);
			ret = -ENOENT;
			goto out;
		}
		if (access(tls, R_OK) == 0) {
			hc->tls = true;
			hc->tls_verify = !(json_object_object_get_ex(
					       ep, "SkipTLSVerify", &skip) &&
					   json_object_get_boolean(skip));
			tls_files(hc, tls);
		}
		snprintf(hc->origin, sizeof(hc->origin), "context %s", name);
		json_object_put(root);
		ret = 0;
		break;
	}
	if (ret < 0)
		snprintf(msg, msglen, "no docker context named '%s' in %s",
			 name, dir);
out:
	if (d)
		closedir(d);
	return ret;
}

int hostcfg_context(const char *name, struct hostcfg *hc, char *msg,
		    size_t msglen)
{
	const char *env = getenv("DOCKER_HOST");

	memset(hc, 0, sizeof(*hc));
	msg[0] = '\0';
	/* the CLI's own: DOCKER_HOST, else the default socket */
	if (strcmp(name, "default") == 0) {
		from_env(hc, env && *env ? env : HOSTCFG_DEFAULT);
		snprintf(hc->origin, sizeof(hc->origin), "context default");
		return 0;
	}
	return from_context(hc, name, msg, msglen);
}

int hostcfg_contexts(char **names, size_t *count)
{
	char dir[PATH_MAX];
	size_t bytes = 0, n = 0;
	struct json_object *root;
	struct dirent *de;
	const char *name;
	char *buf = NULL;
	DIR *d = contexts_open(dir);

	while ((root = contexts_next(d, dir, &name, &de))) {
		char *nb = realloc(buf, bytes + strlen(name) + 1);

		if (nb) {
			buf = nb;
			memcpy(buf + bytes, name, strlen(name) + 1);
			bytes += strlen(name) + 1;
			n++;
		}
		json_object_put(root);
	}
	if (d)
		closedir(d);
	*names = buf;
	*count = n;
	return 0;
}

int hostcfg_resolve(const char *option_host, struct hostcfg *hc, char *msg,
		    size_t msglen)
{
	const char *env = getenv("DOCKER_HOST");
	char name[256];

	memset(hc, 0, sizeof(*hc));
	msg[0] = '\0';
	if (option_host && *option_host) {
		from_env(hc, option_host);
		snprintf(hc->origin, sizeof(hc->origin), "-o host");
		return 0;
	}
	if (env && *env) {
		from_env(hc, env);
		snprintf(hc->origin, sizeof(hc->origin), "DOCKER_HOST");
		return 0;
	}
	if (context_name(name, sizeof(name)) == 0 &&
	    strcmp(name, "default") != 0)
		return from_context(hc, name, msg, msglen);
	snprintf(hc->url, sizeof(hc->url), "%s", HOSTCFG_DEFAULT);
	snprintf(hc->origin, sizeof(hc->origin), "default");
	return 0;
}
