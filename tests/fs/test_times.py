# SPDX-License-Identifier: GPL-2.0-or-later
"""Times: atime and mtime set apart, with nanoseconds, and ctime kept
(issue 26), through the mount and in the container (`docker exec stat`)."""

import ctypes
import errno
import os
import stat
import time

import pytest

from conftest import PODMAN, call_with_timeout, errno_of

NS = 1_000_000_000
A, M = 1900000000, 1950000000

_libc = ctypes.CDLL(None, use_errno=True)
UTIME_NOW = (1 << 30) - 1
UTIME_OMIT = (1 << 30) - 2
AT_SYMLINK_NOFOLLOW = 0x100


class Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


def utimensat(path, atime, mtime, flags=0):
    """utimensat(2) with (sec, nsec) pairs, or UTIME_NOW / UTIME_OMIT as nsec."""
    ts = (Timespec * 2)(Timespec(*atime), Timespec(*mtime))
    if _libc.utimensat(-100, os.fsencode(path), ts, flags) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e), path)


def ctr_times(c, path):
    """(atime, mtime, ctime) in ns, as busybox stat shows them inside."""
    out = c.exec("stat", "-c", "%x|%y|%z", path).decode().strip()
    times = []
    for part in out.split("|"):
        # 2030-03-17 17:46:40.123456789 +0000
        day, clock, _zone = part.split(" ")
        whole, _, frac = clock.partition(".")
        secs = int(time.mktime(time.strptime(day + " " + whole, "%Y-%m-%d %H:%M:%S")) - time.timezone)
        times.append(secs * NS + int((frac or "0").ljust(9, "0")))
    return tuple(times)


def mnt_times(path):
    st = call_with_timeout(os.lstat, path)
    return (st.st_atime_ns, st.st_mtime_ns, st.st_ctime_ns)


