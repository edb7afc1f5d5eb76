# SPDX-License-Identifier: GPL-2.0-or-later
"""Write-back (-o writeback=SECS): what a user calls to be sure the data is
in the container (`sync DIR`), and how a failed commit is told (fsync,
close, `ctrfs --status`)."""

import errno
import os
import subprocess

from conftest import CTRFS_BIN, errname, host_tree, run_tool, tar_tree, tree_diff, wait_for, wb_status

KEYS = ("type", "perm", "uid", "gid", "mtime", "size", "sha256")


def fsync_path(path):
    """fsync(2) of a file or directory, as `sync PATH` does; the errno or None."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError as e:
        return e.errno
    finally:
        os.close(fd)
    return None


status = wb_status


def make_tree(root, dirs=3, files=10):
    for d in range(dirs):
        (root / f"d{d}").mkdir(parents=True)
        for i in range(files):
            p = root / f"d{d}" / f"f{i}"
            p.write_bytes(os.urandom(1 + 100 * i))
            os.chmod(p, 0o600 + (i % 3) * 0o40)
            os.utime(p, ns=(1_600_000_000_123_456_789 + i, 1_600_000_000_123_456_789 + i))
    return root


def put_fails(proxy):
    return proxy.hits.get(("PUT", "/archive"), 0)


def test_sync_dir_commits_what_write_back_holds(mount, container, tmp_path):
    """`cp -p` of files into a write-back mount returns with them still
    held (the delay is 30 s); `sync DIR` (fsync of the directory) sends
    them and returns once they are in the container: bytes, modes, owners
    and mtimes exact right after it returns. (The directories are made
    first: `cp -a` of the tree would set their times after the files,
    which commits them before the sync.)"""
    c = container()
    src = make_tree(tmp_path / "src")
    m = mount("-o", "writeback=30")
    for d in sorted(os.listdir(src)):
        os.makedirs(m.p(c, f"/sy/{d}"))
        run_tool("sh", "-c", 'cp -p "$1"/* "$2"/', "sh", src / d, m.p(c, f"/sy/{d}"))
    held = tar_tree(c, "/sy")
    assert not any(v["type"] == "file" for v in held.values()), \
        "files landed before the sync: the test proves nothing"
    assert fsync_path(m.p(c, "/sy")) is None
    # the files (the directories' mtimes are the container's own)
    want = {k: v for k, v in host_tree(str(src)).items() if v["type"] == "file"}
    got = {k: v for k, v in tar_tree(c, "/sy").items() if v["type"] == "file"}
    diff = tree_diff(got, want, keys=KEYS)
    assert not diff, diff
    assert len(got) == 30
    assert status(m) == (0, [])


def test_sync_of_the_mount_root_commits_every_container(mount, container):
    a, b = container(), container()
    m = mount("-o", "writeback=30")
    for c in (a, b):
        with open(m.p(c, "/tmp/held"), "wb") as f:
            f.write(c.name.encode())
    code, lines = status(m)
    assert code == 1 and sorted(l[:3] for l in lines) == sorted(
        [["pending", a.name, "1"], ["pending", b.name, "1"]]), lines
    assert fsync_path(m.path) is None
    for c in (a, b):
        assert c.exec("cat", "/tmp/held") == c.name.encode()
    assert status(m) == (0, [])


def test_status_says_pending_files_and_bytes(mount, container):
    c = container()
    m = mount("-o", "writeback=30")
    assert status(m) == (0, [])
    for name, size in (("a", 1000), ("b", 24)):
        with open(m.p(c, f"/tmp/{name}"), "wb") as f:
            f.write(b"x" * size)
    assert status(m) == (1, [["pending", c.name, "2", "1024"]])
    assert fsync_path(m.p(c, "/tmp")) is None
    assert status(m) == (0, [])
    assert ".ctrfs-status" not in m.listdir(), "the status file is listed"


def test_status_of_something_else_exits_3(tmp_path):
    r = subprocess.run([CTRFS_BIN, "--status", str(tmp_path)], stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    assert r.returncode == 3, r
    assert b"not a ctrfs mount" in r.stderr


def close_errno(f):
    try:
        f.close()
    except OSError as e:
        return e.errno
    return None


def failing_write(m, c, proxy, path, data):
    """Write path through a write-back mount whose engine refuses PUTs,
    and wait for the first refusal."""
    proxy.fail("PUT", "/archive", 500)
    with open(m.p(c, path), "wb") as f:
        f.write(data)
    assert wait_for(lambda: put_fails(proxy) >= 1, timeout=10, interval=0.01), m.log_text()


def test_sync_dir_while_a_commit_fails_is_eio(mount, container, proxy):
    """A write-back PUT failed after the close returned 0: the status lists
    the file as retrying (exit 2) and `sync DIR` fails with EIO; once the
    engine takes PUTs again, the file lands."""
    c = container()
    c.sh("mkdir /wf")
    m = mount("-o", "writeback=0.05", engine=proxy)
    failing_write(m, c, proxy, "/wf/a", b"first\n")
    code, lines = status(m)
    assert code == 2 and ["retrying", c.name, "/wf/a"] in [l[:3] for l in lines], lines
    e = fsync_path(m.p(c, "/wf"))
    assert e == errno.EIO, errname(e)
    proxy.clear()
    assert wait_for(lambda: c.exec("cat", "/wf/a", check=False) == b"first\n", timeout=15)


def test_a_failure_nobody_heard_of_is_told_once_to_fsync_and_once_to_close(mount, container, proxy):
    """A write-back PUT that failed and then succeeded: nobody was told of
    the failure, so the next fsync in the container and, apart from it, the
    next close of a file written there each fail once with EIO; the ones
    after are quiet, and every file lands."""
    c = container()
    c.sh("mkdir /wf")
    m = mount("-o", "writeback=0.05", engine=proxy)
    failing_write(m, c, proxy, "/wf/a", b"first\n")
    proxy.clear()
    assert wait_for(lambda: c.exec("cat", "/wf/a", check=False) == b"first\n", timeout=15)
    assert status(m) == (0, [])
    e = fsync_path(m.p(c, "/wf"))
    assert e == errno.EIO, f"the first fsync after the failure said {errname(e)}"
    assert fsync_path(m.p(c, "/wf")) is None
    f = open(m.p(c, "/wf/b"), "wb")
    f.write(b"second\n")
    e = close_errno(f)
    assert e == errno.EIO, f"the first close after the failure said {errname(e)}"
    f = open(m.p(c, "/wf/c"), "wb")
    f.write(b"third\n")
    assert close_errno(f) is None
    assert fsync_path(m.p(c, "/wf")) is None
    for name, data in (("b", b"second\n"), ("c", b"third\n")):
        assert c.exec("cat", f"/wf/{name}") == data
    assert status(m) == (0, [])
