# SPDX-License-Identifier: GPL-2.0-or-later
"""Durable write-back: a daemon killed (kill -9) while write-back holds
files whose close() returned 0 loses none of them. The next start commits
each from the journal ($TMPDIR/ctrfs-journal-UID, or -o spool=DIR), or,
when it cannot (the container is gone, the record is damaged), keeps it in
the rescue directory: every file is afterwards in the container or there,
byte for byte, never missing or cut short."""

import glob
import hashlib
import os
import re
import subprocess
import time

import pytest

from conftest import CTRFS_BIN, MIB, sha256_file, tar_tree, wait_for

MTIME_NS = 1_600_000_000_123_456_789


def crash_env(tmp_path):
    """The daemon's environment with its journal and rescue base in
    tmp_path (TMPDIR), as a restart would find them."""
    base = tmp_path / "base"
    base.mkdir(exist_ok=True)
    env = dict(os.environ)
    env.pop("DOCKER_HOST", None)
    env["TMPDIR"] = str(base)
    return env, base


def write_tree(m, c, top, big=False):
    """Files written through the mount, each closed (so write-back holds
    it): some with a mode and an mtime set after the close, one of 4 MiB
    with big. Returns path in the container -> (sha256, mode or None,
    mtime_ns or None)."""
    want = {}
    # made in the container: a mkdir through the mount is a PUT too
    c.sh(f"mkdir -p {top}/d0 {top}/d1")
    for d in range(2):
        for i in range(6):
            path = f"{top}/d{d}/f{i}"
            data = os.urandom(1 + 700 * i)
            with open(m.p(c, path), "wb") as f:
                f.write(data)
            mode = mtime = None
            if i % 2:
                mode = 0o640 if i % 4 == 1 else 0o604
                mtime = MTIME_NS + 1000 * i + d
                os.chmod(m.p(c, path), mode)
                os.utime(m.p(c, path), ns=(mtime, mtime))
            want[path] = (hashlib.sha256(data).hexdigest(), mode, mtime)
    if big:
        data = os.urandom(4 * MIB + 5)
        with open(m.p(c, f"{top}/big"), "wb") as f:
            f.write(data)
        want[f"{top}/big"] = (hashlib.sha256(data).hexdigest(), None, None)
    return want


def kill(m):
    """kill -9 of the daemon, then the lazy unmount its death calls for."""
    m.proc.kill()
    m.proc.wait(10)
    m.force_unmount()
    m.unmounted = True
    try:
        os.rmdir(m.path)
    except OSError:
        pass


def in_container(c, top):
    """Files under top in the container: path -> its tar_tree entry."""
    try:
        tree = tar_tree(c, top)
    except AssertionError:
        return {}
    return {os.path.normpath(f"{top}/{n}"): e for n, e in tree.items() if e["type"] == "file"}


def rescued(base):
    """Files in the rescue directories under base: path below the
    directory -> sha256."""
    got = {}
    for root in glob.glob(str(base / "ctrfs-rescue*")):
        for dirpath, _, names in os.walk(root):
            for n in names:
                full = os.path.join(dirpath, n)
                got[os.path.relpath(full, root)] = sha256_file(full)
    return got


def check_landed(c, want, top, skip=()):
    """Every file of want but those in skip is in the container, whole,
    with the mode and mtime set on it."""
    got = in_container(c, top)
    bad = {}
    for path, (sha, mode, mtime) in want.items():
        if path in skip:
            continue
        e = got.get(path)
        if e is None or e["sha256"] != sha:
            bad[path] = "missing" if e is None else f"{e['size']} bytes, other content"
        elif mode is not None and e["perm"] != mode:
            bad[path] = f"mode {e['perm']:o}, want {mode:o}"
        elif mtime is not None and e["mtime"] != mtime // 10**9:
            bad[path] = f"mtime {e['mtime']}, want {mtime // 10**9}"
    assert not bad, bad
    return got


def journal_records(base):
    """The records of the journal under base and of its twin on /dev/shm."""
    j = base / f"ctrfs-journal-{os.geteuid()}"
    st = os.stat(j)
    twin = f"/dev/shm/ctrfs-journal-{os.geteuid()}-{st.st_dev:x}-{st.st_ino:x}"
    return sorted(glob.glob(f"{j}/run-*/*.rec") + glob.glob(f"{twin}/run-*/*.rec"))


def record_path(rec):
    for line in open(rec, "rb").read().split(b"\n"):
        if line.startswith(b"path "):
            return line[5:].decode()
    raise AssertionError(f"no path in {rec}")


