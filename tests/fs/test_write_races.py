# SPDX-License-Identifier: GPL-2.0-or-later
"""Files being written meet renames, removals, lookups and each other: what
lands in the container is what the calls said (checked in the container)."""

import errno
import os
import threading
import time

from conftest import wait_for, wb_status


def ls(c, path):
    return sorted(c.sh('ls -a "$1"', path).decode().split())


def test_rename_onto_a_file_being_written_replaces_it(mount, container):
    """mv f.tmp f while f itself still waits for its write-back PUT: f's
    old data must not land over the renamed file."""
    c = container()
    c.sh("mkdir /ro")
    m = mount("-o", "writeback=1")
    with open(m.p(c, "/ro/f"), "w") as f:
        f.write("old\n")
    with open(m.p(c, "/ro/f.tmp"), "w") as f:
        f.write("new\n")
    os.rename(m.p(c, "/ro/f.tmp"), m.p(c, "/ro/f"))
    with open(m.p(c, "/ro/f")) as f:
        assert f.read() == "new\n"
    assert wait_for(lambda: ls(c, "/ro") == [".", "..", "f"], timeout=30), ls(c, "/ro")
    # until write-back holds nothing more, queued or on its way
    assert wait_for(lambda: wb_status(m) == (0, []), timeout=30), wb_status(m)
    assert c.exec("cat", "/ro/f") == b"new\n"


def test_rename_onto_a_file_due_during_the_mv(mount, container, proxy):
    """mv a b while b waits for its write-back PUT, which falls due while
    the mv runs in the container (a slow exec): b must end as a was. Before,
    the mv did not hold b, so b's PUT went out meanwhile and landed after
    the mv: b had its old data back and a's was gone."""
    c = container()
    c.sh("mkdir /rn; echo from-a > /rn/a")
    proxy.delay("POST", "/start", 1.0)  # the mv's exec
    proxy.delay("PUT", "path=%2Frn ", 1.5)  # b's write-back PUT
    m = mount("-o", "writeback=0.5", engine=proxy)
    os.stat(m.p(c, "/rn/a"))
    with open(m.p(c, "/rn/b"), "w") as f:
        f.write("old-b\n")
    os.rename(m.p(c, "/rn/a"), m.p(c, "/rn/b"))  # b falls due meanwhile
    # a PUT that went out (held 1.5 s by the proxy) has landed once
    # write-back holds nothing, queued or on its way
    assert wait_for(lambda: wb_status(m) == (0, []), timeout=30), wb_status(m)
    assert ls(c, "/rn") == [".", "..", "b"]
    assert c.exec("cat", "/rn/b") == b"from-a\n"
    with open(m.p(c, "/rn/b")) as f:
        assert f.read() == "from-a\n"


def open_copying(p, proxy):
    """open(p, O_RDWR) in a thread, returned once its copy's GET (slowed by
    the proxy) has gone out: (thread, {"fd": fd once the open returned})."""
    opened = {}

    def opener():
        opened["fd"] = os.open(p, os.O_RDWR)

    t = threading.Thread(target=opener)
    t.start()
    assert wait_for(lambda: proxy.hits, timeout=5, interval=0.01), "no GET of the file"
    return t, opened


def test_rewrite_while_an_open_copies_the_file_in(mount, container, proxy):
    """open(O_RDWR) of an existing file copies its content in first (a GET,
    its reply slowed here). Another process that rewrites the file meanwhile
    (O_TRUNC, write, close) shares that open file, as on a local
    filesystem: the first opener's write then lands on the new content.
    Before, the rewrite made a second file that landed first, and the
    opener's stale copy then replaced it: the rewrite was lost."""
    c = container()
    c.sh("mkdir /uc; echo content > /uc/b")
    proxy.delay_reply("GET", "path=%2Fuc%2Fb ", 1.0)
    m = mount("-o", "attr_timeout=30", engine=proxy)
    p = m.p(c, "/uc/b")
    os.stat(p)
    t, opened = open_copying(p, proxy)
    with open(p, "wb") as f:  # waits for the copy, then truncates it
        f.write(b"new\n")
    t.join(30)
    fd = opened["fd"]
    os.pwrite(fd, b"N", 0)
    os.close(fd)
    assert c.exec("cat", "/uc/b") == b"New\n"


def test_read_while_an_open_copies_the_file_in(mount, container, proxy):
    """A reader that opens the file while open(O_RDWR) is still copying its
    content in (the GET's reply slowed here) shares that open file: its
    read waits for the copy and gets the whole content, not the part of
    the spool written so far."""
    c = container()
    data = os.urandom(3 * 1024 * 1024 + 7)
    c.sh("mkdir /rc")
    c.write("/rc/b", data)
    proxy.delay_reply("GET", "path=%2Frc%2Fb ", 1.0)
    m = mount("-o", "attr_timeout=30", engine=proxy)
    p = m.p(c, "/rc/b")
    assert os.stat(p).st_size == len(data)
    t, opened = open_copying(p, proxy)
    with open(p, "rb") as f:  # shares the file being copied in
        got = f.read()
    t.join(30)
    os.close(opened["fd"])
    n, want = len(got), len(data)
    assert n == want, f"read {n} of {want} bytes"
    same = got == data
    assert same, "read differs from the file's content"


