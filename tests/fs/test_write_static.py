# SPDX-License-Identifier: GPL-2.0-or-later
"""Writing to a shell-less container (ctrfs-test/static): what the archive API
can do works; what needs exec fails with EOPNOTSUPP and changes nothing."""

import errno
import hashlib
import os

import pytest

from conftest import (PODMAN, same_mtime, STATIC_DIRS, STATIC_FILES, podman_limit, call_with_timeout, errname, errno_of, host_tree,
                      read_file, run_tool, tar_tree, tree_diff)

HELLO = STATIC_FILES["data/hello.txt"][0]


def test_create_file(mount, container):
    c = container("static")
    m = mount()
    data = os.urandom(80_000)

    def write():
        with open(m.p(c, "/data/new.bin"), "wb") as f:
            f.write(data)

    call_with_timeout(write)
    assert c.cp_out("/data/new.bin") == data
    assert call_with_timeout(read_file, m.p(c, "/data/new.bin")) == data
    tree = tar_tree(c, "/data")
    assert tree["new.bin"]["uid"] == 0 and tree["new.bin"]["type"] == "file"
    # Nothing else in /data changed.
    for name, (content, mode, uid, gid, mtime) in STATIC_FILES.items():
        e = tree[os.path.relpath(name, "data")]
        if PODMAN:
            uid = gid = 0  # what Podman's archive GET (podman cp) reports
        assert (e["sha256"], e["perm"], e["uid"], e["gid"], e["mtime"]) == (
            hashlib.sha256(content).hexdigest(), mode, uid, gid, mtime), name


def test_mkdir_and_file_inside(mount, container):
    c = container("static")
    m = mount()
    call_with_timeout(os.mkdir, m.p(c, "/data/newdir"), 0o750)
    call_with_timeout(os.mkdir, m.p(c, "/data/newdir/deeper"))

    def write():
        with open(m.p(c, "/data/newdir/deeper/f"), "wb") as f:
            f.write(b"deep\n")

    call_with_timeout(write)
    tree = tar_tree(c, "/data/newdir")
    assert tree["."]["type"] == "dir" and tree["."]["perm"] == 0o750 & ~_umask()
    assert tree["deeper"]["type"] == "dir"
    assert tree["deeper/f"]["sha256"] == hashlib.sha256(b"deep\n").hexdigest()
    # Directory mtimes move as entries are made in them: that is
    # test_write_tools.py::test_parent_mtime_follows_change's business.
    got = host_tree(m.p(c, "/data/newdir"))
    keys = ("type", "perm", "uid", "gid", "size", "sha256")
    assert not tree_diff(got, tree, keys), "mount (got) vs docker cp (want)"
    # the tar's second (Podman's rounded to the nearest) against the mount's
    assert same_mtime(tree["deeper/f"]["mtime"], got["deeper/f"]["mtime"])


@podman_limit("its archive API reports every owner as 0:0 and a shell-less container has no stat to say the real one: ctrfs refuses to put an entry back (test_podman_put_back_without_stat_is_refused)")
def test_overwrite_keeps_mode_and_owner(mount, container):
    c = container("static")
    m = mount()
    _data, mode, uid, gid, mtime = STATIC_FILES["data/secret"]

    def write():
        with open(m.p(c, "/data/secret"), "wb") as f:
            f.write(b"new secret\n")

    call_with_timeout(write)
    assert c.cp_out("/data/secret") == b"new secret\n"
    h = c.cp_headers("/data/secret")["secret"]
    assert (h.mode & 0o7777, h.uid, h.gid) == (mode, uid, gid)
    assert h.mtime != mtime
    st = call_with_timeout(os.lstat, m.p(c, "/data/secret"))
    assert (st.st_mode & 0o7777, st.st_uid, st.st_gid, st.st_size, int(st.st_mtime)) == \
        (mode, uid, gid, 11, h.mtime)


