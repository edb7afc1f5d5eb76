# SPDX-License-Identifier: GPL-2.0-or-later
"""Engines reached as the docker CLI reaches them: TLS over TCP, contexts,
and Podman's Docker-compatible socket."""

import errno
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import pytest

from conftest import CTRFS_BIN, PODMAN, call_with_timeout, read_file, wait_for
from faultproxy import FaultProxy


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def make_pki(d, cn="ctrfs-test-ca"):
    """A CA, a server certificate for 127.0.0.1 and a client certificate."""
    os.makedirs(d, exist_ok=True)
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
            "-keyout", "ca-key.pem", "-out", "ca.pem", "-subj", f"/CN={cn}", cwd=d)
    with open(os.path.join(d, "ext-server.cnf"), "w") as f:
        f.write("subjectAltName = IP:127.0.0.1\nextendedKeyUsage = serverAuth\n")
    with open(os.path.join(d, "ext-client.cnf"), "w") as f:
        f.write("extendedKeyUsage = clientAuth\n")
    for who in ("server", "client"):
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{who}-key.pem",
                "-out", f"{who}.csr", "-subj", f"/CN={who}", cwd=d)
        openssl("x509", "-req", "-in", f"{who}.csr", "-CA", "ca.pem", "-CAkey", "ca-key.pem",
                "-CAcreateserial", "-days", "2", "-out", f"{who}-cert.pem",
                "-extfile", f"ext-{who}.cnf", cwd=d)
    # the layout DOCKER_CERT_PATH expects
    client = os.path.join(d, "client")
    os.makedirs(client, exist_ok=True)
    shutil.copy(os.path.join(d, "ca.pem"), os.path.join(client, "ca.pem"))
    shutil.copy(os.path.join(d, "client-cert.pem"), os.path.join(client, "cert.pem"))
    shutil.copy(os.path.join(d, "client-key.pem"), os.path.join(client, "key.pem"))
    return client


def clean_env(**extra):
    env = dict(os.environ)
    for k in ("DOCKER_HOST", "DOCKER_TLS_VERIFY", "DOCKER_CERT_PATH", "DOCKER_CONTEXT",
              "DOCKER_CONFIG"):
        env.pop(k, None)
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def tls_setup(tmp_path_factory):
    if not shutil.which("openssl"):
        pytest.skip("openssl is not installed")
    d = str(tmp_path_factory.mktemp("pki"))
    client = make_pki(d)
    other = make_pki(os.path.join(d, "other"), cn="some-other-ca")
    return d, client, other


def tls_engine(private_engine, pki_dir):
    if PODMAN:
        pytest.skip("Podman 4.3: `podman system service` listens on a unix socket or plain "
                    "TCP only, with no TLS (ctrfs's TLS is tested on Docker)")
    port = free_port()
    e = private_engine(extra_args=[
        "-H", f"tcp://127.0.0.1:{port}", "--tlsverify",
        "--tlscacert", os.path.join(pki_dir, "ca.pem"),
        "--tlscert", os.path.join(pki_dir, "server-cert.pem"),
        "--tlskey", os.path.join(pki_dir, "server-key.pem"),
    ])
    return e, port


def test_tls_engine(tls_setup, private_engine, container, mount):
    pki, client, _ = tls_setup
    e, port = tls_engine(private_engine, pki)
    c = container(engine=e)
    c.sh("echo over-tls > /t")
    env = clean_env(DOCKER_HOST=f"tcp://127.0.0.1:{port}", DOCKER_TLS_VERIFY="1",
                    DOCKER_CERT_PATH=client)
    m = mount("-d", engine=e, host=False, env=env)
    assert c.name in m.listdir()
    assert call_with_timeout(read_file, m.p(c, "/t")) == b"over-tls\n"
    # the tools, through the container's shell on a TLS connection
    call_with_timeout(os.rename, m.p(c, "/t"), m.p(c, "/t2"))
    call_with_timeout(os.unlink, m.p(c, "/t2"))
    assert c.sh("ls /").split().count(b"t2") == 0
    with open(m.log, errors="replace") as f:
        assert "agent: shell started" in f.read()


