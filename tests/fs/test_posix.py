# SPDX-License-Identifier: GPL-2.0-or-later
"""What POSIX promises a caller, where ctrfs once answered wrong without
saying so."""

import errno
import os
import stat
import time

import pytest

from conftest import PODMAN, call_with_timeout, errname, errno_of, run_tool, wait_for

# link -> raw target: readlink through the mount rewrites the first two
# (longer, then shorter) and keeps the third
SIZED_LINKS = {
    "/a/b/c/d/awk2": "/etc/alternatives/awk",
    "/a/b/c/d/up": "../../../../../../../etc",
    "/a/b/c/d/rel": "../x",
}


def _sized_links(container):
    c = container()
    c.sh("mkdir -p /a/b/c/d")
    for path, target in SIZED_LINKS.items():
        c.exec("ln", "-s", target, path)
    return c


def _size_mismatches(m, c):
    """link -> (st_size, len(readlink)) where they differ, through the mount."""
    bad = {}
    for path in SIZED_LINKS:
        p = m.p(c, path)
        st = call_with_timeout(os.lstat, p)
        assert stat.S_ISLNK(st.st_mode), path
        target = call_with_timeout(os.readlink, p)
        if st.st_size != len(target):
            bad[path] = (st.st_size, len(target), target)
    return bad


def test_symlink_size_is_what_readlink_gives_cold(mount, container):
    """cpio sizes the buffer for readlink by st_size: an absolute target,
    read back longer (made relative), was cut short."""
    c = _sized_links(container)
    m = mount()
    assert _size_mismatches(m, c) == {}


def test_symlink_size_is_what_readlink_gives_after_a_listing(mount, container):
    """The same for the attributes a listing hands the kernel (readdirplus)."""
    c = _sized_links(container)
    m = mount()
    assert sorted(m.listdir(m.p(c, "/a/b/c/d"))) == ["awk2", "rel", "up"]
    assert _size_mismatches(m, c) == {}
    # ls -l reads each link into a buffer of its size
    out = run_tool("ls", "-l", m.p(c, "/a/b/c/d")).stdout.decode()
    assert "awk2 -> ../../../../etc/alternatives/awk" in out, out


def _loop(container):
    """/d/a -> b, /d/b -> a, after 2,100 files (names sort first): the
    probe of /d that a cold lookup makes stops at its cap before the
    links, so their own HEAD is asked."""
    c = container()
    c.sh("""
        mkdir /d && cd /d && i=1000
        while [ $i -lt 3100 ]; do : > $i; i=$((i+1)); done
        ln -s a b && ln -s b a && echo hi > f
    """)
    return c


def _check_loop_names(m, c):
    for name, target in (("a", "b"), ("b", "a")):
        p = m.p(c, "/d/" + name)
        st = call_with_timeout(os.lstat, p)
        assert stat.S_ISLNK(st.st_mode), name
        assert call_with_timeout(os.readlink, p) == target
        assert st.st_size == len(target)


def test_a_symlink_loop_stats_cold(mount, container):
    """The engine's HEAD (and GET) of a link in a loop is a 500 "too many
    links": lstat of it was EIO."""
    c = _loop(container)
    m = mount()
    _check_loop_names(m, c)


def test_a_symlink_loop_lists(mount, container):
    c = _loop(container)
    m = mount()
    out = run_tool("ls", "-l", m.p(c, "/d")).stdout.decode()
    assert "a -> b" in out and "b -> a" in out, out
    _check_loop_names(m, c)


def test_following_a_symlink_loop_is_eloop(mount, container):
    c = _loop(container)
    m = mount()
    a, b = m.p(c, "/d/a"), m.p(c, "/d/b")
    got = {
        "open": errno_of(lambda: open(a, "rb").close()),
        "stat": errno_of(os.stat, a),
        "listdir": errno_of(os.listdir, b + "/"),
    }
    bad = {k: errname(v) for k, v in got.items() if v != errno.ELOOP}
    assert not bad, bad


