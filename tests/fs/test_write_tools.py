# SPDX-License-Identifier: GPL-2.0-or-later
"""Ordinary tools on the host, run on a container with a shell
(ctrfs-test/busybox): after each one the container holds the result, and the
mount shows the same as `docker exec` at once."""

import errno
import io
import os
import re
import stat
import tarfile
import time

import pytest

from conftest import (call_with_timeout, compare_stat, errname, errno_of, host_stat, host_tree,
                      podman_limit, read_file, run_tool, sha256_file, tar_tree, tree_diff)

INSIDE_VIEW = r"""
for p in "$@"; do
    if [ -e "$p" ] || [ -L "$p" ]; then
        echo "S $(stat -c '%s %a %u %g %Y %F' "$p")"
    else
        echo "S MISSING"
    fi
    echo "L $(ls -A "$(dirname "$p")" | tr '\n' /)"
done
"""


def disagreements(m, c, *paths):
    """Where lstat and the parent's listing through the mount differ from
    what `docker exec` shows for each path (one exec for all of them)."""
    out = c.sh(INSIDE_VIEW, *paths).decode().splitlines()
    wrong = {}
    for i, path in enumerate(paths):
        s, listing = out[2 * i][2:], out[2 * i + 1][2:]
        inside_names = sorted(n for n in listing.split("/") if n)
        mount_names = sorted(m.listdir(os.path.dirname(m.p(c, path))))
        if mount_names != inside_names:
            wrong[path + " (parent listing)"] = (mount_names, inside_names)
        if s == "MISSING":
            e = errno_of(os.lstat, m.p(c, path))
            if e != errno.ENOENT:
                wrong[path] = (f"lstat through the mount: {errname(e)}", "missing inside")
        else:
            d = compare_stat(c, m.p(c, path), path)
            if d:
                wrong[path] = d
    return wrong


def warm(m, c, *paths):
    """Look the paths up through the mount first, so stale caches would show."""
    for p in paths:
        call_with_timeout(os.lstat, m.p(c, p))
        call_with_timeout(os.listdir, os.path.dirname(m.p(c, p)))


def test_cp_file(mount, container, tmp_path):
    src = tmp_path / "report.bin"
    src.write_bytes(os.urandom(123_456))
    c = container()
    m = mount()
    run_tool("cp", src, m.p(c, "/tmp/"))
    assert c.cp_sha256("/tmp/report.bin") == sha256_file(src)
    assert not disagreements(m, c, "/tmp/report.bin")


def test_cp_r_tree(mount, container, tmp_path):
    src = tmp_path / "tree"
    for d in ("a/b/c", "a/empty", "d"):
        (src / d).mkdir(parents=True)
    (src / "top.txt").write_bytes(b"top\n")
    (src / "a" / "one.bin").write_bytes(os.urandom(70_000))
    (src / "a" / "b" / "c" / "deep").write_bytes(b"deep\n")
    (src / "d" / "zero").write_bytes(b"")
    os.symlink("one.bin", src / "a" / "link")  # "../" links: test_symlink_relative
    c = container()
    m = mount()
    run_tool("cp", "-r", src, m.p(c, "/tmp/"))
    keys = ("type", "size", "sha256", "target")
    want = host_tree(str(src))
    assert not tree_diff(tar_tree(c, "/tmp/tree"), want, keys), "docker cp (got) vs source (want)"
    assert not tree_diff(host_tree(m.p(c, "/tmp/tree")), want, keys), "mount (got) vs source (want)"


def test_mkdir_p(mount, container):
    c = container()
    m = mount()
    run_tool("mkdir", "-p", m.p(c, "/tmp/a/b/c"))
    assert c.stat("/tmp/a/b/c")["type"] == "dir"
    assert not disagreements(m, c, "/tmp/a/b/c")
    # a and a/b got their mtimes bumped by the next mkdir: only their other
    # attributes here (test_parent_mtime_follows_change covers mtimes).
    for p in ("/tmp/a", "/tmp/a/b"):
        assert not compare_stat(c, m.p(c, p), p, keys=("perm", "uid", "gid", "type")), p
    assert m.listdir(m.p(c, "/tmp/a")) == ["b"]


