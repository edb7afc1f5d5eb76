# SPDX-License-Identifier: GPL-2.0-or-later
"""Writing files: what lands in the container is byte-identical to what was
written, close() returns once it is there, and cp -p / rsync -a carry owner,
mode and mtime."""

import hashlib
import os
import random
import re
import threading
import time

import pytest

from conftest import (MIB, PODMAN, podman_limit, call_with_timeout, compare_stat, host_tree, read_file, run_tool,
                      sha256_file, shim_env, shim_lines, tar_tree, tree_diff, wait_for)

SIZES = [0, 1, 511, 512, 513, MIB - 1, MIB, MIB + 1]


def write_file(path, data, mode="wb", chunk=128 * 1024):
    """open/write/close through the mount; close() is where the commit happens."""

    def go():
        with open(path, mode, buffering=0) as f:
            for i in range(0, len(data), chunk):
                f.write(data[i:i + chunk])

    call_with_timeout(go, timeout=120, what=f"writing {path}")


@pytest.mark.parametrize("spool", ["memory", "disk"])
def test_sizes_land_byte_identical(mount, container, spool):
    """Edge sizes, written through the memory spool (the default) and
    through the disk spool (-o mem_spool=0)."""
    c = container()
    c.exec("mkdir", "/sizes")
    m = mount("-d", *(["-o", "mem_spool=0"] if spool == "disk" else []))
    want_mem = "in memory: none" if spool == "disk" else "in memory: /dev/shm/ctrfs-spool."
    assert want_mem in open(m.log, errors="replace").read()
    rng = random.Random(7)
    data = {n: rng.randbytes(n) for n in SIZES}
    for n in SIZES:
        write_file(m.p(c, f"/sizes/f{n}"), data[n])
    wrong = {}
    for n in SIZES:
        want = hashlib.sha256(data[n]).hexdigest()
        got = c.cp_sha256(f"/sizes/f{n}")
        if got != want:
            wrong[n] = "docker cp sha256 differs"
        elif os.path.getsize(m.p(c, f"/sizes/f{n}")) != n:
            wrong[n] = f"size through the mount {os.path.getsize(m.p(c, f'/sizes/f{n}'))}"
        elif call_with_timeout(read_file, m.p(c, f"/sizes/f{n}")) != data[n]:
            wrong[n] = "bytes read back through the mount differ"
    assert not wrong, wrong


def test_file_past_the_memory_spool_moves_to_disk(mount, container, tmp_path):
    """With 4 MiB of memory spool, a 12 MiB file moves to the disk spool
    when it passes 4 MiB and goes on there; a second file written at the
    same time finds the memory spool taken. Both land byte-identical."""
    c = container()
    c.exec("mkdir", "/spill")
    m = mount("-d", "-o", "mem_spool=4")
    big = os.urandom(12 * MIB + 5)
    small = os.urandom(3 * MIB)
    with open(m.p(c, "/spill/big"), "wb") as fb, open(m.p(c, "/spill/small"), "wb") as fs:
        fb.write(big[:3 * MIB])
        fs.write(small)  # 3 + 3 MiB: past the cap, small moves
        fb.write(big[3 * MIB:])  # past 4 MiB: big moves too
        assert call_with_timeout(read_file, m.p(c, "/spill/big")) == big
    assert c.cp_sha256("/spill/big") == hashlib.sha256(big).hexdigest()
    assert c.cp_sha256("/spill/small") == hashlib.sha256(small).hexdigest()
    log = open(m.log, errors="replace").read()
    assert "'/spill/big' in container" in log and "goes on on disk" in log
    assert "'/spill/small' in container" in log


def test_large_file_cp(mount, container, big_file):
    path, digest = big_file
    c = container()
    m = mount()
    run_tool("cp", path, m.p(c, "/tmp/"), timeout=300)
    assert c.cp_sha256("/tmp/big.bin") == digest
    assert os.path.getsize(m.p(c, "/tmp/big.bin")) == os.path.getsize(path)
    assert not compare_stat(c, m.p(c, "/tmp/big.bin"), "/tmp/big.bin")


def test_close_returns_after_commit(mount, container):
    c = container()
    m = mount()
    data = os.urandom(300_000)
    write_file(m.p(c, "/tmp/committed"), data)
    # No waiting: the data must be in the container when close() has returned.
    assert c.exec("cat", "/tmp/committed") == data
    assert not compare_stat(c, m.p(c, "/tmp/committed"), "/tmp/committed")


