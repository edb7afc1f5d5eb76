# SPDX-License-Identifier: GPL-2.0-or-later
"""Several engines in one mount (-o engines, -o host given more than once):
a directory per engine, each engine on its own (reads, writes, its event
stream), one stopped while the other serves and back without a remount,
and the start-up refusals (docs/design.md, "Past one host")."""

import errno
import hashlib
import json
import os
import random
import re
import subprocess
import threading
import time

import pytest

from faultproxy import FaultProxy
from conftest import CTRFS_BIN, MIB, call_with_timeout, errname, errno_of, read_file, sha256_file, wait_for, wb_status

OP_TIMEOUT = 60


def write_context(cfg_dir, name, host, tls=None):
    """A docker context as the CLI stores it: meta.json under a directory
    named by a digest of the name, TLS files under tls/<digest>/docker."""
    digest = hashlib.sha256(name.encode()).hexdigest()
    meta = os.path.join(cfg_dir, "contexts", "meta", digest)
    os.makedirs(meta, exist_ok=True)
    with open(os.path.join(meta, "meta.json"), "w") as f:
        json.dump({"Name": name, "Metadata": {},
                   "Endpoints": {"docker": {"Host": host, "SkipTLSVerify": False}}}, f)
    if tls is not None:
        d = os.path.join(cfg_dir, "contexts", "tls", digest, "docker")
        os.makedirs(d, exist_ok=True)
        for fname, data in tls.items():
            with open(os.path.join(d, fname), "w") as f:
                f.write(data)


def daemon_env(tmp_path, cfg_dir=None):
    """The environment the mount fixture gives the daemon, with a docker
    config directory of our own."""
    env = dict(os.environ)
    for k in ("DOCKER_HOST", "DOCKER_CONTEXT", "DOCKER_TLS_VERIFY", "DOCKER_CERT_PATH"):
        env.pop(k, None)
    tmpdir = tmp_path / "tmpdir"
    tmpdir.mkdir(exist_ok=True)
    env["TMPDIR"] = str(tmpdir)
    env["DOCKER_CONFIG"] = cfg_dir or str(tmp_path / "no-docker-config")
    return env


def write_through(path, data):
    def go():
        with open(path, "wb", buffering=0) as f:
            for i in range(0, len(data), 128 * 1024):
                f.write(data[i:i + 128 * 1024])

    call_with_timeout(go, timeout=120, what=f"writing {path}")


@pytest.fixture
def two(engine, private_engine, tmp_path):
    """The session engine and a private one, as docker contexts "one" and
    "two" in a config directory of the test's own: (e1, e2, env)."""
    e2 = private_engine()
    cfg = str(tmp_path / "docker-config")
    write_context(cfg, "one", engine.url)
    write_context(cfg, "two", e2.url)
    return engine, e2, daemon_env(tmp_path, cfg)