def test_cp_over_existing_keeps_mode_and_owner(mount, container, tmp_path):
    src = tmp_path / "new-content"
    src.write_bytes(os.urandom(20_000))
    os.chmod(src, 0o644)
    c = container()
    c.write("/tmp/conf", b"old secret\n", mode=0o600, owner="1234:5678")
    m = mount()
    warm(m, c, "/tmp/conf")
    # cp opens the existing file with O_TRUNC: the file keeps its mode and owner.
    run_tool("cp", src, m.p(c, "/tmp/conf"))
    assert c.cp_sha256("/tmp/conf") == sha256_file(src)
    st = c.stat("/tmp/conf")
    assert (st["perm"], st["uid"], st["gid"], st["size"]) == (0o600, 1234, 5678, 20_000)
    assert not disagreements(m, c, "/tmp/conf")


def _tarball(path):
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as tf:
        def add(name, kind=tarfile.REGTYPE, data=None, mode=0o644, uid=0, gid=0,
                mtime=1500000000, linkname=""):
            ti = tarfile.TarInfo(name)
            ti.type, ti.mode, ti.uid, ti.gid, ti.mtime, ti.linkname = kind, mode, uid, gid, mtime, linkname
            if data is not None:
                ti.size = len(data)
            tf.addfile(ti, io.BytesIO(data) if data is not None else None)

        add("pkg", tarfile.DIRTYPE, mode=0o755, mtime=1400000000)
        add("pkg/bin", tarfile.DIRTYPE, mode=0o755, mtime=1400000001)
        add("pkg/bin/tool", data=os.urandom(40_000), mode=0o755, uid=1234, gid=5678)
        add("pkg/etc", tarfile.DIRTYPE, mode=0o750, uid=0, gid=5678, mtime=1400000002)
        add("pkg/etc/conf", data=b"key=value\n", mode=0o640, gid=5678, mtime=1500000001)
        add("pkg/share", tarfile.DIRTYPE, mode=0o755, mtime=1400000003)
        add("pkg/share/data.bin", data=os.urandom(100_000), mode=0o444, mtime=1500000002)
        add("pkg/share/link", tarfile.SYMTYPE, linkname="data.bin", mode=0o777)
        add("pkg/share/hard", tarfile.LNKTYPE, linkname="pkg/share/data.bin", mode=0o444,
            mtime=1500000002)
        add("pkg/empty", tarfile.DIRTYPE, mode=0o700, uid=1000, gid=100, mtime=1400000004)


def test_tar_x(mount, container, tmp_path):
    tarball = tmp_path / "pkg.tar"
    _tarball(tarball)
    ref = tmp_path / "ref"
    ref.mkdir()
    run_tool("tar", "xf", tarball, "-C", ref)
    c = container()
    c.exec("mkdir", "/opt")
    m = mount()
    run_tool("tar", "xf", tarball, "-C", m.p(c, "/opt"))
    got = tar_tree(c, "/opt/pkg")
    assert not tree_diff(got, host_tree(str(ref / "pkg"))), "docker cp (got) vs tar x on the host (want)"
    inodes = c.exec("stat", "-c", "%i", "/opt/pkg/share/data.bin", "/opt/pkg/share/hard").split()
    assert inodes[0] == inodes[1], "the hard link is a separate file inside"
    assert not tree_diff(host_tree(m.p(c, "/opt/pkg")), host_tree(str(ref / "pkg"))), "mount (got) vs want"


def test_echo_redirect_creates(mount, container):
    c = container()
    m = mount()
    run_tool("sh", "-c", 'echo x > "$1"', "sh", m.p(c, "/tmp/f"))
    assert c.exec("cat", "/tmp/f") == b"x\n"
    assert not disagreements(m, c, "/tmp/f")


def test_echo_redirect_truncates(mount, container):
    c = container()
    c.write("/tmp/f", b"a much longer old content\n")
    m = mount()
    warm(m, c, "/tmp/f")
    run_tool("sh", "-c", 'echo x > "$1"', "sh", m.p(c, "/tmp/f"))
    assert c.exec("cat", "/tmp/f") == b"x\n"
    assert call_with_timeout(read_file, m.p(c, "/tmp/f")) == b"x\n"
    assert not disagreements(m, c, "/tmp/f")


def test_echo_append(mount, container):
    c = container()
    c.write("/tmp/f", b"x\n")
    m = mount()
    warm(m, c, "/tmp/f")
    run_tool("sh", "-c", 'echo y >> "$1"', "sh", m.p(c, "/tmp/f"))
    assert c.exec("cat", "/tmp/f") == b"x\ny\n"
    assert call_with_timeout(read_file, m.p(c, "/tmp/f")) == b"x\ny\n"
    assert not disagreements(m, c, "/tmp/f")


