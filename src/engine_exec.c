// SPDX-License-Identifier: GPL-2.0-or-later
/* Running tools in a container: exec create/start/inspect, and an exec's
 * attached raw stream (the container's shell, agent.c). */
#include "engine.h"
#include "engine_int.h"
#include "errmap.h"
#include "log.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Keeps the stderr frames of a multiplexed exec stream, bounded, and
 * gathers the stdout frames in place at the start of the stream (out, when
 * not NULL: *outlen bytes). */
static void demux(char *p, size_t n, char *err, size_t errlen, char **out,
		  size_t *outlen)
{
	size_t used = strlen(err);
	char *o = p;

	if (out) {
		*out = p;
		*outlen = 0;
	}

	while (n >= 8) {
		size_t len = ((size_t)(unsigned char)p[4] << 24) |
			     ((size_t)(unsigned char)p[5] << 16) |
			     ((size_t)(unsigned char)p[6] << 8) |
			     (size_t)(unsigned char)p[7];
		size_t k = len < n - 8 ? len : n - 8;

		if (p[0] == 2 || p[0] == 3) {
			size_t room = errlen - 1 - used;
			size_t c = k < room ? k : room;

			memcpy(err + used, p + 8, c);
			used += c;
			err[used] = '\0';
		} else if (p[0] == 1 && out) {
			/* behind p: what is moved was read already */
			memmove(o, p + 8, k);
			o += k;
			*outlen += k;
		}
		p += 8 + k;
		n -= 8 + k;
	}
}

int engine_exec(struct engine *e, const char *ctr, const char *const *argv,
		int *status, char *msg, size_t msglen)
{
	return engine_exec_out(e, ctr, argv, status, msg, msglen, NULL, NULL);
}

/* POST /containers/{id}/exec for argv: 0 and its id, or -errno with the
 * reason in msg (-EOPNOTSUPP: stopped or paused). */
static int exec_create(struct engine *e, const char *ctr,
		       const char *const *argv, bool in, char *id, size_t idlen,
		       char *msg, size_t msglen)
{
	struct json_object *req, *cmd, *root, *v;
	struct engine_reply r;
	char path[512];
	int ret;

	req = json_object_new_object();
	cmd = json_object_new_array();
	for (size_t i = 0; argv[i]; i++)
		json_object_array_add(cmd, json_object_new_string(argv[i]));
	json_object_object_add(req, "Cmd", cmd);
	if (in)
		json_object_object_add(req, "AttachStdin",
				       json_object_new_boolean(1));
	json_object_object_add(req, "AttachStdout", json_object_new_boolean(1));
	json_object_object_add(req, "AttachStderr", json_object_new_boolean(1));
	snprintf(path, sizeof(path), "/containers/%s/exec", ctr);
	ret =
	    engine_post_json(e, ctr, path, json_object_to_json_string(req), &r);
	json_object_put(req);
	if (ret < 0)
		return -EIO;
	if (r.status != 201)
		engine_reply_message(&r, msg, msglen);
	/* stopped or paused: 409, the engine's words say which; Podman's
	 * 500 says "container state improper" */
	if (r.status == 409 ||
	    (r.status == 500 && strstr(msg, "container state improper"))) {
		engine_reply_free(&r);
		return -EOPNOTSUPP;
	}
	if (r.status != 201) {
		ret = errmap_http(r.status, msg, ERRMAP_CHANGE);
		engine_reply_free(&r);
		return ret ? ret : -EIO;
	}
	root = r.body ? json_tokener_parse(r.body) : NULL;
	engine_reply_free(&r);
	if (!root || !json_object_object_get_ex(root, "Id", &v)) {
		json_object_put(root);
		snprintf(msg, msglen, "malformed exec reply");
		return -EIO;
	}
	snprintf(id, idlen, "%s", json_object_get_string(v));
	json_object_put(root);
	return 0;
}