def test_two_engines_by_url_read_and_write(engine, private_engine, container, mount, base_dir):
    """-o host twice: a directory per engine named after its socket, each
    holding its own containers; files of both read and written through the
    one mount, byte for byte as docker cp sees them."""
    e2 = private_engine()
    links = os.path.join(base_dir, f"socks-{os.getpid()}-{os.urandom(3).hex()}")
    os.mkdir(links)
    os.symlink(engine.sock, os.path.join(links, "left.sock"))
    os.symlink(e2.sock, os.path.join(links, "right.sock"))
    c1 = container()
    c2 = container(engine=e2)
    rng = random.Random(29)
    seeded = {c1: rng.randbytes(3 * MIB + 17), c2: rng.randbytes(2 * MIB + 5)}
    for c, data in seeded.items():
        c.write("/seeded", data)
        c.exec("ln", "-s", "/seeded", "/link")
    m = mount("-o", f"host=unix://{links}/left.sock", "-o", f"host=unix://{links}/right.sock",
              host=False)
    assert sorted(m.listdir()) == ["left", "right"]
    dirs = {c1: "left", c2: "right"}
    listed = {d: m.listdir(os.path.join(m.path, d)) for d in dirs.values()}
    assert c1.name in listed["left"] and c1.name not in listed["right"], listed
    assert c2.name in listed["right"] and c2.name not in listed["left"], listed
    wrong = {}
    for c, d in dirs.items():
        p = os.path.join(m.path, d, c.name)
        got = call_with_timeout(sha256_file, os.path.join(p, "seeded"), timeout=OP_TIMEOUT)
        if got != hashlib.sha256(seeded[c]).hexdigest():
            wrong[f"read {d}"] = "sha256 differs from what was written"
        # an absolute symlink stays inside its container's directory
        if call_with_timeout(read_file, os.path.join(p, "link"), timeout=OP_TIMEOUT) != seeded[c]:
            wrong[f"symlink {d}"] = "the link does not lead to /seeded of its container"
        data = rng.randbytes(4 * MIB + 3)
        write_through(os.path.join(p, "written"), data)
        if c.cp_sha256("/written") != hashlib.sha256(data).hexdigest():
            wrong[f"write {d}"] = "docker cp sha256 differs"
        if os.stat(os.path.join(m.path, d)).st_ino == os.stat(m.path).st_ino:
            wrong[f"ino {d}"] = "the engine's directory has the root's inode number"
    assert not wrong, wrong
    # a rename between engines is between two containers
    with pytest.raises(OSError) as ei:
        os.rename(os.path.join(m.path, "left", c1.name, "written"),
                  os.path.join(m.path, "right", c2.name, "moved"))
    assert ei.value.errno == errno.EXDEV


def test_engine_stopped_mid_copy_other_serves(two, private_engine, container, mount):
    """One engine stopped while a file is read from it: the other's
    containers list and read as before, the stopped one lists empty and is
    EIO below, its outage logged once; restarted, it serves again in the
    same mount."""
    e1, e2, env = two
    c1 = container()
    c2 = container(engine=e2, args=["--restart", "always"])
    c1.sh("dd if=/dev/urandom of=/data bs=1M count=8 2>/dev/null")
    c2.sh("dd if=/dev/urandom of=/big bs=1M count=64 2>/dev/null; echo after > /after")
    want1 = c1.cp_sha256("/data")
    m = mount("-o", "engines=one,two", host=False, env=env)
    assert sorted(m.listdir()) == ["one", "two"]
    one, two_dir = os.path.join(m.path, "one"), os.path.join(m.path, "two")
    assert c2.name in m.listdir(two_dir)

    # a copy out of the second engine, under way when it stops
    started, result = threading.Event(), {}

    def copy():
        try:
            with open(os.path.join(two_dir, c2.name, "big"), "rb") as f:
                h = hashlib.sha256(f.read(MIB))
                started.set()
                while True:
                    b = f.read(MIB)
                    if not b:
                        break
                    h.update(b)
            result["sha"] = h.hexdigest()
        except OSError as e:
            result["errno"] = e.errno
        finally:
            started.set()

    t = threading.Thread(target=copy, daemon=True)
    t.start()
    assert started.wait(OP_TIMEOUT), "the copy did not start"
    e2.stop()

    # the stopped engine: EIO below its directory (cached answers may be
    # served until they expire), its directory listed empty
    assert wait_for(lambda: errno_of(os.listdir, os.path.join(two_dir, c2.name)) == errno.EIO,
                    timeout=10), errname(errno_of(os.listdir, os.path.join(two_dir, c2.name)))
    assert wait_for(lambda: m.listdir(two_dir) == [], timeout=10), m.listdir(two_dir)
    assert errno_of(read_file, os.path.join(two_dir, c2.name, "after")) == errno.EIO
    # the other engine meanwhile: listed and read as before
    assert sorted(m.listdir()) == ["one", "two"]
    assert c1.name in m.listdir(one)
    assert call_with_timeout(sha256_file, os.path.join(one, c1.name, "data"),
                             timeout=OP_TIMEOUT) == want1
    t.join(OP_TIMEOUT)
    assert not t.is_alive(), "the copy from the stopped engine hangs"
    # it failed, or it had its data on the host already: never wrong bytes
    assert result.get("errno") == errno.EIO or "sha" in result, result
    # more calls on the stopped engine: its outage is still one log line
    for _ in range(5):
        errno_of(os.listdir, os.path.join(two_dir, c2.name))
    with open(m.log, errors="replace") as f:
        said = [l for l in f if f"engine at {e2.url} does not answer" in l]
    assert len(said) == 1, said

    e2.start()
    if c2.state() != "running":
        c2.docker("start", c2.id)

    def recovered():
        return (c2.name in m.listdir(two_dir)
                and call_with_timeout(read_file, os.path.join(two_dir, c2.name, "after"),
                                      timeout=OP_TIMEOUT) == b"after\n")

    assert wait_for(recovered, timeout=15), "the engine did not serve again within 15 s"
    assert call_with_timeout(sha256_file, os.path.join(one, c1.name, "data"),
                             timeout=OP_TIMEOUT) == want1
    assert m.alive()


