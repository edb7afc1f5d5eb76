# SPDX-License-Identifier: GPL-2.0-or-later
"""Not a test: prints the error texts that src/errmap.c's tables hold, as
this engine and the tools in a busybox and a Debian container print them.
Run by name (pytest collects only test_*.py by itself):

    SKIP_UNIT=1 SKIP_HARNESS=1 ./scripts/run-tests tests/fs/probe_errtexts.py -s
    (CTRFS_TEST_ENGINE=docker-20.10 for Debian 12's engine)

It writes one line per case (name, exit status or HTTP status, the text)
to the file named by $PROBE_OUT, else to stdout. The Debian container
comes from bench/suite's debootstrapped root (test_write_errors.DEBROOT)."""

import io
import json
import os
import subprocess
import tarfile

from test_write_errors import debian_image  # noqa: F401 - a fixture

# Run inside as root: "case<TAB>exit<TAB>stderr" per case.
TOOLS = r"""
t() { name=$1; shift; err=$("$@" 2>&1 >/dev/null); echo "$name	$?	$err"; }
rm -rf /tmp/p; mkdir -p /tmp/p/d /tmp/p/e /tmp/p/e2; cd /tmp/p
echo x > f; echo y > d/x; ln -s la lb; ln -s lb la; ln f f2
long=/tmp/p/$(printf '%0300d' 0)
t rm_enoent rm -- /tmp/p/nope
t rmdir_enoent rmdir -- /tmp/p/nope
t mv_enoent mv -f -T -- /tmp/p/nope /tmp/p/n2
t chmod_enoent chmod 644 -- /tmp/p/nope
t truncate_enoent truncate -s 0 -- /tmp/p/nope/x
t rm_enotdir rm -- /tmp/p/f/x
t rmdir_enotdir rmdir -- /tmp/p/f
t mv_dir_on_file mv -f -T -- /tmp/p/e /tmp/p/f
t mv_file_on_dir mv -f -T -- /tmp/p/f /tmp/p/d
t rm_eisdir rm -- /tmp/p/d
t truncate_eisdir truncate -s 0 -- /tmp/p/d
t rmdir_enotempty rmdir -- /tmp/p/d
t mv_dir_on_nonempty mv -f -T -- /tmp/p/e2 /tmp/p/d
t mkdir_eexist mkdir -- /tmp/p/d
t mv_into_self mv -f -T -- /tmp/p/d /tmp/p/d/sub
t mv_same_file mv -f -T -- /tmp/p/f /tmp/p/f2
t truncate_efbig truncate -s 999999999999999 -- /tmp/p/f
t touch_enametoolong touch -c -h -d @1 -- "$long"
t chmod_eloop chmod 644 -- /tmp/p/la/x
t mv_eloop mv -f -T -- /tmp/p/la/x /tmp/p/y
t chown_einval chown -h 99999999999:0 -- /tmp/p/f
t missing_tool nosuchtool /tmp/p/f
t dd_enospc dd if=/dev/zero of=/small/big bs=1024 count=400
t ln_exdev ln /tmp/p/f /small/f
cp "$(command -v sleep)" /tmp/p/sl; /tmp/p/sl 30 & pid=$!; sleep 0.3
t truncate_etxtbsy truncate -s 0 -- /tmp/p/sl
kill $pid
t ro_rm rm -- /ro/f
t ro_chmod chmod 644 -- /ro/f
t ro_mv mv -f -T -- /ro/f /ro/g
"""

# Run inside as uid 65534 after TOOLS.
USER = r"""
t() { name=$1; shift; err=$("$@" 2>&1 >/dev/null); echo "$name	$?	$err"; }
t rm_eacces rm -- /tmp/p/d/x
t chmod_eperm chmod 644 -- /tmp/p/f
t chown_eperm chown -h 1:1 -- /tmp/p/f
t touch_eperm touch -c -h -d @1 -- /tmp/p/f
t mv_eacces mv -f -T -- /tmp/p/d/x /tmp/p/d/y
"""


def _tar(name, kind=tarfile.REGTYPE, data=b"x", link=None):
    b = io.BytesIO()
    with tarfile.open(fileobj=b, mode="w", format=tarfile.PAX_FORMAT) as tf:
        ti = tarfile.TarInfo(name)
        ti.type = kind
        if link:
            ti.linkname = link
        if kind == tarfile.REGTYPE:
            ti.size = len(data)
            tf.addfile(ti, io.BytesIO(data))
        else:
            tf.addfile(ti)
    return b.getvalue()


