# SPDX-License-Identifier: GPL-2.0-or-later
"""Inode numbers and link counts (issue 26): every name of a hard-linked
file shows one record at once, link counts follow link, unlink and
rename, directories count their subdirectories, and a rename keeps the
number. Each checked through the mount and against `stat` in the
container (busybox)."""

import json
import os
import stat

import pytest

from conftest import PODMAN, call_with_timeout, run_tool

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def inside(c, *paths):
    """path -> (perm, nlink, uid, gid, ino) from busybox stat in c."""
    out = c.exec("stat", "-c", "%a %h %u %g %i %n", *paths).decode().splitlines()
    got = {}
    for line in out:
        a, h, u, g, i, n = line.split(" ", 5)
        got[n] = (int(a, 8), int(h), int(u), int(g), int(i))
    return got


def seen(m, c, *paths):
    """path -> (perm, nlink, uid, gid, ino) by lstat through the mount."""
    got = {}
    for p in paths:
        st = call_with_timeout(os.lstat, m.p(c, p))
        got[p] = (stat.S_IMODE(st.st_mode), st.st_nlink, st.st_uid, st.st_gid, st.st_ino)
    return got


def same_as_inside(m, c, *paths):
    """What differs between the mount and the container: the attributes
    of each path, and which paths share a number (the numbers themselves
    differ: ctrfs hands out its own)."""
    i, s = inside(c, *paths), seen(m, c, *paths)
    bad = {p: {"container": i[p][:4], "mount": s[p][:4]} for p in paths if i[p][:4] != s[p][:4]}
    groups_i = sorted(sorted(p for p in paths if i[p][4] == i[q][4]) for q in paths)
    groups_s = sorted(sorted(p for p in paths if s[p][4] == s[q][4]) for q in paths)
    if groups_i != groups_s:
        bad["same file"] = {"container": groups_i, "mount": groups_s}
    return bad


# Run as root or another user: the steps (JSON) on paths through the
# mount, each followed by an lstat of every name there (the kernel then
# holds their attributes).
STEPS = r"""
import json, os, sys
steps, names = json.loads(sys.argv[1]), sys.argv[2:]
for op, *args in steps:
    getattr(os, op)(*[tuple(a) if isinstance(a, list) else a for a in args])
    for n in names:
        if os.path.lexists(n):
            os.lstat(n)
"""


def _links_steps(m, c, chown):
    n0, n1, n2 = (m.p(c, f"/hl/n{i}") for i in range(3))
    steps = [["link", n0, n1], ["link", n1, n2], ["chmod", n1, 0o201]]
    if chown:
        steps.append(["chown", n1, 65534, 65533])
    steps.append(["utime", n2, [1234567890, 1234567890]])
    return steps, [n0, n1, n2]


@pytest.mark.parametrize("who", ["root", "nobody"])
def test_a_change_through_one_name_shows_through_every_name(mount, container, who):
    """link n0 n1; link n1 n2; chmod 0201 n1; chown n1; touch n2: lstat
    n0 said 0644, nlink 2, 0:0 for seconds (each name its own record,
    and the kernel's attributes of the other names were kept)."""
    if PODMAN and who == "nobody":
        pytest.skip("Podman 4.3: its archive API reports every owner as 0:0, so the kernel's "
                    "permission check (allow_other) refuses nobody their own file")
    c = container()
    c.sh("mkdir -m 0777 /hl && echo x > /hl/n0 && chown 65534:65534 /hl/n0")
    m = mount("-o", "allow_other", "-o", "attr_timeout=5")
    steps, names = _links_steps(m, c, who == "root")
    for n in names[:1]:
        call_with_timeout(os.lstat, n)
    argv = ["/usr/bin/python3", "-c", STEPS, json.dumps(steps), *names]
    if who == "nobody":
        argv = NOBODY + argv
    r = run_tool(*argv, check=False)
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    paths = ["/hl/n0", "/hl/n1", "/hl/n2"]
    i = inside(c, *paths)
    assert i["/hl/n0"][:2] == (0o201, 3), i
    assert same_as_inside(m, c, *paths) == {}
    mtimes = {call_with_timeout(os.lstat, n).st_mtime for n in names}
    assert mtimes == {1234567890}, mtimes
    # one name goes: the others count one link less
    os.unlink(names[2])
    assert same_as_inside(m, c, *paths[:2]) == {}