def spool_dirs(m):
    """Each engine's spool directory, as the daemon (-d) logs it."""
    with open(m.log, errors="replace") as f:
        return dict(re.findall(r"(\w+): spool: (\S+);", f.read()))


def test_drain_goes_to_its_engines_spool(two, container, mount):
    """A read of the second engine's file left idle is drained to disk:
    into that engine's spool directory, not the first engine's (the
    drain file, unlinked from the start, is one of the daemon's open
    files); the rest is then read from it, byte for byte."""
    e1, e2, env = two
    c2 = container(engine=e2)
    c2.sh("dd if=/dev/urandom of=/big bs=1M count=16 2>/dev/null")
    want = c2.cp_sha256("/big")
    m = mount("-d", "-o", "engines=one,two", host=False, env=env)
    spools = spool_dirs(m)
    assert sorted(spools) == ["one", "two"] and spools["one"] != spools["two"], spools
    drained = lambda: "drained" in open(m.log, errors="replace").read()

    def open_files():
        d = f"/proc/{m.pid}/fd"
        out = []
        for n in os.listdir(d):
            try:
                out.append(os.readlink(os.path.join(d, n)))
            except OSError:
                pass
        return out

    with open(os.path.join(m.path, "two", c2.name, "big"), "rb", buffering=0) as f:
        h = hashlib.sha256(call_with_timeout(f.read, MIB, timeout=OP_TIMEOUT))
        # idle for 2 s, the transfer is drained to the spool
        assert wait_for(drained, timeout=30), "the idle transfer was not drained"
        files = open_files()
        where = {name: [p for p in files if p.startswith(d + "/")] for name, d in spools.items()}
        assert where["two"] and not where["one"], where
        while True:
            b = call_with_timeout(f.read, MIB, timeout=OP_TIMEOUT)
            if not b:
                break
            h.update(b)
    assert h.hexdigest() == want


@pytest.fixture
def twin(engine, base_dir):
    """Two proxies in front of the session engine, as two engines of one
    mount ("left" and "right"): the same container ids in both, as two
    engines of a copied data root have. (left, right)."""
    d = os.path.join(base_dir, f"twin-{os.getpid()}-{os.urandom(3).hex()}")
    os.mkdir(d)
    left = FaultProxy(engine.sock, os.path.join(d, "left.sock"))
    right = FaultProxy(engine.sock, os.path.join(d, "right.sock"))
    yield left, right
    left.close()
    right.close()


def execs(proxy, since):
    return [l for l in proxy.seen[since:] if "/exec" in l]


def test_one_id_in_two_engines_has_a_shell_each(twin, container, mount):
    """A container id that two engines of the mount hold: a tool run
    through the second engine goes to a shell of that engine's own
    (an exec it makes), not to the shell the first engine kept."""
    left, right = twin
    c = container()
    c.sh("touch /a /b")
    m = mount("-o", "host=" + left.url, "-o", "host=" + right.url, host=False)
    assert sorted(m.listdir()) == ["left", "right"]
    os.unlink(os.path.join(m.path, "left", c.name, "a"))
    assert execs(left, 0), "no exec through the first engine"
    n = len(right.seen)
    os.unlink(os.path.join(m.path, "right", c.name, "b"))
    assert execs(right, n), right.seen[n:]
    assert c.sh("ls /a /b 2>/dev/null; true") == b""


