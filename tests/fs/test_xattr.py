# SPDX-License-Identifier: GPL-2.0-or-later
"""Extended attributes, as far as the engine's tar carries them: a GET's
tar says a file's security.capability (pax SCHILY.xattr.*) and nothing
else, so that name is read through the mount, copied out by `cp -a`, and
set on a file written through it; every other name is refused with
EOPNOTSUPP rather than kept nowhere."""

import errno
import hashlib
import io
import os
import struct
import subprocess
import tarfile

import pytest

from conftest import call_with_timeout, errname, errno_of, read_file

CAP = "security.capability"
PAX = "SCHILY.xattr." + CAP
# struct vfs_cap_data, revision 2: cap_net_raw (13) permitted, effective
CAP_NET_RAW_EP = struct.pack("<IIIII", 0x02000000 | 1, 1 << 13, 0, 0, 0)
# cap_chown (0) permitted, not effective
CAP_CHOWN_P = struct.pack("<IIIII", 0x02000000, 1 << 0, 0, 0, 0)


def put_files(c, dirpath, files):
    """docker cp of a tar into dirpath: files is name -> (data, xattrs)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for name, (data, xattrs) in files.items():
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            ti.mode = 0o755
            ti.mtime = 1700000000
            ti.pax_headers = {"SCHILY.xattr." + k: v.decode("latin-1")
                              for k, v in xattrs.items()}
            tf.addfile(ti, io.BytesIO(data))
    c.docker("cp", "-", f"{c.name}:{dirpath}", input=buf.getvalue())


def engine_xattrs(c, path):
    """The xattrs the engine's own GET (`docker cp`) carries for path."""
    (ti,) = c.cp_headers(path).values()
    return {k[len("SCHILY.xattr."):]: v.encode("latin-1")
            for k, v in ti.pax_headers.items() if k.startswith("SCHILY.xattr.")}


def getxattr(path, name):
    return call_with_timeout(os.getxattr, path, name)


def listxattr(path):
    return sorted(call_with_timeout(os.listxattr, path))


@pytest.mark.parametrize("how", ["probe", "listing"])
def test_capability_read_from_the_tar(mount, container, how):
    """A file's capability is what the engine's tar says, learned from a GET
    of the file itself (probe) or from a directory's listing; a file
    without one, and any other name, have none (ENODATA). Before: every
    getxattr was EOPNOTSUPP."""
    c = container()
    c.exec("mkdir", "/caps")
    put_files(c, "/caps", {"ping": (b"\x7fELF not really", {CAP: CAP_NET_RAW_EP}),
                           "plain": (b"plain", {})})
    assert engine_xattrs(c, "/caps/ping") == {CAP: CAP_NET_RAW_EP}
    m = mount()
    if how == "listing":
        assert sorted(m.listdir(m.p(c, "/caps"))) == ["ping", "plain"]
    ping, plain = m.p(c, "/caps/ping"), m.p(c, "/caps/plain")
    assert getxattr(ping, CAP) == CAP_NET_RAW_EP
    assert listxattr(ping) == [CAP]
    assert listxattr(plain) == []
    got = {p: errname(errno_of(getxattr, p, n)) for p, n in
           ((plain, CAP), (ping, "user.foo"), (m.p(c, "/caps"), CAP))}
    assert got == {plain: "ENODATA", ping: "ENODATA", m.p(c, "/caps"): "ENODATA"}
    assert call_with_timeout(read_file, ping) == b"\x7fELF not really"


def host_keeps_security_xattrs(d):
    probe = os.path.join(d, "probe")
    open(probe, "wb").close()
    try:
        os.setxattr(probe, CAP, CAP_CHOWN_P)
        return os.getxattr(probe, CAP) == CAP_CHOWN_P
    except OSError:
        return False
    finally:
        os.unlink(probe)


