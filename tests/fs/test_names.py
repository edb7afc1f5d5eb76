# SPDX-License-Identifier: GPL-2.0-or-later
"""Awkward names, deep trees and large directories."""

import errno
import os
import time

import pytest

from conftest import ENGINE_KIND, PODMAN, call_with_timeout, errname, errno_of, podman_pattern, read_file

ODD_NAMES = [
    "with space",
    "  leading and trailing  ",
    "ünïcødé ✓",
    "new\nline",
    "tab\there",
    "quote'and\"double",
    "back\\slash",
    "percent%20and?query&x=y#frag",
    "-starts-with-dash",
    "*?[glob]",
]


def test_odd_names(mount, container):
    c = container()
    c.exec("mkdir", "/odd")
    names = [n for n in ODD_NAMES if not podman_pattern(n)]
    for i, name in enumerate(ODD_NAMES):
        c.sh('printf "%s" "$1" > "/odd/$2"', f"content {i}", name)
        c.exec("mkdir", f"/odd/dir {name}")
        c.sh('printf "%s" "$1" > "/odd/dir $2/inner $2"', f"inner {i}", name)
    m = mount()
    listed = m.listdir(m.p(c, "/odd"))
    want = set(ODD_NAMES) | {f"dir {n}" for n in ODD_NAMES}
    assert set(listed) == want, {"missing": want - set(listed), "extra": set(listed) - want}
    for i, name in enumerate(ODD_NAMES):
        if name not in names:
            continue  # Podman: refused, test_pattern_names_on_podman
        assert call_with_timeout(read_file, m.p(c, f"/odd/{name}")) == f"content {i}".encode(), name
        inner = m.p(c, f"/odd/dir {name}/inner {name}")
        assert m.listdir(os.path.dirname(inner)) == [f"inner {name}"]
        assert call_with_timeout(read_file, inner) == f"inner {i}".encode(), name
    assert c.cp_out("/odd/new\nline") == b"content 3"


@pytest.mark.skipif(not PODMAN, reason="Podman's archive API alone takes a path for a glob")
def test_pattern_names_on_podman(mount, container):
    """Podman's archive calls take the path for a glob: '[ab]' would stat
    as missing and read the file 'a', 'back\\slash' would read 'backslash'.
    A name ctrfs must reach by an archive call of its own path is refused
    with EOPNOTSUPP and one log line; what a listing of the directory
    brought is served, right; no other file is touched."""
    c = container()
    c.sh('mkdir /g && cd /g && echo A > a && echo B > b && echo lit > "[ab]" && '
         'echo plain > backslash && echo esc > "back\\slash" && echo q > "q?" && echo qx > qx')
    want = {"[ab]": b"lit\n", "back\\slash": b"esc\n", "q?": b"q\n"}
    # nothing trusted past its first use: a HEAD of the path itself
    m = mount("-o", "attr_timeout=0")
    for name, data in want.items():
        e = errno_of(os.stat, m.p(c, "/g/" + name))
        assert e == errno.EOPNOTSUPP, f"stat {name!r} before any listing: {errname(e)}"
    with open(m.log, errors="replace") as f:
        assert "cannot stat '/g/[ab]' in container" in f.read()

    def read_or_errno(path):
        try:
            return call_with_timeout(read_file, path)
        except OSError as e:
            return e.errno

    # listed: the names show, and a read gives the right bytes or EOPNOTSUPP
    m2 = mount()
    assert sorted(m2.listdir(m2.p(c, "/g"))) == sorted(["a", "b", "backslash", "qx", *want])
    for name, data in want.items():
        got = read_or_errno(m2.p(c, "/g/" + name))
        assert got in (data, errno.EOPNOTSUPP), f"reading {name!r}: {got!r}"
    got = {n: c.cp_out("/g/" + n) for n in ("a", "b", "backslash", "qx")}
    assert got == {"a": b"A\n", "b": b"B\n", "backslash": b"plain\n", "qx": b"qx\n"}
    assert c.exec("cat", "/g/[ab]", "/g/back\\slash", "/g/q?") == b"lit\nesc\nq\n"
    assert m.alive() and m2.alive()


def test_deep_tree(mount, container):
    c = container()
    parts = [f"level{i:02d}" for i in range(40)]
    deep = "/deep/" + "/".join(parts)
    c.exec("mkdir", "-p", deep)
    c.sh('echo bottom > "$1/bottom.txt"', deep)
    m = mount()

    def walk():
        return [(os.path.relpath(d, m.p(c, "/deep")), sorted(dirs), sorted(files))
                for d, dirs, files in os.walk(m.p(c, "/deep"))]

    seen = call_with_timeout(walk, timeout=120)
    assert len(seen) == 41
    assert seen[-1] == ("/".join(parts), [], ["bottom.txt"])
    assert call_with_timeout(read_file, m.p(c, deep + "/bottom.txt")) == b"bottom\n"


def test_thousand_entries(mount, container):
    c = container()
    c.sh('mkdir /many && cd /many && for i in $(seq -w 1 1000); do echo "$i" > "f$i"; done')
    inside = sorted(c.exec("ls", "-A", "/many").decode().split("\n")[:-1])
    assert len(inside) == 1000
    m = mount()
    listed = sorted(m.listdir(m.p(c, "/many")))
    assert listed == inside
    assert call_with_timeout(read_file, m.p(c, "/many/f0500")) == b"0500\n"
    assert call_with_timeout(read_file, m.p(c, "/many/f1000")) == b"1000\n"