def test_unlink_and_rename_over_a_link_count_down(mount, container):
    """a0 a1 a2 one file, b0 b1 another: mv a2 b1 (b loses a link, a keeps
    three: a0 a1 b1), rm a1, mv c0 b0 (b's last name goes); nlink of a
    renamed-over link stayed 2. (A rename of two names of one file is
    left out: busybox's mv keeps both in the container, design.md.)"""
    c = container()
    c.sh("mkdir /rl && cd /rl && echo a > a0 && ln a0 a1 && ln a0 a2 && echo b > b0 && ln b0 b1 && echo c > c0")
    m = mount("-o", "attr_timeout=5")
    names = ["a0", "a1", "a2", "b0", "b1", "c0"]
    assert same_as_inside(m, c, *("/rl/" + n for n in names)) == {}
    os.rename(m.p(c, "/rl/a2"), m.p(c, "/rl/b1"))
    left = ["/rl/a0", "/rl/a1", "/rl/b0", "/rl/b1", "/rl/c0"]
    assert same_as_inside(m, c, *left) == {}
    os.unlink(m.p(c, "/rl/a1"))
    left = ["/rl/a0", "/rl/b0", "/rl/b1", "/rl/c0"]
    assert same_as_inside(m, c, *left) == {}
    os.rename(m.p(c, "/rl/c0"), m.p(c, "/rl/b0"))
    left = ["/rl/a0", "/rl/b0", "/rl/b1"]
    assert same_as_inside(m, c, *left) == {}


def test_directories_count_their_subdirectories(mount, container):
    """A directory said nlink 1; the container says 2 + its subdirectories
    (directories made in the container: overlayfs says 1 for a directory
    merged with the image's)."""
    c = container()
    c.sh("mkdir -p /nd/a/x /nd/a/y /nd/b /nd/c && touch /nd/f /nd/a/g")
    m = mount("-o", "attr_timeout=5")
    dirs = ["/nd", "/nd/a", "/nd/a/x", "/nd/b"]
    assert sorted(m.listdir(m.p(c, "/nd"))) == ["a", "b", "c", "f"]
    i = inside(c, *dirs)
    assert [i[d][1] for d in dirs] == [5, 4, 2, 2], i
    assert same_as_inside(m, c, *dirs) == {}
    os.mkdir(m.p(c, "/nd/d"))
    assert same_as_inside(m, c, "/nd", "/nd/d") == {}
    os.rename(m.p(c, "/nd/c"), m.p(c, "/nd/a/c"))
    assert same_as_inside(m, c, "/nd", "/nd/a") == {}
    os.rmdir(m.p(c, "/nd/b"))
    assert same_as_inside(m, c, "/nd", "/nd/a") == {}


@pytest.mark.parametrize("kind", ["file", "fifo", "chr", "symlink", "dir"])
def test_a_rename_keeps_the_number(mount, container, kind):
    """st_ino changed when a fifo, a device node, a symlink or a directory
    was renamed (a regular file kept its number)."""
    c = container()
    make = {"file": "echo x > /ri/a", "fifo": "mkfifo /ri/a", "chr": "mknod /ri/a c 1 3",
            "symlink": "ln -s target /ri/a", "dir": "mkdir -p /ri/a/sub"}
    c.sh("mkdir -p /ri/to && " + make[kind])
    m = mount("-o", "attr_timeout=5")
    before = call_with_timeout(os.lstat, m.p(c, "/ri/a")).st_ino
    os.rename(m.p(c, "/ri/a"), m.p(c, "/ri/b"))
    assert call_with_timeout(os.lstat, m.p(c, "/ri/b")).st_ino == before
    os.rename(m.p(c, "/ri/b"), m.p(c, "/ri/to/c"))
    after = call_with_timeout(os.lstat, m.p(c, "/ri/to/c"))
    assert after.st_ino == before
    assert inside(c, "/ri/to/c")["/ri/to/c"][:2] == (stat.S_IMODE(after.st_mode), after.st_nlink)