@podman_limit("its archive API reports every owner as 0:0: sed -i gives its new file the owner the mount shows")
def test_sed_i(mount, container):
    c = container()
    c.write("/tmp/f", b"x\nxx\nabc\n", mode=0o640, owner="1234:5678")
    m = mount()
    warm(m, c, "/tmp/f")
    run_tool("sed", "-i", "s/x/z/", m.p(c, "/tmp/f"))
    assert c.exec("cat", "/tmp/f") == b"z\nzx\nabc\n"
    st = c.stat("/tmp/f")
    assert (st["perm"], st["uid"], st["gid"]) == (0o640, 1234, 5678), "sed -i keeps mode and owner"
    assert call_with_timeout(read_file, m.p(c, "/tmp/f")) == b"z\nzx\nabc\n"
    assert not disagreements(m, c, "/tmp/f")
    assert sorted(c.exec("ls", "-A", "/tmp").split()) == [b"f"], "sed's temporary file is left behind"


def test_touch_new(mount, container):
    c = container()
    m = mount()
    run_tool("touch", m.p(c, "/tmp/new"))
    st = c.stat("/tmp/new")
    assert (st["type"], st["size"]) == ("file", 0)
    assert not disagreements(m, c, "/tmp/new")


def test_touch_d_existing(mount, container):
    c = container()
    c.write("/tmp/old", b"keep me\n")
    m = mount()
    warm(m, c, "/tmp/old")
    run_tool("touch", "-d", "@1700000000", m.p(c, "/tmp/old"))
    assert c.stat("/tmp/old")["mtime"] == 1700000000
    assert int(call_with_timeout(os.stat, m.p(c, "/tmp/old")).st_mtime) == 1700000000
    assert c.exec("cat", "/tmp/old") == b"keep me\n"
    assert not disagreements(m, c, "/tmp/old")


def test_touch_of_an_existing_file_moves_no_content(mount, container):
    """`touch F` opens F for writing and sets its times through the
    descriptor. That open used to copy F in (a GET of all of it) and its
    close put F back (a PUT of all of it, a new file in the container, so
    F lost its hard links). An open for writing takes the content in at
    its first write now; an append after it still lands."""
    c = container()
    c.write("/tmp/big", b"x" * (3 << 20))
    c.exec("ln", "/tmp/big", "/tmp/big2")
    inode = c.exec("stat", "-c", "%i", "/tmp/big")
    m = mount("-d")
    warm(m, c, "/tmp/big")
    run_tool("touch", "-d", "@1700000000", m.p(c, "/tmp/big"))
    run_tool("touch", "-c", "-d", "@1700000100", m.p(c, "/tmp/big2"))
    log = open(m.log, errors="replace").read()
    assert not re.search(r"engine: GET [0-9a-f]+:/tmp/big", log)
    assert not re.search(r"engine: PUT ", log)
    assert c.exec("stat", "-c", "%i %h %Y", "/tmp/big", "/tmp/big2").split() == \
        [inode.strip(), b"2", b"1700000100"] * 2
    assert int(call_with_timeout(os.stat, m.p(c, "/tmp/big2")).st_mtime) == 1700000100
    # a write goes through both names (the container's head, not a PUT)
    m.listdir(m.p(c, "/tmp"))
    with open(m.p(c, "/tmp/big"), "ab") as f:
        f.write(b"tail\n")
    assert c.exec("tail", "-c", "6", "/tmp/big2") == b"xtail\n"
    assert c.exec("stat", "-c", "%i %h %s", "/tmp/big", "/tmp/big2").split() == \
        [inode.strip(), b"2", str((3 << 20) + 5).encode()] * 2
    log = open(m.log, errors="replace").read()
    assert " had 2 hard links: " not in log


