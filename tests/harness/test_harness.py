# SPDX-License-Identifier: GPL-2.0-or-later
"""Checks of the harness itself: the private engine, the images and the helpers
that the ctrfs tests compare against. They do not need ctrfs, and they run
apart from its tests (scripts/run-tests: "harness self-test")."""

import os

from fs_conftest import PODMAN, STATIC_FILES


def test_engine_is_private(engine):
    assert engine.sock != "/var/run/docker.sock"
    assert engine.pid() == engine.proc.pid


def test_busybox_image_runs(container):
    c = container()
    assert c.exec("echo", "hi") == b"hi\n"
    # The applet links did not overwrite the binary.
    assert c.stat("/bin/busybox")["type"] == "file"
    assert c.stat("/bin/sh")["type"] == "symlink"


def test_cp_helpers_agree_with_what_was_written(container):
    c = container()
    data = os.urandom(70000)
    c.write("/tmp/f", data, mode=0o4750, owner="1234:5678")
    assert c.cp_out("/tmp/f") == data
    st = c.stat("/tmp/f")
    assert (st["size"], st["perm"], st["uid"], st["gid"], st["type"]) == (70000, 0o4750, 1234, 5678, "file")


def test_static_image_has_no_shell(container):
    c = container("static")
    assert c.state() == "running"
    for name, (data, mode, uid, gid, mtime) in STATIC_FILES.items():
        assert c.cp_out("/" + name) == data
        h = c.cp_headers("/" + name)[os.path.basename(name)]
        if PODMAN:
            # Podman's archive GET (and podman cp) gives every owner as 0:0
            uid = gid = 0
        assert (h.mode & 0o7777, h.uid, h.gid, h.mtime) == (mode, uid, gid, mtime)
    r = c.docker("exec", c.name, "sh", "-c", "true", check=False)
    assert r.returncode != 0


def test_big_file_round_trip(container, big_file):
    path, digest = big_file
    c = container()
    c.cp_in(path, "/big.bin")
    assert c.cp_sha256("/big.bin") == digest