def test_one_id_in_two_engines_free_space_each(twin, container, mount):
    """df of one container id through two engines, one right after the
    other: the second is asked of the second engine, not answered from
    what the first engine said (kept 2 s)."""
    left, right = twin
    c = container()
    m = mount("-o", "host=" + left.url, "-o", "host=" + right.url, host=False)
    assert os.statvfs(os.path.join(m.path, "left", c.name)).f_blocks > 0
    n = len(right.seen)
    assert os.statvfs(os.path.join(m.path, "right", c.name)).f_blocks > 0
    assert execs(right, n), right.seen[n:]


def test_engine_down_at_start_served_once_back(two, container, mount):
    """Of two engines, one stopped before the mount: the mount starts
    (one line says that engine does not answer), its directory lists
    empty and is EIO below while the other serves; started again, it is
    served in the same mount, its outage never logged again."""
    e1, e2, env = two
    c1 = container()
    c2 = container(engine=e2, args=["--restart", "always"])
    c2.sh("echo hello > /hello")
    e2.stop()
    m = mount("-o", "engines=one,two", host=False, env=env)
    one, two_dir = os.path.join(m.path, "one"), os.path.join(m.path, "two")
    assert sorted(m.listdir()) == ["one", "two"]
    assert m.listdir(two_dir) == []
    assert errno_of(os.stat, os.path.join(two_dir, c2.name)) == errno.EIO
    assert c1.name in m.listdir(one)
    assert call_with_timeout(read_file, os.path.join(one, c1.name, "etc", "passwd"),
                             timeout=OP_TIMEOUT).startswith(b"root:")
    # (Podman's start-up note is said for it once it answers, not counted)
    about = lambda: [l for l in open(m.log, errors="replace").read().splitlines()[1:]
                     if (e2.url in l or "engine two" in l or "'two'" in l)
                     and "is Podman" not in l]
    said = about()
    assert len(said) == 1 and "cannot connect to engine at " + e2.url in said[0] \
        and "'two' is empty until it answers" in said[0], said
    e2.start()
    if c2.state() != "running":
        c2.docker("start", c2.id)

    def served():
        try:
            return (c2.name in m.listdir(two_dir) and
                    read_file(os.path.join(two_dir, c2.name, "hello")) == b"hello\n")
        except OSError:
            return False

    assert wait_for(served, timeout=30), "the engine was not served once back"
    said = about()
    assert len(said) == 2 and "engine two answers now" in said[1], said
    assert m.alive()


def test_each_engine_follows_its_events(two, container, mount):
    """engines=all: a container started, renamed and removed in each
    engine shows in its directory within a second, while the access-time
    re-list is 15 s away (attr_timeout=30): each engine's event stream."""
    e1, e2, env = two
    m = mount("-d", "-o", "engines=all", "-o", "attr_timeout=30", host=False, env=env)
    assert sorted(m.listdir()) == ["one", "two"]
    streams = lambda: len(re.findall(r"/events.*a stream", open(m.log, errors="replace").read()))
    assert wait_for(lambda: streams() >= 2), "two event streams did not open"
    for name, e in (("one", e1), ("two", e2)):
        d = os.path.join(m.path, name)
        before = m.listdir(d)
        c = container(engine=e)
        assert wait_for(lambda: c.name in m.listdir(d), timeout=1.0), f"start in {name} not seen"
        assert c.name not in before
        other = os.path.join(m.path, "two" if name == "one" else "one")
        assert c.name not in m.listdir(other)
        new = c.name + "-renamed"
        c.docker("rename", c.id, new)
        assert wait_for(lambda: new in m.listdir(d) and c.name not in m.listdir(d), timeout=1.0), \
            f"rename in {name} not seen"
        c.docker("rm", "-f", c.id)
        assert wait_for(lambda: new not in m.listdir(d), timeout=1.0), f"removal in {name} not seen"