def test_directory_renamed_under_an_open_file(mount, container):
    """A file open for writing in a directory that is renamed is committed
    in the directory's new place, with all its data."""
    c = container()
    c.sh("mkdir /d1")
    m = mount()
    f = open(m.p(c, "/d1/f"), "wb")
    try:
        f.write(b"first half\n")
        f.flush()
        os.rename(m.p(c, "/d1"), m.p(c, "/d2"))
        f.write(b"second half\n")
    finally:
        f.close()
    assert c.exec("cat", "/d2/f") == b"first half\nsecond half\n"
    assert c.sh("test -e /d1 && echo yes || echo no") == b"no\n"


def test_a_new_file_renamed_over_an_old_one_takes_it_along(mount, container):
    """A file not yet committed, renamed over a file of the container, then
    removed or renamed again before its commit: the old file goes with it
    (it was replaced), never to show up again (it did once)."""
    c = container()
    c.sh("mkdir /ov && echo old > /ov/b && echo old > /ov/d")
    m = mount()
    fd = os.open(m.p(c, "/ov/a.tmp"), os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        os.write(fd, b"gone\n")
        os.rename(m.p(c, "/ov/a.tmp"), m.p(c, "/ov/b"))
        os.unlink(m.p(c, "/ov/b"))
    finally:
        os.close(fd)
    fd = os.open(m.p(c, "/ov/c.tmp"), os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        os.write(fd, b"new\n")
        os.rename(m.p(c, "/ov/c.tmp"), m.p(c, "/ov/d"))
        os.rename(m.p(c, "/ov/d"), m.p(c, "/ov/e"))
    finally:
        os.close(fd)
    assert ls(c, "/ov") == [".", "..", "e"]
    assert c.exec("cat", "/ov/e") == b"new\n"
    time.sleep(1.5)  # past the TTL: the mount asks the container again
    assert sorted(m.listdir(m.p(c, "/ov"))) == ["e"]


def test_directory_renamed_while_a_file_below_is_committed(mount, container, proxy):
    """mv d e while the PUT of d/x is on its way (slowed): the mv waits
    for it (libfuse's path locks hold the rename until the flush below
    has returned), and x ends in e. A mv first would leave the PUT no d:
    close() would fail with ENOENT and the data would be lost."""
    c = container()
    c.sh("mkdir /rd")
    proxy.delay("PUT", "path=%2Frd ", 1.5)
    m = mount(engine=proxy)
    f = open(m.p(c, "/rd/x"), "w")
    f.write("kept\n")
    closed = {}

    def close():
        try:
            f.close()
            closed["ok"] = True
        except OSError as e:
            closed["err"] = e

    t = threading.Thread(target=close)
    t.start()
    assert wait_for(lambda: proxy.hits, timeout=5, interval=0.01), "no PUT"
    os.rename(m.p(c, "/rd"), m.p(c, "/re"))
    t.join(30)
    assert closed == {"ok": True}, closed
    assert c.exec("cat", "/re/x") == b"kept\n"
    assert c.sh("test -e /rd && echo yes || echo no") == b"no\n"


def test_a_directory_with_a_file_still_to_come_is_not_empty(mount, container):
    """rmdir of a directory whose only file is still being written, or a
    rename over it, fails with ENOTEMPTY, as the file is there to every
    process; before, the empty directory in the container went, and the
    file's commit then failed."""
    c = container()
    c.sh("mkdir -p /ne/d /ne/other")
    m = mount()
    with open(m.p(c, "/ne/d/f"), "w") as f:
        f.write("data\n")
        for op in (lambda: os.rmdir(m.p(c, "/ne/d")),
                   lambda: os.rename(m.p(c, "/ne/other"), m.p(c, "/ne/d"))):
            try:
                op()
            except OSError as e:
                assert e.errno == errno.ENOTEMPTY, e
            else:
                raise AssertionError("no ENOTEMPTY")
    assert c.exec("cat", "/ne/d/f") == b"data\n"
    assert ls(c, "/ne") == [".", "..", "d", "other"]


def test_concurrent_appends_share_one_file(mount, container):
    """Two opens for appending that race while the current content is
    fetched share one file being written: both appends land."""
    c = container()
    base = os.urandom(8 * 1024 * 1024)
    c.sh("cat > /app", input=base)
    m = mount()
    path = m.p(c, "/app")
    barrier = threading.Barrier(2)
    fds = [None, None]
    errors = []

    def opener(i):
        barrier.wait()
        try:
            fds[i] = os.open(path, os.O_WRONLY | os.O_APPEND)
        except OSError as e:
            errors.append(e)

    threads = [threading.Thread(target=opener, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    try:
        os.write(fds[0], b"A" * 100)
        os.write(fds[1], b"B" * 100)
    finally:
        for fd in fds:
            os.close(fd)
    got = c.exec("cat", "/app")
    assert len(got) == len(base) + 200
    assert got[: len(base)] == base
    assert got[len(base):] == b"A" * 100 + b"B" * 100