def fit(pair):
    """Times as the engine keeps them: Podman stores microseconds, rounded
    up (Go's NsecToTimeval), and ctrfs shows them so (docs/design.md,
    Podman); Docker keeps nanoseconds."""
    if not PODMAN:
        return pair
    return tuple(-(-t // 1000) * 1000 for t in pair)


def both(c, m, path):
    """(atime, mtime) through the mount and inside; they must agree."""
    inside = ctr_times(c, path)[:2]
    seen = mnt_times(m.p(c, path))[:2]
    assert seen == inside, f"mount {seen}, container {inside}"
    return seen


@pytest.fixture
def files(container):
    c = container()
    c.sh("mkdir -p /t/d && echo hi > /t/f && echo hi > /t/g && echo hi > /t/h && ln /t/h /t/h2")
    return c


def test_atime_set_apart_from_mtime(mount, files):
    """utimensat(atime=A, mtime=M) of a file the container holds: both, apart,
    even after the TTL (attr_timeout=0: every stat asks the engine)."""
    m = mount("-o", "attr_timeout=0")
    p = m.p(files, "/t/f")
    os.utime(p, ns=(A * NS, M * NS))
    assert both(files, m, "/t/f") == fit((A * NS, M * NS))
    time.sleep(1.1)  # past the entry's validation second: the HEAD says only the mtime
    assert both(files, m, "/t/f") == fit((A * NS, M * NS))
    # /t's listing is read again (a GET: a tar header each). That GET reads
    # the files, which moves an atime not after the mtime in the container
    # (relatime), as any read would: one after it stays
    os.utime(p, ns=((M + 10) * NS, M * NS))
    files.exec("touch", "/t/other")
    assert "other" in call_with_timeout(os.listdir, m.p(files, "/t"))
    assert both(files, m, "/t/f") == fit(((M + 10) * NS, M * NS))


def test_atime_or_mtime_alone(mount, files):
    """touch -a and touch -m (UTIME_OMIT for the other) change one time only."""
    m = mount()
    p = m.p(files, "/t/f")
    os.utime(p, ns=(A * NS, M * NS))
    utimensat(p, (A + 5, 0), (0, UTIME_OMIT))
    assert both(files, m, "/t/f") == fit(((A + 5) * NS, M * NS))
    utimensat(p, (0, UTIME_OMIT), (M + 7, 0))
    assert both(files, m, "/t/f") == fit(((A + 5) * NS, (M + 7) * NS))


def test_nanoseconds_of_a_committed_file(mount, files):
    """Nanoseconds set on a file already in the container land there (busybox's
    touch takes none: a PUT of the file carries them when atime >= mtime)."""
    m = mount()
    p = m.p(files, "/t/f")
    at, mt = (M + 10) * NS + 123456789, M * NS + 987654321
    os.utime(p, ns=(at, mt))
    assert both(files, m, "/t/f") == fit((at, mt))
    with open(p, "rb") as f:
        assert f.read() == b"hi\n"


def test_a_touch_that_refused_a_fraction_is_not_asked_again(mount, files):
    """busybox's touch takes whole seconds: once it refused a fraction, the
    next time with one goes straight to the PUT that carries it, with no
    line to the container's shell that fails first (rsync -a sets such a
    time on every file it writes)."""
    m = mount("-d")
    for name, k in (("f", 1), ("g", 2)):
        at, mt = (M + 10 + k) * NS + 123456789, (M + k) * NS + 987654321
        os.utime(m.p(files, f"/t/{name}"), ns=(at, mt))
        assert both(files, m, f"/t/{name}") == fit((at, mt))
    with open(m.log, errors="replace") as f:
        log = f.read()
    refused = log.count("takes no fraction")
    assert refused == 1, f"touch refused a fraction {refused} times, want once"


def test_what_cannot_be_carried_is_refused(mount, files):
    """An atime before the mtime, to the nanosecond, on busybox (whose touch
    takes whole seconds, and a PUT sets the later of the two), and nanoseconds
    on a file with hard links (a PUT would split them): EOPNOTSUPP, nothing
    changed; never 0 with other times."""
    m = mount()
    os.utime(m.p(files, "/t/f"), ns=(A * NS, A * NS))
    assert errno_of(lambda: os.utime(m.p(files, "/t/f"), ns=(A * NS + 5, M * NS + 7))) == errno.EOPNOTSUPP
    assert both(files, m, "/t/f") == fit((A * NS, A * NS))
    assert errno_of(lambda: os.utime(m.p(files, "/t/h"), ns=(M * NS + 5, M * NS + 5))) == errno.EOPNOTSUPP
    assert files.exec("stat", "-c", "%h %i", "/t/h") == files.exec("stat", "-c", "%h %i", "/t/h2")
    # whole seconds on a linked file: touch, in place
    os.utime(m.p(files, "/t/h"), ns=(A * NS, M * NS))
    assert both(files, m, "/t/h2") == fit((A * NS, M * NS))


def test_directory_times_with_nanoseconds(mount, files):
    m = mount()
    at, mt = A * NS + 111111111, M * NS + 222222222
    os.utime(m.p(files, "/t/d"), ns=(at, mt))
    assert both(files, m, "/t/d") == fit((at, mt))
    utimensat(m.p(files, "/t/d"), (0, UTIME_OMIT), (M + 3, 5))
    assert both(files, m, "/t/d") == fit((at, (M + 3) * NS + 5))
    # a chmod (a PUT of the entry) keeps both: Docker 20.10 sets atime 0
    # for an entry without one
    os.chmod(m.p(files, "/t/d"), 0o750)
    assert both(files, m, "/t/d") == fit((at, (M + 3) * NS + 5))
    os.mkdir(m.p(files, "/t/d2"))
    st = os.lstat(m.p(files, "/t/d2"))
    assert both(files, m, "/t/d2") == fit((st.st_mtime_ns, st.st_mtime_ns))


def test_times_of_a_file_being_written(mount, files):
    """futimens before close: the commit's PUT carries both; an atime before
    the mtime is set after it with touch -a."""
    m = mount()
    p = m.p(files, "/t/new")
    fd = os.open(p, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        os.write(fd, b"data\n")
        os.utime(fd, ns=(A * NS, M * NS))
    finally:
        os.close(fd)
    assert both(files, m, "/t/new") == fit((A * NS, M * NS))
    fd = os.open(m.p(files, "/t/new2"), os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        os.write(fd, b"data\n")
        os.utime(fd, ns=(M * NS + 9, A * NS + 3))
    finally:
        os.close(fd)
    assert both(files, m, "/t/new2") == fit((M * NS + 9, A * NS + 3))
    # an atime before the mtime, to the nanosecond, as `cp -p` of a file
    # just written gives: busybox's touch takes whole seconds, so the
    # atime is its second (logged); the mtime is exact
    fd = os.open(m.p(files, "/t/new3"), os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        os.write(fd, b"data\n")
        os.utime(fd, ns=(A * NS + 5, M * NS + 7))
    finally:
        os.close(fd)
    assert both(files, m, "/t/new3") == fit((A * NS, M * NS + 7))
    assert "atime set to the second" in m.log_text()


def test_utime_now(mount, files):
    """UTIME_NOW for both: one time, now, the same through the mount and inside."""
    m = mount()
    p = m.p(files, "/t/g")
    os.utime(p, ns=(A * NS, M * NS))
    utimensat(p, (0, UTIME_NOW), (0, UTIME_NOW))
    at, mt = both(files, m, "/t/g")
    assert at == mt < A * NS




def _ctime_step(c, m, path, change, ctr_path=None):
    """Runs change(); the file's ctime must move forward through the mount
    and inside, and the mount's be the container's, as ctrfs's clock saw
    it just after (same host clock: not before it, within a few seconds)."""
    ctr_path = ctr_path or path
    before_m = mnt_times(m.p(c, path))[2]
    before_c = ctr_times(c, ctr_path)[2]
    change()
    after_m = mnt_times(m.p(c, path))[2]
    after_c = ctr_times(c, ctr_path)[2]
    assert after_c > before_c, "the container's ctime did not move"
    assert after_m > before_m, f"the mount's ctime did not move: {before_m} -> {after_m}"
    assert after_c <= after_m < after_c + 5 * NS, f"mount {after_m}, container {after_c}"
    return after_m


def test_ctime_follows_every_change(mount, files):
    """chmod, chown, utimens, a write, truncate, link and unlink of another
    name, rename: each moves the ctime, through the mount as inside."""
    m = mount()
    f = "/t/f"
    p = m.p(files, f)
    _ctime_step(files, m, f, lambda: os.chmod(p, 0o600))
    _ctime_step(files, m, f, lambda: os.chown(p, 1234, 5678))
    _ctime_step(files, m, f, lambda: os.utime(p, ns=(A * NS, M * NS)))
    # the mtime set is in the future: the ctime is now all the same
    assert mnt_times(p)[2] < A * NS
    _ctime_step(files, m, f, lambda: os.link(p, m.p(files, "/t/f2")))
    _ctime_step(files, m, f, lambda: os.unlink(m.p(files, "/t/f2")))
    _ctime_step(files, m, f, lambda: os.truncate(p, 1))

    def write():
        with open(p, "ab") as fh:
            fh.write(b"more")

    _ctime_step(files, m, f, write)
    os.rename(p, m.p(files, "/t/moved"))
    assert ctr_times(files, "/t/moved")[2] <= mnt_times(m.p(files, "/t/moved"))[2]


def test_ctime_moves_for_a_change_made_inside(mount, files):
    """A chmod or chown made inside the container moves neither size nor
    mtime: the ctime shown moves forward when ctrfs sees the new mode (a
    HEAD) or owner (a listing of the directory), to the time it saw it: not
    before the container's own, and it stays while nothing changes (a hard
    link to another file listed with it included: a tar counts no links)."""
    m = mount("-o", "attr_timeout=0")  # every stat asks the engine
    p = m.p(files, "/t/g")
    seen = mnt_times(p)[2]  # first seen: its mtime
    steps = [("chmod", ["chmod", "600", "/t/g"], lambda st: stat.S_IMODE(st.st_mode) == 0o600)]
    if not PODMAN:  # its archive API: every owner 0:0 (README, Limits)
        steps.append(("chown", ["chown", "12:34", "/t/g"], lambda st: (st.st_uid, st.st_gid) == (12, 34)))
    for i, (what, argv, shows) in enumerate(steps):
        files.exec(*argv)
        # a name made in /t moves its mtime: the next listing is the engine's
        files.exec("touch", f"/t/new{i}")
        assert f"new{i}" in call_with_timeout(os.listdir, m.p(files, "/t"))
        st = call_with_timeout(os.lstat, p)
        assert shows(st), (what, st)
        inside = ctr_times(files, "/t/g")[2]
        assert st.st_ctime_ns > seen, f"{what}: the mount's ctime did not move: {seen} -> {st.st_ctime_ns}"
        assert inside <= st.st_ctime_ns < inside + 5 * NS, f"{what}: mount {st.st_ctime_ns}, container {inside}"
        seen = st.st_ctime_ns
    files.exec("ln", "/t/h", "/t/h3")
    assert "h3" in call_with_timeout(os.listdir, m.p(files, "/t"))
    assert mnt_times(p)[2] == seen


def test_ctime_does_not_move_for_the_same_file(mount, files):
    """Past the TTL (attr_timeout=0), a HEAD and a listing of the directory
    again (tar headers: no ctime) leave the ctime ctrfs set as it was."""
    m = mount("-o", "attr_timeout=0")
    p = m.p(files, "/t/f")
    os.chmod(p, 0o640)
    want = mnt_times(p)
    time.sleep(1.1)
    assert mnt_times(p) == want
    files.exec("touch", "/t/other")
    assert "other" in call_with_timeout(os.listdir, m.p(files, "/t"))
    assert mnt_times(p)[2] == want[2]