def test_event_lines_name_their_engine(two, container, mount):
    """With several engines, the event threads' lines say whose: a
    container started in the second engine is "events (two)", and its
    stream cut when the engine stops is one line naming engine two (a
    single engine's lines stay as they were: test_events.py)."""
    e1, e2, env = two
    m = mount("-d", "-o", "engines=one,two", host=False, env=env)
    text = lambda: open(m.log, errors="replace").read()
    assert wait_for(lambda: len(re.findall(r"/events.*a stream", text())) >= 2), \
        "two event streams did not open"
    c = container(engine=e2)
    assert wait_for(lambda: c.name in m.listdir(os.path.join(m.path, "two")), timeout=10)
    # Docker says "create" and "start", Podman "create", "init", "start"
    assert "events (two): container create" in text(), text()[-3000:]
    assert "events (one): container" not in text()
    e2.stop()
    cut = lambda: [l for l in text().splitlines() if "cannot follow" in l]
    assert wait_for(cut, timeout=30), "the cut stream was not logged"
    assert len(cut()) == 1 and "engine two's events" in cut()[0], cut()


def test_idle_mount_of_two_engines_asks_nothing(engine, private_engine, container, mount, base_dir):
    """Two engines, each behind a counting proxy: once both event streams
    are open and each engine's directory was listed, ten seconds of
    looking at the root and at both engines' directories now and then
    make no call to either engine (the streams stay the one request
    each); the daemon's -d log says the same. bench/idle-calls measures
    it over 60 s."""
    e2 = private_engine()
    c1 = container()
    c2 = container(engine=e2)
    d = os.path.join(base_dir, f"idle-{os.getpid()}-{os.urandom(3).hex()}")
    os.mkdir(d)
    px = {"one": FaultProxy(engine.sock, os.path.join(d, "one.sock")),
          "two": FaultProxy(e2.sock, os.path.join(d, "two.sock"))}
    try:
        m = mount("-d", "-o", "host=" + px["one"].url, "-o", "host=" + px["two"].url, host=False)
        engine_lines = lambda: [l for l in open(m.log, errors="replace").read().splitlines()
                                if "engine: " in l]
        streams = lambda: {n: sum("/events" in l for l in p.seen) for n, p in px.items()}
        assert wait_for(lambda: streams() == {"one": 1, "two": 1}), streams()
        dirs = {"one": c1.name, "two": c2.name}
        for n, name in dirs.items():
            assert name in m.listdir(os.path.join(m.path, n))
        assert wait_for(lambda: len(re.findall(r"/events.*a stream", "\n".join(engine_lines()))) == 2)
        before = {n: len(p.seen) for n, p in px.items()}
        logged = engine_lines()
        for _ in range(10):
            time.sleep(1)
            assert sorted(m.listdir()) == ["one", "two"]
            for n, name in dirs.items():
                assert name in m.listdir(os.path.join(m.path, n))
        calls = {n: p.seen[before[n]:] for n, p in px.items()}
        assert calls == {"one": [], "two": []}, calls
        assert engine_lines() == logged, engine_lines()[len(logged):]
    finally:
        for p in px.values():
            p.close()


