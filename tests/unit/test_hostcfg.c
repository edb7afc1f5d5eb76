// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * hostcfg: which engine to talk to, from -o host, DOCKER_HOST (and its TLS
 * variables), DOCKER_CONTEXT or config.json's currentContext, else the
 * default socket. Every test starts from an empty temporary config
 * directory (DOCKER_CONFIG and HOME) and no DOCKER_* variables.
 */
#include "hostcfg.h"
#include "hostlist.h"

#include <errno.h>
#include <stdbool.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"

/* The temporary config directory, made by mkdtemp() in main(). */
static char root[] = "/tmp/test_hostcfg.XXXXXX";

/* The meta/tls directory of a context: a digest of its name for the CLI,
 * any name for hostcfg, which finds the context by meta.json's Name. */
#define REMOTE_DIR "0123456789abcdef"
#define OTHER_DIR  "fedcba9876543210"

static int remove_entry(const char *path, const struct stat *st, int flag,
			struct FTW *ftw)
{
	if (ftw->level == 0)
		return 0; /* keep root itself */
	if (remove(path) != 0)
		perror(path);
	return 0;
}

/* Empties root, keeping the directory. */
static void clear_root(void)
{
	nftw(root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* mkdir -p of root/rel. */
static void make_dirs(const char *rel)
{
	char path[PATH_MAX];
	char *p;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (p = path + strlen(root) + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0700) != 0 && errno != EEXIST)
			perror(path);
		*p = '/';
	}
	if (mkdir(path, 0700) != 0 && errno != EEXIST)
		perror(path);
}

/* Writes root/rel, making its parent directories. */
static void write_file(const char *rel, const char *text)
{
	char path[PATH_MAX], parent[PATH_MAX];
	char *slash;
	FILE *f;

	snprintf(parent, sizeof(parent), "%s", rel);
	slash = strrchr(parent, '/');
	if (slash) {
		*slash = '\0';
		make_dirs(parent);
	}
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "w");
	if (!f) {
		perror(path);
		return;
	}
	fputs(text, f);
	fclose(f);
}

/* Writes ca.pem, cert.pem and key.pem into root/rel. */
static void write_tls_files(const char *rel)
{
	static const char *const names[] = {"ca.pem", "cert.pem", "key.pem"};
	char path[PATH_MAX];
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", rel, names[i]);
		write_file(path, "-----BEGIN PEM-----\n");
	}
}

/* Checks hc's three TLS paths are root/rel/{ca,cert,key}.pem. */
static void check_tls_paths(const struct hostcfg *hc, const char *rel)
{
	char want[PATH_MAX];

	snprintf(want, sizeof(want), "%s/%s/ca.pem", root, rel);
	CHECK_STR(hc->ca, want);
	snprintf(want, sizeof(want), "%s/%s/cert.pem", root, rel);
	CHECK_STR(hc->cert, want);
	snprintf(want, sizeof(want), "%s/%s/key.pem", root, rel);
	CHECK_STR(hc->key, want);
}

static void check_no_tls(const struct hostcfg *hc)
{
	CHECK(!hc->tls);
	CHECK(!hc->tls_verify);
	CHECK_STR(hc->ca, "");
	CHECK_STR(hc->cert, "");
	CHECK_STR(hc->key, "");
}

/* A context's meta.json, as `docker context create` writes it. */
static void write_context(const char *dir, const char *name, const char *host,
			  const char *skip_verify)
{
	char rel[PATH_MAX], text[1024];

	snprintf(rel, sizeof(rel), "contexts/meta/%s/meta.json", dir);
	snprintf(text, sizeof(text),
		 "{\"Name\":\"%s\",\"Metadata\":{},"
		 "\"Endpoints\":{\"docker\":{\"Host\":\"%s\","
		 "\"SkipTLSVerify\":%s}}}",
		 name, host, skip_verify);
	write_file(rel, text);
}

/* "remote" at tcp://10.0.0.1:2376, and "other" beside it to be skipped. */
static void write_contexts(const char *remote_skip_verify)
{
	write_context(OTHER_DIR, "other", "tcp://10.9.9.9:2376", "false");
	write_context(REMOTE_DIR, "remote", "tcp://10.0.0.1:2376",
		      remote_skip_verify);
}

