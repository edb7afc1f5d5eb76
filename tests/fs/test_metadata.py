# SPDX-License-Identifier: GPL-2.0-or-later
"""Metadata through os.lstat, compared with busybox stat inside the container."""

import os
import stat
import time

import pytest

from conftest import ENGINE_KIND, podman_limit, STATIC_DIRS, STATIC_FILES, call_with_timeout, compare_stat, host_stat, read_file, run_tool

ODD_FILES = [
    # (path, mode, owner)
    ("/meta/plain", 0o644, None),
    ("/meta/private", 0o600, None),
    ("/meta/owned", 0o640, "1234:5678"),
    ("/meta/setuid", 0o4755, None),
    ("/meta/setgid", 0o2755, "0:5678"),
    ("/meta/all-bits", 0o7777, "4321:8765"),
    ("/meta/none", 0o000, None),
]


@pytest.fixture
def meta(container):
    c = container()
    # One exec for everything: each costs a third of a second.
    script = ["set -e", "mkdir /meta"]
    for path, mode, owner in ODD_FILES:
        script.append(f"printf '%s' '{path * 3}' > {path}")
        if owner:
            script.append(f"chown {owner} {path}")  # before chmod: it clears setuid
        script.append(f"chmod {mode:o} {path}")
    c.sh("\n".join(script) + """
        mkdir /meta/sticky && chmod 1777 /meta/sticky
        mkdir /meta/dir-owned && chown 1234:5678 /meta/dir-owned && chmod 0750 /meta/dir-owned
        head -c 12345 /dev/urandom > /meta/dated
        touch -d '2001-02-03 04:05:06' /meta/dated
        touch /meta/empty
        mkfifo /meta/fifo
    """)
    return c


def test_odd_owners_and_modes(mount, meta):
    m = mount()
    wrong = {}
    for path, _mode, _owner in ODD_FILES:
        diff = compare_stat(meta, m.p(meta, path), path)
        if diff:
            wrong[path] = diff
    assert not wrong, f"(got, want) per path: {wrong}"


@pytest.mark.parametrize("path", ["/meta/sticky", "/meta/dir-owned", "/meta", "/", "/etc", "/tmp"])
def test_directory_metadata(mount, meta, path):
    m = mount()
    keys = ("size", "perm", "uid", "gid", "mtime", "type")
    if path == "/" and ENGINE_KIND == "docker-current":
        # Docker 26 moves the container's / to the time of every archive
        # call, a HEAD included (docs/design.md, What differs between
        # engine versions): the mount's own look changes what it compares
        keys = tuple(k for k in keys if k != "mtime")
    diff = compare_stat(meta, m.p(meta, path), path, keys=keys)
    assert not diff, f"(got, want): {diff}"


@pytest.mark.parametrize("path", ["/meta/dated", "/meta/empty", "/bin/busybox", "/etc/passwd"])
def test_file_metadata(mount, meta, path):
    m = mount()
    diff = compare_stat(meta, m.p(meta, path), path)
    assert not diff, f"(got, want): {diff}"


def test_fifo_type(mount, meta):
    m = mount()
    st = host_stat(m.p(meta, "/meta/fifo"))
    assert st["type"] == "fifo"
    assert not compare_stat(meta, m.p(meta, "/meta/fifo"), "/meta/fifo", keys=("perm", "uid", "gid", "type"))


def test_hard_links(mount, container):
    c = container()
    c.sh("""
        mkdir /hl
        head -c 200000 /dev/urandom > /hl/first
        ln /hl/first /hl/second
    """)
    want = c.cp_out("/hl/first")
    m = mount()
    names = m.listdir(m.p(c, "/hl"))
    assert sorted(names) == ["first", "second"]
    a = call_with_timeout(os.lstat, m.p(c, "/hl/first"))
    b = call_with_timeout(os.lstat, m.p(c, "/hl/second"))
    assert call_with_timeout(read_file, m.p(c, "/hl/first")) == want
    assert call_with_timeout(read_file, m.p(c, "/hl/second")) == want
    assert a.st_size == b.st_size == len(want)
    assert a.st_nlink >= 2 and b.st_nlink >= 2, (a.st_nlink, b.st_nlink)
    # one file, one number: rsync -H, cp -a, tar and du see one file
    assert a.st_ino == b.st_ino
    assert {e.name: e.inode() for e in call_with_timeout(os.scandir, m.p(c, "/hl"))} == {
        "first": a.st_ino, "second": a.st_ino}
    hd = call_with_timeout(os.lstat, m.p(c, "/hl"))
    assert hd.st_ino not in (a.st_ino, 0)


