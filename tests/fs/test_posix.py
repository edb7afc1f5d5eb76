# SPDX-License-Identifier: GPL-2.0-or-later
"""What POSIX promises a caller, where ctrfs once answered wrong without
saying so."""

import os
import stat

from conftest import call_with_timeout, run_tool

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
