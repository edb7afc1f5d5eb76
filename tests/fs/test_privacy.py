# SPDX-License-Identifier: GPL-2.0-or-later
"""Who may use the mount: only its owner, unless -o allow_other."""

import json
import subprocess

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]

# Run as another user: print a JSON list of [operation, errno or null, result].
PROBE = r"""
import json, os, sys
out = []
for op, path in json.loads(sys.argv[1]):
    try:
        if op == "listdir":
            res = sorted(os.listdir(path))
        elif op == "read":
            with open(path, "rb") as f:
                res = f.read().decode("latin-1")
        else:
            os.lstat(path)
            res = None
        out.append([op, None, res])
    except OSError as e:
        out.append([op, e.errno, None])
print(json.dumps(out))
"""


def as_nobody(ops):
    r = subprocess.run([*NOBODY, "/usr/bin/python3", "-c", PROBE, json.dumps(ops)],
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=120, cwd="/")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_other_users_denied_without_allow_other(mount, container):
    c = container()
    m = mount()
    res = as_nobody([["listdir", m.path], ["stat", m.p(c, "/etc/passwd")],
                     ["read", m.p(c, "/etc/passwd")]])
    assert [e for _op, e, _res in res] == [13, 13, 13], res  # EACCES
    r = subprocess.run([*NOBODY, "ls", m.path], stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    assert r.returncode != 0
    assert b"Permission denied" in r.stderr


def test_other_users_allowed_with_allow_other(mount, container):
    c = container()
    c.sh("echo public > /public; chmod 644 /public; echo secret > /secret; chmod 600 /secret")
    m = mount("-o", "allow_other")
    res = as_nobody([["listdir", m.path], ["read", m.p(c, "/public")],
                     ["read", m.p(c, "/secret")], ["stat", m.p(c, "/secret")]])
    listed, public, secret, secret_stat = res
    assert listed[1] is None and c.name in listed[2], listed
    assert public == ["read", None, "public\n"]
    assert secret[1] == 13, secret  # permission-checked: root's 0600 file
    assert secret_stat[1] is None, secret_stat