def test_cp_a_out_keeps_the_capability(mount, container, tmp_path):
    """`cp -a` out of the mount to the host keeps the file's capability.
    Before: cp -a copied the file without it."""
    if not host_keeps_security_xattrs(str(tmp_path)):
        pytest.skip(f"{tmp_path} does not keep security.* xattrs")
    c = container()
    c.exec("mkdir", "/caps")
    put_files(c, "/caps", {"ping": (b"data", {CAP: CAP_NET_RAW_EP})})
    m = mount()
    out = tmp_path / "out"
    r = subprocess.run(["cp", "-a", m.p(c, "/caps"), str(out)], capture_output=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert os.getxattr(out / "ping", CAP) == CAP_NET_RAW_EP
    assert (out / "ping").read_bytes() == b"data"


def test_set_on_a_file_being_written_lands(mount, container):
    """fsetxattr on a file being written goes in its PUT's pax header, and
    the engine keeps it; getxattr says it back. Before: EOPNOTSUPP."""
    c = container()
    m = mount()
    p = m.p(c, "/tmp/newcap")

    def go():
        with open(p, "wb") as f:
            f.write(b"x" * 100000)
            os.setxattr(f.fileno(), CAP, CAP_NET_RAW_EP)
            assert os.getxattr(f.fileno(), CAP) == CAP_NET_RAW_EP
    call_with_timeout(go)
    assert engine_xattrs(c, "/tmp/newcap") == {CAP: CAP_NET_RAW_EP}
    assert c.cp_sha256("/tmp/newcap") == hashlib.sha256(b"x" * 100000).hexdigest()
    assert getxattr(p, CAP) == CAP_NET_RAW_EP


def test_set_and_remove_on_a_file_not_open(mount, container):
    """A file not open is put again whole with the new set (a GET and a
    PUT), its content unchanged; XATTR_CREATE on a name there is EEXIST;
    removexattr takes it out again. Before: EOPNOTSUPP."""
    c = container()
    c.write("/tmp/f", b"content of f", mode=0o750)
    m = mount()
    p = m.p(c, "/tmp/f")
    call_with_timeout(os.setxattr, p, CAP, CAP_CHOWN_P)
    assert engine_xattrs(c, "/tmp/f") == {CAP: CAP_CHOWN_P}
    assert c.cp_out("/tmp/f") == b"content of f"
    assert c.stat("/tmp/f")["perm"] == 0o750
    assert errname(errno_of(os.setxattr, p, CAP, CAP_NET_RAW_EP, os.XATTR_CREATE)) == "EEXIST"
    call_with_timeout(os.setxattr, p, CAP, CAP_NET_RAW_EP, os.XATTR_REPLACE)
    assert engine_xattrs(c, "/tmp/f") == {CAP: CAP_NET_RAW_EP}
    call_with_timeout(os.removexattr, p, CAP)
    assert engine_xattrs(c, "/tmp/f") == {}
    assert errname(errno_of(os.removexattr, p, CAP)) == "ENODATA"
    assert listxattr(p) == []


@pytest.mark.parametrize("name", ["user.mime_type", "trusted.x", "security.selinux"])
def test_names_the_engine_drops_are_refused(mount, container, name):
    """The engine sets any name a PUT gives it but its GET carries only
    security.capability (Docker 20.10 and 26): other names are EOPNOTSUPP,
    while security.capability on the same file works. Before: the
    capability was EOPNOTSUPP too."""
    c = container()
    m = mount()
    p = m.p(c, "/tmp/g")

    def go():
        with open(p, "wb") as f:
            f.write(b"g")
            e = errno_of(os.setxattr, f.fileno(), name, b"v")
            os.setxattr(f.fileno(), CAP, CAP_CHOWN_P)
            return e
    e = call_with_timeout(go)
    assert e == errno.EOPNOTSUPP, f"setxattr {name}: {errname(e)}"
    assert engine_xattrs(c, "/tmp/g") == {CAP: CAP_CHOWN_P}
    e = errno_of(os.removexattr, p, name)
    assert e == errno.EOPNOTSUPP, f"removexattr {name}: {errname(e)}"
    # said once for the name, however often and on whichever file
    # (cp -a tries an ACL on every file it copies)
    with open(m.p(c, "/tmp/h"), "wb") as f:
        f.write(b"h")
    for f in ("/tmp/g", "/tmp/h", "/tmp/h"):
        assert errno_of(os.setxattr, m.p(c, f), name, b"v") == errno.EOPNOTSUPP
    said = [ln for ln in open(m.log).read().splitlines()
            if "the engine's archive carries only security.capability" in ln]
    assert len(said) == 1 and f"'{name}'" in said[0], said