def test_names_that_are_not_utf8(mount, container):
    """A Latin-1 name is bytes to the kernel and to the engine: it lists,
    reads and writes like any other (libarchive warns about it, which
    must not turn into an error)."""
    c = container()
    c.sh('mkdir /l1 && printf old > "/l1/caf$(printf "\\351")"')
    m = mount()
    d = os.fsencode(m.p(c, "/l1"))
    assert call_with_timeout(os.listdir, d) == [b"caf\xe9"]
    assert call_with_timeout(read_file, d + b"/caf\xe9") == b"old"

    def write(name, data):
        fd = os.open(d + b"/" + name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)  # the commit: its error would be raised here

    call_with_timeout(write, b"caf\xe9", b"new")
    call_with_timeout(write, b"na\xefve", b"made")
    call_with_timeout(os.mkdir, d + b"/dir\xff")
    out = c.sh('cd /l1 && for f in *; do printf "%s" "$f" | od -An -tx1 | tr -d " \\n"; echo -n =; '
               'if [ -f "$f" ]; then cat "$f"; else echo -n dir; fi; echo; done')
    # each entry: its name's bytes in hex, then its content (or "dir")
    assert sorted(out.split()) == [b"636166e9=new", b"646972ff=dir", b"6e61ef7665=made"], out


def test_a_path_near_path_max_made_in_the_container_is_read(mount, container):
    """A file at 4,050 bytes from the container's root, made inside it:
    lstat, the listing of its directory and a read work through the mount
    on every engine, and an lstat past the TTL (a HEAD) too. Docker 20.10
    stats a HEAD's and a GET's path from its host, under the container's
    root there, and refuses one that the root's own path takes past
    PATH_MAX (500, no body to say why): that was EIO. The GET of its
    directory, a shorter path, answers the stat there."""
    c = container()
    seg, name = "d" * 200, "f" * 225
    c.sh(f"mkdir /deep && cd /deep && for i in $(seq 19); do mkdir {seg} && cd {seg}; done && "
         f"printf hello > {name}")
    m = mount("-d")
    fd = os.open(m.p(c, "/deep"), os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(19):
            nfd = call_with_timeout(lambda: os.open(seg, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd))
            os.close(fd)
            fd = nfd
        st = call_with_timeout(lambda: os.stat(name, dir_fd=fd, follow_symlinks=False))
        assert st.st_size == 5
        assert os.listdir(fd) == [name]
        rfd = call_with_timeout(lambda: os.open(name, os.O_RDONLY, dir_fd=fd))
        try:
            assert os.read(rfd, 100) == b"hello"
        finally:
            os.close(rfd)
        # past the attributes' TTL: a stat of one entry is a HEAD (the
        # listing answered the ones above)
        time.sleep(1.5)
        st = call_with_timeout(lambda: os.stat(name, dir_fd=fd, follow_symlinks=False))
        assert st.st_size == 5
    finally:
        os.close(fd)
    with open(m.log, errors="replace") as f:
        log = f.read()
    if ENGINE_KIND == "docker-20.10":
        assert "the GET of its directory answered" in log, "no HEAD was refused: the test proves nothing"


def test_names_and_paths_too_long(mount, container):
    """FUSE passes names of up to 1024 bytes and paths of any length; the
    container's kernel takes 255 and 4095, and the engine answered longer
    ones with a 500 (EIO here, and at `close` after a write that seemed to
    work). They fail with ENAMETOOLONG at once, as on a local disk."""
    import errno
    c = container()
    c.exec("mkdir", "/long")
    m = mount()
    base = m.p(c, "/long")
    name = "é" * 127 + "x"  # 255 bytes
    with open(os.path.join(base, name), "wb") as f:
        f.write(b"fits\n")
    assert c.exec("cat", "/long/" + name) == b"fits\n"
    too_long = "b" * 256
    for call in (lambda p: os.open(p, os.O_CREAT | os.O_WRONLY, 0o644),
                 os.mkdir, os.stat, lambda p: os.symlink("x", p)):
        try:
            call_with_timeout(call, os.path.join(base, too_long))
        except OSError as e:
            assert e.errno == errno.ENAMETOOLONG, e
        else:
            raise AssertionError(f"{call} of a 256-byte name succeeded")
    # a path of 4096 bytes inside the container: 20 directories of 200
    # bytes, then one name that takes it to 4096 (made relative to a
    # descriptor: the host's own path to it would pass PATH_MAX first).
    # A shorter name there may still be too long for the engine, which
    # resolves the PUT's directory under its data root on its own host:
    # that is ENAMETOOLONG too, from the engine's reason, never EIO.
    fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY)
    inner = "/long"
    try:
        for _ in range(20):
            seg = "d" * 200
            inner += "/" + seg
            call_with_timeout(lambda: os.mkdir(seg, dir_fd=fd))
            nfd = os.open(seg, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = nfd
        last = "f" * (4096 - len(inner) - 1)
        try:
            call_with_timeout(lambda: os.mkdir(last, dir_fd=fd))
        except OSError as e:
            assert e.errno == errno.ENAMETOOLONG, e
        else:
            raise AssertionError("a path of 4096 bytes was made")
        try:
            call_with_timeout(lambda: os.mkdir("short", dir_fd=fd))
            made = True
        except OSError as e:
            assert e.errno == errno.ENAMETOOLONG, e
            made = False
    finally:
        os.close(fd)
    assert c.exec("ls", inner) == (b"short\n" if made else b"")
