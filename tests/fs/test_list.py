# SPDX-License-Identifier: GPL-2.0-or-later
"""The top directory: one entry per container, following the engine."""

import errno
import os

from conftest import errname, errno_of, wait_for


def present(m, name):
    return name in m.listdir()


def test_lists_running_containers(mount, container):
    a, b = container(), container("static")
    m = mount()
    names = m.listdir()
    assert a.name in names and b.name in names
    assert not any(n.startswith("/") for n in names)
    assert os.path.isdir(m.p(a))


def test_stopped_container_absent_without_all(mount, container):
    running, stopped = container(), container()
    stopped.docker("stop", "-t", "0", stopped.id)
    m = mount()
    assert wait_for(lambda: present(m, running.name))
    assert stopped.name not in m.listdir()


def test_stopped_container_listed_with_all(mount, container):
    running, stopped = container(), container()
    stopped.docker("stop", "-t", "0", stopped.id)
    m = mount("-o", "all")
    names = m.listdir()
    assert running.name in names and stopped.name in names


def test_started_container_appears(mount, container):
    m = mount()
    c = container()
    assert wait_for(lambda: present(m, c.name)), f"{c.name} not listed after 5 s"
    assert os.path.isdir(m.p(c))


def test_stopped_container_disappears(mount, container):
    c = container()
    m = mount()
    assert present(m, c.name)
    c.docker("stop", "-t", "0", c.id)
    assert wait_for(lambda: not present(m, c.name)), f"{c.name} still listed 5 s after stop"
    c.docker("start", c.id)
    assert wait_for(lambda: present(m, c.name)), f"{c.name} not listed 5 s after restart"


def test_renamed_container_follows(mount, container):
    c = container()
    m = mount()
    assert present(m, c.name)
    new = c.name + "-renamed"
    c.docker("rename", c.id, new)
    assert wait_for(lambda: present(m, new) and not present(m, c.name)), m.listdir()
    c.name = new
    assert os.path.isdir(m.p(new, "/etc"))


def test_removed_container_disappears(mount, container):
    c = container()
    m = mount()
    assert present(m, c.name)
    c.docker("rm", "-f", c.id)
    assert wait_for(lambda: not present(m, c.name)), f"{c.name} still listed 5 s after rm"
    assert wait_for(lambda: errno_of(os.stat, m.p(c)) == errno.ENOENT), errname(errno_of(os.stat, m.p(c)))


def test_nonexistent_container_is_enoent(mount, container):
    container()
    m = mount()
    e = errno_of(os.stat, os.path.join(m.path, "no-such-container"))
    assert e == errno.ENOENT, errname(e)
    e = errno_of(os.listdir, os.path.join(m.path, "no-such-container"))
    assert e == errno.ENOENT, errname(e)