/* A fresh start: an empty config directory and no DOCKER_* variables. */
static void reset(void)
{
	clear_root();
	unsetenv("DOCKER_HOST");
	unsetenv("DOCKER_TLS_VERIFY");
	unsetenv("DOCKER_CERT_PATH");
	unsetenv("DOCKER_CONTEXT");
	setenv("DOCKER_CONFIG", root, 1);
	setenv("HOME", root, 1);
}

/* Resolves with msg pre-filled, so a test sees whether it was cleared. */
static int resolve(const char *option_host, struct hostcfg *hc, char *msg,
		   size_t msglen)
{
	snprintf(msg, msglen, "stale");
	memset(hc, 'X', sizeof(*hc));
	return hostcfg_resolve(option_host, hc, msg, msglen);
}

static void test_option_host_wins(void)
{
	struct hostcfg hc;
	char msg[256];

	reset();
	setenv("DOCKER_HOST", "tcp://from-env:2375", 1);
	CHECK_INT(resolve("tcp://from-option:2375", &hc, msg, sizeof(msg)), 0);
	CHECK_STR(hc.url, "tcp://from-option:2375");
	CHECK_STR(hc.origin, "-o host");
	CHECK_STR(msg, "");
	check_no_tls(&hc);
}

static void test_docker_host(void)
{
	struct hostcfg hc;
	char msg[256];

	reset();
	setenv("DOCKER_HOST", "tcp://10.1.2.3:2375", 1);
	CHECK_INT(resolve(NULL, &hc, msg, sizeof(msg)), 0);
	CHECK_STR(hc.url, "tcp://10.1.2.3:2375");
	CHECK_STR(hc.origin, "DOCKER_HOST");
	CHECK_STR(msg, "");
	check_no_tls(&hc);
}

static void test_docker_host_tls_verify(void)
{
	struct hostcfg hc;
	char msg[256], certs[PATH_MAX];

	reset();
	write_tls_files("certs");
	snprintf(certs, sizeof(certs), "%s/certs", root);
	setenv("DOCKER_HOST", "tcp://10.1.2.3:2376", 1);
	setenv("DOCKER_TLS_VERIFY", "1", 1);
	setenv("DOCKER_CERT_PATH", certs, 1);
	CHECK_INT(resolve(NULL, &hc, msg, sizeof(msg)), 0);
	CHECK_STR(hc.url, "tcp://10.1.2.3:2376");
	CHECK_STR(hc.origin, "DOCKER_HOST");
	CHECK(hc.tls);
	CHECK(hc.tls_verify);
	check_tls_paths(&hc, "certs");
}

/* Without DOCKER_CERT_PATH the files are looked for in the config dir. */
static void test_docker_host_tls_verify_config_dir(void)
{
	struct hostcfg hc;
	char msg[256], want[PATH_MAX];

	reset();
	write_file("ca.pem", "-----BEGIN PEM-----\n");
	write_file("cert.pem", "-----BEGIN PEM-----\n");
	write_file("key.pem", "-----BEGIN PEM-----\n");
	setenv("DOCKER_HOST", "tcp://10.1.2.3:2376", 1);
	setenv("DOCKER_TLS_VERIFY", "1", 1);
	CHECK_INT(resolve(NULL, &hc, msg, sizeof(msg)), 0);
	CHECK(hc.tls);
	CHECK(hc.tls_verify);
	snprintf(want, sizeof(want), "%s/ca.pem", root);
	CHECK_STR(hc.ca, want);
	snprintf(want, sizeof(want), "%s/cert.pem", root);
	CHECK_STR(hc.cert, want);
	snprintf(want, sizeof(want), "%s/key.pem", root);
	CHECK_STR(hc.key, want);
}

static void test_docker_host_tls_verify_zero(void)
{
	struct hostcfg hc;
	char msg[256], certs[PATH_MAX];

	reset();
	write_tls_files("certs");
	snprintf(certs, sizeof(certs), "%s/certs", root);
	setenv("DOCKER_HOST", "tcp://10.1.2.3:2375", 1);
	setenv("DOCKER_TLS_VERIFY", "0", 1);
	setenv("DOCKER_CERT_PATH", certs, 1);
	CHECK_INT(resolve(NULL, &hc, msg, sizeof(msg)), 0);
	CHECK_STR(hc.url, "tcp://10.1.2.3:2375");
	check_no_tls(&hc);
}