def test_plain_tcp_engine(engine, container, mount, tmp_path):
    """An engine on plain TCP: reads, and writes on both ways a PUT goes
    (under 1 MiB of file data through curl; from 1 MiB on, by sendfile()
    to the TCP socket), byte for byte, and the attached shell that runs
    the tools (its exec stream is a hijacked connection)."""
    fwd = FaultProxy(engine.sock)  # no faults: a TCP front to the socket
    try:
        c = container()
        c.sh("echo over-tcp > /t; mkdir /in")
        m = mount("-d", engine=fwd)
        assert call_with_timeout(read_file, m.p(c, "/t")) == b"over-tcp\n"
        for size in (1 << 20) - 1, 1 << 20, 5 * (1 << 20) + 3:
            data = os.urandom(size)
            src = tmp_path / f"f{size}"
            src.write_bytes(data)
            shutil.copy(src, m.p(c, f"/in/f{size}"))
            assert c.cp_out(f"/in/f{size}") == data, size
        assert "bytes of file data by sendfile" in m.log_text()
        # the attached shell (a hijacked connection) works over TCP too
        with open(m.log, errors="replace") as f:
            assert "agent: shell started" in f.read()
    finally:
        fwd.close()


def test_tcp_connections_keep_alive(engine, container, mount):
    """Connections to a TCP engine have keep-alive on (30 s idle, then a
    probe every 10 s, 3 misses): the event stream and pooled connections
    sit quiet for long, and a path that dies without a reset would
    otherwise never be noticed. Checked on the sockets themselves with
    ss, whose keepalive timer a socket without SO_KEEPALIVE lacks."""
    fwd = FaultProxy(engine.sock)
    try:
        c = container()
        c.sh("echo ka > /t")
        m = mount(engine=fwd)
        assert call_with_timeout(read_file, m.p(c, "/t")) == b"ka\n"
        port = fwd.url.rsplit(":", 1)[1]
        out = subprocess.run(["ss", "-tnoHp", "state", "established", "dst", f"127.0.0.1:{port}"],
                             stdout=subprocess.PIPE, text=True, check=True).stdout
        mine = [l for l in out.splitlines() if f"pid={m.pid}," in l]
        assert mine, f"no connection of ctrfs (pid {m.pid}) to the engine:\n{out}"
        for l in mine:
            assert "timer:(keepalive," in l, f"a connection without keep-alive: {l}"
    finally:
        fwd.close()

def run_ctrfs(env, mnt, timeout=60):
    return subprocess.run([CTRFS_BIN, "-f", mnt], env=env, stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)


def test_tls_wrong_ca_refused(tls_setup, private_engine, tmp_path):
    pki, _, other_client = tls_setup
    e, port = tls_engine(private_engine, pki)
    mnt = str(tmp_path / "mnt")
    os.mkdir(mnt)
    env = clean_env(DOCKER_HOST=f"tcp://127.0.0.1:{port}", DOCKER_TLS_VERIFY="1",
                    DOCKER_CERT_PATH=other_client)
    r = run_ctrfs(env, mnt)
    assert r.returncode == 2, r.stderr
    assert b"cannot connect to engine" in r.stderr
    assert not os.path.ismount(mnt)


def test_tls_engine_without_tls_refused(tls_setup, private_engine, tmp_path):
    """No plaintext fallback: plain HTTP to a TLS port fails clearly."""
    pki, _, _ = tls_setup
    e, port = tls_engine(private_engine, pki)
    mnt = str(tmp_path / "mnt")
    os.mkdir(mnt)
    r = run_ctrfs(clean_env(DOCKER_HOST=f"tcp://127.0.0.1:{port}"), mnt)
    assert r.returncode == 2, r.stderr
    assert b"cannot connect to engine" in r.stderr
    assert not os.path.ismount(mnt)


def write_context(cfg_dir, name, host, current=True):
    meta = os.path.join(cfg_dir, "contexts", "meta", "0123abcd")
    os.makedirs(meta, exist_ok=True)
    with open(os.path.join(meta, "meta.json"), "w") as f:
        json.dump({"Name": name, "Metadata": {},
                   "Endpoints": {"docker": {"Host": host, "SkipTLSVerify": False}}}, f)
    if current:
        with open(os.path.join(cfg_dir, "config.json"), "w") as f:
            json.dump({"currentContext": name}, f)


def test_current_context(engine, container, mount, tmp_path):
    c = container()
    cfg = str(tmp_path / "docker-config")
    write_context(cfg, "ctx-test", engine.url)
    m = mount(host=False, env=clean_env(DOCKER_CONFIG=cfg))
    assert c.name in m.listdir()


def test_docker_context_env(engine, container, mount, tmp_path):
    c = container()
    cfg = str(tmp_path / "docker-config")
    write_context(cfg, "named", engine.url, current=False)
    m = mount(host=False, env=clean_env(DOCKER_CONFIG=cfg, DOCKER_CONTEXT="named"))
    assert c.name in m.listdir()