def test_a_symlink_loop_in_the_middle_of_a_path_is_eloop(mount, container):
    c = _loop(container)
    m = mount()
    x = m.p(c, "/d/a/x")
    f = m.p(c, "/d/f")
    got = {
        "open": errno_of(lambda: open(x, "rb").close()),
        "create": errno_of(lambda: open(x, "wb").close()),
        "mkdir": errno_of(os.mkdir, x),
        "rename from": errno_of(os.rename, x, m.p(c, "/d/y")),
        "rename to": errno_of(os.rename, f, x),
        "chmod": errno_of(os.chmod, x, 0o600),
        "chown": errno_of(os.chown, x, 1, 1),
        "truncate": errno_of(os.truncate, x, 0),
        "unlink": errno_of(os.unlink, x),
        "rmdir": errno_of(os.rmdir, x),
    }
    bad = {k: errname(v) for k, v in got.items() if v != errno.ELOOP}
    assert not bad, bad
    assert c.cp_out("/d/f") == b"hi\n"


def test_a_loop_the_cache_has_not_seen_yet_is_eloop(mount, container):
    """A directory that became a symlink loop in the container while the
    mount still holds it as a directory: the path reaches ctrfs whole, the
    engine says "too many links" (the PUT of mkdir), the tools "Too many
    levels of symbolic links" (chmod, rm, truncate)."""
    c = container()
    c.sh("mkdir -p /d/s && echo hi > /d/s/x && echo hi > /d/s/y && touch /d/s/z")
    m = mount("-o", "attr_timeout=60")
    sub = m.p(c, "/d/s")
    assert sorted(m.listdir(sub)) == ["x", "y", "z"]
    for n in ("x", "y", "z"):
        call_with_timeout(os.lstat, os.path.join(sub, n))
    c.sh("rm -r /d/s && cd /d && ln -s s2 s && ln -s s s2")
    got = {
        "chmod": errno_of(os.chmod, os.path.join(sub, "x"), 0o600),
        "unlink": errno_of(os.unlink, os.path.join(sub, "y")),
        "truncate": errno_of(os.truncate, os.path.join(sub, "z"), 5),
        "mkdir": errno_of(os.mkdir, os.path.join(sub, "new")),
    }
    bad = {k: errname(v) for k, v in got.items() if v != errno.ELOOP}
    assert not bad, bad


def test_truncate_too_large_is_efbig(mount, container):
    """The container's truncate says "File too large": that was EIO."""
    c = container()
    c.write("/f", b"data\n")
    m = mount()
    f = m.p(c, "/f")
    assert errname(errno_of(os.truncate, f, 999999999999999)) == "EFBIG"
    assert c.cp_out("/f") == b"data\n"


def test_a_container_just_made_is_found(mount, container):
    """The root was listed a moment before `docker run -d`: the new name
    was ENOENT until the container list's TTL passed (a long TTL here, so
    that the moment cannot pass before the lookup)."""
    m = mount("-o", "attr_timeout=60")
    want = None
    missed = []
    for i in range(20):
        m.listdir()
        c = container()
        try:
            call_with_timeout(os.stat, m.p(c, "/etc/passwd"))
            got = call_with_timeout(lambda: open(m.p(c, "/etc/passwd"), "rb").read())
        except FileNotFoundError:
            missed.append(i)
            continue
        want = want or c.cp_out("/etc/passwd")
        assert got == want
    assert not missed, f"{len(missed)} of 20 new containers were ENOENT"


NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]

# Run as nobody: open argv[1] with the flags named in argv[2], write, close.
WRITER = r"""
import os, sys
flags = {"wronly": os.O_WRONLY, "trunc": os.O_WRONLY | os.O_TRUNC,
         "rdwr": os.O_RDWR, "append": os.O_WRONLY | os.O_APPEND}[sys.argv[2]]
fd = os.open(sys.argv[1], flags)
os.write(fd, b"written by nobody\n")
os.close(fd)
"""

# mode before -> mode after a write by a user without CAP_FSETID (Linux's
# setattr_should_drop_sgid(): setgid goes with group execute, and without
# it where the writer is not in the file's group, as nobody is not in
# root's; test_conform.py has the writer in the group)
KILLPRIV = {"suid": (0o4777, 0o777), "sgid": (0o2777, 0o777),
            "both": (0o6777, 0o777), "sgid-noexec": (0o2767, 0o767)}


