# SPDX-License-Identifier: GPL-2.0-or-later
"""An engine whose clock differs from ours (a remote one, say). ctrfs
compares the mtimes the engine reports with seconds of its own: when a
listing was read, when it changed a directory itself. Run under libfaketime,
ctrfs's clock is ahead of the (local) engine's by SKEW seconds."""

import os
import re
import time

import pytest

from conftest import shim_env, shim_lines

FAKETIME_LIB = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
SKEW = 5


def skewed_env(seconds):
    if not os.path.exists(FAKETIME_LIB):
        pytest.fail(f"{FAKETIME_LIB} is missing (Debian package libfaketime; scripts/run-tests installs it)")
    env = dict(os.environ)
    env.pop("DOCKER_HOST", None)
    env["LD_PRELOAD"] = FAKETIME_LIB
    env["FAKETIME"] = f"{seconds:+d}"
    env["FAKETIME_DONT_FAKE_MONOTONIC"] = "1"
    # a sanitizer runtime wants to be first; libfaketime only wraps clocks
    env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0"
    return env


def coarse_env(workdir):
    """time() one second behind the precise clock, preloaded (coarse_time.c)."""
    return shim_env(workdir, "coarse_time.c")


def engine_gets(m, path):
    with open(m.log, errors="replace") as f:
        return re.findall(r"engine: GET [0-9a-f]+:(\S*) ", f.read()).count(path)


def test_clock_ahead_of_the_engine_hides_no_new_name(mount, container):
    """A name made in the second the listing was read, after it, changes
    nothing a HEAD sees (same mtime second): only the listing's own second
    tells that it may be missing. Our clock 5 s ahead made that second look
    5 s later, and the new name stayed hidden for good."""
    c = container()
    m = mount("-d", env=skewed_env(SKEW))
    for attempt in range(10):
        d = f"/skew{attempt}"
        c.exec("mkdir", d)
        time.sleep(1.02 - time.time() % 1)  # just after a second begins
        c.exec("touch", f"{d}/a")
        first = sorted(m.listdir(m.p(c, d)))
        c.exec("touch", f"{d}/b")
        if first == ["a"] and c.stat(f"{d}/a")["mtime"] == c.stat(f"{d}/b")["mtime"]:
            break  # both changes and the listing fell in one second
    else:
        pytest.skip("could not fit two execs and a listing into one second")
    time.sleep(1.3)  # past the TTL: revalidated by a HEAD of the directory
    assert sorted(m.listdir(m.p(c, d))) == ["a", "b"]
    assert "engine clock: " in open(m.log, errors="replace").read()


@pytest.mark.parametrize("skew", [0, SKEW])
def test_directory_made_through_the_mount_keeps_its_listing(mount, container, skew):
    """mkdir, then a file written into it, through the mount: both changes
    are ctrfs's own, so after the TTL one HEAD of the directory (its mtime
    within the seconds of those changes) confirms the listing ctrfs kept,
    and no GET lists it again. With our clock ahead of the engine's, those
    seconds are the engine's too."""
    c = container()
    env = skewed_env(skew) if skew else None
    m = mount("-d", env=env)
    d = m.p(c, "/own")
    os.mkdir(d)
    with open(os.path.join(d, "f"), "wb") as f:
        f.write(b"x" * 100)
    time.sleep(1.5)
    assert sorted(os.listdir(d)) == ["f"]
    assert engine_gets(m, "/own") == 0
    assert c.exec("cat", "/own/f") == b"x" * 100
    # a new file's mtime is the engine's now, as if made inside
    ctr_now = int(c.exec("date", "+%s"))
    assert abs(c.stat("/own/f")["mtime"] - ctr_now) <= 3


def test_a_coarse_time_makes_no_mtime_in_the_future(mount, container, tmp_path):
    """The engine's Date against our second: ours came from time(), which
    reads the kernel's coarse clock and, in the first tick of a second,
    still says the last one. One reply sent in that tick made a local
    engine look a second ahead for a minute or two, and every file made
    through the mount got an mtime a second in the future (`ls -l` shows a
    year, make warns of clock skew). Here time() trails all the time:
    the shim logs that the daemon's time() is its own (without it this
    test fails); ctrfs should not call it, so no call is required."""
    c = container()
    env = coarse_env(str(tmp_path))
    m = mount("-d", env=env)
    assert shim_lines(env, m.pid)[:1] == ["time interposed"]
    os.listdir(m.p(c, "/"))  # a few replies, each one's Date observed
    p = m.p(c, "/coarse")
    with open(p, "wb") as f:
        f.write(b"x")
    mtime = os.stat(p).st_mtime
    assert mtime <= time.time()
    assert c.stat("/coarse")["mtime"] <= int(c.exec("date", "+%s"))
    assert "engine clock: " not in open(m.log, errors="replace").read()
