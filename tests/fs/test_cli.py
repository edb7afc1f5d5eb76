# SPDX-License-Identifier: GPL-2.0-or-later
"""Command line, exit status and start-up failures."""

import os
import socket
import subprocess
import tempfile

import pytest

from conftest import CTRFS_BIN, wait_for


def run_ctrfs(*args, timeout=120, env=None):
    if not os.access(CTRFS_BIN, os.X_OK):
        pytest.fail(f"no ctrfs binary at {CTRFS_BIN}")
    if env is None:
        env = dict(os.environ)
        env.pop("DOCKER_HOST", None)
    return subprocess.run([CTRFS_BIN, *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=timeout, env=env)


@pytest.fixture
def mnt(mount_root):
    d = tempfile.mkdtemp(prefix="cli.", dir=mount_root)
    yield d
    if os.path.ismount(d):
        subprocess.run(["fusermount3", "-z", "-u", d], check=False)
    os.rmdir(d)


def test_help_exits_0():
    r = run_ctrfs("--help")
    assert r.returncode == 0, r.stderr
    text = (r.stdout + r.stderr).decode().lower()
    assert "usage" in text
    assert "mountpoint" in text


def test_version_exits_0():
    r = run_ctrfs("--version")
    assert r.returncode == 0, r.stderr
    assert "ctrfs" in (r.stdout + r.stderr).decode().lower()


def test_no_mountpoint_is_usage_error():
    r = run_ctrfs("-f")
    assert r.returncode == 1, (r.returncode, r.stderr)


def test_unknown_option_is_usage_error(mnt, engine):
    r = run_ctrfs("-f", "-o", "host=" + engine.url, "--no-such-option", mnt)
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert not os.path.ismount(mnt)


@pytest.mark.parametrize("foreground", [True, False], ids=["foreground", "background"])
def test_missing_engine_socket_exits_2(mnt, foreground):
    args = (["-f"] if foreground else []) + ["-o", "host=unix:///nonexistent.sock", mnt]
    r = run_ctrfs(*args)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "cannot connect to engine" in r.stderr.decode()
    assert not os.path.ismount(mnt)


def test_refused_engine_socket_exits_2(mnt, tmp_path):
    # A socket that exists but where nobody listens: connect() is refused.
    path = str(tmp_path / "dead.sock")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    s.close()
    r = run_ctrfs("-f", "-o", "host=unix://" + path, mnt)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "cannot connect to engine" in r.stderr.decode()
    assert not os.path.ismount(mnt)


@pytest.mark.parametrize("kind", ["tcp", "unix"])
def test_unreachable_engine_is_one_line(mnt, tmp_path, kind):
    """An engine nobody answers at (a TCP port on loopback nobody listens
    on, a socket nobody listens on): one line that says why (curl's
    reason), not the engine's "does not answer" and then an errno."""
    if kind == "tcp":
        url = "tcp://127.0.0.1:1"
    else:
        path = str(tmp_path / "dead.sock")
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(path)
        s.close()
        url = "unix://" + path
    r = run_ctrfs("-f", "-o", "host=" + url, mnt)
    lines = r.stderr.decode().strip().splitlines()
    assert r.returncode == 2, (r.returncode, lines)
    assert not os.path.ismount(mnt)
    assert len(lines) == 1, lines
    assert lines[0] == f"ctrfs: cannot connect to engine at {url}: Couldn't connect to server", lines


def test_silent_engine_times_out_and_exits_2(mnt, tmp_path):
    # An engine that accepts the connection and never answers: -o timeout
    # bounds the wait.
    path = str(tmp_path / "silent.sock")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    s.listen(16)
    try:
        r = run_ctrfs("-f", "-o", "host=unix://" + path, "-o", "timeout=2", mnt, timeout=120)
    finally:
        s.close()
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "cannot connect to engine" in r.stderr.decode()
    assert not os.path.ismount(mnt)


def test_docker_host_is_used_without_host_option(mount, container, engine):
    c = container()
    env = dict(os.environ, DOCKER_HOST=engine.url)
    m = mount(host=False, env=env)
    assert c.name in m.listdir()


def test_host_option_overrides_docker_host(mount, container):
    c = container()
    env = dict(os.environ, DOCKER_HOST="unix:///nonexistent.sock")
    m = mount(env=env)
    assert c.name in m.listdir()


def test_missing_mountpoint_exits_3(engine, mount_root):
    missing = os.path.join(mount_root, "no-such-dir")
    r = run_ctrfs("-f", "-o", "host=" + engine.url, missing)
    assert r.returncode == 3, (r.returncode, r.stderr)


def test_mount_failure_exits_3(engine, mnt):
    # In a private mount namespace /dev/fuse is /dev/null: the engine
    # answers, the mount itself fails.
    if not os.access(CTRFS_BIN, os.X_OK):
        pytest.fail(f"no ctrfs binary at {CTRFS_BIN}")
    script = 'mount --bind /dev/null /dev/fuse && exec "$@"'
    r = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh",
                        CTRFS_BIN, "-f", "-o", "host=" + engine.url, mnt],
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=120)
    assert r.returncode == 3, (r.returncode, r.stderr)
    assert not os.path.ismount(mnt)