@pytest.mark.parametrize("how", ["wronly", "trunc", "rdwr", "append"])
def test_a_write_by_another_user_clears_setuid(mount, container, how):
    c = container()
    for name, (mode, _after) in KILLPRIV.items():
        c.write("/" + name, b"root's\n", mode=mode)
    m = mount("-o", "allow_other")
    bad = {}
    for name, (mode, after) in KILLPRIV.items():
        p = m.p(c, "/" + name)
        assert stat.S_IMODE(call_with_timeout(os.lstat, p).st_mode) == mode
        r = run_tool(*NOBODY, "/usr/bin/python3", "-c", WRITER, p, how, check=False)
        assert r.returncode == 0, r.stderr.decode(errors="replace")
        inside = c.stat("/" + name)["perm"]
        seen = wait_for(lambda: stat.S_IMODE(os.lstat(p).st_mode) == after) and after
        seen = seen or stat.S_IMODE(os.lstat(p).st_mode)
        if (inside, seen) != (after, after):
            bad[name] = {"want": oct(after), "container": oct(inside), "mount": oct(seen)}
    assert not bad, bad


def test_a_write_by_root_keeps_setuid(mount, container):
    c = container()
    c.write("/suid", b"root's\n", mode=0o6777)
    m = mount("-o", "allow_other")
    p = m.p(c, "/suid")
    run_tool("/usr/bin/python3", "-c", WRITER, p, "wronly")
    assert c.stat("/suid")["perm"] == 0o6777
    assert stat.S_IMODE(call_with_timeout(os.lstat, p).st_mode) == 0o6777


def test_a_time_read_back_after_a_get_keeps_its_nanoseconds(mount, container):
    """A file written through the mount has an mtime to the nanosecond (the
    PUT's pax header). Reading it is a GET whose tar header has whole
    seconds, and once the attributes' TTL passes a walk lists the directory
    again (tar headers too): the mtime must not lose its nanoseconds, or
    vim warns at every save that the file changed since it was read."""
    c = container()
    c.sh("mkdir /vt")
    m = mount("-o", "attr_timeout=0.2")
    p = m.p(c, "/vt/f")
    with open(p, "wb") as f:
        f.write(b"a\n")
    first = os.stat(p).st_mtime_ns
    assert first % 10**9 != 0, "a whole second: the test proves nothing"
    for step in ("read", "stat", "list"):
        if step == "read":
            with open(p, "rb") as f:
                assert f.read() == b"a\n"
        if step == "list":
            m.listdir(m.p(c, "/vt"))
        time.sleep(0.5)  # past the TTL: the next stat asks again
        assert os.stat(p).st_mtime_ns == first, step
    inside = c.exec("stat", "-c", "%Y %y", "/vt/f").decode().split()
    frac = inside[2].split(".")[1]
    assert int(inside[0]) * 10**9 + int(frac.ljust(9, "0")[:9]) == first


@pytest.mark.parametrize("kind", ["fifo", "chr", "symlink"])
def test_a_hard_link_of_any_non_directory(mount, container, kind):
    """link(2) makes a second name for any file but a directory, as a tar
    hard link entry can: a fifo, a device node, a symlink itself (not its
    target). It gave EPERM for all but regular files."""
    if PODMAN and kind == "symlink":
        pytest.skip("Podman 4.3: its PUT makes a tar hard link to a symlink through the link "
                    "(link(2) of the target: ENOENT for a dangling one), not to the link")
    c = container()
    make = {"fifo": "mkfifo /hl/a", "chr": "mknod /hl/a c 1 3", "symlink": "ln -s target /hl/a"}
    c.sh("mkdir /hl && " + make[kind])
    m = mount()
    call_with_timeout(os.link, m.p(c, "/hl/a"), m.p(c, "/hl/b"), timeout=60)
    inside = c.exec("stat", "-c", "%i %h %F", "/hl/a", "/hl/b").decode().splitlines()
    assert inside[0] == inside[1] and inside[0].split()[1] == "2", inside
    st_a, st_b = os.lstat(m.p(c, "/hl/a")), os.lstat(m.p(c, "/hl/b"))
    assert stat.S_IFMT(st_b.st_mode) == stat.S_IFMT(st_a.st_mode)
    assert (st_a.st_ino, st_a.st_nlink) == (st_b.st_ino, 2)
    if kind == "symlink":
        assert os.readlink(m.p(c, "/hl/b")) == "target"