def test_a_write_to_a_hard_linked_file_goes_through_every_name(mount, container, tmp_path):
    """A PUT puts a new file under the name it writes, so a write through
    one name of a hard-linked file used to leave the others with the old
    content (and the written name with a file of its own). The commit
    writes the spool through the container's own `head` instead: one file,
    its number and its link count kept, every name showing the new bytes,
    through the mount at once (the kernel's attributes of the other name
    dropped) and in the container, its mode (setuid, written by root) kept;
    a cp over it (O_TRUNC) too."""
    c = container()
    c.sh("printf 'old old old\\n' > /tmp/a; ln /tmp/a /tmp/b; mkdir /tmp/d; "
         "ln /tmp/a /tmp/d/c; chmod 4755 /tmp/a")
    ino = c.exec("stat", "-c", "%i", "/tmp/a").strip()
    m = mount("-d")
    warm(m, c, "/tmp/a", "/tmp/b", "/tmp/d/c")
    assert call_with_timeout(os.stat, m.p(c, "/tmp/b")).st_nlink == 3
    with open(m.p(c, "/tmp/a"), "r+b") as f:
        f.write(b"new")
    assert call_with_timeout(read_file, m.p(c, "/tmp/b")) == b"new old old\n"
    assert c.exec("cat", "/tmp/b", "/tmp/d/c") == b"new old old\n" * 2
    assert c.exec("stat", "-c", "%i %h %a", "/tmp/a", "/tmp/b", "/tmp/d/c").split() == \
        [ino, b"3", b"4755"] * 3
    st = [call_with_timeout(os.stat, m.p(c, p)) for p in ("/tmp/a", "/tmp/b", "/tmp/d/c")]
    assert len({s.st_ino for s in st}) == 1 and {s.st_nlink for s in st} == {3}
    assert not disagreements(m, c, "/tmp/a", "/tmp/b", "/tmp/d/c")
    # a cp over one name (O_TRUNC): the same file, shorter
    src = tmp_path / "short"
    src.write_bytes(b"short\n")
    run_tool("cp", src, m.p(c, "/tmp/d/c"))
    assert c.exec("cat", "/tmp/a") == b"short\n"
    assert c.exec("stat", "-c", "%i %h", "/tmp/a").split() == [ino, b"3"]
    assert call_with_timeout(read_file, m.p(c, "/tmp/a")) == b"short\n"
    assert not disagreements(m, c, "/tmp/a", "/tmp/b", "/tmp/d/c")
    log = open(m.log, errors="replace").read()
    assert " hard links: " not in log
    assert not re.search(r"engine: PUT [0-9a-f]+:/tmp", log)


def test_the_other_names_of_a_file_written_through_show_its_new_size_at_once(mount, container):
    """The kernel keeps attributes per name (a node per path): the close
    of a write through one name drops those of the others it knew, so a
    stat of another name right after shows the new size, not the one the
    kernel held for up to the attribute timeout."""
    c = container()
    c.sh("printf 'short\\n' > /tmp/s; ln /tmp/s /tmp/s2")
    m = mount("-o", "attr_timeout=30")
    assert call_with_timeout(os.stat, m.p(c, "/tmp/s2")).st_size == 6
    with open(m.p(c, "/tmp/s"), "ab") as f:
        f.write(b"and longer now\n")
    assert c.exec("cat", "/tmp/s2") == b"short\nand longer now\n"
    assert call_with_timeout(os.stat, m.p(c, "/tmp/s2")).st_size == 21


def test_a_hard_linked_file_keeps_its_times_to_the_second_where_touch_has_no_fraction(
        mount, container):
    """Times set on an open hard-linked file go with its write through the
    names (`touch -d`); busybox's touch takes no fraction, so they land to
    the second, the mount says the same, and one line says so."""
    c = container()
    c.sh("printf 'x\\n' > /tmp/t; ln /tmp/t /tmp/t2")
    m = mount("-d")
    with open(m.p(c, "/tmp/t"), "r+b") as f:
        f.write(b"y")
        f.flush()
        os.utime(f.fileno(), ns=(1700000000_250000000, 1700000000_500000000))
    assert c.exec("cat", "/tmp/t2") == b"y\n"
    assert c.stat("/tmp/t2")["mtime"] == 1700000000
    st = call_with_timeout(os.stat, m.p(c, "/tmp/t"))
    assert (st.st_mtime_ns, st.st_nlink) == (1700000000_000000000, 2)
    assert not disagreements(m, c, "/tmp/t", "/tmp/t2")
    assert "its 'touch' takes no fraction: times set to the second" in \
        open(m.log, errors="replace").read()