def test_fsync_commits(mount, container):
    c = container()
    m = mount()
    first, second = os.urandom(100_000), os.urandom(50_000)
    fd = call_with_timeout(os.open, m.p(c, "/tmp/synced"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        assert call_with_timeout(os.write, fd, first) == len(first)
        call_with_timeout(os.fsync, fd)
        # Still open: the fsync'ed bytes are already in the container.
        assert c.exec("cat", "/tmp/synced") == first
        assert call_with_timeout(os.write, fd, second) == len(second)
    finally:
        call_with_timeout(os.close, fd)
    assert c.exec("cat", "/tmp/synced") == first + second


def test_append_keeps_current_content(mount, container):
    c = container()
    c.write("/tmp/log", b"first line\n")
    m = mount()
    write_file(m.p(c, "/tmp/log"), b"second line\n", mode="ab")
    assert c.cp_out("/tmp/log") == b"first line\nsecond line\n"
    assert call_with_timeout(read_file, m.p(c, "/tmp/log")) == b"first line\nsecond line\n"


def test_overwrite_in_place_keeps_the_rest(mount, container):
    c = container()
    c.sh('head -c 700000 /dev/urandom > /tmp/inplace')
    before = c.cp_out("/tmp/inplace")
    m = mount()

    def patch():
        with open(m.p(c, "/tmp/inplace"), "r+b", buffering=0) as f:
            f.seek(300_000)
            f.write(b"PATCHED")

    call_with_timeout(patch)
    want = before[:300_000] + b"PATCHED" + before[300_007:]
    assert c.cp_sha256("/tmp/inplace") == hashlib.sha256(want).hexdigest()
    assert os.path.getsize(m.p(c, "/tmp/inplace")) == len(want)


def test_concurrent_writers(mount, container):
    c = container()
    c.exec("mkdir", "/conc")
    m = mount()
    data = {i: os.urandom(MIB + i * 4097) for i in range(8)}
    errors = {}

    def writer(i):
        try:
            write_file(m.p(c, f"/conc/w{i}"), data[i], chunk=64 * 1024)
        except BaseException as e:  # noqa: B902 - reported below
            errors[i] = repr(e)

    threads = [threading.Thread(target=writer, args=(i,), daemon=True) for i in data]
    for t in threads:
        t.start()
    for t in threads:
        t.join(180)
    assert not any(t.is_alive() for t in threads), "a writer hung"
    assert not errors, errors
    tree = tar_tree(c, "/conc")
    got = {n: e["sha256"] for n, e in tree.items() if n != "."}
    want = {f"w{i}": hashlib.sha256(d).hexdigest() for i, d in data.items()}
    assert got == want


def _owned_files(d):
    """Host files with odd owners, modes and mtimes: name -> (mode, uid, gid, mtime)."""
    files = {
        "private": (0o600, 1234, 5678, 1500000000),
        "script": (0o755, 0, 0, 1600000000),
        "setuid": (0o4755, 1234, 5678, 1400000000),
        "empty": (0o640, 1000, 100, 1300000000),
    }
    for name, (mode, uid, gid, mtime) in files.items():
        p = os.path.join(d, name)
        with open(p, "wb") as f:
            f.write(b"" if name == "empty" else os.urandom(5000 + len(name)))
        os.chown(p, uid, gid)  # before chmod: chown clears setuid
        os.chmod(p, mode)
        os.utime(p, (mtime, mtime))
    return files


def test_cp_p_preserves_owner_mode_mtime(mount, container, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    files = _owned_files(str(src))
    c = container()
    m = mount()
    run_tool("cp", "-p", *[src / n for n in sorted(files)], m.p(c, "/tmp/"))
    wrong = {}
    for name, (mode, uid, gid, mtime) in files.items():
        st = c.stat(f"/tmp/{name}")
        got = (st["perm"], st["uid"], st["gid"], st["mtime"], st["size"])
        want = (mode, uid, gid, mtime, os.path.getsize(src / name))
        if got != want:
            wrong[name] = {"got": got, "want": want}
        elif c.cp_sha256(f"/tmp/{name}") != sha256_file(src / name):
            wrong[name] = "contents differ"
        else:
            d = compare_stat(c, m.p(c, f"/tmp/{name}"), f"/tmp/{name}")
            if d:
                wrong[name] = {"mount (got, want)": d}
    assert not wrong, wrong


def _rsync_source(d):
    os.mkdir(os.path.join(d, "sub"))
    _owned_files(d)
    with open(os.path.join(d, "sub", "deep.bin"), "wb") as f:
        f.write(os.urandom(200_000))
    os.chown(os.path.join(d, "sub", "deep.bin"), 1234, 5678)
    os.chmod(os.path.join(d, "sub", "deep.bin"), 0o640)
    os.utime(os.path.join(d, "sub", "deep.bin"), (1450000000, 1450000000))
    # A link to a sibling: links that climb out of their directory have their
    # own tests (test_write_tools.py::test_symlink_relative).
    os.symlink("deep.bin", os.path.join(d, "sub", "link"))
    os.chown(os.path.join(d, "sub"), 1234, 5678)
    os.chmod(os.path.join(d, "sub"), 0o750)
    os.utime(os.path.join(d, "sub"), (1200000000, 1200000000))
    os.utime(d, (1100000000, 1100000000))


def test_rsync_a(mount, container, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    _rsync_source(str(src))
    c = container()
    m = mount()
    run_tool("rsync", "-a", f"{src}/", m.p(c, "/srv/"), timeout=240)
    want = host_tree(str(src))
    assert not tree_diff(tar_tree(c, "/srv"), want), "docker cp (got) vs source (want)"
    # And the mount shows the same, straight away.
    assert not tree_diff(host_tree(m.p(c, "/srv")), want), "mount (got) vs source (want)"


@podman_limit("its archive API reports every owner as 0:0: rsync -a sees each owner changed")
def test_a_second_rsync_in_of_nothing_new_asks_no_content(mount, container, tmp_path):
    """rsync writes each file under a temporary name and renames it. The
    renamed name's attributes were asked again: a HEAD, then a GET of the
    file for its owner, which a HEAD does not give. A second `rsync -a` of
    100 unchanged files made 100 GETs (4.1 s, dev engine). A rename keeps
    what the old name had, when that was fresh and whole."""
    src = tmp_path / "src"
    src.mkdir()
    for i in range(30):
        (src / f"f{i}").write_bytes(os.urandom(100 + i))
        os.chown(src / f"f{i}", 1234, 5678)
        os.chmod(src / f"f{i}", 0o640)
    c = container()
    m = mount("-d")
    run_tool("rsync", "-a", f"{src}/", m.p(c, "/srv/"), timeout=240)
    time.sleep(1.3)  # past the attribute timeout: HEADs confirm
    with open(m.log, errors="replace") as f:
        f.seek(0, os.SEEK_END)
        start = f.tell()
    out = run_tool("rsync", "-ai", f"{src}/", m.p(c, "/srv/"), timeout=240).stdout
    assert out.strip() == b"", out
    with open(m.log, errors="replace") as f:
        f.seek(start)
        log = f.read()
    assert not re.findall(r"engine: GET [0-9a-f]+:/srv/f", log)
    for i in (0, 29):
        assert not compare_stat(c, m.p(c, f"/srv/f{i}"), f"/srv/f{i}")


def test_a_second_rsync_aH_with_hard_links(mount, container, tmp_path):
    """With a number per path, the names of a hard-linked file looked like
    two files: a second `rsync -aH` linked them again and its rename of two
    names of one file failed (EIO, rsync exit 23)."""
    src = tmp_path / "src"
    (src / "d").mkdir(parents=True)
    (src / "d" / "f").write_bytes(os.urandom(3000))
    os.link(src / "d" / "f", src / "d" / "g")
    os.link(src / "d" / "f", src / "h")
    (src / "d" / "solo").write_bytes(b"solo")
    c = container()
    m = mount()
    run_tool("rsync", "-aH", f"{src}/", m.p(c, "/srv/"), timeout=240)
    def ino(path):
        return int(c.exec("stat", "-c", "%i", path))

    first = ino("/srv/d/f")
    assert ino("/srv/d/g") == ino("/srv/h") == first
    for i in range(2):
        if i:
            time.sleep(1.3)  # past the attribute timeout
        out = run_tool("rsync", "-aHi", f"{src}/", m.p(c, "/srv/"), timeout=240).stdout
        assert out.strip() == b"", out
    assert ino("/srv/d/g") == ino("/srv/h") == first
    assert c.cp_out("/srv/h") == (src / "h").read_bytes()


def test_a_change_by_the_container_in_the_seconds_of_ours_shows(mount, container):
    """ctrfs keeps a directory's listing across its own changes: a
    directory mtime within the seconds of a change of ours is taken as
    that change. A file the container made in those seconds was then
    never seen, until the directory changed again. The listing is now
    taken again once those seconds are over."""
    c = container()
    c.sh("mkdir /w && echo 1 > /w/old")
    m = mount()
    assert m.listdir(m.p(c, "/w")) == ["old"]
    with open(m.p(c, "/w/mine"), "wb") as f:
        f.write(b"data")
    # the container's change lands in the same second as ours
    c.sh('t=$(stat -c %Y /w); echo theirs > /w/theirs; touch -d "@$t" /w')
    assert wait_for(lambda: "theirs" in m.listdir(m.p(c, "/w")), timeout=10)
    assert sorted(m.listdir(m.p(c, "/w"))) == ["mine", "old", "theirs"]


def test_subsecond_mtimes_reach_the_container(mount, container, tmp_path):
    """What the mount writes keeps its mtime to the nanosecond (a pax
    header carries it; the engine sets it). With whole seconds, a source
    edited through the mount in the same second as a build in the
    container looked older than the object built from its old content."""
    src = tmp_path / "src"
    src.write_bytes(b"x")
    os.utime(src, ns=(1_600_000_000_123_456_789, 1_600_000_000_123_456_789))
    c = container()
    m = mount()
    run_tool("cp", "-p", str(src), m.p(c, "/tmp/p"))
    with open(m.p(c, "/tmp/new"), "wb") as f:
        f.write(b"y")
    os.mkdir(m.p(c, "/tmp/newd"))
    os.symlink("new", m.p(c, "/tmp/newl"))

    def inside_ns(path):
        sec = int(c.exec("stat", "-c", "%Y", path))
        frac = c.exec("stat", "-c", "%y", path).decode().split()[1].split(".")[1]
        return sec * 10**9 + int(frac.ljust(9, "0")[:9])

    # Podman sets a PUT's times with utimes(): microseconds, rounded up;
    # the mount shows what it keeps
    want = 1_600_000_000_123_457_000 if PODMAN else 1_600_000_000_123_456_789
    assert inside_ns("/tmp/p") == want
    assert os.lstat(m.p(c, "/tmp/p")).st_mtime_ns == want
    for name in ("new", "newd", "newl"):
        got = os.lstat(m.p(c, f"/tmp/{name}")).st_mtime_ns
        assert got == inside_ns(f"/tmp/{name}"), name
        assert got % 10**9 != 0, name  # (one in a billion: a whole second)


def test_rsync_a_inplace(mount, container, tmp_path):
    c = container()
    c.sh("mkdir /srv && head -c 1048576 /dev/urandom > /srv/grow && head -c 300000 /dev/urandom > /srv/shrink")
    grow, shrink = c.cp_out("/srv/grow"), c.cp_out("/srv/shrink")
    src = tmp_path / "src"
    src.mkdir()
    # Mostly the same bytes, so rsync's delta transfer skips the matching
    # blocks and relies on the file starting from its current content.
    (src / "grow").write_bytes(grow[:500_000] + b"changed!" * 512 + grow[504_096:] + b"tail" * 250)
    (src / "shrink").write_bytes(shrink[:100_000] + b"x" * 10)
    for name, mtime in (("grow", 1500000000), ("shrink", 1500000001)):
        os.chown(src / name, 1234, 5678)
        os.chmod(src / name, 0o640)
        os.utime(src / name, (mtime, mtime))
    m = mount()
    run_tool("rsync", "-a", "--inplace", "--no-whole-file", f"{src}/", m.p(c, "/srv/"), timeout=240)
    for name in ("grow", "shrink"):
        assert c.cp_sha256(f"/srv/{name}") == sha256_file(src / name), name
        st = c.stat(f"/srv/{name}")
        assert (st["size"], st["perm"], st["uid"], st["gid"], st["mtime"]) == (
            os.path.getsize(src / name), 0o640, 1234, 5678, int(os.path.getmtime(src / name))), name
        assert not compare_stat(c, m.p(c, f"/srv/{name}"), f"/srv/{name}"), name
        assert call_with_timeout(sha256_file, m.p(c, f"/srv/{name}")) == sha256_file(src / name), name


def test_a_spool_that_cannot_be_spliced_from_still_lands(mount, container, tmp_path):
    """A PUT of 1 MiB of file data or more sends the spool with sendfile();
    where the kernel refuses that (EINVAL: a filesystem it cannot splice
    from; here sendfile() is made to fail, preloaded from no_sendfile.c)
    the data goes through a buffer instead, byte for byte. The shim logs
    that the daemon's sendfile() is its own and that the PUT called it:
    without the shim this test fails."""
    env = shim_env(tmp_path, "no_sendfile.c")
    c = container()
    c.sh("mkdir /ns")
    m = mount("-d", env=env)
    assert shim_lines(env, m.pid) == ["sendfile interposed"]
    data = os.urandom(3 * MIB + 7)
    write_file(m.p(c, "/ns/f"), data)
    assert "bytes of file data by sendfile" in m.log_text()
    assert shim_lines(env, m.pid) == ["sendfile interposed", "sendfile called"]
    assert c.cp_out("/ns/f") == data