@pytest.mark.parametrize("where", ["mem", "disk", "spool"])
def test_files_closed_before_the_kill_land_at_the_next_start(mount, container, tmp_path, where):
    """(a) kill -9 right after the files were closed, before write-back
    sent anything (the delay is 30 s): the container has none of them;
    the next start commits them all, bytes, modes and mtimes as closed,
    from the memory spool's journal on /dev/shm or from the disk's (in
    $TMPDIR, or named with -o spool=DIR)."""
    c = container()
    env, base = crash_env(tmp_path)
    journal = base / f"ctrfs-journal-{os.geteuid()}"
    opts = ["-o", "writeback=30"]
    if where != "mem":
        opts += ["-o", "mem_spool=0"]
    if where == "spool":
        journal = tmp_path / "journal"
        opts += ["-o", f"spool={journal}"]
    m = mount(*opts, env=env)
    want = write_tree(m, c, "/wa", big=True)
    kill(m)
    assert not in_container(c, "/wa"), "write-back sent files before its delay"
    m2 = mount(*opts, env=env)
    check_landed(c, want, "/wa")
    assert "left pending by a mount that ended" in open(m2.log).read()
    assert not rescued(base)
    assert not m2.unmount()
    # a clean unmount leaves nothing in the journal
    assert os.listdir(journal) == []


def test_a_kill_mid_put_leaves_nothing_cut(mount, container, proxy, tmp_path):
    """(b) kill -9 while the write-back PUT is in flight (the proxy holds
    it, then passes on what it got: the engine may unpack part of the
    tar): after the next start every file is in the container, whole."""
    c = container()
    env, base = crash_env(tmp_path)
    m = mount("-o", "writeback=1", engine=proxy, env=env)
    proxy.delay("PUT", "/archive", 3)
    want = write_tree(m, c, "/wb", big=True)
    assert wait_for(lambda: proxy.hits.get(("PUT", "/archive"), 0) > 0, timeout=10)
    time.sleep(0.5)
    kill(m)
    time.sleep(4)  # the held PUT went on with what it got, and ended
    proxy.clear()
    m2 = mount("-o", "writeback=1", engine=proxy, env=env)
    check_landed(c, want, "/wb")
    assert not rescued(base)


def test_a_kill_after_the_put_landed_commits_it_again(mount, container, proxy, tmp_path):
    """(c) kill -9 after the engine unpacked the PUT but before ctrfs saw
    its reply, so before it dropped the journal entries (the proxy holds
    the reply): the next start sends the files again, which is harmless."""
    c = container()
    env, base = crash_env(tmp_path)
    m = mount("-o", "writeback=1", engine=proxy, env=env)
    proxy.delay_reply("PUT", "/archive", 30)
    want = write_tree(m, c, "/wc")
    assert wait_for(lambda: proxy.hits.get(("PUT", "/archive"), 0) > 0, timeout=10)
    assert wait_for(lambda: len(in_container(c, "/wc")) == len(want), timeout=10)
    kill(m)
    assert journal_records(base), "the journal dropped entries before the reply"
    proxy.clear()
    m2 = mount("-o", "writeback=1", engine=proxy, env=env)
    check_landed(c, want, "/wc")
    assert "left pending by a mount that ended" in open(m2.log).read()
    assert not rescued(base)


def test_a_damaged_record_goes_to_the_rescue_directory(mount, container, tmp_path):
    """(d) a record overwritten with garbage between the kill and the
    restart: its data goes to the rescue directory, whole, and not into
    the container; the others land."""
    c = container()
    env, base = crash_env(tmp_path)
    m = mount("-o", "writeback=30", env=env)
    want = write_tree(m, c, "/wd")
    kill(m)
    recs = journal_records(base)
    assert len(recs) == len(want), recs
    victim = record_path(recs[0])
    with open(recs[0], "wb") as f:
        f.write(os.urandom(200))
    m2 = mount("-o", "writeback=30", env=env)
    got = check_landed(c, want, "/wd", skip=(victim,))
    assert victim not in got, f"{victim} of a damaged record went into the container"
    kept = rescued(base)
    assert list(kept.values()) == [want[victim][0]], kept
    assert "is damaged: its data is kept in" in open(m2.log).read()


def test_files_of_a_removed_container_go_to_the_rescue_directory(mount, container, engine, tmp_path):
    """(e) the container removed between the kill and the restart: every
    file is in the rescue directory under its name and path, whole."""
    c = container()
    env, base = crash_env(tmp_path)
    m = mount("-o", "writeback=30", env=env)
    want = write_tree(m, c, "/we", big=True)
    kill(m)
    engine.docker("rm", "-f", c.id)
    m2 = mount("-o", "writeback=30", env=env)
    kept = rescued(base)
    assert kept == {f"{c.name}{p}": sha for p, (sha, _, _) in want.items()}, kept
    assert open(m2.log).read().count("the container is gone") == len(want)