def test_a_hard_link_the_mount_has_not_seen_is_written_through_too(mount, container):
    """A listing counts only the names within it: a file whose other name
    lives in another directory shows one link. Its commit asks the
    container's `stat` for the count (one line to the kept shell), so the
    write still goes through both names; a file the mount has just made
    is not asked again (rsync's times by a copy right after its close)."""
    c = container()
    # the first look at / stops before /x and /y (as test_read's does)
    c.sh("head -c 9437184 /dev/zero > /0-first-look-stops-here; "
         "mkdir -p /x /y; printf 'one\\n' > /x/a; ln /x/a /y/b")
    m = mount("-d")
    assert m.listdir(m.p(c, "/x")) == ["a"]
    assert call_with_timeout(os.stat, m.p(c, "/x/a")).st_nlink == 1  # all it has seen
    with open(m.p(c, "/x/a"), "ab") as f:
        f.write(b"two\n")
    assert c.exec("cat", "/y/b") == b"one\ntwo\n"
    assert c.exec("stat", "-c", "%h", "/x/a").strip() == b"2"
    assert call_with_timeout(os.stat, m.p(c, "/x/a")).st_nlink == 2
    with open(m.p(c, "/x/new"), "wb") as f:
        f.write(b"new\n")
    run_tool("touch", "-d", "@1700000000.5", m.p(c, "/x/new"))
    log = open(m.log, errors="replace").read()
    assert len(re.findall(r"name\(s\) there, counted by its stat", log)) == 1, log[-3000:]
    assert " had 1 hard links: " not in log and " had 2 hard links: " not in log


def test_a_hard_linked_file_the_containers_user_may_not_write_is_put(mount, container):
    """The container's tools run as its user, the archive API as root: a
    hard-linked file that user may not write still takes the write, by a
    PUT (a new file under the name, as where no shell runs), and the log
    says why."""
    c = container(args=("--user", "65534"))
    c.engine.docker("exec", "--user", "0", c.name, "sh", "-c",
                    "printf 'root only\\n' > /tmp/r; ln /tmp/r /tmp/r2; chmod 644 /tmp/r")
    m = mount("-d")
    with open(m.p(c, "/tmp/r"), "ab") as f:
        f.write(b"more\n")
    assert c.cp_out("/tmp/r") == b"root only\nmore\n"
    assert c.cp_out("/tmp/r2") == b"root only\n"
    log = open(m.log, errors="replace").read()
    assert "cannot be written through its hard links there: " in log
    assert "'/tmp/r' in container " in log and " had 2 hard links: " in log


@podman_limit("its archive API reports every owner as 0:0: a write over an existing file "
              "of a shell-less container is EOPNOTSUPP there")
def test_a_hard_linked_file_without_a_shell_is_put_and_says_so(mount, container):
    """Where the container has no shell to write through the names with (a
    shell-less image), the write still lands, by a PUT: a new file under
    the written name, the other keeping the old content, and one log line
    says so."""
    c = container("static")
    m = mount("-d")
    os.link(m.p(c, "/data/hello.txt"), m.p(c, "/data/hello2"))
    assert call_with_timeout(os.stat, m.p(c, "/data/hello2")).st_nlink == 2
    with open(m.p(c, "/data/hello.txt"), "ab") as f:
        f.write(b"more\n")
    assert c.cp_out("/data/hello.txt") == b"hello from a shell-less container\nmore\n"
    assert c.cp_out("/data/hello2") == b"hello from a shell-less container\n"
    assert call_with_timeout(os.stat, m.p(c, "/data/hello.txt")).st_nlink == 1
    log = open(m.log, errors="replace").read()
    assert "'/data/hello.txt' in container " in log and " had 2 hard links: " in log


def test_a_file_removed_between_open_and_first_write(mount, container):
    """A write-only open copies the file in at its first write; if the
    container removed it in between, that write fails with EIO and one log
    line (write(2) has no ENOENT), and the close lands nothing."""
    c = container()
    c.write("/tmp/gone", b"old\n")
    m = mount("-d")
    warm(m, c, "/tmp/gone")
    fd = call_with_timeout(os.open, m.p(c, "/tmp/gone"), os.O_WRONLY | os.O_APPEND)
    try:
        c.exec("rm", "/tmp/gone")
        time.sleep(1.3)  # past the attribute timeout
        with pytest.raises(OSError) as e:
            os.write(fd, b"new\n")
        assert e.value.errno == errno.EIO
    finally:
        os.close(fd)
    assert "cannot write " in open(m.log, errors="replace").read()
    assert c.exec("ls", "/tmp").split().count(b"gone") == 0


