# SPDX-License-Identifier: GPL-2.0-or-later
"""Faults a real engine does not produce on demand, injected by a proxy in
front of it: a read either fails or gives the right bytes, never wrong ones,
and the daemon keeps serving everything else."""

import errno
import os

import pytest

from conftest import MIB, call_with_timeout, errname, read_file, wait_for


def read_outcome(path):
    try:
        return call_with_timeout(read_file, path, timeout=120), None
    except OSError as e:
        return None, e


def test_truncated_archive_is_an_error(mount, container, proxy):
    c = container()
    c.sh("head -c 4194304 /dev/urandom > /trunc-me; echo fine > /fine")
    want = c.cp_out("/trunc-me")
    proxy.truncate("GET", "trunc-me", after=MIB)
    m = mount(engine=proxy)
    data, err = read_outcome(m.p(c, "/trunc-me"))
    assert proxy.hits, "the proxy saw no GET for the file"
    if err is None:
        assert data == want, (
            f"a truncated archive gave {len(data)} of {len(want)} bytes"
            f" ({'a prefix of the file' if want.startswith(data) else 'wrong bytes'}) and no error")
    else:
        assert err.errno == errno.EIO, errname(err.errno)
    assert m.alive()
    assert call_with_timeout(read_file, m.p(c, "/fine")) == b"fine\n"
    proxy.clear()
    assert wait_for(lambda: read_outcome(m.p(c, "/trunc-me"))[0] == want, timeout=10)


def test_engine_500_on_archive_is_eio(mount, container, proxy):
    c = container()
    c.sh("echo secret > /fail-me; echo fine > /fine")
    proxy.fail("GET", "fail-me", 500)
    proxy.fail("HEAD", "fail-me", 500)
    m = mount(engine=proxy)
    data, err = read_outcome(m.p(c, "/fail-me"))
    assert err is not None, f"read gave {data!r} while the engine answered 500"
    assert err.errno == errno.EIO, errname(err.errno)
    assert m.alive()
    assert call_with_timeout(read_file, m.p(c, "/fine")) == b"fine\n"


def test_engine_500_on_listing_then_recovery(mount, container, proxy):
    c = container()
    m = mount(engine=proxy)
    assert c.name in m.listdir()
    proxy.fail("GET", "/containers/json", 500)

    def listing_errno():
        try:
            call_with_timeout(os.listdir, m.path, timeout=60)
        except OSError as e:
            return e.errno
        return None

    assert wait_for(lambda: listing_errno() == errno.EIO, timeout=10), errname(listing_errno())
    assert m.alive()
    proxy.clear()
    assert wait_for(lambda: c.name in m.listdir(), timeout=10)


def test_failed_copy_for_an_edit_leaves_nothing_behind(mount, container, proxy):
    """open(O_RDWR) of an existing file copies its content in with a GET
    (the file is listed for other opens while it copies); when that GET
    fails the open fails, and nothing of it stays: the next open copies
    again, and its write lands on the whole content."""
    c = container()
    c.sh("mkdir /cf; echo content > /cf/b")
    m = mount("-o", "attr_timeout=30", engine=proxy)
    p = m.p(c, "/cf/b")
    os.stat(p)
    proxy.fail("GET", "path=%2Fcf%2Fb ", 500)
    try:
        fd = call_with_timeout(os.open, p, os.O_RDWR)
    except OSError as e:
        err = e
    else:
        os.close(fd)
        err = None
    assert proxy.hits, "no GET of the file"
    assert err is not None, "the open succeeded without the file's content"
    proxy.clear()
    fd = call_with_timeout(os.open, p, os.O_RDWR | os.O_APPEND)
    os.write(fd, b"more\n")
    os.close(fd)
    assert c.exec("cat", "/cf/b") == b"content\nmore\n"
    assert m.alive()
