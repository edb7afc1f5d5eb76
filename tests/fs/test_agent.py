# SPDX-License-Identifier: GPL-2.0-or-later
"""The tools ctrfs runs in a container (rm, mv, chmod, chown, touch...) go
as lines to one `sh` per container, not an exec each (design.md, "A shell
per container"): names must reach the tool as they are, a shell that ended
is replaced, and none is left behind at unmount."""

import os
import re
import signal

from conftest import call_with_timeout, podman_pattern, run_tool

ODD = [
    "it's",
    "new\nline",
    'dq"uote',
    "$(touch pwned)",
    "`touch pwned`",
    "back\\slash",
    "-dash",
    "semi;colon && x",
    "trail ",
    "*",
]
# Podman: names its archive API takes for a glob are refused (test_names.py)
ODD = [n for n in ODD if not podman_pattern(n)]


def log(m):
    with open(m.log, errors="replace") as f:
        return f.read()


def exec_creates(m):
    return len(re.findall(r"engine: POST /containers/[0-9a-f]+/exec ", log(m)))


def shells(c):
    """Host pids of processes named sh in the container (docker top)."""
    out = c.docker("top", c.name, "-o", "pid,comm").stdout.decode()
    return [int(line.split()[0]) for line in out.splitlines()[1:]
            if line.split()[1:] == ["sh"]]


def test_rm_rf_is_one_shell_not_an_exec_per_name(mount, container):
    c = container()
    c.sh('mkdir -p /t/a /t/b && for i in $(seq 40); do echo $i > /t/a/f$i; '
         'echo $i > /t/b/f$i; done')
    m = mount("-d")
    call_with_timeout(run_tool, "rm", "-rf", m.p(c, "/t"))
    assert c.docker("exec", c.name, "test", "-e", "/t", check=False).returncode != 0
    assert m.listdir(m.p(c, "/")).count("t") == 0
    # 80 files and 3 directories: one exec made the shell
    assert exec_creates(m) == 1
    assert len(re.findall(r"agent: (rm|rmdir) ", log(m))) == 83


def test_odd_names_reach_the_tools_as_they_are(mount, container):
    c = container()
    c.exec("mkdir", "/odd")
    m = mount()
    for i, name in enumerate(ODD):
        with open(m.p(c, f"/odd/{name}"), "wb") as f:
            f.write(b"%d\n" % i)
        new = name + ".moved"
        call_with_timeout(os.rename, m.p(c, f"/odd/{name}"), m.p(c, f"/odd/{new}"))
        call_with_timeout(os.chmod, m.p(c, f"/odd/{new}"), 0o600)
        call_with_timeout(os.utime, m.p(c, f"/odd/{new}"), (1700000000, 1700000000 + i))
        st = c.sh('stat -c "%a %Y" -- "$1"', f"/odd/{new}").split()
        assert st == [b"600", b"%d" % (1700000000 + i)], name
        assert c.sh('cat -- "$1"', f"/odd/{new}") == b"%d\n" % i
    for where in ("/pwned", "/odd/pwned"):
        assert c.docker("exec", c.name, "test", "-e", where, check=False).returncode != 0
    listed = sorted(c.sh('for f in /odd/* /odd/.[!.]*; do [ -e "$f" ] && '
                         'printf "%s\\0" "${f#/odd/}"; done; true').split(b"\0")[:-1])
    assert listed == sorted((n + ".moved").encode() for n in ODD)
    for name in ODD:
        call_with_timeout(os.unlink, m.p(c, f"/odd/{name}.moved"))
    assert c.exec("ls", "-A", "/odd") == b""


def test_a_shell_that_ended_is_replaced_and_none_stays(mount, container):
    c = container()
    c.write("/tmp/a", b"a\n")
    c.write("/tmp/b", b"b\n")
    m = mount("-d")
    call_with_timeout(os.unlink, m.p(c, "/tmp/a"))
    pids = shells(c)
    assert len(pids) == 1, pids
    os.kill(pids[0], signal.SIGKILL)
    call_with_timeout(os.unlink, m.p(c, "/tmp/b"))  # a new shell takes it
    assert re.search(r"agent: shell in \w+ (is gone|ended)", log(m))
    assert c.exec("ls", "/tmp") == b""
    assert len(shells(c)) == 1
    assert m.unmount() == []
    assert shells(c) == []