def test_a_journal_directory_open_to_others_is_refused(engine, mount_root, tmp_path):
    """A journal directory with another mode than 0700 is refused with one
    line naming it: exit 2, nothing mounted."""
    spool = tmp_path / "journal"
    spool.mkdir(mode=0o755)
    os.chmod(spool, 0o755)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    env, _ = crash_env(tmp_path)
    r = subprocess.run([CTRFS_BIN, "-f", "-o", "host=" + engine.url, "-o", "writeback=1",
                        "-o", f"spool={spool}", str(mnt)], env=env, stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    err = r.stderr.decode()
    assert r.returncode == 2, (r.returncode, err)
    assert f"refusing the journal directory '{spool}'" in err and "0755" in err, err
    assert len(err.strip().splitlines()) == 1, err
    assert not os.path.ismount(mnt)


def spool_dirs(base, m):
    """The spool directories of m's daemon under base and on /dev/shm
    (their names hold its pid; other mounts on the machine have theirs)."""
    pat = f"ctrfs-spool.{m.pid}.*"
    return set(glob.glob(str(base / pat)) + glob.glob(f"/dev/shm/{pat}"))


def test_a_killed_daemons_spool_directories_go_at_the_next_start(mount, container, tmp_path):
    """A daemon killed with kill -9 leaves its (empty) spool directories
    under $TMPDIR and /dev/shm; the next start removes them, and never a
    running daemon's: a third start leaves the second's, which keeps
    writing."""
    c = container()
    env, base = crash_env(tmp_path)
    m = mount(env=env)
    with open(m.p(c, "/tmp/k1"), "wb") as f:
        f.write(b"one")
    dead = spool_dirs(base, m)
    assert any(d.startswith("/dev/shm/") for d in dead) and \
        any(d.startswith(str(base)) for d in dead), dead
    kill(m)
    assert all(os.path.isdir(d) for d in dead), "nothing was left behind to sweep"
    m2 = mount(env=env)
    assert not [d for d in dead if os.path.exists(d)], "left behind"
    live = spool_dirs(base, m2)
    assert any(d.startswith("/dev/shm/") for d in live) and \
        any(d.startswith(str(base)) for d in live), live
    m3 = mount(env=env)
    assert all(os.path.isdir(d) for d in live), "a running daemon's were taken"
    with open(m2.p(c, "/tmp/k2"), "wb") as f:
        f.write(b"two")
    assert c.cp_out("/tmp/k2") == b"two"
    assert not m3.unmount()
    assert not m2.unmount()


def test_files_rsync_renamed_land_under_their_final_names(mount, container, tmp_path):
    """(f) rsync -a writes each file under a temporary name and then sets
    its owner, mode and times and renames it: with write-back those fold
    into the pending file and its journal record, so a kill -9 before the
    commit loses none of it: the next start commits every file under its
    final name, with its owner, mode and mtime, and no temporary name."""
    c = container()
    env, base = crash_env(tmp_path)
    src = tmp_path / "src"
    want = {}
    for d in range(2):
        (src / f"d{d}").mkdir(parents=True)
        for i in range(5):
            p = src / f"d{d}" / f"f{i}"
            data = os.urandom(1 + 300 * i)
            p.write_bytes(data)
            os.chmod(p, (0o600, 0o640, 0o755, 0o604, 0o700)[i])
            os.chown(p, 1000 + i, 2000 + d)
            t = MTIME_NS + (10 * d + i) * 1_000_000_007
            os.utime(p, ns=(t, t))
            want[f"/wf/d{d}/f{i}"] = (hashlib.sha256(data).hexdigest(), os.stat(p).st_mode & 0o7777, t,
                                      1000 + i, 2000 + d)
    # the directories made in the container; -O: rsync would look at
    # their times after the files, which commits the files first
    c.sh("mkdir -p /wf/d0 /wf/d1")
    m = mount("-o", "writeback=30", env=env)
    subprocess.run(["rsync", "-a", "-O", f"{src}/", m.p(c, "/wf/")], check=True,
                   stdin=subprocess.DEVNULL, timeout=120)
    kill(m)
    assert not in_container(c, "/wf"), "write-back sent files before its delay"
    mount("-o", "writeback=30", env=env)
    got = in_container(c, "/wf")
    assert sorted(got) == sorted(want), sorted(got)
    # mode, owner and mtime as the container's stat says them (Podman's
    # archive tars say 0:0 and a rounded second)
    bad = {}
    for p, e in got.items():
        st = c.stat(p)
        have = (e["sha256"], st["perm"], st["mtime"], st["uid"], st["gid"])
        if have != (want[p][0], want[p][1], want[p][2] // 10**9, want[p][3], want[p][4]):
            bad[p] = have
    assert not bad, bad
    assert not rescued(base)


@pytest.mark.parametrize("where", ["mem", "disk"])
def test_directories_and_symlinks_cp_made_land_at_the_next_start(mount, container, tmp_path,
                                                                  where):
    """(g) cp -a of a tree (nested directories with their own modes and
    times, symlinks) into a write-back mount, then kill -9 before the
    commit: nothing of it is in the container yet, directories and
    symlinks included (they are pending entries, journaled as files are:
    beside the memory spool's files on /dev/shm, or on disk with
    -o mem_spool=0); the next start makes them all, with the files
    inside, every mode, owner and mtime as copied."""
    from conftest import host_tree, tree_diff

    c = container()
    env, base = crash_env(tmp_path)
    src = tmp_path / "src"
    for d in range(4):
        p = src / f"a{d // 2}" / f"b{d}"
        p.mkdir(parents=True, exist_ok=True)
        for i in range(3):
            f = p / f"f{i}"
            f.write_bytes(os.urandom(1 + 300 * i + d))
            os.chmod(f, (0o600, 0o640, 0o755)[i])
            t = MTIME_NS + (10 * d + i) * 1_000_000_007
            os.utime(f, ns=(t, t))
        os.symlink(f"f{d % 3}", p / "ln")
        os.symlink("../..", p / "up")
    for i, p in enumerate(sorted((q for q in src.rglob("*") if q.is_dir() and not q.is_symlink()),
                                 key=lambda q: -len(q.parts)) + [src]):
        os.chmod(p, (0o750, 0o700, 0o755)[i % 3])
        os.utime(p, (1_500_000_000 + i, 1_500_000_000 + i))
    c.sh("mkdir /wg")
    opts = ["-o", "writeback=30"] + (["-o", "mem_spool=0"] if where == "disk" else [])
    m = mount(*opts, env=env)
    subprocess.run(["cp", "-a", str(src), m.p(c, "/wg/t")], check=True,
                   stdin=subprocess.DEVNULL, timeout=120)
    kill(m)
    assert c.sh("ls -A /wg").strip() == b"", "write-back made something before its delay"
    entries = [r for r in journal_records(base)
               if re.search(rb"^type [dl]$", open(r, "rb").read(), re.M)]
    made = [q for q in src.rglob("*") if q.is_dir() or q.is_symlink()] + [src]
    assert len(entries) == len(made), entries  # one record each
    on_shm = {r.startswith("/dev/shm/") for r in entries}
    assert on_shm == {where == "mem"}, entries
    m2 = mount(*opts, env=env)
    diff = tree_diff(tar_tree(c, "/wg/t"), host_tree(str(src)))
    assert not diff, diff
    assert "made '/wg/t/a0/b0/ln' in container" in open(m2.log).read()
    assert not rescued(base)


def test_an_atime_and_a_capability_set_after_the_close_land_at_the_next_start(mount, container,
                                                                               tmp_path):
    """The journal record keeps what utimensat and setxattr fold into a
    pending file besides its mode, owner and mtime: an atime set on purpose
    and its security.capability. A kill -9 before the commit loses neither:
    the next start puts them with the data (before, the record had neither
    and the file landed with the engine's atime and no capability)."""
    import struct
    cap = struct.pack("<IIIII", 0x02000000 | 1, 1 << 13, 0, 0, 0)  # cap_net_raw+ep
    # later than the mtime: a tar's atime before it is not applied (the
    # engine takes the later of the two; touch in the container then)
    atime_ns = MTIME_NS + 10**12 + 7
    c = container()
    c.sh("mkdir /ac")
    env, base = crash_env(tmp_path)
    m = mount("-o", "writeback=30", env=env)
    p = m.p(c, "/ac/f")
    with open(p, "wb") as f:
        f.write(b"ac\n")
    os.utime(p, ns=(atime_ns, MTIME_NS))
    os.setxattr(p, "security.capability", cap)
    kill(m)
    assert not in_container(c, "/ac"), "write-back sent the file before its delay"
    mount("-o", "writeback=30", env=env)
    # (before a read, which moves an atime older than a day)
    assert c.sh("stat -c '%X %Y' /ac/f").split() == [str(atime_ns // 10**9).encode(),
                                                      str(MTIME_NS // 10**9).encode()]
    assert c.exec("cat", "/ac/f") == b"ac\n"
    (ti,) = c.cp_headers("/ac/f").values()
    assert ti.pax_headers.get("SCHILY.xattr.security.capability", "").encode("latin-1") == cap
    assert not rescued(base)
