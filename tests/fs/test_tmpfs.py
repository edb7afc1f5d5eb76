# SPDX-License-Identifier: GPL-2.0-or-later
"""A container's tmpfs mounts are invisible to the archive API: ctrfs refuses
them with EOPNOTSUPP instead of showing what lies underneath."""

import errno
import os

from conftest import call_with_timeout, errname, errno_of, read_file


def test_tmpfs_mount_is_not_supported(mount, container):
    c = container(args=["--tmpfs", "/scratch"])
    c.sh("echo in-tmpfs > /scratch/f; mkdir /scratch/d; echo x > /etc/outside")
    m = mount()
    failures = {}
    for what, fn, path in (
        ("listdir", os.listdir, "/scratch"),
        ("stat", os.lstat, "/scratch/f"),
        ("stat", os.lstat, "/scratch/d"),
        ("stat", os.lstat, "/scratch/not-there"),
        ("open", open, "/scratch/f"),
        ("listdir", os.listdir, "/scratch/d"),
    ):
        e = errno_of(fn, m.p(c, path))
        if e != errno.EOPNOTSUPP:
            failures[f"{what} {path}"] = errname(e)
    assert not failures, f"want EOPNOTSUPP: {failures}"
    # The daemon keeps serving the rest of the container.
    assert m.alive()
    assert "etc" in m.listdir(m.p(c))
    assert call_with_timeout(read_file, m.p(c, "/etc/outside")) == b"x\n"