def test_symlink(mount, container):
    c = container("static")
    m = mount()
    call_with_timeout(os.symlink, "/data/hello.txt", m.p(c, "/data/l"))
    call_with_timeout(os.symlink, "sub/empty", m.p(c, "/data/rel"))
    h = c.cp_headers("/data/l")["l"]
    assert h.issym() and h.linkname == "/data/hello.txt"
    h = c.cp_headers("/data/rel")["rel"]
    assert h.issym() and h.linkname == "sub/empty"
    assert call_with_timeout(read_file, m.p(c, "/data/l")) == HELLO
    assert call_with_timeout(os.readlink, m.p(c, "/data/rel")) == "sub/empty"


def test_symlink_climbing_out_of_its_directory(mount, container):
    c = container("static")
    m = mount()
    call_with_timeout(os.symlink, "../hello.txt", m.p(c, "/data/sub/up"))
    h = c.cp_headers("/data/sub/up")["up"]
    assert h.issym() and h.linkname == "../hello.txt"
    assert call_with_timeout(read_file, m.p(c, "/data/sub/up")) == HELLO


def test_hard_link(mount, container):
    c = container("static")
    m = mount()
    call_with_timeout(os.link, m.p(c, "/data/hello.txt"), m.p(c, "/data/hl"))
    headers = c.cp_headers("/data")
    linked = {headers["data/hello.txt"].linkname, headers["data/hl"].linkname}
    assert headers["data/hello.txt"].islnk() or headers["data/hl"].islnk(), \
        "docker cp does not show the two names as one file"
    assert linked & {"data/hello.txt", "data/hl"}
    assert call_with_timeout(read_file, m.p(c, "/data/hl")) == HELLO
    assert c.cp_out("/data/hello.txt") == HELLO


def test_cp_and_cp_r(mount, container, tmp_path):
    src = tmp_path / "tree"
    (src / "a" / "b").mkdir(parents=True)
    (src / "one").write_bytes(os.urandom(3000))
    (src / "a" / "b" / "two").write_bytes(os.urandom(70_000))
    os.symlink("b/two", src / "a" / "down")
    single = tmp_path / "single.bin"
    single.write_bytes(os.urandom(12_345))
    c = container("static")
    m = mount()
    run_tool("cp", single, m.p(c, "/data/"))
    run_tool("cp", "-r", src, m.p(c, "/data/"))
    assert c.cp_out("/data/single.bin") == single.read_bytes()
    keys = ("type", "size", "sha256", "target")
    assert not tree_diff(tar_tree(c, "/data/tree"), host_tree(str(src)), keys)


@podman_limit("its archive API reports every owner as 0:0 and a shell-less container has no stat to say the real one: ctrfs refuses to put an entry back (test_podman_put_back_without_stat_is_refused)")
def test_directory_chmod_and_utimens(mount, container):
    c = container("static")
    m = mount()
    _mode, uid, gid, mtime = STATIC_DIRS["data/sub"]
    call_with_timeout(os.chmod, m.p(c, "/data/sub"), 0o700)
    root = tar_tree(c, "/data/sub")["."]
    assert (root["perm"], root["uid"], root["gid"], root["mtime"]) == (0o700, uid, gid, mtime), \
        "chmod must change only the mode"
    call_with_timeout(os.utime, m.p(c, "/data/sub"), (1650000000, 1650000000))
    tree = tar_tree(c, "/data/sub")
    root = tree["."]
    assert (root["perm"], root["uid"], root["gid"], root["mtime"]) == (0o700, uid, gid, 1650000000)
    assert sorted(tree) == [".", "empty", "setuid"], "the directory's contents changed"
    assert tree["setuid"]["sha256"] == hashlib.sha256(STATIC_FILES["data/sub/setuid"][0]).hexdigest()
    st = call_with_timeout(os.stat, m.p(c, "/data/sub"))
    assert (st.st_mode & 0o7777, int(st.st_mtime)) == (0o700, 1650000000)


@podman_limit("its archive API reports every owner as 0:0 and a shell-less container has no stat: "
              "ctrfs refuses to put a file back (touch by copy) over its owner")