/* The exit status of exec id, which ended: 0 and *status, or -EIO. */
static int exec_status(struct engine *e, const char *id, int *status)
{
	struct json_object *root, *v;
	struct engine_reply r;
	char path[512];
	int ret;

	snprintf(path, sizeof(path), "/exec/%s/json", id);
	ret = engine_request(e, "GET", path, &r);
	root = (ret == 0 && r.status == 200 && r.body)
		   ? json_tokener_parse(r.body)
		   : NULL;
	if (ret == 0)
		engine_reply_free(&r);
	ret =
	    root && json_object_object_get_ex(root, "ExitCode", &v) ? 0 : -EIO;
	if (ret == 0)
		*status = json_object_get_int(v);
	json_object_put(root);
	return ret;
}

int engine_exec_out(struct engine *e, const char *ctr, const char *const *argv,
		    int *status, char *msg, size_t msglen, char **out,
		    size_t *outlen)
{
	struct engine_reply r;
	char path[512], id[80];
	double t0;
	int ret;

	msg[0] = '\0';
	if (out)
		*out = NULL;
	engine_preempt(e, ctr);
	t0 = now_mono();
	ret = exec_create(e, ctr, argv, false, id, sizeof(id), msg, msglen);
	if (ret < 0)
		return ret;

	snprintf(path, sizeof(path), "/exec/%s/start", id);
	ret = engine_post_json(e, ctr, path, "{\"Detach\":false,\"Tty\":false}",
			       &r);
	if (ret < 0)
		return -EIO;
	if (r.status != 200) {
		engine_reply_message(&r, msg, msglen);
		engine_reply_free(&r);
		return -EIO;
	}
	if (out) {
		char *o = NULL;
		size_t olen = 0;

		if (r.body)
			demux(r.body, r.len, msg, msglen, &o, &olen);
		/* the body becomes the output: NUL-terminated, as the reply
		 * keeps a byte past its end */
		*out = r.body ? r.body : calloc(1, 1);
		*outlen = olen;
		if (r.body)
			r.body[olen] = '\0';
		r.body = NULL;
		if (!*out) {
			engine_reply_free(&r);
			return -ENOMEM;
		}
	} else if (r.body) {
		demux(r.body, r.len, msg, msglen, NULL, NULL);
	}
	engine_reply_free(&r);

	ret = exec_status(e, id, status);
	if (ret == 0) {
		ret = errmap_tool(*status, msg);
		engine_cost_note(e, CALL_EXEC, now_mono() - t0);
	}
	if (ret < 0 && out) {
		free(*out);
		*out = NULL;
	}
	return ret;
}

/* Reads the reply to a hijacking request up to the end of its headers:
 * 0 when it switched to the raw stream (101, or 200 with the stream
 * after it), the bytes read past the headers given back to r. */
static int raw_reply(struct engine_raw *r, int ms, char *msg, size_t msglen)
{
	char buf[4096];
	size_t len = 0;
	char *end = NULL;
	long status = 0;

	while (!end) {
		ssize_t n;

		if (len == sizeof(buf) - 1) {
			snprintf(msg, msglen,
				 "exec attach: reply headers too "
				 "long");
			return -EIO;
		}
		n = engine_raw_recv(r, buf + len, sizeof(buf) - 1 - len, ms);
		if (n <= 0) {
			snprintf(msg, msglen, "exec attach: %s",
				 n == 0 ? "connection closed"
					: strerror((int)-n));
			return n == 0 ? -EIO : (int)n;
		}
		len += (size_t)n;
		buf[len] = '\0';
		end = strstr(buf, "\r\n\r\n");
	}
	if (sscanf(buf, "HTTP/1.%*d %ld", &status) != 1 ||
	    (status != 101 && status != 200)) {
		buf[strcspn(buf, "\r\n")] = '\0';
		snprintf(msg, msglen, "exec attach: %s", buf);
		return status == 404   ? -ENOENT
		       : status == 409 ? -EOPNOTSUPP
				       : -EIO;
	}
	end += 4;
	return engine_raw_unread(r, end, len - (size_t)(end - buf));
}