def _call(engine, method, url, body=None, json_body=None):
    """(HTTP status, message) of one raw call."""
    args = ["curl", "-s", "--unix-socket", engine.sock, "-X", method, "-w", "\n%{http_code}"]
    if body is not None:
        args += ["-H", "Content-Type: application/x-tar", "--data-binary", "@-"]
    if json_body is not None:
        args += ["-H", "Content-Type: application/json", "-d", json.dumps(json_body)]
    r = subprocess.run(args + ["http://localhost/v1.41" + url], input=body,
                       stdout=subprocess.PIPE, check=True)
    text, _, code = r.stdout.decode(errors="replace").rpartition("\n")
    return code, text.strip()


def test_probe(engine, container, debian_image, tmp_path):  # noqa: F811
    ro = tmp_path / "ro"
    ro.mkdir()
    (ro / "f").write_bytes(b"r\n")
    args = ["--tmpfs", "/small:size=256k", "-v", f"{ro}:/ro:ro"]
    lines = []
    for image in ("busybox", debian_image):
        c = container(image=image, cmd=["sleep", "1000000"], args=args)
        out = c.exec("sh", "-c", TOOLS, check=False).decode()
        lines += [f"{image} root\t{line}" for line in out.splitlines()]
        out = c.docker("exec", "-u", "65534", c.name, "sh", "-c", USER, check=False).stdout
        lines += [f"{image} 65534\t{line}" for line in out.decode().splitlines()]
    c = container(args=args)
    c.sh(TOOLS, check=False)
    a = f"/containers/{c.id}/archive?path="
    one = _tar("n")
    cases = [
        ("GET missing parent", "GET", a + "/nope/x", None),
        ("GET a file as a dir", "GET", a + "/tmp/p/f/x", None),
        ("GET loop", "GET", a + "/tmp/p/la", None),
        ("GET below a loop", "GET", a + "/tmp/p/la/x", None),
        ("GET name too long", "GET", a + "/tmp/p/" + "a" * 300, None),
        ("PUT to a loop", "PUT", a + "/tmp/p/la", one),
        ("PUT to missing", "PUT", a + "/nope", one),
        ("PUT to a file", "PUT", a + "/tmp/p/f", one),
        ("PUT below a file", "PUT", a + "/tmp/p/f/x", one),
        ("PUT to a ro volume", "PUT", a + "/ro", one),
        ("PUT name too long", "PUT", a + "/tmp/p", _tar("a" * 300)),
        ("PUT dir over file", "PUT", a + "/tmp/p&noOverwriteDirNonDir=1",
         _tar("f", tarfile.DIRTYPE)),
        ("PUT file under a file", "PUT", a + "/tmp/p", _tar("f/x")),
        ("PUT hard link to missing", "PUT", a + "/tmp/p", _tar("h", tarfile.LNKTYPE, link="nope")),
        ("PUT hard link to a dir", "PUT", a + "/tmp/p", _tar("h2", tarfile.LNKTYPE, link="e2")),
        ("PUT not a tar", "PUT", a + "/tmp/p", b"garbage" * 200),
        ("GET no container", "GET", "/containers/nosuchctr/archive?path=/", None),
        ("PUT no container", "PUT", "/containers/nosuchctr/archive?path=/", one),
        ("GET no path", "GET", f"/containers/{c.id}/archive", None),
    ]
    for name, method, url, body in cases:
        code, text = _call(engine, method, url, body)
        lines.append(f"engine\t{name}\t{code}\t{text}")
    r = container(args=["--read-only"])
    code, text = _call(engine, "PUT", f"/containers/{r.id}/archive?path=/tmp", one)
    lines.append(f"engine\tPUT to a ro rootfs\t{code}\t{text}")
    cmd = {"Cmd": ["true"], "AttachStdout": True}
    engine.docker("pause", r.id)
    code, text = _call(engine, "POST", f"/containers/{r.id}/exec", json_body=cmd)
    lines.append(f"engine\texec paused\t{code}\t{text}")
    engine.docker("unpause", r.id)
    engine.docker("stop", "-t", "0", r.id)
    code, text = _call(engine, "POST", f"/containers/{r.id}/exec", json_body=cmd)
    lines.append(f"engine\texec stopped\t{code}\t{text}")
    out = "\n".join(lines) + "\n"
    if os.environ.get("PROBE_OUT"):
        with open(os.environ["PROBE_OUT"], "w") as f:
            f.write(out)
    else:
        print(out)