def test_inode_numbers_follow_the_files(mount, container, tmp_path):
    """One number per file, shared by the names of one file; a write
    through the mount goes through every name (one file, one number), and
    a link that breaks inside the container must not leave two names with
    one number and different contents: `cp -a` would copy one for both."""
    c = container()
    c.sh("""
        mkdir /ino && cd /ino
        echo one > a && ln a b && echo two > c && ln c d && echo x > e
    """)
    m = mount()
    ino = {n: call_with_timeout(os.lstat, m.p(c, f"/ino/{n}")).st_ino for n in "abcde"}
    assert ino["a"] == ino["b"] and ino["c"] == ino["d"], ino
    assert len({ino["a"], ino["c"], ino["e"]}) == 3, ino
    # a rename keeps the number, as on a local filesystem
    os.rename(m.p(c, "/ino/e"), m.p(c, "/ino/e2"))
    assert call_with_timeout(os.lstat, m.p(c, "/ino/e2")).st_ino == ino["e"]
    os.rename(m.p(c, "/ino/e2"), m.p(c, "/ino/e"))
    # cp -a out of the mount keeps the links
    out = tmp_path / "out"
    run_tool("cp", "-a", m.p(c, "/ino"), str(out))
    assert os.lstat(out / "a").st_ino == os.lstat(out / "b").st_ino
    assert os.lstat(out / "a").st_ino != os.lstat(out / "c").st_ino
    # a write through the mount: through both names, one file still
    with open(m.p(c, "/ino/a"), "ab") as f:
        f.write(b"more")
    a, b = (call_with_timeout(os.lstat, m.p(c, f"/ino/{n}")) for n in "ab")
    assert a.st_ino == b.st_ino and a.st_nlink == b.st_nlink == 2
    assert c.cp_out("/ino/a") == b"one\nmore" and c.cp_out("/ino/b") == b"one\nmore"
    # a break inside the container, seen past the attribute timeout
    c.sh("cd /ino && cp d d.new && echo three >> d.new && mv d.new d")
    time.sleep(1.3)
    cc, d = (call_with_timeout(os.lstat, m.p(c, f"/ino/{n}")) for n in "cd")
    assert d.st_size == len(b"two\nthree\n")
    assert cc.st_ino != d.st_ino
    out2 = tmp_path / "out2"
    run_tool("cp", "-a", m.p(c, "/ino"), str(out2))
    assert (out2 / "c").read_bytes() == b"two\n"
    assert (out2 / "d").read_bytes() == b"two\nthree\n"
    assert (out2 / "b").read_bytes() == b"one\nmore"


@podman_limit("its archive API reports every owner as 0:0 (the mount shows so what a listing brought)")
def test_shell_less_metadata_matches_tar_headers(mount, container):
    c = container("static")
    m = mount()
    wrong = {}
    for name, (data, mode, uid, gid, mtime) in list(STATIC_FILES.items()) + [
            (d, (None, *v)) for d, v in STATIC_DIRS.items()]:
        st = call_with_timeout(os.lstat, m.p(c, name))
        want = (mode, uid, gid, mtime)
        got = (stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid, int(st.st_mtime))
        if data is not None and st.st_size != len(data):
            wrong[name] = ("size", st.st_size, len(data))
        elif got != want:
            wrong[name] = (got, want)
        elif stat.S_ISDIR(st.st_mode) != (data is None):
            wrong[name] = ("type", oct(st.st_mode))
    assert not wrong, wrong


def test_statfs_is_the_containers(mount, container):
    """`df` of a path in a container gives the filesystem that holds it
    inside the container (asked with `stat -f` there); where it cannot be
    asked (no `stat`), and at the mount's root, the counts are 0: unknown."""
    c = container()
    s = container("static")
    m = mount()
    sv = call_with_timeout(os.statvfs, m.p(c, "/etc"))
    want = c.exec("stat", "-f", "-c", "%S %b %c %l", "/etc").decode().split()
    assert [sv.f_frsize, sv.f_blocks, sv.f_files, sv.f_namemax] == [int(w) for w in want]
    assert sv.f_blocks > 0 and 0 < sv.f_bavail <= sv.f_bfree <= sv.f_blocks
    df = run_tool("df", "-P", m.p(c, "/")).stdout.decode().splitlines()[-1].split()
    assert int(df[1]) > 0, df
    assert call_with_timeout(os.statvfs, m.p(s, "/data")).f_blocks == 0
    assert call_with_timeout(os.statvfs, m.path).f_blocks == 0