def test_chmod(mount, container):
    c = container()
    c.write("/tmp/f", b"data\n", mode=0o644)
    m = mount()
    warm(m, c, "/tmp/f")
    run_tool("chmod", "0640", m.p(c, "/tmp/f"))
    assert c.stat("/tmp/f")["perm"] == 0o640
    assert host_stat(m.p(c, "/tmp/f"))["perm"] == 0o640
    assert c.exec("cat", "/tmp/f") == b"data\n"
    assert not disagreements(m, c, "/tmp/f")


@podman_limit("its archive API reports every owner as 0:0, so the mount cannot show the new one")
def test_chown(mount, container):
    c = container()
    c.write("/tmp/f", b"data\n")
    m = mount()
    warm(m, c, "/tmp/f")
    run_tool("chown", "1234:5678", m.p(c, "/tmp/f"))
    st = c.stat("/tmp/f")
    assert (st["uid"], st["gid"]) == (1234, 5678)
    st = host_stat(m.p(c, "/tmp/f"))
    assert (st["uid"], st["gid"]) == (1234, 5678)
    assert c.exec("cat", "/tmp/f") == b"data\n"
    assert not disagreements(m, c, "/tmp/f")


def test_symlink_target_verbatim(mount, container):
    c = container()
    c.exec("ln", "-s", "/etc/target", "/tmp/made-inside")
    m = mount()
    run_tool("ln", "-s", "/etc/target", m.p(c, "/tmp/l"))
    assert c.exec("readlink", "/tmp/l") == b"/etc/target\n"
    assert c.stat("/tmp/l")["type"] == "symlink"
    # Through the mount it reads like the same link made inside: the target
    # the container has (readlink by docker exec, docker cp's tar entry),
    # made relative to the link's directory: followed through the mount, it
    # leads to that target in the container's directory.
    for name in ("/tmp/l", "/tmp/made-inside"):
        inside = c.exec("readlink", name).decode().rstrip("\n")
        header = c.cp_headers(name)[os.path.basename(name)]
        assert header.issym() and header.linkname == inside == "/etc/target", name
        got = call_with_timeout(os.readlink, m.p(c, name))
        assert not got.startswith("/"), (name, got)
        followed = os.path.normpath(os.path.join(os.path.dirname(m.p(c, name)), got))
        assert followed == m.p(c, inside), (name, got)
    assert not disagreements(m, c, "/tmp/l")


def test_symlink_relative(mount, container):
    c = container()
    m = mount()
    run_tool("ln", "-s", "../etc/passwd", m.p(c, "/tmp/rel"))
    run_tool("ln", "-s", "passwd", m.p(c, "/etc/sibling"))
    # busybox readlink takes one FILE
    assert c.exec("readlink", "/tmp/rel") == b"../etc/passwd\n"
    assert c.exec("readlink", "/etc/sibling") == b"passwd\n"
    assert call_with_timeout(os.readlink, m.p(c, "/tmp/rel")) == "../etc/passwd"
    assert call_with_timeout(read_file, m.p(c, "/tmp/rel")) == c.cp_out("/etc/passwd")
    assert not disagreements(m, c, "/tmp/rel", "/etc/sibling")


def test_a_hard_link_keeps_setuid_and_setgid(mount, container, tmp_path):
    """The engine chowns a new link, which clears setuid and setgid on the
    file (under every name), and sets the mode back only when it finds the
    target from the container's root: `cp -a` of a setuid file with two
    names left both at 0755."""
    c = container()
    c.sh("mkdir -p /hk/d && echo x > /hk/su && chmod 4755 /hk/su && "
         "echo y > /hk/d/sg && chmod 2711 /hk/d/sg")
    m = mount()
    os.link(m.p(c, "/hk/su"), m.p(c, "/hk/d/su2"))
    os.link(m.p(c, "/hk/d/sg"), m.p(c, "/hk/sg2"))
    src = tmp_path / "src"
    src.mkdir()
    (src / "f").write_bytes(b"f")
    os.chown(src / "f", 1234, 5678)
    os.chmod(src / "f", 0o4750)
    os.link(src / "f", src / "g")
    run_tool("cp", "-a", str(src), m.p(c, "/hk/cp"))
    for path, perm in (("/hk/su", 0o4755), ("/hk/d/su2", 0o4755), ("/hk/d/sg", 0o2711),
                       ("/hk/sg2", 0o2711), ("/hk/cp/f", 0o4750), ("/hk/cp/g", 0o4750)):
        assert c.stat(path)["perm"] == perm, path
    assert len(set(c.exec("stat", "-c", "%i", "/hk/cp/f", "/hk/cp/g").split())) == 1
    assert c.stat("/hk/cp/g")["uid"] == 1234