def test_cache_and_timeout_options_are_accepted(mount, container):
    c = container()
    c.write("/f", b"options\n")
    m = mount("-o", "attr_timeout=0,timeout=10")
    with open(m.p(c, "/f"), "rb") as f:
        assert f.read() == b"options\n"


def test_debug_option_logs_and_serves(mount, container):
    c = container()
    m = mount("-d")
    before = os.path.getsize(m.log)
    assert c.name in m.listdir()
    assert os.path.isdir(m.p(c, "/etc"))
    assert m.alive()
    # Cached answers log nothing; once the cache expires a listing asks the engine.
    assert wait_for(lambda: m.listdir() and os.path.getsize(m.log) > before), \
        "ctrfs -d logged nothing for 5 s of listings"


def test_daemon_takes_the_hard_descriptor_limit(mount):
    """Every open file and every spool file of kept contents is a
    descriptor: started with a low soft limit, the daemon raises it to the
    hard one."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    low = min(256, hard)
    if low == hard:
        pytest.skip(f"the hard limit ({hard}) leaves nothing to raise")
    resource.setrlimit(resource.RLIMIT_NOFILE, (low, hard))
    try:
        m = mount()
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    with open(f"/proc/{m.pid}/limits") as f:
        line = next(l for l in f if l.startswith("Max open files"))
    assert line.split()[3:5] == [str(hard), str(hard)], line


def _ping_server(path, api_version):
    """A unix-socket server that answers every request with a 200 to /_ping
    carrying `api_version` (None: no Api-Version header) and stays open."""
    import threading

    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(16)

    def serve():
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            with conn:
                try:
                    conn.recv(65536)
                    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n"
                    if api_version is not None:
                        head += b"Api-Version: " + api_version + b"\r\n"
                    conn.sendall(head + b"\r\nOK")
                except OSError:
                    pass

    threading.Thread(target=serve, daemon=True).start()
    return srv


@pytest.mark.parametrize("api,says", [
    (b"1.12", "speaks API 1.12, older than the 1.24 ctrfs needs"),
    (b"banana\x1b[31m", "gives no API version ('banana?[31m'"),
    (None, "gives no API version (''"),
], ids=["too-old", "garbage", "none"])
def test_engine_without_a_usable_api_version_exits_2(mnt, tmp_path, api, says):
    path = str(tmp_path / "fake.sock")
    srv = _ping_server(path, api)
    try:
        r = run_ctrfs("-f", "-o", "host=unix://" + path, mnt)
    finally:
        srv.close()
    err = r.stderr.decode(errors="replace")
    assert r.returncode == 2, (r.returncode, err)
    lines = [l for l in err.splitlines() if l.strip()]
    assert len(lines) == 1 and says in lines[0] and path in lines[0], err
    assert not os.path.ismount(mnt)


def test_a_pinned_api_version_below_the_minimum_exits_2(mnt, engine):
    env = dict(os.environ, DOCKER_API_VERSION="1.12")
    env.pop("DOCKER_HOST", None)
    r = run_ctrfs("-f", "-o", "host=" + engine.url, mnt, env=env)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "DOCKER_API_VERSION=1.12: want a version from 1.24 on" in r.stderr.decode()
    assert not os.path.ismount(mnt)