static void test_docker_host_tls_verify_no_files(void)
{
	struct hostcfg hc;
	char msg[256], certs[PATH_MAX];

	reset();
	make_dirs("certs");
	snprintf(certs, sizeof(certs), "%s/certs", root);
	setenv("DOCKER_HOST", "tcp://10.1.2.3:2376", 1);
	setenv("DOCKER_TLS_VERIFY", "1", 1);
	setenv("DOCKER_CERT_PATH", certs, 1);
	CHECK_INT(resolve(NULL, &hc, msg, sizeof(msg)), 0);
	CHECK(hc.tls);
	CHECK(hc.tls_verify);
	CHECK_STR(hc.ca, "");
	CHECK_STR(hc.cert, "");
	CHECK_STR(hc.key, "");
}

static void test_default(void)
{
	struct hostcfg hc;
	char msg[256];

	reset();
	CHECK_INT(resolve(NULL, &hc, msg, sizeof(msg)), 0);
	CHECK_STR(hc.url, HOSTCFG_DEFAULT);
	CHECK_STR(hc.origin, "default");
	CHECK_STR(msg, "");
	check_no_tls(&hc);
}

/* An empty -o host and empty DOCKER_HOST count as not given. */
static void test_empty_host_is_unset(void)
{
	struct hostcfg hc;
	char msg[256];

	reset();
	setenv("DOCKER_HOST", "", 1);
	CHECK_INT(resolve("", &hc, msg, sizeof(msg)), 0);
	CHECK_STR(hc.url, HOSTCFG_DEFAULT);
	CHECK_STR(hc.origin, "default");
}

static void test_current_context(void)
{
	struct hostcfg hc;
	char msg[256];

	reset();
	write_file("config.json", "{\"currentContext\":\"remote\"}");
	write_contexts("false");
	CHECK_INT(resolve(NULL, &hc, msg, sizeof(msg)), 0);
	CHECK_STR(hc.url, "tcp://10.0.0.1:2376");
	CHECK_STR(hc.origin, "context remote");
	CHECK_STR(msg, "");
	check_no_tls(&hc);
}

static void test_current_context_tls(void)
{
	struct hostcfg hc;
	char msg[256];

	reset();
	write_file("config.json", "{\"currentContext\":\"remote\"}");
	write_contexts("false");
	write_tls_files("contexts/tls/" REMOTE_DIR "/docker");
	CHECK_INT(resolve(NULL, &hc, msg, sizeof(msg)), 0);
	CHECK_STR(hc.url, "tcp://10.0.0.1:2376");
	CHECK_STR(hc.origin, "context remote");
	CHECK(hc.tls);
	CHECK(hc.tls_verify);
	check_tls_paths(&hc, "contexts/tls/" REMOTE_DIR "/docker");
}

static void test_current_context_skip_verify(void)
{
	struct hostcfg hc;
	char msg[256];

	reset();
	write_file("config.json", "{\"currentContext\":\"remote\"}");
	write_contexts("true");
	write_tls_files("contexts/tls/" REMOTE_DIR "/docker");
	CHECK_INT(resolve(NULL, &hc, msg, sizeof(msg)), 0);
	CHECK_STR(hc.url, "tcp://10.0.0.1:2376");
	CHECK(hc.tls);
	CHECK(!hc.tls_verify);
	check_tls_paths(&hc, "contexts/tls/" REMOTE_DIR "/docker");
}

static void test_docker_context_overrides_current(void)
{
	struct hostcfg hc;
	char msg[256];

	reset();
	write_file("config.json", "{\"currentContext\":\"other\"}");
	write_contexts("false");
	setenv("DOCKER_CONTEXT", "remote", 1);
	CHECK_INT(resolve(NULL, &hc, msg, sizeof(msg)), 0);
	CHECK_STR(hc.url, "tcp://10.0.0.1:2376");
	CHECK_STR(hc.origin, "context remote");
}

static void test_docker_context_default(void)
{
	struct hostcfg hc;
	char msg[256];

	reset();
	write_file("config.json", "{\"currentContext\":\"remote\"}");
	write_contexts("false");
	setenv("DOCKER_CONTEXT", "default", 1);
	CHECK_INT(resolve(NULL, &hc, msg, sizeof(msg)), 0);
	CHECK_STR(hc.url, HOSTCFG_DEFAULT);
	CHECK_STR(hc.origin, "default");
	CHECK_STR(msg, "");
}

