# SPDX-License-Identifier: GPL-2.0-or-later
"""The container list follows the engine's event stream: what `docker run`,
`rename` and `rm` change shows at once, an idle mount asks the engine
nothing, and a cut stream is logged once, falls back to listing on access,
and comes back."""

import os
import time

from conftest import PODMAN, read_file, wait_for
from test_remote import podman  # noqa: F401 (a fixture)

LIST = "/containers/json"


def log_lines(m):
    """All of the daemon's log (log_text() is its tail)."""
    with open(m.log, errors="replace") as f:
        return f.read().splitlines()


def engine_lines(m):
    return [l for l in log_lines(m) if "engine: " in l]


def lists(m):
    return sum(1 for l in engine_lines(m) if LIST in l)


def streams(m):
    """How many times the event stream was opened."""
    return sum(1 for l in engine_lines(m) if "/events" in l and "a stream" in l)


def assert_live(m):
    """The stream is back: accesses past the list's age list nothing."""
    time.sleep(0.5)
    before = lists(m)
    for _ in range(3):
        time.sleep(0.6)
        m.listdir()
    assert lists(m) == before, "accesses list again after the stream came back"


def test_run_then_read_at_once(mount, container):
    m = mount("-d")
    assert wait_for(lambda: streams(m) == 1), "the event stream did not open"
    misses = []
    # 50 as issue 29's target says; 20 on Podman, where each `podman run`
    # takes over a second
    runs = 20 if PODMAN else 50
    for i in range(runs):
        m.listdir()  # the list is fresh: the new name is not in it yet
        c = container()
        try:
            data = read_file(m.p(c, "/etc/passwd"))
            if not data.startswith(b"root:"):
                misses.append((c.name, data[:40]))
        except OSError as e:
            misses.append((c.name, e))
    assert not misses, f"{len(misses)} of {runs} missed: {misses[:5]}"


def test_rename_and_remove_follow_events(mount, container):
    c = container()
    m = mount("-d")
    assert wait_for(lambda: streams(m) == 1), "the event stream did not open"
    assert c.name in m.listdir()
    new = c.name + "-renamed"
    c.docker("rename", c.id, new)
    assert wait_for(lambda: new in m.listdir(), timeout=1.0), "rename not seen within 1 s"
    assert c.name not in m.listdir()
    c.docker("rm", "-f", c.id)
    assert wait_for(lambda: new not in m.listdir(), timeout=1.0), "removal not seen within 1 s"
    # accesses past the half TTL do not list again while the stream is up
    time.sleep(0.5)
    before = lists(m)
    for _ in range(5):
        time.sleep(0.6)
        m.listdir()
    assert lists(m) == before, f"{lists(m) - before} GET {LIST} for 5 accesses"


def test_idle_mount_asks_nothing(mount, container):
    c = container()
    m = mount("-d")
    assert wait_for(lambda: streams(m) == 1), "the event stream did not open"
    assert c.name in m.listdir()
    time.sleep(0.5)
    before = engine_lines(m)
    # ten seconds of looking at the root now and then: no call at all
    for _ in range(10):
        time.sleep(1)
        assert c.name in m.listdir()
    after = engine_lines(m)
    assert after == before, "engine calls while idle:\n" + "\n".join(after[len(before):])


def test_cut_stream_logged_once_and_back(mount, container, proxy):
    proxy.truncate("GET", "/events", after=400)  # the head, then a little
    m = mount("-d", engine=proxy)
    assert wait_for(lambda: streams(m) == 1), "the event stream did not open"
    proxy.clear()  # the first stream stays marked; the next one is whole
    a = container()  # its events pass the 400 bytes: the stream is cut
    assert wait_for(lambda: a.name in m.listdir()), f"{a.name} not listed"
    assert wait_for(lambda: streams(m) == 2), "the event stream was not opened again"
    cut = [l for l in log_lines(m) if "cannot follow the engine's events" in l]
    assert len(cut) == 1, f"{len(cut)} log lines for one cut: {cut}"
    # events work again: a rename shows at once, and access does not list
    new = a.name + "-b"
    a.docker("rename", a.id, new)
    assert wait_for(lambda: new in m.listdir(), timeout=1.0), "rename not seen after reconnect"
    assert_live(m)
    assert os.path.isdir(m.p(new))


def test_malformed_event_logged_once_and_back(mount, container, proxy):
    """A stream that sends what is not an event (a line that is not JSON)
    is dropped with one log line and opened again; containers started
    after that show at once."""
    line = b'{"Type": "container", "Action": \n'
    proxy.inject("GET", "/events", b"%x\r\n%s\r\n" % (len(line), line))
    m = mount("-d", engine=proxy)
    assert wait_for(lambda: streams(m) == 2, timeout=10), "the event stream was not opened again"
    bad = [l for l in log_lines(m) if "cannot follow the engine's events" in l]
    assert len(bad) == 1 and "not an event" in bad[0], bad
    a = container()
    assert wait_for(lambda: a.name in m.listdir(), timeout=5), f"{a.name} not listed"
    assert_live(m)


def test_podman_events(podman, mount):
    """Podman's names: `died`, `remove`; a rename as Docker's."""
    pm, url = podman
    m = mount("-d", "-o", "host=" + url, host=False)
    assert wait_for(lambda: streams(m) == 1, timeout=10), "the event stream did not open"
    name = "pod-ev-" + os.urandom(3).hex()
    pm("run", "-d", "--network", "none", "--name", name, "--ulimit", "nofile=1024:1024",
       "--ulimit", "nproc=1024:1024", "ctrfs-test/busybox", "sleep", "1000000")
    assert read_file(m.p(name, "/etc/passwd")).startswith(b"root:")
    new = name + "-b"
    pm("rename", name, new)
    assert wait_for(lambda: new in m.listdir(), timeout=1.0), "rename not seen within 1 s"
    pm("rm", "-f", "-t", "0", new)
    assert wait_for(lambda: new not in m.listdir(), timeout=1.0), "removal not seen within 1 s"
    time.sleep(0.5)
    before = lists(m)
    for _ in range(3):
        time.sleep(0.6)
        m.listdir()
    assert lists(m) == before, f"{lists(m) - before} GET {LIST} for 3 accesses"