def test_a_hard_link_of_a_directory_is_eperm(mount, container):
    c = container()
    c.sh("mkdir -p /hd/d")
    m = mount()
    e = errno_of(os.link, m.p(c, "/hd/d"), m.p(c, "/hd/e"))
    assert e == errno.EPERM, errname(e)
    assert c.exec("ls", "/hd").split() == [b"d"]


def test_rename_and_link_across_containers_are_exdev(mount, container):
    """Two containers are two filesystems: mv falls back to a copy on EXDEV."""
    a, b = container(), container()
    a.sh("echo x > /tmp/f")
    m = mount()
    for fn in (os.rename, os.link):
        e = errno_of(fn, m.p(a, "/tmp/f"), m.p(b, "/tmp/g"))
        assert e == errno.EXDEV, f"{fn.__name__}: {errname(e)}"
    assert a.exec("cat", "/tmp/f") == b"x\n"
    run_tool("mv", m.p(a, "/tmp/f"), m.p(b, "/tmp/g"))
    assert b.exec("cat", "/tmp/g") == b"x\n"
    assert a.exec("ls", "/tmp").split() == []


def test_open_files_and_a_cwd_follow_a_renamed_container(mount, container):
    """docker rename C C2 (issue 26): C2/... works and C is ENOENT at the
    top, while what was open under C (a file read, a file written, a
    directory, a shell's cwd) follows the container by its id: reads,
    writes, fstat and lookups below go on."""
    import subprocess

    c = container()
    data = os.urandom(300_000)
    c.sh("mkdir -p /t/sub && echo hi > /t/sub/x")
    c.write("/t/data", data)
    m = mount("-o", "attr_timeout=0")  # every fstat and lookup asks ctrfs
    rfd = os.open(m.p(c, "/t/data"), os.O_RDONLY)
    wfd = os.open(m.p(c, "/t/new"), os.O_WRONLY | os.O_CREAT, 0o644)
    dfd = os.open(m.p(c, "/t"), os.O_RDONLY | os.O_DIRECTORY)
    shell = subprocess.Popen(["sh", "-c", "read x; cat sub/x; ls"], cwd=m.p(c, "/t"),
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        first = os.read(rfd, 1000)
        os.write(wfd, b"before ")
        old, new = c.name, c.name + "-2"
        c.docker("rename", old, new)
        c.name = new
        assert wait_for(lambda: not os.path.exists(m.p(old)), timeout=10), "the old name stays"
        assert errno_of(os.stat, m.p(old)) == errno.ENOENT
        assert errno_of(os.stat, m.p(old, "/t/data")) == errno.ENOENT
        assert new in m.listdir() and old not in m.listdir()
        with open(m.p(new, "/t/data"), "rb") as f:
            assert f.read() == data
        # the open file being read: fstat and the rest of its data
        assert os.fstat(rfd).st_size == len(data)
        rest = b""
        while True:
            b = os.read(rfd, 65536)
            if not b:
                break
            rest += b
        assert first + rest == data
        # the file being written: more data, fstat, and its commit
        os.write(wfd, b"after")
        assert os.fstat(wfd).st_size == len(b"before after")
        os.close(wfd)
        wfd = None
        assert c.exec("cat", "/t/new") == b"before after"
        # an open directory and a cwd: lookups below them
        assert os.stat("sub/x", dir_fd=dfd).st_size == 3
        assert "data" in os.listdir(dfd)
        out, err = shell.communicate(b"go\n", timeout=60)
        assert shell.returncode == 0, err
        assert out.split(b"\n")[0] == b"hi" and b"data" in out
    finally:
        if shell.poll() is None:
            shell.kill()
            shell.wait()
        os.close(rfd)
        os.close(dfd)
        if wfd is not None:
            os.close(wfd)
