# SPDX-License-Identifier: GPL-2.0-or-later
"""Packaging: the Debian package and `meson install`.

The .deb is built once per module with packaging/build-deb (or taken from
$CTRFS_DEB_DIR when CI has built it already). It is never installed on the
machine: `dpkg -x` unpacks it into a throwaway root, which read-only
overlays lay over the host's /usr in a private mount namespace (PackageRoot);
commands run there (nsenter) see the package as installed: /usr/bin/ctrfs,
the man page, the unit, the mount helper, and mount(8) as a user would run
it. apt-get resolves its dependencies only in a simulation. Where a ctrfs
package is installed on the machine these tests are skipped (they could not
tell its files from the unpacked ones, and must not touch it).
CTRFS_SKIP_PACKAGING=1 skips the package tests.
"""

import glob
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile

import pytest

from conftest import BUILD_DIR, CTRFS_BIN, REPO, wait_for

# Building the package can include installing its build dependencies.
pytestmark = pytest.mark.timeout(900)

UNIT = "mnt-containers.mount"
HELPER = "mount.fuse.ctrfs"
# mount(8) clears PATH for its helpers and /bin/sh falls back to its own
# default: this is the path the packaged binary is found on.
SYSTEM_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"


def run(*argv, timeout=300, check=True, env=None):
    r = subprocess.run([str(a) for a in argv], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=timeout, env=env)
    if check and r.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, argv))} exited {r.returncode}:\n"
                             f"{r.stdout.decode(errors='replace')[-6000:]}")
    return r


def apt_env():
    env = dict(os.environ)
    env["DEBIAN_FRONTEND"] = "noninteractive"
    env["PATH"] = SYSTEM_PATH
    return env


def engine_free_env(**extra):
    """The environment of a user who has set nothing about engines."""
    env = dict(os.environ)
    for k in ("DOCKER_HOST", "DOCKER_CONTEXT", "DOCKER_TLS_VERIFY", "DOCKER_CERT_PATH"):
        env.pop(k, None)
    env["PATH"] = SYSTEM_PATH
    env.update(extra)
    return env


def unit_dir():
    r = subprocess.run(["pkg-config", "--variable=systemdsystemunitdir", "systemd"],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=False)
    d = r.stdout.decode().strip() if r.returncode == 0 else ""
    return d or "/lib/systemd/system"


def package_status():
    r = subprocess.run(["dpkg-query", "-W", "-f=${Status}", "ctrfs"], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, check=False)
    return r.stdout.decode().strip() if r.returncode == 0 else "not-installed"


# --------------------------------------------------------------------------
# Fixtures


@pytest.fixture(scope="module")
def deb(base_dir):
    """Path of the ctrfs .deb: built with packaging/build-deb, or $CTRFS_DEB_DIR's."""
    if os.environ.get("CTRFS_SKIP_PACKAGING") == "1":
        pytest.skip("CTRFS_SKIP_PACKAGING=1: Debian package tests skipped")
    if os.geteuid() != 0:
        pytest.skip("installing the package needs root")
    outdir = os.environ.get("CTRFS_DEB_DIR")
    if not outdir:
        outdir = os.path.join(base_dir, "deb")
        r = subprocess.run([os.path.join(REPO, "packaging", "build-deb"), outdir],
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=840)
        if r.returncode != 0:
            pytest.fail(f"packaging/build-deb exited {r.returncode}:\n"
                        f"{r.stdout.decode(errors='replace')[-8000:]}")
    debs = sorted(glob.glob(os.path.join(outdir, "ctrfs_*.deb")))
    assert len(debs) == 1, f"want one ctrfs_*.deb in {outdir}, found {debs}"
    return debs[0]


def host_has_no_ctrfs():
    """Skip when a ctrfs package is on the machine (dpkg -s ctrfs): its files
    would stand beside the unpacked package's, and it is not ours to touch."""
    status = package_status()
    if status != "not-installed":
        pytest.skip(f"a ctrfs package is installed on this machine (dpkg -s ctrfs: {status}): "
                    "the package tests leave it alone and are skipped")


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