def test_hard_link(mount, container):
    c = container()
    c.write("/tmp/a", b"shared bytes\n")
    m = mount()
    warm(m, c, "/tmp/a")
    run_tool("ln", m.p(c, "/tmp/a"), m.p(c, "/tmp/b"))
    ia, ib = c.exec("stat", "-c", "%i", "/tmp/a", "/tmp/b").split()
    assert ia == ib, "both names must be the same inode inside the container"
    assert c.exec("cat", "/tmp/b") == b"shared bytes\n"
    assert call_with_timeout(read_file, m.p(c, "/tmp/b")) == b"shared bytes\n"
    assert not disagreements(m, c, "/tmp/a", "/tmp/b")
    # After a listing, the read side reports the link count (test_metadata.py).
    m.listdir(m.p(c, "/tmp"))
    inside = [int(n) for n in c.exec("stat", "-c", "%h", "/tmp/a", "/tmp/b").split()]
    nlinks = [call_with_timeout(os.lstat, m.p(c, p)).st_nlink for p in ("/tmp/a", "/tmp/b")]
    assert inside == [2, 2]
    assert min(nlinks) >= 2, f"link counts of a, b through the mount: {nlinks}, inside: {inside}"


def test_mkfifo_and_mknod(mount, container):
    """A FIFO and a device are tar entries of their type, made by the
    engine with mknod; they were ENOSYS. A socket has no tar type."""
    c = container()
    m = mount()
    run_tool("mkfifo", "-m", "0620", m.p(c, "/tmp/fifo"))
    run_tool("mknod", "-m", "0640", m.p(c, "/tmp/null2"), "c", "1", "3")
    st = c.stat("/tmp/fifo")
    assert (st["type"], st["perm"]) == ("fifo", 0o620)
    st = c.stat("/tmp/null2")
    assert (st["type"], st["perm"]) == ("chr", 0o640)
    assert c.exec("stat", "-c", "%t %T", "/tmp/null2") == b"1 3\n"
    st = call_with_timeout(os.lstat, m.p(c, "/tmp/null2"))
    assert stat.S_ISCHR(st.st_mode) and os.major(st.st_rdev) == 1 and os.minor(st.st_rdev) == 3
    assert stat.S_ISFIFO(call_with_timeout(os.lstat, m.p(c, "/tmp/fifo")).st_mode)
    assert not disagreements(m, c, "/tmp/fifo", "/tmp/null2")
    with pytest.raises(OSError) as e:
        call_with_timeout(os.mknod, m.p(c, "/tmp/sock"), 0o600 | stat.S_IFSOCK)
    assert e.value.errno == errno.EOPNOTSUPP


def test_mv_file(mount, container):
    c = container()
    c.write("/tmp/a", b"moving\n", mode=0o600, owner="1234:5678")
    before = c.stat("/tmp/a")
    m = mount()
    warm(m, c, "/tmp/a")
    run_tool("mv", m.p(c, "/tmp/a"), m.p(c, "/tmp/b"))
    assert c.exec("cat", "/tmp/b") == b"moving\n"
    assert c.stat("/tmp/b") == before
    assert call_with_timeout(read_file, m.p(c, "/tmp/b")) == b"moving\n"
    assert not disagreements(m, c, "/tmp/a", "/tmp/b")


def test_mv_directory(mount, container):
    c = container()
    c.sh("mkdir -p /tmp/d1/sub && echo x > /tmp/d1/x && echo y > /tmp/d1/sub/y")
    m = mount()
    warm(m, c, "/tmp/d1", "/tmp/d1/x", "/tmp/d1/sub/y")
    run_tool("mv", m.p(c, "/tmp/d1"), m.p(c, "/tmp/d2"))
    assert c.exec("cat", "/tmp/d2/x", "/tmp/d2/sub/y") == b"x\ny\n"
    assert call_with_timeout(read_file, m.p(c, "/tmp/d2/sub/y")) == b"y\n"
    assert errno_of(os.lstat, m.p(c, "/tmp/d1/x")) == errno.ENOENT
    assert not disagreements(m, c, "/tmp/d1", "/tmp/d2", "/tmp/d2/x", "/tmp/d2/sub")