def test_writeback_per_engine(two, container, mount):
    """Write-back with two engines: each engine's writer holds its own
    files, `ctrfs --status` names them ENGINE/CONTAINER, and a sync of one
    engine's container commits that one alone."""
    e1, e2, env = two
    c1 = container()
    c2 = container(engine=e2)
    m = mount("-o", "writeback=30", "-o", "engines=one,two", host=False, env=env)
    data = {c1: b"1" * 1000, c2: b"2" * 24}
    for c, name in ((c1, "one"), (c2, "two")):
        with open(os.path.join(m.path, name, c.name, "tmp", "f"), "wb") as f:
            f.write(data[c])
    code, lines = wb_status(m)
    assert code == 1 and sorted(lines) == sorted([["pending", f"one/{c1.name}", "1", "1000"],
                                                  ["pending", f"two/{c2.name}", "1", "24"]]), lines
    fd = os.open(os.path.join(m.path, "two", c2.name, "tmp"), os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    assert wb_status(m) == (1, [["pending", f"one/{c1.name}", "1", "1000"]])
    assert c2.cp_out("/tmp/f") == data[c2]
    fd = os.open(m.path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    assert wb_status(m) == (0, [])
    assert c1.cp_out("/tmp/f") == data[c1]


def test_a_change_reaches_every_name_of_a_hard_link(two, container, mount):
    """A chmod through one name of a hard-linked file in the second
    engine: the kernel is told the other name's attributes changed, by its
    path below the engine's directory (kept 30 s otherwise)."""
    e1, e2, env = two
    c = container(engine=e2)
    c.sh("mkdir /h && echo x > /h/a && ln /h/a /h/b && chmod 644 /h/a")
    m = mount("-o", "attr_timeout=30", "-o", "engines=one,two", host=False, env=env)
    h = os.path.join(m.path, "two", c.name, "h")
    assert sorted(m.listdir(h)) == ["a", "b"]
    assert os.stat(os.path.join(h, "b")).st_mode & 0o777 == 0o644
    os.chmod(os.path.join(h, "a"), 0o600)
    assert c.stat("/h/b")["perm"] == 0o600
    assert os.stat(os.path.join(h, "b")).st_mode & 0o777 == 0o600


def test_one_context_keeps_the_flat_layout(engine, container, mount, tmp_path):
    c = container()
    cfg = str(tmp_path / "docker-config")
    write_context(cfg, "solo", engine.url)
    m = mount("-o", "engines=solo", host=False, env=daemon_env(tmp_path, cfg))
    assert c.name in m.listdir()
    assert call_with_timeout(read_file, m.p(c, "/etc/passwd")).startswith(b"root:")


# --------------------------------------------------------------------------
# Start-up refusals: one line each, exit 2, nothing mounted


@pytest.fixture
def mnt(mount_root):
    import tempfile
    d = tempfile.mkdtemp(prefix="multi.", dir=mount_root)
    yield d
    if os.path.ismount(d):
        subprocess.run(["fusermount3", "-z", "-u", d], check=False)
    os.rmdir(d)


def run_ctrfs(env, *args):
    # in the background: a start that is not refused mounts and returns
    return subprocess.run([CTRFS_BIN, *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=120, env=env)


def test_unknown_context_and_missing_tls_refused(engine, tmp_path, mnt):
    cfg = str(tmp_path / "docker-config")
    write_context(cfg, "good", engine.url)
    write_context(cfg, "notls", "tcp://127.0.0.1:1", tls={"cert.pem": "x"})
    r = run_ctrfs(daemon_env(tmp_path, cfg), "-o", "engines=good,nope,notls", mnt)
    err = r.stderr.decode(errors="replace")
    assert r.returncode == 2, (r.returncode, err)
    assert not os.path.ismount(mnt)
    lines = err.strip().splitlines()
    assert len(lines) == 2, lines
    assert "no docker context named 'nope'" in lines[0]
    assert "'notls'" in lines[1] and "TLS files missing" in lines[1]


def test_two_engines_of_one_name_refused(engine, tmp_path, mnt):
    """Two sockets of one name (the session engine's, docker.sock or
    podman.sock, and a link to it elsewhere): both would be the directory
    'docker' (or 'podman')."""
    other = tmp_path / "elsewhere"
    other.mkdir()
    base = os.path.basename(engine.sock)
    os.symlink(engine.sock, other / base)
    r = run_ctrfs(daemon_env(tmp_path), "-o", "host=" + engine.url,
                  "-o", f"host=unix://{other}/{base}", mnt)
    err = r.stderr.decode(errors="replace")
    assert r.returncode == 2, (r.returncode, err)
    assert not os.path.ismount(mnt)
    lines = err.strip().splitlines()
    name = base[:-len(".sock")] if base.endswith(".sock") else base
    assert len(lines) == 1 and f"two engines named '{name}'" in lines[0], lines


def test_one_unreachable_context_is_one_line(tmp_path, mnt):
    """-o engines= naming one context nobody answers at: refused as one
    engine is (exit 2), in one line with curl's reason."""
    cfg = str(tmp_path / "docker-config")
    write_context(cfg, "dead", "tcp://127.0.0.1:1")
    r = run_ctrfs(daemon_env(tmp_path, cfg), "-o", "engines=dead", mnt)
    lines = r.stderr.decode(errors="replace").strip().splitlines()
    assert r.returncode == 2, (r.returncode, lines)
    assert not os.path.ismount(mnt)
    assert lines == ["ctrfs: cannot connect to engine at tcp://127.0.0.1:1: "
                     "Couldn't connect to server"], lines