/* engine_exec_attach(), with the exec's id in id (idlen bytes). */
static int attach(struct engine *e, const char *ctr, const char *const *argv,
		  int ms, struct engine_raw **out, char *id, size_t idlen,
		  char *msg, size_t msglen)
{
	static const char body[] = "{\"Detach\":false,\"Tty\":false}";
	char req[2048], why[256];
	const char *host;
	struct engine_raw *r;
	int ret, n;

	msg[0] = '\0';
	*out = NULL;
	engine_preempt(e, ctr);
	ret = exec_create(e, ctr, argv, true, id, idlen, msg, msglen);
	if (ret < 0)
		return ret;
	ret = engine_raw_connect(e, &r, why, sizeof(why));
	if (ret < 0) {
		snprintf(msg, msglen, "exec attach: %s", why);
		return ret;
	}
	host = strstr(engine_base(e), "://") + 3;
	n = snprintf(req, sizeof(req),
		     "POST %s/exec/%s/start HTTP/1.1\r\n"
		     "Host: %s\r\n"
		     "Content-Type: application/json\r\n"
		     "Connection: Upgrade\r\n"
		     "Upgrade: tcp\r\n"
		     "Content-Length: %zu\r\n\r\n%s",
		     engine_prefix(e), id, host, sizeof(body) - 1, body);
	if (n < 0 || (size_t)n >= sizeof(req) ||
	    engine_raw_send(r, req, (size_t)n, ms) < 0) {
		snprintf(msg, msglen, "exec attach: cannot send the request");
		engine_raw_free(r);
		return -EIO;
	}
	ret = raw_reply(r, ms, msg, msglen);
	log_dbg("engine: POST /exec/%s/start (attached) -> %s", id,
		ret == 0 ? "stream" : msg);
	if (ret < 0) {
		engine_raw_free(r);
		return ret;
	}
	*out = r;
	return 0;
}

int engine_exec_attach(struct engine *e, const char *ctr,
		       const char *const *argv, int ms, struct engine_raw **out,
		       char *msg, size_t msglen)
{
	char id[80];

	return attach(e, ctr, argv, ms, out, id, sizeof(id), msg, msglen);
}

/* What engine_exec_in() keeps of the stream: its start, where the tool's
 * stderr frames are (the command says little). */
#define IN_KEEP	 8192
#define IN_CHUNK (64 * 1024)

int engine_exec_in(struct engine *e, const char *ctr, const char *const *argv,
		   int fd, off_t size, int *status, char *msg, size_t msglen)
{
	int ms = (int)engine_timeout(e) * 1000;
	/* one buffer per call, both ways; the start of what comes back */
	char id[80], kept[IN_KEEP], *buf = malloc(IN_CHUNK);
	size_t keptlen = 0;
	struct engine_raw *r = NULL;
	off_t off = 0;
	double t0 = now_mono();
	int ret;

	*status = 0;
	if (!buf)
		return -ENOMEM;
	ret = attach(e, ctr, argv, ms, &r, id, sizeof(id), msg, msglen);
	/* all of fd, in one buffer reused; a tool that ended early (it
	 * failed) stops reading it: its status says why */
	while (ret == 0 && off < size) {
		size_t want =
		    size - off < IN_CHUNK ? (size_t)(size - off) : IN_CHUNK;
		ssize_t n = pread(fd, buf, want, off);

		if (n <= 0) {
			snprintf(msg, msglen, "spool: %s",
				 n < 0 ? strerror(errno) : "short read");
			ret = n < 0 ? -errno : -EIO;
			break;
		}
		if (engine_raw_send(r, buf, (size_t)n, ms) < 0)
			break;
		off += n;
	}
	/* to the end of the stream: the tool has ended then */
	while (ret == 0) {
		ssize_t n = engine_raw_recv(r, buf, IN_CHUNK, ms);
		size_t k;

		if (n <= 0) {
			if (n < 0) {
				snprintf(msg, msglen, "exec: %s",
					 strerror((int)-n));
				ret = (int)n;
			}
			break;
		}
		k = IN_KEEP - keptlen < (size_t)n ? IN_KEEP - keptlen
						  : (size_t)n;
		memcpy(kept + keptlen, buf, k);
		keptlen += k;
	}
	engine_raw_free(r);
	if (ret == 0) {
		msg[0] = '\0';
		demux(kept, keptlen, msg, msglen, NULL, NULL);
		ret = exec_status(e, id, status);
	}
	if (ret == 0) {
		ret = errmap_tool(*status, msg);
		engine_cost_note(e, CALL_EXEC, now_mono() - t0);
	}
	free(buf);
	return ret;
}
