# SPDX-License-Identifier: GPL-2.0-or-later
"""Conformance per system call (issue 26, item 3): each case of
conform_cases.py is run through an allow_other mount, as root or as uid
65534, and the same call in a reference directory on the host's ext4
(/var/tmp) gives the expected outcome: the errno (or success, or the
result of readlink) must be the same, and the container's state after it
(`stat` in the container: type, mode, owner, size, link count, device,
link target, the times a case set) must be the reference's; a call that
failed must have changed nothing. The mount must show what the container
holds. A documented refusal (README, Limits) gives its errno and changes
nothing.

Every image (busybox, and Debian bookworm made with debootstrap) gets one
container and one mount for all its cases, each case in a directory of
its own under /t; one runner process per user and side makes the calls.
"""

import errno
import fcntl
import json
import os
import re
import shutil
import stat
import subprocess
import tempfile

import pytest

from conform_cases import ALL, EXPLICIT
from conftest import ENGINE_KIND, PODMAN, Container, same_mtime, start_ctrfs, stat_type

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "conform_runner.py")) as _f:
    RUNNER = _f.read()
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
PY = "/usr/bin/python3"
NODES = ("fifo", "chr", "blk")
DEBROOT = "/var/cache/ctrfs-test-debroot"
DEBIAN = "ctrfs-test/debian"
DEBOOTSTRAP = ["--variant=minbase", "bookworm"]
PODMAN_NOBODY = ("Podman 4.3: its archive API reports every owner as 0:0, so the kernel's "
                 "permission check (allow_other) judges nobody's own path as root's "
                 "(README, Limits)")


SHALLOW = ENGINE_KIND == "docker-20.10"
SHALLOW_WHY = ("Docker 20.10 resolves a path under its data root on the host: one near PATH_MAX in the "
               "container cannot be written there (ENAMETOOLONG) nor read past what its directory's "
               "listing brings (README, Limits)")


def left_out(case):
    """A case this engine cannot run (the reason: left_out_why())."""
    return podman_owned(case) or (SHALLOW and case.deep)


def left_out_why(case):
    return PODMAN_NOBODY if podman_owned(case) else SHALLOW_WHY


def podman_owned(case):
    """A uid 65534 case on a path of nobody's own: on Podman the mount
    shows it as root's (0:0), and the kernel's check judges by that."""
    return PODMAN and case.who == "nobody" and "65534" in case.setup


# --------------------------------------------------------------------------
# The Debian image: debootstrap once, the tar of its tree cached on disk


def apt_mirror():
    """The machine's first Debian mirror (apt sources), or None; the same
    choice as bench/suite's."""
    cands = []
    try:
        with open("/etc/apt/sources.list") as f:
            for line in f:
                p = line.split()
                if len(p) >= 3 and p[0] == "deb":
                    cands.append(p[2] if not p[1].startswith("[") else p[3])
    except OSError:
        pass
    d = "/etc/apt/sources.list.d"
    if os.path.isdir(d):
        for fn in sorted(os.listdir(d)):
            if fn.endswith(".sources"):
                with open(os.path.join(d, fn)) as f:
                    cands += [u for line in f if line.startswith("URIs:") for u in line.split()[1:]]
    return next((c for c in cands if "security" not in c), None)


