# SPDX-License-Identifier: GPL-2.0-or-later
"""Metadata through os.lstat, compared with busybox stat inside the container."""

import os
import stat

import pytest

from conftest import STATIC_DIRS, STATIC_FILES, call_with_timeout, compare_stat, host_stat, read_file

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
    diff = compare_stat(meta, m.p(meta, path), path)
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