def test_times_and_changes_through_a_write_descriptor(mount, container):
    """`touch` opens a file write-only and sets its times through the
    descriptor; with no `touch` in the container the times go with a copy
    of the file (a GET and a PUT), by path too. A write-only open copies
    the file in at its first write or ftruncate; after that, chmod finds
    the file being written and needs no tool either. The content stays."""
    c = container("static")
    m = mount()
    f = m.p(c, "/data/hello.txt")
    run_tool("touch", "-d", "@1700000000", f)
    assert tar_tree(c, "/data")["hello.txt"]["mtime"] == 1700000000
    run_tool("touch", "-c", "-d", "@1700000100", f)
    tree = tar_tree(c, "/data")
    assert tree["hello.txt"]["mtime"] == 1700000100
    assert tree["hello.txt"]["sha256"] == hashlib.sha256(HELLO).hexdigest()
    fd = call_with_timeout(os.open, f, os.O_WRONLY)
    try:
        os.ftruncate(fd, 5)
        os.fchmod(fd, 0o600)
    finally:
        os.close(fd)
    tree = tar_tree(c, "/data")
    assert tree["hello.txt"]["perm"] == 0o600
    assert tree["hello.txt"]["sha256"] == hashlib.sha256(HELLO[:5]).hexdigest()
    assert call_with_timeout(read_file, f) == HELLO[:5]
    assert m.alive()


def _ops(m, c):
    f, d = m.p(c, "/data/hello.txt"), m.p(c, "/data/newdir")
    return {
        "unlink": lambda: os.unlink(f),
        "rename": lambda: os.rename(f, m.p(c, "/data/renamed")),
        "rmdir": lambda: os.rmdir(d),
        "chmod": lambda: os.chmod(f, 0o600),
        "chown": lambda: os.chown(f, 4321, 8765),
        "truncate": lambda: os.truncate(f, 3),
    }


@pytest.mark.parametrize("op", ["unlink", "rename", "rmdir", "chmod", "chown", "truncate"])
def test_exec_ops_not_supported(mount, container, op):
    c = container("static")
    m = mount()
    if op == "rmdir":
        call_with_timeout(os.mkdir, m.p(c, "/data/newdir"))
    before = tar_tree(c, "/data")
    st_before = call_with_timeout(os.lstat, m.p(c, "/data/hello.txt"))
    e = errno_of(_ops(m, c)[op])
    assert e == errno.EOPNOTSUPP, f"{op}: {errname(e)}"
    # Nothing changed, inside or through the mount.
    assert not tree_diff(tar_tree(c, "/data"), before), "docker cp after (got) vs before (want)"
    st = call_with_timeout(os.lstat, m.p(c, "/data/hello.txt"))
    assert (st.st_mode, st.st_uid, st.st_gid, st.st_size, int(st.st_mtime)) == \
        (st_before.st_mode, st_before.st_uid, st_before.st_gid, st_before.st_size, int(st_before.st_mtime))
    assert call_with_timeout(read_file, m.p(c, "/data/hello.txt")) == HELLO
    assert sorted(m.listdir(m.p(c, "/data"))) == sorted(n for n in before if "/" not in n and n != ".")
    assert m.alive()


def _umask():
    u = os.umask(0)
    os.umask(u)
    return u


@pytest.mark.skipif(not PODMAN, reason="Podman's archive API alone reports every owner as 0:0")
def test_podman_put_back_without_stat_is_refused(mount, container):
    """Putting an existing file or directory back (a write over it, a
    directory's chmod) carries its owner; Podman reports 0:0 for every
    one, and a shell-less container has no `stat` to ask: ctrfs refuses
    with EOPNOTSUPP and one line, and the owner stays."""
    c = container("static")
    m = mount()

    def write():
        with open(m.p(c, "/data/secret"), "wb") as f:
            f.write(b"new")

    e = errno_of(write)
    assert e == errno.EOPNOTSUPP, f"overwriting: {errname(e)}"
    e = errno_of(os.chmod, m.p(c, "/data/sub"), 0o700)
    assert e == errno.EOPNOTSUPP, f"chmod of a directory: {errname(e)}"
    assert c.cp_out("/data/secret") == STATIC_FILES["data/secret"][0]
    tree = tar_tree(c, "/data")
    assert tree["sub"]["perm"] == STATIC_DIRS["data/sub"][0]
    log = m.log_text()
    assert "cannot write '/data/secret'" in log and "cannot change '/data/sub'" in log