def test_rm_file(mount, container):
    c = container()
    c.write("/tmp/f", b"doomed\n")
    m = mount()
    warm(m, c, "/tmp/f")
    run_tool("rm", m.p(c, "/tmp/f"))
    assert c.exec("ls", "-A", "/tmp") == b""
    assert errno_of(os.lstat, m.p(c, "/tmp/f")) == errno.ENOENT
    assert not disagreements(m, c, "/tmp/f")


def test_rm_r_directory(mount, container):
    c = container()
    c.sh("mkdir -p /tmp/d/sub && echo 1 > /tmp/d/a && echo 2 > /tmp/d/sub/b && ln -s a /tmp/d/l")
    m = mount()
    host_tree(m.p(c, "/tmp/d"))  # walk it through the mount first
    run_tool("rm", "-r", m.p(c, "/tmp/d"))
    assert c.exec("ls", "-A", "/tmp") == b""
    assert errno_of(os.lstat, m.p(c, "/tmp/d")) == errno.ENOENT
    assert errno_of(os.lstat, m.p(c, "/tmp/d/sub/b")) == errno.ENOENT
    assert not disagreements(m, c, "/tmp/d")


def test_rmdir(mount, container):
    c = container()
    c.exec("mkdir", "/tmp/empty")
    m = mount()
    warm(m, c, "/tmp/empty")
    run_tool("rmdir", m.p(c, "/tmp/empty"))
    assert c.exec("ls", "-A", "/tmp") == b""
    assert not disagreements(m, c, "/tmp/empty")


def test_truncate_shrink(mount, container):
    c = container()
    c.sh("head -c 100 /dev/urandom > /tmp/f")
    before = c.cp_out("/tmp/f")
    m = mount()
    warm(m, c, "/tmp/f")
    run_tool("truncate", "-s", "10", m.p(c, "/tmp/f"))
    assert c.cp_out("/tmp/f") == before[:10]
    assert call_with_timeout(read_file, m.p(c, "/tmp/f")) == before[:10]
    assert not disagreements(m, c, "/tmp/f")


def test_truncate_extend(mount, container):
    c = container()
    c.write("/tmp/f", b"abc")
    m = mount()
    warm(m, c, "/tmp/f")
    run_tool("truncate", "-s", "10", m.p(c, "/tmp/f"))
    assert c.cp_out("/tmp/f") == b"abc" + b"\0" * 7
    assert call_with_timeout(read_file, m.p(c, "/tmp/f")) == b"abc" + b"\0" * 7
    assert not disagreements(m, c, "/tmp/f")


def test_truncate_to_zero(mount, container):
    c = container()
    c.sh("head -c 5000 /dev/urandom > /tmp/f && chmod 0600 /tmp/f")
    m = mount()
    warm(m, c, "/tmp/f")
    run_tool("truncate", "-s", "0", m.p(c, "/tmp/f"))
    st = c.stat("/tmp/f")
    assert (st["size"], st["perm"], st["type"]) == (0, 0o600, "file")
    assert call_with_timeout(read_file, m.p(c, "/tmp/f")) == b""
    assert not disagreements(m, c, "/tmp/f")


def test_new_file_is_regular_with_requested_mode(mount, container):
    c = container()
    m = mount()
    fd = call_with_timeout(os.open, m.p(c, "/tmp/made"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o640)
    call_with_timeout(os.write, fd, b"hello\n")
    call_with_timeout(os.close, fd)
    st = c.stat("/tmp/made")
    assert (st["type"], st["perm"], st["size"]) == ("file", 0o640 & ~_umask(), 6)
    assert stat.S_ISREG(call_with_timeout(os.lstat, m.p(c, "/tmp/made")).st_mode)
    assert not disagreements(m, c, "/tmp/made")


def _umask():
    u = os.umask(0)
    os.umask(u)
    return u


@pytest.mark.parametrize("op", ["create", "mkdir", "unlink"])
def test_parent_mtime_follows_change(mount, container, op):
    c = container()
    c.sh("mkdir /tmp/d && echo old > /tmp/d/old && touch -d @1000000000 /tmp/d")
    m = mount()
    warm(m, c, "/tmp/d")
    assert host_stat(m.p(c, "/tmp/d"))["mtime"] == 1000000000
    if op == "create":
        run_tool("touch", m.p(c, "/tmp/d/new"))
    elif op == "mkdir":
        run_tool("mkdir", m.p(c, "/tmp/d/sub"))
    else:
        run_tool("rm", m.p(c, "/tmp/d/old"))
    assert c.stat("/tmp/d")["mtime"] != 1000000000
    assert not disagreements(m, c, "/tmp/d")