static void test_docker_context_missing(void)
{
	struct hostcfg hc;
	char msg[256];

	reset();
	write_file("config.json", "{\"currentContext\":\"remote\"}");
	write_contexts("false");
	setenv("DOCKER_CONTEXT", "nosuchctx", 1);
	CHECK_INT(resolve(NULL, &hc, msg, sizeof(msg)), -ENOENT);
	CHECK(strstr(msg, "'nosuchctx'") != NULL);
}

/* Damaged meta.json files (null or non-string Name or Host) are skipped,
 * not crashed on: the right context beside them is still found. */
static void test_damaged_context_files(void)
{
	struct hostcfg hc;
	char msg[256];

	reset();
	write_file("config.json", "{\"currentContext\":\"remote\"}");
	write_file("contexts/meta/aaa/meta.json",
		   "{\"Name\":null,\"Endpoints\":{\"docker\":"
		   "{\"Host\":\"tcp://10.7.7.7:2376\"}}}");
	write_file("contexts/meta/bbb/meta.json",
		   "{\"Name\":\"remote\",\"Endpoints\":{\"docker\":"
		   "{\"Host\":null}}}");
	write_file("contexts/meta/ccc/meta.json",
		   "{\"Name\":7,\"Endpoints\":{}}");
	CHECK_INT(resolve(NULL, &hc, msg, sizeof(msg)), -ENOENT);
	CHECK(strstr(msg, "'remote'") != NULL);
	write_contexts("false");
	CHECK_INT(resolve(NULL, &hc, msg, sizeof(msg)), 0);
	CHECK_STR(hc.url, "tcp://10.0.0.1:2376");
}

/* Missing with no contexts directory at all. */
static void test_docker_context_missing_no_dir(void)
{
	struct hostcfg hc;
	char msg[256];

	reset();
	setenv("DOCKER_CONTEXT", "nosuchctx", 1);
	CHECK_INT(resolve(NULL, &hc, msg, sizeof(msg)), -ENOENT);
	CHECK(strstr(msg, "'nosuchctx'") != NULL);
}

static void test_docker_host_over_docker_context(void)
{
	struct hostcfg hc;
	char msg[256];

	reset();
	write_contexts("false");
	setenv("DOCKER_HOST", "tcp://10.1.2.3:2375", 1);
	setenv("DOCKER_CONTEXT", "remote", 1);
	CHECK_INT(resolve(NULL, &hc, msg, sizeof(msg)), 0);
	CHECK_STR(hc.url, "tcp://10.1.2.3:2375");
	CHECK_STR(hc.origin, "DOCKER_HOST");
	CHECK_STR(msg, "");
}

/* A context whose TLS directory lacks a file is refused by name; one
 * with the CA alone is not (the server checked, no client certificate). */
static void test_context_tls_incomplete(void)
{
	struct hostcfg hc;
	char msg[512];

	reset();
	write_contexts("false");
	write_file("contexts/tls/" REMOTE_DIR "/docker/cert.pem", "x\n");
	CHECK_INT(hostcfg_context("remote", &hc, msg, sizeof(msg)), -ENOENT);
	CHECK(strstr(msg, "'remote'") != NULL);
	CHECK(strstr(msg, "TLS files missing") != NULL);
	write_file("contexts/tls/" REMOTE_DIR "/docker/key.pem", "x\n");
	CHECK_INT(hostcfg_context("remote", &hc, msg, sizeof(msg)), 0);
	reset();
	write_contexts("false");
	make_dirs("contexts/tls/" REMOTE_DIR "/docker");
	CHECK_INT(hostcfg_context("remote", &hc, msg, sizeof(msg)), -ENOENT);
	write_file("contexts/tls/" REMOTE_DIR "/docker/ca.pem", "x\n");
	CHECK_INT(hostcfg_context("remote", &hc, msg, sizeof(msg)), 0);
	CHECK(hc.tls);
}

