# SPDX-License-Identifier: GPL-2.0-or-later
"""A unix-socket proxy in front of the real engine that injects faults.

Everything goes through to the real engine unchanged, except requests whose
request line matches a rule: those get a canned error status, or their
response is cut off after a number of bytes (the connection is then closed),
or the connection is closed part way through their body (the engine died),
or they (or their replies) are held for a while before they go on (a slow
engine), the faults and timings that a real engine does not produce on
demand.

It understands just enough HTTP/1.1 to find where each request starts: request
heads, and bodies with a Content-Length or in chunks; after a request that asks
for an Upgrade (an attached exec's stream) the rest goes through as it is.
When a chunked request is failed, its reply says "Connection: close" and the
rest of what the client sends on it is dropped.
"""

import os
import socket
import threading
import time


class FaultProxy:
    def __init__(self, upstream, path=None):
        """Listens on the unix socket at path, or with no path on plain
        TCP at 127.0.0.1 (an engine reached as `dockerd -H tcp://...`
        without TLS serves it); url says which."""
        self.upstream = upstream
        self.path = path
        self.rules = []  # [(method, substring, action, arg[, once])]
        self.hits = {}
        self.seen = []  # every request line, faulted or not
        self.lock = threading.Lock()
        if path:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.bind(path)
            self.url = "unix://" + path
        else:
            self.sock = socket.socket()
            self.sock.bind(("127.0.0.1", 0))
            self.url = "tcp://127.0.0.1:%d" % self.sock.getsockname()[1]
        self.sock.listen(64)
        self.closed = False
        self.conns = []
        threading.Thread(target=self._accept, daemon=True).start()

    def fail(self, method, substring, status=500, chunked_reply=False):
        """Answer matching requests with `status` and a JSON message (in
        chunks with chunked_reply, as a server may send any reply)."""
        with self.lock:
            self.rules.append((method, substring, "fail", (status, chunked_reply)))

    def truncate(self, method, substring, after):
        """Close the connection after `after` bytes of a matching response."""
        with self.lock:
            self.rules.append((method, substring, "truncate", after))

    def inject(self, method, substring, data):
        """Send `data` to the client at the start of a matching response's
        body, before what the engine sends there (a chunk of its own in a
        chunked body: a stream that carries something the client must
        reject). Once: the next matching request passes as it is."""
        with self.lock:
            self.rules.append((method, substring, "inject", data, True))

    def hang_up(self, method, substring, after, once=False):
        """Pass `after` bytes of a matching request's body on, then close
        the connection both ways (an engine that dies in the middle of a
        PUT: it got part of the tar, the sender's next write fails). With
        once, only the first matching request (a kept-alive connection
        the engine closed: the client may send again)."""
        with self.lock:
            self.rules.append((method, substring, "hang_up", after, once))

    def delay(self, method, substring, seconds):
        """Hold matching requests for `seconds` before passing them on."""
        with self.lock:
            self.rules.append((method, substring, "delay", seconds))

    def delay_reply(self, method, substring, seconds):
        """Pass matching requests on at once, but hold their replies for
        `seconds` (the engine has done the work; the answer is late)."""
        with self.lock:
            self.rules.append((method, substring, "delay_reply", seconds))

    def clear(self):
        with self.lock:
            self.rules = []

    def close(self):
        """The engine gone: no new connection is taken, and every open one
        is shut down both ways (a close alone leaves a connection that a
        proxy thread is blocked reading from open, and ctrfs waiting on it
        for its whole stall timeout)."""
        with self.lock:
            self.closed = True
            conns = list(self.conns)
        self.sock.close()
        self._shut(*conns)
        if self.path:
            try:
                os.unlink(self.path)
            except OSError:
                pass

    def _match(self, request_line):
        with self.lock:
            self.seen.append(request_line)
            for rule in self.rules:
                method, sub, action, arg, *once = rule
                if request_line.startswith(method + " ") and sub in request_line:
                    self.hits[(method, sub)] = self.hits.get((method, sub), 0) + 1
                    if once and once[0]:
                        self.rules.remove(rule)
                    return action, arg
        return None, None

    def _accept(self):
        while not self.closed:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            up = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                up.connect(self.upstream)
            except OSError:
                client.close()
                continue
            with self.lock:
                # one accepted while close() ran: the engine is gone
                if self.closed:
                    self._shut(client, up)
                    return
                self.conns += [client, up]
            state = {"truncate": None}
            threading.Thread(target=self._requests, args=(client, up, state), daemon=True).start()
            threading.Thread(target=self._responses, args=(client, up, state), daemon=True).start()

    @staticmethod
    def _shut(*socks):
        for s in socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            try:
                s.close()
            except OSError:
                pass

    def _requests(self, client, up, state):
        buf = b""
        body_left = 0
        chunks = None  # in a chunked body: {"left": bytes of chunk + CRLF, "last": bool}
        discard = False
        hang_left = None  # bytes of the body to pass before hanging up
        tunnel = False  # after an Upgrade request (an attached exec)
        try:
            while True:
                data = client.recv(65536)
                if not data:
                    up.shutdown(socket.SHUT_WR)
                    return
                if discard:
                    continue
                buf += data
                while buf:
                    if hang_left is not None and (chunks is not None or body_left):
                        n = min(hang_left, len(buf))
                        up.sendall(buf[:n])
                        hang_left -= n
                        if hang_left == 0:
                            state["cut"] = True
                            return
                        buf = buf[n:]
                        continue
                    if chunks is not None:
                        n, done = self._chunked(buf, chunks)
                        up.sendall(buf[:n])
                        buf = buf[n:]
                        if done:
                            chunks = None
                            continue
                        break
                    if body_left:
                        n = min(body_left, len(buf))
                        up.sendall(buf[:n])
                        buf, body_left = buf[n:], body_left - n
                        continue
                    if tunnel:  # an upgraded connection: raw bytes now
                        up.sendall(buf)
                        buf = b""
                        break
                    end = buf.find(b"\r\n\r\n")
                    if end < 0:
                        break
                    head, buf = buf[:end + 4], buf[end + 4:]
                    lines = head.decode("latin-1").split("\r\n")
                    headers = {k.strip().lower(): v.strip() for k, _, v in
                               (ln.partition(":") for ln in lines[1:] if ln)}
                    action, arg = self._match(lines[0])
                    if action == "fail":
                        status, chunked_reply = arg
                        msg = b'{"message":"fault injected by the test proxy"}'
                        chunked = headers.get("transfer-encoding", "").lower() == "chunked"
                        if chunked_reply:  # the message in two chunks
                            size = b"Transfer-Encoding: chunked\r\n"
                            body = b"%x\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n" % (
                                10, msg[:10], len(msg) - 10, msg[10:])
                        else:
                            size = b"Content-Length: %d\r\n" % len(msg)
                            body = msg
                        client.sendall(b"HTTP/1.1 %d Injected\r\nContent-Type: application/json\r\n"
                                       b"%s%s\r\n%s"
                                       % (status, size, b"Connection: close\r\n" if chunked else b"",
                                          body))
                        if chunked:  # its body is not parsed: drop the rest of the connection
                            discard = True
                            buf = b""
                            break
                        body_left = 0  # a failed request's body (if any) is dropped below
                        cl = int(headers.get("content-length", "0") or 0)
                        drop = min(cl, len(buf))
                        buf = buf[drop:]
                        continue
                    state["truncate"] = arg if action == "truncate" else None
                    state["inject"] = arg if action == "inject" else None
                    hang_left = arg if action == "hang_up" else None
                    if action == "delay":
                        time.sleep(arg)
                    if action == "delay_reply":
                        state["delay_reply"] = arg
                    up.sendall(head)
                    tunnel = "upgrade" in headers
                    if headers.get("transfer-encoding", "").lower() == "chunked":
                        chunks = {"left": 0, "last": False}
                        continue
                    body_left = int(headers.get("content-length", "0") or 0)
        except OSError:
            pass
        finally:
            if state.get("cut"):
                self._shut(client, up)

    @staticmethod
    def _chunked(buf, st):
        """How much of buf belongs to the chunked body being read (st keeps
        where it is between calls), and whether the body ends there."""
        pos = 0
        while pos < len(buf):
            if st["left"]:
                n = min(st["left"], len(buf) - pos)
                pos += n
                st["left"] -= n
                continue
            eol = buf.find(b"\r\n", pos)
            if eol < 0:
                break
            line = buf[pos:eol]
            pos = eol + 2
            if st["last"]:  # trailers, up to an empty line
                if not line:
                    return pos, True
                continue
            size = int(line.split(b";")[0].strip(), 16)
            if size == 0:
                st["last"] = True
            else:
                st["left"] = size + 2  # the data and its CRLF
        return pos, False

    def _responses(self, client, up, state):
        try:
            while True:
                data = up.recv(65536)
                if not data:
                    break
                wait = state.pop("delay_reply", None)
                if wait:
                    time.sleep(wait)
                extra = state.get("inject")
                end = data.find(b"\r\n\r\n") if extra else -1
                if end >= 0:  # the body starts here, at a chunk's start
                    state["inject"] = None
                    data = data[:end + 4] + extra + data[end + 4:]
                left = state["truncate"]
                if left is not None:
                    if len(data) >= left:
                        client.sendall(data[:left])
                        state["cut"] = True
                        break
                    state["truncate"] = left - len(data)
                client.sendall(data)
        except OSError:
            pass
        self._shut(client, up)