class Namespace:
    """A private mount namespace that a shell script sets up and then holds
    open by sleeping (it prints "ready" first); close() ends it."""

    def _start(self, script, what):
        self.proc = subprocess.Popen(["unshare", "--mount", "--propagation", "private",
                                      "sh", "-c", script + "echo ready\nexec sleep infinity\n"],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        if self.proc.stdout.readline() != b"ready\n":
            self.proc.wait(10)
            raise AssertionError(f"no {what}: {self.proc.stderr.read().decode()}")
        self.pid = self.proc.pid

    def close(self):
        self.proc.kill()
        self.proc.wait(10)
        self.proc.stdout.close()
        self.proc.stderr.close()


class PackageRoot(Namespace):
    """The .deb unpacked into a throwaway root and laid, with read-only
    overlays, over the host's directories in a private mount namespace,
    held open by a sleeping process. run() runs a command in it; path()
    reaches a path as that namespace sees it. The host's own file system
    and package database are never written."""

    def __init__(self, deb, workdir):
        self.root = os.path.join(workdir, "root")
        os.mkdir(self.root)
        run("dpkg", "-x", deb, self.root)
        # dpkg -x makes /sbin and /lib directories; on a merged-/usr host
        # (/sbin -> usr/sbin) dpkg would have written through those links
        for top in sorted(os.listdir(self.root)):
            real = os.path.realpath("/" + top)
            if real != "/" + top:
                shutil.copytree(os.path.join(self.root, top), self.root + real,
                                symlinks=True, dirs_exist_ok=True)
                shutil.rmtree(os.path.join(self.root, top))
        self.binary = os.path.join(self.root, "usr", "bin", "ctrfs")
        script = "set -e\n"
        for top in sorted(os.listdir(self.root)):
            lower = os.path.join(self.root, top)
            script += f"mount -t overlay overlay -o 'lowerdir={lower}:/{top}' '/{top}'\n"
        self._start(script, "namespace with the package")

    def run(self, *argv, **kw):
        return run("nsenter", "-t", self.pid, "-m", "--", *argv, **kw)

    def path(self, path):
        return f"/proc/{self.pid}/root{path}"

    def mount_types(self, mnt):
        with open(f"/proc/{self.pid}/mounts") as f:
            return [line.split()[2] for line in f if line.split()[1] == mnt]

    def mount_options(self, mnt):
        with open(f"/proc/{self.pid}/mounts") as f:
            return [line.split()[3] for line in f if line.split()[1] == mnt]

@pytest.fixture
def installed(deb, tmp_path):
    """The package as if installed, in a private mount namespace (PackageRoot)."""
    host_has_no_ctrfs()
    r = PackageRoot(deb, str(tmp_path))
    yield r
    r.close()


def ctrfs_pids(mnt):
    """Pids of the ctrfs daemons serving `mnt` (found by their command line)."""
    pids = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if argv and os.path.basename(argv[0]) == b"ctrfs" and mnt.encode() in argv:
            pids.append(int(p))
    return pids


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture
def mnt_dir(mount_root, installed):
    """An empty mount point; whatever is left mounted on it in the
    package's namespace is torn down."""
    d = tempfile.mkdtemp(prefix="pkg.", dir=mount_root)
    os.chmod(d, 0o755)
    yield d
    if installed.mount_types(d):
        installed.run("fusermount3", "-u", "-z", d, check=False)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        pids = ctrfs_pids(d)
        for pid in pids:
            os.kill(pid, sig)
        if pids:
            wait_for(lambda: not any(alive(p) for p in pids), timeout=5)
    os.rmdir(d)


def check_mounted_and_unmount(pkg, mnt, container):
    """The mount shows the container, is served by the package's
    /usr/bin/ctrfs, and unmounts cleanly (all in the package's namespace)."""
    types = pkg.mount_types(mnt)
    assert types == ["fuse.ctrfs"], f"/proc/mounts has {types} on {mnt}"
    names = wait_for(lambda: container.name in os.listdir(pkg.path(mnt)) and os.listdir(pkg.path(mnt)),
                     timeout=10)
    assert names, f"{container.name} not in {mnt}: {os.listdir(pkg.path(mnt))}"
    pids = ctrfs_pids(mnt)
    assert len(pids) == 1, f"want one ctrfs daemon for {mnt}, found {pids}"
    exe = pkg.run("readlink", f"/proc/{pids[0]}/exe").stdout.decode().strip()
    assert exe == "/usr/bin/ctrfs"
    assert sha256_of(f"/proc/{pids[0]}/exe") == sha256_of(pkg.binary), "not the packaged binary"
    pkg.run("umount", mnt, timeout=60)
    assert not pkg.mount_types(mnt)
    assert wait_for(lambda: not alive(pids[0]), timeout=10), \
        f"ctrfs {pids[0]} still runs 10 s after umount"


# --------------------------------------------------------------------------
# The Debian package


def test_deb_metadata_and_contents(deb):
    info = run("dpkg-deb", "-f", deb, "Package", "Depends", "Recommends").stdout.decode()
    fields = dict(line.split(": ", 1) for line in info.splitlines())
    assert fields["Package"] == "ctrfs"
    assert re.match(r"fuse3(,|$)", fields["Depends"]), fields["Depends"]
    assert "libfuse3" in fields["Depends"], "no shlibs dependency: " + fields["Depends"]
    assert fields["Recommends"] == "docker.io | podman"
    listing = run("dpkg-deb", "-c", deb).stdout.decode()
    entries = {}
    for line in listing.splitlines():
        perm, _, _, _, _, path = line.split(None, 5)
        entries[path.split(" -> ")[0].lstrip(".")] = (perm, path)
    for path in ("/usr/bin/ctrfs", "/usr/share/man/man1/ctrfs.1.gz",
                 os.path.join(unit_dir(), UNIT)):
        assert path in entries, f"{path} not in the package:\n{listing}"
    perm, path = entries["/sbin/" + HELPER]
    assert perm.startswith("l") and path.endswith(" -> mount.fuse3"), path


def test_deb_installs_binary_man_page_unit_and_helper(installed):
    pkg = installed
    assert not os.path.lexists("/usr/bin/ctrfs"), "the host has a /usr/bin/ctrfs of no package"
    r = pkg.run("/usr/bin/ctrfs", "--version")
    assert r.stdout.decode().startswith("ctrfs "), r.stdout
    if shutil.which("man", path=SYSTEM_PATH):
        r = pkg.run("man", "-w", "ctrfs", env=apt_env())
        assert r.stdout.decode().strip() == "/usr/share/man/man1/ctrfs.1.gz"
    else:
        assert os.path.isfile(pkg.path("/usr/share/man/man1/ctrfs.1.gz"))
    unit = os.path.join(unit_dir(), UNIT)
    assert os.path.isfile(pkg.path(unit))
    helper = "/sbin/" + HELPER
    assert os.readlink(pkg.path(helper)) == "mount.fuse3"
    assert os.path.isfile(pkg.path(helper)), f"{helper} -> mount.fuse3 is dangling"
    analyze = shutil.which("systemd-analyze", path=SYSTEM_PATH)
    if analyze:
        # Also checks that Documentation=man:ctrfs(1) resolves.
        r = pkg.run(analyze, "verify", unit, check=False, env=apt_env())
        out = r.stdout.decode(errors="replace")
        ours = [line for line in out.splitlines() if UNIT in line or "ctrfs" in line]
        assert r.returncode == 0 and not ours, out


def test_mount_t_fuse_ctrfs_with_engine_url(installed, engine, container, mnt_dir):
    c = container()
    r = installed.run("mount", "-t", "fuse.ctrfs", engine.url, mnt_dir, check=False, timeout=60,
                      env=engine_free_env())
    assert r.returncode == 0, f"mount exited {r.returncode}: {r.stdout.decode(errors='replace')}"
    check_mounted_and_unmount(installed, mnt_dir, c)


def test_fstab_line_mounts(installed, engine, container, mnt_dir, tmp_path):
    # The documented fstab line, with SOURCE 'docker' meaning the default
    # engine: here the test engine, through DOCKER_HOST.
    c = container()
    fstab = tmp_path / "fstab"
    fstab.write_text(f"docker {mnt_dir} fuse.ctrfs _netdev,allow_other 0 0\n")
    r = installed.run("mount", "-T", fstab, mnt_dir, check=False, timeout=60,
                      env=engine_free_env(DOCKER_HOST=engine.url))
    assert r.returncode == 0, f"mount exited {r.returncode}: {r.stdout.decode(errors='replace')}"
    opts = installed.mount_options(mnt_dir)
    assert opts and "allow_other" in opts[0].split(","), opts
    check_mounted_and_unmount(installed, mnt_dir, c)


def test_mount_without_engine_fails_with_status_2(installed, mnt_dir):
    r = installed.run("mount", "-t", "fuse.ctrfs", "unix:///nonexistent/docker.sock", mnt_dir,
                      check=False, timeout=60, env=engine_free_env())
    assert r.returncode == 2, (r.returncode, r.stdout)
    assert "cannot connect to engine" in r.stdout.decode(errors="replace")
    assert not installed.mount_types(mnt_dir)


class ScratchRoot(Namespace):
    """A copy-on-write view of the host's root file system (an overlay with
    its upper layer on a tmpfs) in a private mount namespace, held open by a
    sleeping process: run() runs a command chrooted into it. apt-get and
    dpkg write only to the tmpfs, which goes with the namespace."""

    def __init__(self, workdir):
        d = os.path.join(workdir, "scratch")
        os.mkdir(d)
        self.merged = os.path.join(d, "merged")
        script = f"""set -e
mount -t tmpfs tmpfs '{d}'
mkdir '{d}/upper' '{d}/work' '{self.merged}'
mount -t overlay overlay -o 'lowerdir=/,upperdir={d}/upper,workdir={d}/work' '{self.merged}'
mount -t proc proc '{self.merged}/proc'
mount --rbind /dev '{self.merged}/dev'
"""
        self._start(script, "scratch root")

    def run(self, *argv, **kw):
        return run("nsenter", "-t", self.proc.pid, "-m", "--", "chroot", self.merged, *argv, **kw)

    def path(self, path):
        return f"/proc/{self.proc.pid}/root{self.merged}{path}"

    def package_status(self):
        r = self.run("dpkg-query", "-W", "-f=${Status}", "ctrfs", check=False)
        return r.stdout.decode().strip() if r.returncode == 0 else "not-installed"

@pytest.fixture
def scratch_root(tmp_path):
    host_has_no_ctrfs()
    r = ScratchRoot(str(tmp_path))
    yield r
    r.close()


def test_apt_get_install_and_remove(deb, scratch_root):
    """apt-get resolves the dependencies (fuse3 and the shared libraries),
    the maintainer scripts run, and remove and purge leave nothing: in a
    copy-on-write root, never on the machine."""
    root = scratch_root
    shutil.copy(deb, root.path("/root/"))
    inside = "/root/" + os.path.basename(deb)
    root.run("apt-get", "install", "-y", "-q", "--no-install-recommends", inside, env=apt_env())
    assert root.package_status() == "install ok installed"
    assert os.access(root.path("/usr/bin/ctrfs"), os.X_OK)
    assert package_status() == "not-installed", "the install reached the machine"
    assert not os.path.lexists("/usr/bin/ctrfs"), "the install reached the machine"
    root.run("apt-get", "remove", "-y", "-q", "ctrfs", env=apt_env())
    for path in ("/usr/bin/ctrfs", "/sbin/" + HELPER, os.path.join(unit_dir(), UNIT),
                 "/usr/share/man/man1/ctrfs.1.gz"):
        assert not os.path.lexists(root.path(path)), f"{path} is left after apt-get remove"
    root.run("dpkg", "--purge", "ctrfs", env=apt_env())
    assert root.package_status() == "not-installed"


# --------------------------------------------------------------------------
# meson install and the man page, without the package


def test_meson_install_destdir(tmp_path):
    build = os.path.join(REPO, BUILD_DIR)
    if not os.path.isfile(os.path.join(build, "build.ninja")):
        pytest.fail(f"no meson build directory at {build}")
    dest = tmp_path / "dest"
    # No rebuild: scripts/run-tests has just built this directory, and the
    # other tests run its binary.
    r = run("meson", "install", "-C", build, "--no-rebuild", "--destdir", dest, check=False)
    assert r.returncode == 0, r.stdout.decode(errors="replace")
    opts = json.loads(run("meson", "introspect", "--buildoptions", build).stdout)
    opt = {o["name"]: o["value"] for o in opts}

    def under(*parts):
        return os.path.join(dest, *(p.lstrip("/") for p in parts))

    assert os.access(under(opt["prefix"], opt["bindir"], "ctrfs"), os.X_OK)
    assert os.path.isfile(under(opt["prefix"], opt["mandir"], "man1", "ctrfs.1"))
    assert os.path.isfile(under(unit_dir(), UNIT))
    assert os.readlink(under("/sbin", HELPER)) == "mount.fuse3"


def _man_text():
    with open(os.path.join(REPO, "docs", "ctrfs.1")) as f:
        text = f.read()
    return re.sub(r"\\f[BIRP]", "", text).replace("\\-", "-").replace("\\e", "\\")


def test_man_page_documents_every_option():
    # Each option of `ctrfs --help` (ctrfs's own, above the FUSE library's).
    r = run(CTRFS_BIN, "--help")
    own = re.search(r"^ctrfs options:\n(.*?)\n\n", r.stdout.decode(), re.M | re.S)
    assert own, r.stdout.decode()
    own = own.group(1)
    options = re.findall(r"^ {4}(-o \w+|-\w)", own, re.M)
    assert len(options) >= 8, own
    man = _man_text()
    missing = [o for o in options
               if not re.search(r"^\.(B|BI|BR|TP)?\s*\"?" + re.escape(o) + r"\b", man, re.M)]
    assert not missing, f"options of --help not in docs/ctrfs.1: {missing}"
    for s in ("--help", "--version", "_netdev", "DOCKER_HOST", "DOCKER_API_VERSION",
              "docker /mnt/containers fuse.ctrfs _netdev,allow_other 0 0",
              "mount -t fuse.ctrfs docker /mnt/containers", UNIT, HELPER,
              "EXIT STATUS", "ENVIRONMENT", "FILES", "EXAMPLES", "LIMITS"):
        assert s in man, f"{s!r} not in docs/ctrfs.1"


def test_man_page_renders_without_warnings():
    groff = shutil.which("groff", path=SYSTEM_PATH)
    if not groff:
        pytest.skip("no groff to render the man page with")
    r = subprocess.run([groff, "-man", "-ww", "-z", os.path.join(REPO, "docs", "ctrfs.1")],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    assert r.returncode == 0 and not r.stderr, r.stderr.decode(errors="replace")
