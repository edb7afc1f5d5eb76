# SPDX-License-Identifier: GPL-2.0-or-later
"""The engine going away under a mount, and coming back."""

import errno
import os

from conftest import call_with_timeout, errname, read_file, wait_for

# ctrfs's default request timeout is 30 s; an operation may take that long
# before it fails, never much longer.
OP_TIMEOUT = 60


def op_errno(fn, *args):
    try:
        call_with_timeout(fn, *args, timeout=OP_TIMEOUT, what=f"{fn.__name__}{args}")
    except OSError as e:
        return e.errno
    return None


def test_engine_stopped_and_restarted(private_engine, container, mount):
    e = private_engine()
    c = container(engine=e, args=["--restart", "always"])
    c.sh("echo before > /before; echo after > /after; mkdir /d; echo x > /d/x")
    m = mount(engine=e)
    assert c.name in m.listdir()
    assert call_with_timeout(read_file, m.p(c, "/before")) == b"before\n"

    e.stop()

    failures = {}
    checks = [
        ("listdir MNT", os.listdir, m.path),
        ("read /after", read_file, m.p(c, "/after")),
        ("listdir /d", os.listdir, m.p(c, "/d")),
    ]
    # Cached answers may be served until they expire; after that, EIO.
    for what, fn, arg in checks:
        got = wait_for(lambda: op_errno(fn, arg) == errno.EIO, timeout=10)
        if not got:
            failures[what] = errname(op_errno(fn, arg))
    assert not failures, f"want EIO with the engine gone: {failures}"
    assert m.alive(), "ctrfs died when the engine went away"

    e.start()
    if c.state() != "running":
        c.docker("start", c.id)

    def recovered():
        return (c.name in call_with_timeout(os.listdir, m.path, timeout=OP_TIMEOUT)
                and call_with_timeout(read_file, m.p(c, "/after"), timeout=OP_TIMEOUT) == b"after\n"
                and call_with_timeout(os.listdir, m.p(c, "/d"), timeout=OP_TIMEOUT) == ["x"])

    assert wait_for(recovered, timeout=10), "the mount did not recover within 10 s of the restart"
    assert m.alive()