/* Every context's name, damaged files skipped; "default" is the CLI's. */
static void test_contexts_listed(void)
{
	struct hostcfg hc;
	char *names, msg[256];
	size_t n;

	reset();
	write_contexts("false");
	write_file("contexts/meta/ccc/meta.json", "{\"Name\":7}");
	CHECK_INT(hostcfg_contexts(&names, &n), 0);
	CHECK_INT(n, 2);
	if (n == 2) {
		bool other = strcmp(names, "other") == 0;

		CHECK_STR(names, other ? "other" : "remote");
		CHECK_STR(names + strlen(names) + 1,
			  other ? "remote" : "other");
	}
	free(names);
	setenv("DOCKER_HOST", "tcp://10.1.2.3:2375", 1);
	CHECK_INT(hostcfg_context("default", &hc, msg, sizeof(msg)), 0);
	CHECK_STR(hc.url, "tcp://10.1.2.3:2375");
}

/* An engine's directory name from its URL. */
static void test_url_names(void)
{
	char name[256];

	CHECK_INT(hostlist_url_name("unix:///var/run/docker.sock", name,
				    sizeof(name)),
		  0);
	CHECK_STR(name, "docker");
	CHECK_INT(hostlist_url_name("unix:///run/user/1000/podman/podman.sock",
				    name, sizeof(name)),
		  0);
	CHECK_STR(name, "podman");
	CHECK_INT(hostlist_url_name("unix:///tmp/engine", name, sizeof(name)),
		  0);
	CHECK_STR(name, "engine");
	CHECK_INT(hostlist_url_name("tcp://10.0.0.5:2376", name, sizeof(name)),
		  0);
	CHECK_STR(name, "10.0.0.5-2376");
	CHECK_INT(hostlist_url_name("https://build.example:2376/", name,
				    sizeof(name)),
		  0);
	CHECK_STR(name, "build.example-2376");
	CHECK_INT(hostlist_url_name("tcp://[::1]:2375", name, sizeof(name)), 0);
	CHECK_STR(name, "--1-2375");
	CHECK_INT(hostlist_url_name("unix:///tmp/.sock", name, sizeof(name)),
		  -EINVAL);
	CHECK_INT(hostlist_url_name("unix:///tmp/", name, sizeof(name)),
		  -EINVAL);
}

/* Two engines of one name, and a context that is not there: refused. */
static void test_list_refusals(void)
{
	struct hostlist_engine *l = NULL;
	char *same[] = {"unix:///a/docker.sock", "unix:///b/docker.sock"};
	char *two[] = {"unix:///a/docker.sock", "tcp://10.0.0.5:2376"};
	size_t n = 0;

	reset();
	write_contexts("false");
	CHECK_INT(hostlist_build(NULL, same, 2, &l, &n), -EINVAL);
	CHECK_INT(hostlist_build("remote,nosuch", NULL, 0, &l, &n), -EINVAL);
	CHECK_INT(hostlist_build("remote", two, 2, &l, &n), 0);
	CHECK_INT(n, 3);
	if (n == 3) {
		CHECK_STR(l[0].name, "remote");
		CHECK_STR(l[0].hc.url, "tcp://10.0.0.1:2376");
		CHECK_STR(l[1].name, "docker");
		CHECK_STR(l[2].name, "10.0.0.5-2376");
	}
	free(l);
	CHECK_INT(hostlist_build("all", NULL, 0, &l, &n), 0);
	CHECK_INT(n, 2);
	free(l);
}

int main(void)
{
	int status;

	if (!mkdtemp(root)) {
		perror("mkdtemp");
		return 1;
	}

	test_option_host_wins();
	test_docker_host();
	test_docker_host_tls_verify();
	test_docker_host_tls_verify_config_dir();
	test_docker_host_tls_verify_zero();
	test_docker_host_tls_verify_no_files();
	test_default();
	test_empty_host_is_unset();
	test_current_context();
	test_current_context_tls();
	test_current_context_skip_verify();
	test_docker_context_overrides_current();
	test_docker_context_default();
	test_docker_context_missing();
	test_context_tls_incomplete();
	test_contexts_listed();
	test_url_names();
	test_list_refusals();
	test_docker_context_missing_no_dir();
	test_damaged_context_files();
	test_docker_host_over_docker_context();

	status = check_report();
	clear_root();
	if (rmdir(root) != 0)
		perror(root);
	return status;
}