def test_unknown_context(tmp_path):
    cfg = str(tmp_path / "docker-config")
    os.makedirs(cfg)
    mnt = str(tmp_path / "mnt")
    os.mkdir(mnt)
    r = run_ctrfs(clean_env(DOCKER_CONFIG=cfg, DOCKER_CONTEXT="nope"), mnt)
    assert r.returncode == 2
    assert b"no docker context named 'nope'" in r.stderr


# --------------------------------------------------------------------------
# Podman


@pytest.fixture
def podman(base_dir, rootfs):
    exe = shutil.which("podman")
    if not exe:
        pytest.skip("podman is not installed")
    # podman refuses a runroot longer than 50 characters: keep it short
    d = tempfile.mkdtemp(prefix="ctrfs-p.", dir="/tmp")
    sock = os.path.join(d, "podman.sock")
    base = [exe, "--root", os.path.join(d, "root"), "--runroot", os.path.join(d, "run")]
    log = open(os.path.join(d, "service.log"), "wb")
    proc = subprocess.Popen(base + ["system", "service", "--time=0", "unix://" + sock],
                            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)

    def pm(*args, check=True, input=None):
        return subprocess.run(base + list(args), input=input, check=check,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)

    try:
        if not wait_for(lambda: os.path.exists(sock), timeout=30):
            log.flush()
            with open(os.path.join(d, "service.log"), "rb") as f:
                pytest.fail("podman service did not start:\n" + f.read().decode(errors="replace")[-3000:])
        with open(rootfs["busybox"], "rb") as f:
            pm("import", "-c", "ENV PATH=/bin:/usr/bin", "-", "ctrfs-test/busybox", input=f.read())
        yield pm, "unix://" + sock
    finally:
        pm("rm", "-a", "-f", "-t", "0", check=False)
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(30)
        log.close()
        # conmon outlives an exec by minutes (--exit-delay) and then runs
        # `podman container cleanup`, which mounts under d again: stop the
        # ones of this private root (ours) before unmounting
        stop_processes_naming(d)
        subprocess.run(["umount", "-R", "-l", os.path.join(d, "root")], check=False,
                       stderr=subprocess.DEVNULL)
        shutil.rmtree(d, ignore_errors=True)


def stop_processes_naming(path):
    """SIGKILL every process whose command line names path (the helpers a
    private podman started under its own directory)."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        if path.encode() in cmd and int(pid) != os.getpid():
            try:
                os.kill(int(pid), signal.SIGKILL)
            except OSError:
                pass


def test_podman_read_write(podman, mount, tmp_path):
    pm, url = podman
    name = "pod-" + os.urandom(3).hex()
    pm("run", "-d", "--network", "none", "--name", name, "--ulimit", "nofile=1024:1024",
       "--ulimit", "nproc=1024:1024", "ctrfs-test/busybox", "sleep", "1000000")
    pm("exec", name, "sh", "-c", "echo from-podman > /p; mkdir /d; echo x > /d/x; ln -s /p /d/lnk")
    m = mount("-d", "-o", "host=" + url, host=False)
    assert wait_for(lambda: name in m.listdir(), timeout=10)
    base = os.path.join(m.path, name)
    assert read_file(os.path.join(base, "p")) == b"from-podman\n"
    assert sorted(os.listdir(os.path.join(base, "d"))) == ["lnk", "x"]
    assert os.readlink(os.path.join(base, "d", "lnk")) == "../p"
    with open(os.path.join(base, "new"), "wb") as f:
        f.write(b"written through ctrfs\n")
    out = pm("exec", name, "cat", "/new").stdout
    assert out == b"written through ctrfs\n"
    # past 1 MiB of file data the PUT goes on a connection of its own
    big = os.urandom(3 * (1 << 20) + 5)
    with open(os.path.join(base, "big"), "wb") as f:
        f.write(big)
    assert pm("exec", name, "cat", "/big").stdout == big
    with open(m.log, errors="replace") as f:
        assert "bytes of file data by sendfile" in f.read()
    os.unlink(os.path.join(base, "big"))
    # the tools, through the container's shell (or an exec each)
    os.rename(os.path.join(base, "new"), os.path.join(base, "it's new"))
    os.chmod(os.path.join(base, "it's new"), 0o600)
    assert pm("exec", name, "stat", "-c", "%a", "/it's new").stdout == b"600\n"
    os.unlink(os.path.join(base, "it's new"))
    assert pm("exec", name, "ls", "/").stdout.split().count(b"new") == 0
    with open(m.log, errors="replace") as f:
        log = f.read()
    assert "agent: shell started" in log and "Podman" in log
    # a removed container leaves the listing (Podman says 'remove', not 'destroy')
    pm("rm", "-f", "-t", "0", name)
    assert wait_for(lambda: name not in m.listdir(), timeout=10)