def debian_rootfs():
    """Path of the cached tar of a `debootstrap --variant=minbase bookworm`
    tree (made once, under a lock: runs on other engines may want it at the
    same time); pytest.skip with the reason when it cannot be made."""
    tar = os.path.join(DEBROOT, "rootfs.tar")
    os.makedirs(os.path.dirname(DEBROOT), exist_ok=True)
    with open(DEBROOT + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists(tar):
            return tar
        deboot = shutil.which("debootstrap", path="/usr/sbin:/usr/bin:/sbin:/bin")
        mirror = apt_mirror()
        if not deboot or not mirror:
            pytest.skip("no debootstrap" if not deboot else "no Debian mirror in /etc/apt")
        tmp = DEBROOT + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
        root = os.path.join(tmp, "root")
        r = subprocess.run([deboot, *DEBOOTSTRAP, root, mirror], stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=1200)
        if r.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            pytest.skip(f"debootstrap {' '.join(DEBOOTSTRAP)} failed ({r.returncode}): "
                        + r.stdout.decode(errors="replace")[-300:])
        subprocess.run(["tar", "-C", root, "--numeric-owner", "-cf", os.path.join(tmp, "rootfs.tar"), "."],
                       check=True)
        shutil.rmtree(root)
        shutil.rmtree(DEBROOT, ignore_errors=True)
        os.rename(tmp, DEBROOT)
        return tar


@pytest.fixture(scope="session")
def debian_image(engine):
    tar = debian_rootfs()
    with open(tar, "rb") as f:
        r = subprocess.run(engine.argv("import", "-c", "ENV PATH=/usr/sbin:/usr/bin:/sbin:/bin",
                                       "-", DEBIAN), env=engine.env(), stdin=f,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    return DEBIAN


# --------------------------------------------------------------------------
# State of each case's directory: in the container, through the mount, in
# the reference directory


def _entry(mode, uid, gid, size, atime, mtime, nlink, rdev, target):
    kind = stat_type(mode)
    e = {"type": kind, "perm": stat.S_IMODE(mode), "uid": uid, "gid": gid,
         "atime": int(atime), "mtime": int(mtime)}
    if kind in ("file", "symlink"):
        e["size"] = size
    if kind != "dir":
        e["nlink"] = nlink
    if kind in ("chr", "blk"):
        e["rdev"] = rdev
    if kind == "symlink":
        e["target"] = target
    return e


def tree(base):
    """case id -> {relative name: entry} of a directory on the host (the
    reference, or the mount) by lstat, each relative to its directory's
    descriptor: a case's paths may be longer than PATH_MAX from /."""
    out = {}
    for cid in os.listdir(base):
        entries = out[cid] = {}
        top = os.path.join(base, cid)
        for dirpath, dirs, files, dfd in os.fwalk(top):
            sub = os.path.relpath(dirpath, top)
            names = [(".", None)] if sub == "." else []
            names += [(os.path.normpath(os.path.join(sub, n)), n) for n in dirs + files]
            for rel, n in names:
                st = os.stat(n or ".", dir_fd=dfd, follow_symlinks=False)
                target = os.readlink(n, dir_fd=dfd) if stat.S_ISLNK(st.st_mode) else None
                entries[rel] = _entry(st.st_mode, st.st_uid, st.st_gid, st.st_size, st.st_atime,
                                      st.st_mtime, st.st_nlink,
                                      (os.major(st.st_rdev), os.minor(st.st_rdev)), target)
    return out


# stat in the container, busybox's and GNU's alike, safe for any byte of a
# name but NUL: the names as `find -print0` gives them, then one `stat` per
# batch with the name last (its lines are read by those names, so a name
# with a newline cannot shift a field), then each symlink's name and target
STATE_SH = r"""
cd /t && find . -print0 && printf 'STAT\0' &&
find . -exec stat -c '%f|%u|%g|%s|%X|%Y|%h|%t|%T|%n' {} + && printf '\0LINKS\0' &&
find . -type l -exec sh -c 'for p; do printf "%s\0" "$p"; readlink "$p"; printf "\0"; done' sh {} +
"""
STAT_LINE = re.compile(rb"([0-9a-f]+)\|(\d+)\|(\d+)\|(\d+)\|(\d+)\|(\d+)\|(\d+)\|([0-9a-f]+)\|([0-9a-f]+)\|")


def parse_state(out):
    """{case id: {relative name: entry}} from STATE_SH's bytes."""
    toks = out.split(b"\0")
    names = toks[:toks.index(b"STAT")]
    pos = sum(len(n) + 1 for n in names) + len(b"STAT\0")
    end = out.index(b"\0LINKS\0", pos)
    stats, links = out[pos:end], out[end + len(b"\0LINKS\0"):].split(b"\0")
    targets = {}
    for p, t in zip(links[0::2], links[1::2]):
        assert t.endswith(b"\n"), (p, t)
        targets[p] = t[:-1].decode(errors="surrogateescape")
    res, at = {}, 0
    for n in names:  # the order of find's walk, the same both times
        m = STAT_LINE.match(stats, at)
        assert m and stats.startswith(n + b"\n", m.end()), (n, stats[at:at + 300])
        at = m.end() + len(n) + 1
        mode, uid, gid, size, atime, mtime, nlink = (int(v, 16 if i == 0 else 10)
                                                      for i, v in enumerate(m.groups()[:7]))
        parts = n.decode(errors="surrogateescape").split("/", 2)  # ".", case id, rest
        if len(parts) < 2:
            continue
        rel = parts[2] if len(parts) == 3 else "."
        res.setdefault(parts[1], {})[rel] = _entry(
            mode, uid, gid, size, atime, mtime, nlink,
            (int(m.group(8), 16), int(m.group(9), 16)), targets.get(n))
    assert at == len(stats), stats[at:at + 300]
    return res


def ctr_tree(ctr):
    return parse_state(ctr.engine.docker("exec", ctr.name, "sh", "-c", STATE_SH).stdout)


def diff(got, want, keys, what):
    """Differences between two states of one case's directory."""
    bad = []
    for rel in sorted(set(got) | set(want)):
        g, w = got.get(rel), want.get(rel)
        if g is None or w is None:
            bad.append(f"{what}: {rel!r} {'missing' if g is None else 'there'}, want "
                       f"{'none' if w is None else w['type']}")
            continue
        for k in keys(w):
            gv, wv = g.get(k), w.get(k)
            if gv == wv:
                continue
            if k == "mtime" and gv is not None and same_mtime(gv, wv):
                continue
            if PODMAN and k in ("uid", "gid") and what.startswith("mount") and gv == 0:
                continue  # Podman's archive API: owners 0:0 (README, Limits)
            if PODMAN and k == "nlink" and what.startswith("mount") and w["type"] in NODES:
                continue  # its tar: each name of a node a node of its own (README)
            show = oct if k == "perm" else repr
            bad.append(f"{what}: {rel!r} {k} {show(gv)}, want {show(wv)}")
    return bad


def keys_as_ref(w):
    """What the reference decides: the times only where a case set them."""
    ks = [k for k in w if k not in ("atime", "mtime")]
    # a directory's atime: the reads of the checks move it (relatime)
    ks += [k for k in ("atime", "mtime") if w[k] in EXPLICIT
           and not (k == "atime" and w["type"] == "dir")]
    return ks


def keys_all_but_atime(w):
    return [k for k in w if k != "atime"]


def keys_mount(w):
    """The mount against the container: all but the atime (unless a case
    set it) and a directory's mtime (whole seconds of two clocks)."""
    return [k for k in w if not (k == "atime" and (w[k] not in EXPLICIT or w["type"] == "dir"))
            and not (k == "mtime" and w["type"] == "dir" and w[k] not in EXPLICIT)]


# --------------------------------------------------------------------------
# One container and one mount per image, every case run at once


def setup_script(cases, base):
    lines = ["umask 022"]
    for c in cases:
        lines.append(f"mkdir -p {base}/{c.id} && ( cd {base}/{c.id} && {c.setup or ':'} ) "
                     f"|| echo 'setup failed: {c.id}'")
    return "\n".join(lines) + "\n"


def run_calls(base, cases, who):
    argv = [PY, "-c", RUNNER, base]
    if who == "nobody":
        argv = NOBODY + argv
    todo = [[c.id, c.op, c.args, c.watch] for c in cases if c.who == who]
    r = subprocess.run(argv, input=json.dumps(todo).encode(), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=300, cwd="/")
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    return json.loads(r.stdout)


def start_mount(engine, root, log, *options):
    """The mount fixture's launcher (conftest.start_ctrfs) for a module's
    mount: its spool and journal beside its log."""
    env = dict(os.environ)
    env.pop("DOCKER_HOST", None)
    env["TMPDIR"] = os.path.dirname(log)
    started = []
    try:
        return start_ctrfs(root, log, options, env, engine.url, started=started.append)
    except BaseException:
        for m in started:
            m.force_unmount()
        raise


class Results:
    pass


@pytest.fixture(scope="module", params=["busybox", "debian"])
def conform(request, engine, mount_root, tmp_path_factory):
    image = "ctrfs-test/busybox" if request.param == "busybox" else request.getfixturevalue("debian_image")
    cases = [c for c in ALL if not left_out(c)]
    work = tmp_path_factory.mktemp("conform-" + request.param)
    ref = tempfile.mkdtemp(prefix="ctrfs-conform.", dir="/var/tmp")
    os.chmod(ref, 0o755)
    name = f"conform-{request.param}-{os.getpid()}-{os.urandom(2).hex()}"
    m = None
    R = Results()
    try:
        engine.docker("run", "-d", "--network", "none", "--stop-timeout", "1", "--name", name,
                      image, "sleep", "1000000")
        c = R.ctr = Container(engine, name, name)
        out = c.exec("sh", "-c", setup_script(cases, "/t")).decode()
        assert "setup failed" not in out, out
        out = subprocess.run(["sh", "-c", setup_script(cases, ref)], check=True,
                             stdout=subprocess.PIPE).stdout.decode()
        assert "setup failed" not in out, out
        R.before = ctr_tree(c)
        m = R.mount = start_mount(engine, mount_root, str(work / "ctrfs.log"), "-o", "allow_other")
        mbase = m.p(c, "/t")
        R.ref, R.got = {}, {}
        for who in ("root", "nobody"):
            R.ref.update(run_calls(ref, cases, who))
            R.got.update(run_calls(mbase, cases, who))
        R.ref_after = tree(ref)
        R.ctr_after = ctr_tree(c)
        try:
            R.mnt_after = tree(mbase)
        except OSError:
            print("".join(l[:400] + "\n" for l in open(str(work / "ctrfs.log"), errors="replace").read().splitlines()[-80:]))
            raise
        R.image = request.param
        report = os.environ.get("CTRFS_CONFORM_REPORT")
        if report:  # each case's outcome on ext4 and through the mount
            with open(f"{report}.{request.param}.json", "w") as f:
                json.dump({c.id: {"ext4": R.ref[c.id], "mount": R.got[c.id]} for c in cases}, f)
        yield R
    finally:
        problems = m.unmount() if m else []
        engine.docker("rm", "-f", name, check=False)
        shutil.rmtree(ref, ignore_errors=True)
    assert not problems, problems


@pytest.mark.parametrize("case", ALL, ids=lambda c: c.id)
def test_conform(conform, case):
    if left_out(case):
        pytest.skip(left_out_why(case))
    R = conform
    want_err, want_ret, want_obs = R.ref[case.id]
    got_err, got_ret, got_obs = R.got[case.id]
    bad = []
    if case.watch and got_obs and want_obs:  # the ctime: moved on as on ext4, never back
        if got_obs != want_obs:
            bad.append(f"{case.op}: {case.watch[1]!r} ctime {got_obs['ctime']}, inode "
                       f"{'kept' if got_obs['ino'] else 'new'}; ext4: ctime {want_obs['ctime']}, "
                       f"inode {'kept' if want_obs['ino'] else 'new'}")
    elif case.watch and not got_err:
        bad.append(f"{case.op}: nothing observed of {case.watch[1]!r}")
    refused = case.refuse and errno.errorcode[getattr(errno, case.refuse[0])]
    if case.expect:  # an outcome ext4 cannot give here (the case says why)
        want_err = case.expect[0]
        if got_err != want_err:
            bad.append(f"{case.op}: {got_err or 'success'}, want {want_err or 'success'}")
        want_state, keys = ((R.before[case.id], keys_all_but_atime) if want_err
                            else (R.ref_after[case.id], keys_as_ref))
    elif refused and got_err == refused:
        want_state, keys = R.before[case.id], keys_all_but_atime
    else:
        if got_err != want_err:
            bad.append(f"{case.op}: {got_err or 'success'}, ext4 gives {want_err or 'success'}")
        if got_ret != want_ret:
            bad.append(f"{case.op} returned {got_ret!r}, ext4 {want_ret!r}")
        want_state, keys = R.ref_after[case.id], keys_as_ref
    ctr = R.ctr_after[case.id]
    bad += diff(ctr, want_state, keys, "container")
    bad += diff(R.mnt_after[case.id], ctr, keys_mount, "mount vs container")
    assert not bad, bad
