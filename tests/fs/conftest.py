# SPDX-License-Identifier: GPL-2.0-or-later
"""Fixtures for the ctrfs filesystem tests.

The suite drives a real ctrfs mount over a real Docker engine. A private
dockerd is started once per session (never the machine's own engine); every
test makes its own containers and its own mounts, and the mount protocol is the
one sshfs and libfuse use: start `ctrfs -f`, poll os.path.ismount, and at the
end `fusermount3 -u` and require the daemon to exit 0.
"""

import errno
import hashlib
import io
import itertools
import os
import random
import re
import shutil
import signal
import socket
import stat
import subprocess
import tarfile
import tempfile
import threading
import time

import pytest

from faultproxy import FaultProxy

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _engine_bin_dir():
    """The directory of the chosen engine's dockerd and CLI (CTRFS_TEST_ENGINE:
    docker-current, the default: Debian 13's docker.io unpacked into a cache
    by scripts/current-engine; docker-20.10: Debian 12's own docker.io;
    podman: Debian 12's podman 4.3, its Docker-compatible API)."""
    kind = os.environ.get("CTRFS_TEST_ENGINE") or "docker-current"
    if kind in ("docker-20.10", "podman"):
        return kind, None
    if kind != "docker-current":
        raise RuntimeError(f"CTRFS_TEST_ENGINE={kind}: want docker-current, docker-20.10 or podman")
    d = os.environ.get("CTRFS_ENGINE_BIN")
    if not d:
        d = subprocess.run([os.path.join(REPO, "scripts", "current-engine")], check=True,
                           stdout=subprocess.PIPE, stdin=subprocess.DEVNULL).stdout.decode().strip()
    return kind, d


ENGINE_KIND, ENGINE_BIN = _engine_bin_dir()
PODMAN = ENGINE_KIND == "podman"
if ENGINE_BIN:
    DOCKER = os.path.join(ENGINE_BIN, "docker")
    DOCKERD = os.path.join(ENGINE_BIN, "dockerd")
elif PODMAN:
    DOCKER = DOCKERD = shutil.which("podman", path="/usr/bin:/bin") or "/usr/bin/podman"
else:
    DOCKER = "/usr/bin/docker"
    DOCKERD = shutil.which("dockerd", path="/usr/sbin:/usr/bin") or "/usr/sbin/dockerd"
# dockerd finds containerd, the shim, runc and docker-init on PATH
ENGINE_PATH = ":".join(p for p in (ENGINE_BIN, os.environ.get("PATH", ""), "/usr/sbin:/sbin") if p)


def podman_pattern(name):
    """Whether Podman's archive API would take name for a glob: ctrfs
    refuses such a path there (test_names.py, test_pattern_names_on_podman)."""
    return PODMAN and any(ch in name for ch in "*?[\\")


def same_mtime(got, want):
    """Whole-second mtimes: the same, or, on Podman, got the second after
    want: its archive GET gives a time rounded to the nearest second (Go's
    tar writer), not cut, and ctrfs shows an entry known from a listing
    with that second (README, Limits)."""
    return got == want or (PODMAN and got == want + 1)


def podman_limit(reason):
    """Skip a test on Podman for a limit of its Docker-compatible API
    (listed in docs/design.md, Podman)."""
    return pytest.mark.skipif(PODMAN, reason="Podman 4.3: " + reason)


BUILD_DIR = os.environ.get("BUILD_DIR", "build-test")
CTRFS_BIN = os.environ.get("CTRFS_BIN") or os.path.join(REPO, BUILD_DIR, "ctrfs")
SANITIZED = os.environ.get("CTRFS_SANITIZED") == "1"

IMAGES = {"busybox": "ctrfs-test/busybox", "static": "ctrfs-test/static"}
BIG_SIZE = 200 * 1024 * 1024
MIB = 1024 * 1024

# Files baked into ctrfs-test/static: path -> (data, mode, uid, gid, mtime).
STATIC_FILES = {
    "data/hello.txt": (b"hello from a shell-less container\n", 0o644, 0, 0, 1000000000),
    "data/secret": (b"only root\n", 0o600, 1234, 5678, 1234567890),
    "data/rand.bin": (random.Random(42).randbytes(100_000), 0o640, 1000, 100, 1500000000),
    "data/sub/empty": (b"", 0o444, 0, 0, 1600000000),
    "data/sub/setuid": (b"#!/not/really\n", 0o4755, 0, 0, 1700000000),
}
STATIC_DIRS = {"data": (0o755, 0, 0, 1100000000), "data/sub": (0o1777, 4321, 8765, 1200000000)}


def pytest_report_header(config):
    return f"engine: {ENGINE_KIND} ({DOCKERD}, CLI {DOCKER})"


# --------------------------------------------------------------------------
# Small helpers used by the tests


class Hang(AssertionError):
    pass


def call_with_timeout(fn, *args, timeout=60, what=None):
    """Run fn(*args) in a thread; fail instead of hanging past `timeout`.

    A file operation on a broken FUSE daemon can block forever; the thread is
    left behind and unblocks when the mount is torn down.
    """
    result = {}

    def target():
        try:
            result["value"] = fn(*args)
        except BaseException as e:  # noqa: B902 - re-raised in the caller
            result["error"] = e

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(timeout)
    if t.is_alive():
        raise Hang(f"{what or getattr(fn, '__name__', fn)} did not return within {timeout} s")
    if "error" in result:
        raise result["error"]
    return result.get("value")


def wait_for(cond, timeout=5.0, interval=0.1):
    """Poll cond() until it is true or `timeout` passes; return its last value."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = cond()
        except OSError:
            value = False
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(interval)


def sha256_file(path, chunk=MIB):
    h = hashlib.sha256()
    with open(path, "rb", buffering=0) as f:
        while True:
            b = f.read(chunk)
            if not b:
                break
            h.update(b)
    return h.hexdigest()


def read_file(path):
    with open(path, "rb") as f:
        return f.read()


def errno_of(fn, *args):
    """Call fn(*args); return the errno of the OSError it raises, or None."""
    try:
        call_with_timeout(fn, *args, timeout=60)
    except OSError as e:
        return e.errno
    return None


def errname(n):
    return errno.errorcode.get(n, str(n)) if n is not None else "no error"


def ping(sock_path, timeout=2.0):
    """True if a Docker engine answers GET /_ping on the unix socket."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
            s.connect(sock_path)
            s.sendall(b"GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n")
            data = b""
            while True:
                b = s.recv(4096)
                if not b:
                    break
                data += b
        return data.startswith(b"HTTP/1.") and b" 200 " in data.split(b"\r\n", 1)[0]
    except OSError:
        return False


def tail(path, n=200):
    try:
        with open(path, "rb") as f:
            lines = f.read().decode("utf-8", "replace").splitlines()
    except OSError as e:
        return f"(cannot read {path}: {e})"
    return "\n".join(lines[-n:])


# --------------------------------------------------------------------------
# The private engine


class Engine:
    """A private dockerd with its own data root, exec root and socket."""

    def __init__(self, base, extra_args=()):
        self.extra_args = list(extra_args)
        self.dir = tempfile.mkdtemp(prefix="e.", dir=base)
        self.sock = os.path.join(self.dir, "docker.sock")
        self.pidfile = os.path.join(self.dir, "docker.pid")
        self.log = os.path.join(self.dir, "dockerd.log")
        self.url = "unix://" + self.sock
        self.proc = None

    def env(self):
        env = dict(os.environ)
        env["DOCKER_HOST"] = self.url
        for k in ("DOCKER_CONTEXT", "DOCKER_TLS_VERIFY", "DOCKER_CERT_PATH"):
            env.pop(k, None)
        return env

    def start(self, timeout=60):
        # An empty config file: the machine's /etc/docker/daemon.json must not
        # clash with these flags.
        config = os.path.join(self.dir, "daemon.json")
        with open(config, "w") as f:
            f.write("{}\n")
        cmd = [
            DOCKERD,
            "--config-file", config,
            "--bridge=none",
            "--iptables=false",
            "--ip-masq=false",
            "--ip6tables=false",
            "--data-root", os.path.join(self.dir, "data"),
            "--exec-root", os.path.join(self.dir, "exec"),
            "--pidfile", self.pidfile,
            "-H", self.url,
            *self.extra_args,
        ]
        env = dict(os.environ)
        env["PATH"] = ENGINE_PATH
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True, env=env,
            )
        deadline = time.monotonic() + timeout
        while not ping(self.sock):
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"dockerd exited with {self.proc.returncode}:\n{tail(self.log)}"
                )
            if time.monotonic() > deadline:
                raise RuntimeError(f"dockerd did not answer /_ping in {timeout} s:\n{tail(self.log)}")
            time.sleep(0.1)

    def pid(self):
        try:
            with open(self.pidfile) as f:
                return int(f.read().strip())
        except (OSError, ValueError):
            return None

    def stop(self, timeout=60):
        """SIGTERM the daemon named by the pid file, wait, SIGKILL if need be."""
        if self.proc is None:
            return
        pid = self.pid()
        if pid != self.proc.pid:
            # The pid file is ours only if it names the process we started.
            pid = self.proc.pid
        if self.proc.poll() is None:
            os.kill(pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.kill(pid, signal.SIGKILL)
                self.proc.wait(30)
        self.proc = None

    def cleanup(self):
        self.stop()
        remove_engine_dir(self.dir)

    def argv(self, *args):
        """The command line of `docker ARGS` against this engine."""
        return [DOCKER, *args]

    def docker(self, *args, check=True, input=None, timeout=120, stdout=subprocess.PIPE):
        """Run the engine's docker CLI; return the CompletedProcess."""
        r = subprocess.run(
            self.argv(*args), env=self.env(), input=input, stdout=stdout,
            stderr=subprocess.PIPE, timeout=timeout,
            stdin=None if input is not None else subprocess.DEVNULL,
        )
        if check and r.returncode != 0:
            raise AssertionError(
                f"docker {' '.join(map(str, args))} exited {r.returncode}: "
                f"{r.stderr.decode(errors='replace')}"
            )
        return r

    def import_images(self, rootfs):
        for name, tar_path in rootfs.items():
            with open(tar_path, "rb") as f:
                data = f.read()
            changes = ["ENV PATH=/bin:/usr/bin"]
            if name == "static":
                changes.append('CMD ["/pause"]')
            args = ["import"]
            for c in changes:
                args += ["-c", c]
            self.docker(*args, "-", IMAGES[name], input=data)


class PodmanEngine(Engine):
    """A private `podman system service` with its own root, run root, tmp
    dir and socket; the tests' docker CLI calls run as podman commands with
    the same roots (argv() maps the few whose flags differ)."""

    def __init__(self, base, extra_args=()):
        if extra_args:
            raise RuntimeError(f"no dockerd options on Podman: {extra_args}")
        self.extra_args = []
        # podman refuses a run root longer than 50 characters: next to the
        # run's base directory (CTRFS_TEST_TMP), else in /tmp
        parent = os.path.dirname(base)
        if len(parent) > 30:
            parent = "/tmp"
        self.dir = tempfile.mkdtemp(prefix="p.", dir=parent)
        os.chmod(self.dir, 0o755)
        self.sock = os.path.join(self.dir, "podman.sock")
        self.pidfile = os.path.join(self.dir, "podman.pid")
        self.log = os.path.join(self.dir, "service.log")
        self.url = "unix://" + self.sock
        self.proc = None
        self.volumes = itertools.count(1)
        self.conf = os.path.join(self.dir, "containers.conf")
        with open(self.conf, "w") as f:
            # a network config of our own; ulimits a low hard limit allows
            f.write('[containers]\ndefault_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]\n'
                    f'[network]\nnetwork_config_dir = "{self.dir}/net"\n')
        self.globals = [
            "--root", os.path.join(self.dir, "root"),
            "--runroot", os.path.join(self.dir, "run"),
            "--tmpdir", os.path.join(self.dir, "tmp"),
            "--volumepath", os.path.join(self.dir, "vol"),
            "--network-config-dir", os.path.join(self.dir, "net"),
            "--cgroup-manager", "cgroupfs",
            "--events-backend", "file",
        ]

    def env(self):
        env = dict(os.environ)
        for k in ("DOCKER_HOST", "DOCKER_CONTEXT", "DOCKER_TLS_VERIFY", "DOCKER_CERT_PATH",
                  "CONTAINER_HOST", "CONTAINER_CONNECTION"):
            env.pop(k, None)
        env["CONTAINERS_CONF"] = self.conf
        env["TMPDIR"] = os.path.join(self.dir, "tmp")
        return env

    def start(self, timeout=60):
        os.makedirs(os.path.join(self.dir, "tmp"), exist_ok=True)
        cmd = [DOCKER, *self.globals, "system", "service", "--time=0", self.url]
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True, env=self.env(),
            )
        with open(self.pidfile, "w") as f:
            f.write(f"{self.proc.pid}\n")
        deadline = time.monotonic() + timeout
        while not ping(self.sock):
            if self.proc.poll() is not None:
                raise RuntimeError(f"podman exited with {self.proc.returncode}:\n{tail(self.log)}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"podman did not answer /_ping in {timeout} s:\n{tail(self.log)}")
            time.sleep(0.1)

    def stop(self, timeout=60):
        super().stop(timeout)
        try:
            os.unlink(self.sock)
        except FileNotFoundError:
            pass

    def _stop_conmons(self):
        """SIGKILL the conmon of each container and exec session of ours
        (by the pid files under the run root), then whatever else names our
        directory (the `podman container cleanup` a conmon runs at the end)."""
        run = os.path.join(self.dir, "run")
        for dirpath, _, files in os.walk(run):
            for n in files:
                if n != "conmon.pid":
                    continue
                try:
                    with open(os.path.join(dirpath, n)) as f:
                        pid = int(f.read().strip())
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        if b"conmon" not in f.read():
                            continue
                    os.kill(pid, signal.SIGKILL)
                except (OSError, ValueError):
                    pass
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if (self.dir + "/").encode() in f.read() and int(pid) != os.getpid():
                        os.kill(int(pid), signal.SIGKILL)
            except OSError:
                pass

    def cleanup(self):
        if os.path.isdir(os.path.join(self.dir, "root")):
            self.docker("rm", "-a", "-f", "-t", "0", check=False)
        self.stop()
        self._stop_conmons()
        remove_engine_dir(self.dir)

    def argv(self, *args):
        args = list(args)
        if args and args[0] in ("run", "create"):
            args = self._run_args(args)
        elif args[:2] == ["rm", "-f"] and "-t" not in args:
            # `docker rm -f` kills at once; `podman rm -f` stops first,
            # waiting out the container's stop timeout: a second for each
            # test's teardown (0.1 s with -t 0)
            args = ["rm", "-f", "-t", "0", *args[2:]]
        elif args[:1] == ["top"] and "-o" in args:
            # docker top C -o pid,comm: host pids and names
            i = args.index("-o")
            args = args[:i] + ["h" + d if d == "pid" else d for d in args[i + 1].split(",")]
        return [DOCKER, *self.globals, *args]

    def _run_args(self, args):
        """--mount type=volume with volume-opt=...: podman run takes no
        volume-opt, and its local driver refuses size= where the
        filesystem has no project quota: a tmpfs of that size mounted
        under our directory, bound in with -v; other options: a volume
        made first with them."""
        out = []
        i = 0
        while i < len(args):
            a = args[i]
            if a == "--mount" and "volume-opt=" in args[i + 1]:
                fields = dict(kv.split("=", 1) if "=" in kv else (kv, "") for kv in
                              (f for f in args[i + 1].split(",") if not f.startswith("volume-opt=")))
                opts = [f[len("volume-opt="):] for f in args[i + 1].split(",") if f.startswith("volume-opt=")]
                name = f"ctrfs-vol-{os.getpid()}-{next(self.volumes)}"
                kv = dict(o.split("=", 1) for o in opts if "=" in o)
                if kv.get("type") == "tmpfs":
                    host = os.path.join(self.dir, "vols", name)
                    os.makedirs(host)
                    # a page more than asked: the host's mount table then
                    # shows no size another test looks for (size=1024k)
                    o = re.sub(r"size=(\d+)([kmg]?)", lambda m: "size=%dk" % (
                        int(m.group(1)) * {"": 1 / 1024, "k": 1, "m": 1024, "g": 1 << 20}[m.group(2)] + 4),
                        kv.get("o", ""))
                    subprocess.run(["mount", "-t", "tmpfs", "-o", o, "tmpfs", host], check=True)
                    out += ["-v", f"{host}:{fields['dst']}"]
                    i += 2
                    continue
                cmd = ["volume", "create"]
                for o in opts:
                    cmd += ["--opt", o]
                self.docker(*cmd, name)
                out += ["-v", f"{name}:{fields['dst']}"]
                i += 2
                continue
            out.append(a)
            i += 1
        return out

def new_engine(base, extra_args=()):
    """The chosen engine (CTRFS_TEST_ENGINE), not started."""
    return (PodmanEngine if PODMAN else Engine)(base, extra_args)


# --------------------------------------------------------------------------
# Containers


class Container:
    def __init__(self, engine, name, cid):
        self.engine = engine
        self.name = name
        self.id = cid

    def docker(self, *args, **kw):
        return self.engine.docker(*args, **kw)

    def exec(self, *argv, check=True, input=None, timeout=120):
        args = ["exec"] + (["-i"] if input is not None else []) + [self.name, *argv]
        return self.engine.docker(*args, check=check, input=input, timeout=timeout).stdout

    def sh(self, script, *args, **kw):
        """Run a busybox sh script inside; extra args become $1, $2, ..."""
        return self.exec("sh", "-c", script, "sh", *args, **kw)

    def write(self, path, data, mode=None, owner=None):
        self.sh('cat > "$1"', path, input=data)
        # chown first: it clears setuid and setgid.
        if owner is not None:
            self.exec("chown", owner, path)
        if mode is not None:
            self.exec("chmod", format(mode, "o"), path)

    def cp_in(self, host_path, path):
        self.engine.docker("cp", host_path, f"{self.name}:{path}", timeout=300)

    def _cp_out(self, path, consume):
        """Stream `docker cp NAME:path -` and hand the single file to consume()."""
        p = subprocess.Popen(
            self.engine.argv("cp", f"{self.name}:{path}", "-"), env=self.engine.env(),
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        try:
            with tarfile.open(fileobj=p.stdout, mode="r|") as tf:
                for member in tf:
                    if not member.isfile():
                        raise AssertionError(f"docker cp {path}: first entry {member.name!r} is not a file")
                    result = consume(tf.extractfile(member))
                    # the rest of the tar read too: a CLI whose pipe closes
                    # early dies of SIGPIPE (podman cp did)
                    while p.stdout.read(MIB):
                        pass
                    return result
            raise AssertionError(f"docker cp {path}: empty archive")
        finally:
            p.stdout.close()
            err = p.stderr.read()
            rc = p.wait(300)
            if rc != 0:
                raise AssertionError(f"docker cp {self.name}:{path} exited {rc}: {err.decode(errors='replace')}")

    def cp_out(self, path):
        """The bytes of the file at `path`, as `docker cp` gives them."""
        return self._cp_out(path, lambda f: f.read())

    def cp_sha256(self, path):
        def digest(f):
            h = hashlib.sha256()
            while True:
                b = f.read(MIB)
                if not b:
                    return h.hexdigest()
                h.update(b)

        return self._cp_out(path, digest)

    def cp_headers(self, path):
        """tar headers of every entry of `docker cp NAME:path -` (name -> TarInfo)."""
        if PODMAN and os.path.dirname(path.rstrip("/")) not in ("", "/"):
            # `podman cp` of a symlink copies its target (or fails on a
            # dangling one): the entries under path from its directory's tar
            parent = os.path.dirname(path.rstrip("/"))
            top = os.path.basename(parent) + "/"
            base = os.path.basename(path.rstrip("/"))
            r = self.engine.docker("cp", f"{self.name}:{parent}", "-")
            out = {}
            with tarfile.open(fileobj=io.BytesIO(r.stdout), mode="r:") as tf:
                for m in tf.getmembers():
                    name = m.name[len(top):] if m.name.startswith(top) else None
                    if name == base or (name or "").startswith(base + "/"):
                        m.name = name
                        out[name] = m
            return out
        r = self.engine.docker("cp", f"{self.name}:{path}", "-")
        with tarfile.open(fileobj=io.BytesIO(r.stdout), mode="r:") as tf:
            return {m.name: m for m in tf.getmembers()}

    def stat(self, path):
        """Metadata from inside: busybox `stat -c '%s %a %u %g %Y %F'`."""
        out = self.exec("stat", "-c", "%s %a %u %g %Y %F", path).decode()
        size, mode, uid, gid, mtime, ftype = out.rstrip("\n").split(" ", 5)
        return {
            "size": int(size),
            "perm": int(mode, 8),
            "uid": int(uid),
            "gid": int(gid),
            "mtime": int(mtime),
            "type": BUSYBOX_TYPES[ftype],
        }

    def state(self):
        return self.engine.docker("inspect", "-f", "{{.State.Status}}", self.id).stdout.decode().strip()


BUSYBOX_TYPES = {
    "regular file": "file",
    "regular empty file": "file",
    "directory": "dir",
    "symbolic link": "symlink",
    "fifo": "fifo",
    "socket": "socket",
    "character special file": "chr",
    "block special file": "blk",
}


def stat_type(st_mode):
    for test, name in (
        (stat.S_ISREG, "file"), (stat.S_ISDIR, "dir"), (stat.S_ISLNK, "symlink"),
        (stat.S_ISFIFO, "fifo"), (stat.S_ISSOCK, "socket"), (stat.S_ISCHR, "chr"),
        (stat.S_ISBLK, "blk"),
    ):
        if test(st_mode):
            return name
    return "unknown"


def host_stat(path):
    """os.lstat through the mount, in the same shape as Container.stat."""
    st = call_with_timeout(os.lstat, path, timeout=60)
    return {
        "size": st.st_size,
        "perm": stat.S_IMODE(st.st_mode),
        "uid": st.st_uid,
        "gid": st.st_gid,
        "mtime": int(st.st_mtime),
        "type": stat_type(st.st_mode),
    }


def compare_stat(ctr, mnt_path, ctr_path, keys=("size", "perm", "uid", "gid", "mtime", "type")):
    """Mismatches between lstat through the mount and stat in the container."""
    want = ctr.stat(ctr_path)
    got = host_stat(mnt_path)
    if want["type"] != "file":
        keys = [k for k in keys if k != "size"]
    # Podman's archive API reports every owner as 0:0, and ctrfs shows what
    # it reports (README, Limits) where it did not put the owner itself
    return {k: (got[k], want[k]) for k in keys
            if got[k] != want[k] and not (PODMAN and k in ("uid", "gid") and got[k] == 0)
            and not (k == "mtime" and same_mtime(got[k], want[k]))}


def remove_engine_dir(d):
    """Removes an engine's directory: whatever the engine left mounted
    under its roots goes first (lazily, deepest first), then the tree."""
    prefix = d + "/"
    with open("/proc/self/mountinfo") as f:
        points = [line.split()[4] for line in f]
    for p in sorted((p for p in points if p.startswith(prefix)), reverse=True):
        subprocess.run(["umount", "-l", p], check=False)
    shutil.rmtree(d, ignore_errors=True)


# --------------------------------------------------------------------------
# Mounts


class Mount:
    def __init__(self, path, proc, log):
        self.path = path
        self.proc = proc
        self.log = log
        self.unmounted = False

    @property
    def pid(self):
        return self.proc.pid

    def alive(self):
        return self.proc.poll() is None

    def p(self, ctr, path=""):
        """Path through the mount of `path` inside container `ctr` (object or name)."""
        name = ctr if isinstance(ctr, str) else ctr.name
        return os.path.join(self.path, name, path.lstrip("/"))

    def listdir(self, path=None, timeout=60):
        return call_with_timeout(os.listdir, path or self.path, timeout=timeout)

    def log_text(self):
        return tail(self.log)

    def status(self, key):
        """A field of /proc/<daemon pid>/status, in kB for Vm* fields."""
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
        raise KeyError(key)

    def unmount(self):
        """Unmount as sshfs's tests do; return a list of problems (empty = clean).
        A test may unmount itself; the fixture's unmount is then a no-op."""
        if self.unmounted:
            return []
        try:
            return self._unmount()
        finally:
            self.unmounted = True

    def _unmount(self):
        problems = []
        if self.proc.poll() is not None:
            problems.append(f"ctrfs exited with {self.proc.returncode} before the unmount")
        else:
            r = subprocess.run(
                ["fusermount3", "-u", self.path], stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60,
            )
            if r.returncode != 0:
                problems.append(f"fusermount3 -u exited {r.returncode}: {r.stdout.decode(errors='replace')}")
            try:
                rc = self.proc.wait(10)
            except subprocess.TimeoutExpired:
                problems.append("ctrfs did not exit within 10 s of fusermount3 -u")
            else:
                if rc != 0:
                    problems.append(f"ctrfs exited with {rc} after fusermount3 -u (want 0)")
        if problems or self.mounted() or self.proc.poll() is None:
            self.force_unmount()
        try:
            os.rmdir(self.path)
        except OSError:
            pass
        return problems

    def mounted(self):
        """In the mount table? (os.path.ismount says no once the daemon died.)"""
        with open("/proc/self/mountinfo") as f:
            return any(line.split()[4] == self.path for line in f)

    def force_unmount(self):
        if self.mounted():
            subprocess.run(["fusermount3", "-z", "-u", self.path], check=False,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for sig, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, 10)):
            if self.proc.poll() is not None:
                break
            self.proc.send_signal(sig)
            try:
                self.proc.wait(wait)
            except subprocess.TimeoutExpired:
                pass


# --------------------------------------------------------------------------
# Session fixtures


@pytest.fixture(scope="session")
def base_dir():
    """A short, world-traversable directory for engines, mounts and images."""
    parent = os.environ.get("CTRFS_TEST_TMP") or "/tmp"
    d = tempfile.mkdtemp(prefix="ctrfs-t.", dir=parent)
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _tar_add(tf, name, *, data=None, mode=0o755, uid=0, gid=0, mtime=1000000000,
             kind=tarfile.REGTYPE, linkname=""):
    ti = tarfile.TarInfo(name)
    ti.type = kind
    ti.mode = mode
    ti.uid, ti.gid = uid, gid
    ti.mtime = mtime
    ti.linkname = linkname
    if data is not None:
        ti.size = len(data)
        tf.addfile(ti, io.BytesIO(data))
    else:
        tf.addfile(ti)


def _busybox_rootfs(path):
    """Debian's static busybox plus one symlink per applet."""
    bb = shutil.which("busybox", path="/bin:/usr/bin") or "/bin/busybox"
    applets = subprocess.run([bb, "--list"], check=True, stdout=subprocess.PIPE).stdout.decode().split()
    with open(bb, "rb") as f:
        binary = f.read()
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as tf:
        for d, mode in (("bin", 0o755), ("usr", 0o755), ("usr/bin", 0o755), ("etc", 0o755),
                        ("tmp", 0o1777), ("root", 0o700), ("proc", 0o555), ("sys", 0o555),
                        ("dev", 0o755)):
            _tar_add(tf, d, mode=mode, kind=tarfile.DIRTYPE)
        _tar_add(tf, "bin/busybox", data=binary, mode=0o755)
        for a in applets:
            if a == "busybox" or "/" in a:
                continue  # a link named busybox would replace the binary
            _tar_add(tf, "bin/" + a, kind=tarfile.SYMTYPE, linkname="busybox", mode=0o777)
        _tar_add(tf, "etc/passwd", mode=0o644,
                 data=b"root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n")
        _tar_add(tf, "etc/group", mode=0o644, data=b"root:x:0:\nnogroup:x:65534:\n")


def _static_rootfs(path, workdir):
    """A single static binary (tests/fs/pause.c) plus a few files; no shell."""
    binary = os.path.join(workdir, "pause")
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pause.c")
    subprocess.run(["gcc", "-static", "-O2", "-o", binary, src], check=True)
    with open(binary, "rb") as f:
        data = f.read()
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as tf:
        _tar_add(tf, "pause", data=data, mode=0o755)
        for d, (mode, uid, gid, mtime) in STATIC_DIRS.items():
            _tar_add(tf, d, mode=mode, uid=uid, gid=gid, mtime=mtime, kind=tarfile.DIRTYPE)
        for name, (content, mode, uid, gid, mtime) in STATIC_FILES.items():
            _tar_add(tf, name, data=content, mode=mode, uid=uid, gid=gid, mtime=mtime)
        for d in ("proc", "sys", "dev", "etc"):
            _tar_add(tf, d, kind=tarfile.DIRTYPE)


@pytest.fixture(scope="session")
def rootfs(base_dir):
    """Tarballs of the two test images' root filesystems (name -> path)."""
    d = os.path.join(base_dir, "images")
    os.mkdir(d)
    paths = {"busybox": os.path.join(d, "busybox.tar"), "static": os.path.join(d, "static.tar")}
    _busybox_rootfs(paths["busybox"])
    _static_rootfs(paths["static"], d)
    return paths


@pytest.fixture(scope="session")
def engine(base_dir, rootfs):
    """The session's private dockerd, with ctrfs-test/busybox and ctrfs-test/static."""
    e = new_engine(base_dir)
    try:
        e.start()
        e.import_images(rootfs)
        yield e
    finally:
        e.cleanup()


@pytest.fixture(scope="session")
def big_file(base_dir):
    """A ~200 MiB file of random bytes on the host: (path, sha256)."""
    path = os.path.join(base_dir, "big.bin")
    h = hashlib.sha256()
    with open(path, "wb") as f:
        for _ in range(BIG_SIZE // MIB):
            b = os.urandom(MIB)
            h.update(b)
            f.write(b)
    yield path, h.hexdigest()
    os.unlink(path)


@pytest.fixture(scope="session")
def mount_root(base_dir):
    d = os.path.join(base_dir, "mnt")
    os.mkdir(d)
    os.chmod(d, 0o755)
    return d


# --------------------------------------------------------------------------
# Per-test fixtures

_counter = itertools.count(1)


def _unique_name(node_name):
    slug = re.sub(r"[^a-zA-Z0-9_.-]+", "-", node_name).strip("-.")[:40] or "c"
    return f"{slug}-{next(_counter)}-{os.urandom(2).hex()}"


@pytest.fixture
def private_engine(base_dir, rootfs):
    """Factory for extra engines that a test owns (and may stop and restart)."""
    engines = []

    def make(extra_args=()):
        e = new_engine(base_dir, extra_args)
        engines.append(e)
        e.start()
        e.import_images(rootfs)
        return e

    yield make
    for e in engines:
        e.cleanup()


@pytest.fixture
def container(engine, request):
    """Factory: container(image='busybox', cmd=None, args=(), engine=None, name=None).

    Runs a detached container with --network none and a unique name; every
    container made is removed at the end of the test.
    """
    made = []

    def make(image="busybox", cmd=None, args=(), engine=None, name=None, start=True):
        e = engine or _default_engine
        name = name or _unique_name(request.node.name)
        if cmd is None:
            cmd = ["sleep", "1000000"] if image == "busybox" else []
        verb = ["run", "-d"] if start else ["create"]
        out = e.docker(*verb, "--network", "none", "--stop-timeout", "1", "--name", name,
                       *args, IMAGES.get(image, image), *cmd).stdout
        c = Container(e, name, out.decode().strip().splitlines()[-1])
        made.append(c)
        return c

    _default_engine = engine
    yield make
    # one `rm -f` per engine for all of a test's containers: Podman took
    # about a second for each in a call of its own (a test that made 20
    # spent 22 s in its teardown)
    by_engine = {}
    for c in made:
        by_engine.setdefault(id(c.engine), (c.engine, []))[1].append(c.id)
    for e, ids in by_engine.values():
        try:
            e.docker("rm", "-f", *ids, check=False, timeout=120 + 10 * len(ids))
        except (OSError, subprocess.TimeoutExpired):
            pass


@pytest.fixture
def proxy(engine, base_dir):
    """A FaultProxy in front of the private engine (mount(engine=proxy))."""
    p = FaultProxy(engine.sock, os.path.join(base_dir, f"proxy-{os.getpid()}-{os.urandom(3).hex()}.sock"))
    yield p
    p.close()


def start_ctrfs(mount_root, log, options, env, host_url=None, started=None):
    """Starts `ctrfs -f [-o host=HOST_URL] OPTIONS MNT` (MNT a new directory
    under MOUNT_ROOT) with its output in LOG and environment ENV, and waits
    up to 30 s for the mount: the Mount. STARTED(m) is called as soon as the
    daemon runs, so that a caller unmounts it whatever happens next; a daemon
    that exits or does not mount fails the test with its log."""
    mnt = tempfile.mkdtemp(prefix="m.", dir=mount_root)
    os.chmod(mnt, 0o755)
    cmd = [CTRFS_BIN, "-f"]
    if host_url:
        cmd += ["-o", "host=" + host_url]
    cmd += [*options, mnt]
    with open(log, "wb") as logf:
        logf.write(("$ " + " ".join(cmd) + "\n").encode())
        logf.flush()
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=logf,
                                stderr=subprocess.STDOUT, env=env)
    m = Mount(mnt, proc, log)
    if started:
        started(m)
    deadline = time.monotonic() + 30
    while not os.path.ismount(mnt):
        if proc.poll() is not None:
            pytest.fail(f"ctrfs exited with {proc.returncode} before mounting:\n{m.log_text()}")
        if time.monotonic() > deadline:
            pytest.fail(f"ctrfs did not mount within 30 s:\n{m.log_text()}")
        time.sleep(0.1)
    return m


@pytest.fixture
def mount(engine, mount_root, tmp_path, request):
    """Factory: mount(*options, engine=None, host=True, env=None) -> Mount.

    Starts `ctrfs -f -o host=<engine> OPTIONS MNT` with its output in a
    per-test log file and waits for the mount. At the end of the test each
    mount is unmounted with fusermount3 -u, and the daemon must exit 0.
    """
    mounts = []
    item = request.node
    item._ctrfs_mounts = mounts

    def make(*options, engine=None, host=True, env=None):
        if not os.access(CTRFS_BIN, os.X_OK):
            pytest.fail(f"no ctrfs binary at {CTRFS_BIN} (build it, or set CTRFS_BIN / BUILD_DIR)")
        e = engine or _default_engine
        log = str(tmp_path / f"ctrfs-{len(mounts) + 1}.log")
        if env is None:
            env = dict(os.environ)
            env.pop("DOCKER_HOST", None)
            # the daemon's spool, journal and rescue directories go under
            # the test's own directory, never the host's /var/tmp
            tmpdir = tmp_path / "tmpdir"
            tmpdir.mkdir(exist_ok=True)
            env["TMPDIR"] = str(tmpdir)
        return start_ctrfs(mount_root, log, options, env, e.url if host else None,
                           started=mounts.append)

    _default_engine = engine
    yield make
    problems = []
    for m in reversed(mounts):
        for p in m.unmount():
            problems.append(f"{m.path}: {p}")
    if problems:
        pytest.fail("unclean unmount:\n" + "\n".join(problems))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Attach each daemon's log to a failed test's report."""
    outcome = yield
    rep = outcome.get_result()
    if rep.failed:
        for i, m in enumerate(getattr(item, "_ctrfs_mounts", []), 1):
            rep.sections.append((f"ctrfs log {i} ({m.log})", m.log_text()))


# --------------------------------------------------------------------------
# Helpers for the write-path tests (test_write_*.py)


def shim_env(workdir, source):
    """The daemon's environment with tests/fs/SOURCE (a C file) compiled
    into workdir and preloaded: a shim that changes what ctrfs sees of its
    host (time(), sendfile()). The shim logs to env["CTRFS_SHIM_LOG"]
    (shim_log.h); see shim_lines()."""
    stem = os.path.splitext(source)[0]
    lib = os.path.join(str(workdir), stem + ".so")
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), source)
    subprocess.run(["gcc", "-shared", "-fPIC", "-O2", "-o", lib, src], check=True)
    env = dict(os.environ)
    env.pop("DOCKER_HOST", None)
    env["LD_PRELOAD"] = lib
    env["CTRFS_SHIM_LOG"] = os.path.join(str(workdir), stem + ".log")
    # a sanitizer runtime wants to be first; the shim only wraps one call
    env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0"
    return env


def shim_lines(env, pid):
    """What the shim preloaded by shim_env() logged in process `pid` (the
    daemon): e.g. "sendfile interposed" at load (the process's sendfile()
    is the shim's), "sendfile called" at its first call. Empty when the
    shim was not loaded."""
    try:
        with open(env["CTRFS_SHIM_LOG"]) as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return []
    return [line.split(" ", 1)[1] for line in lines if line.split(" ", 1)[0] == str(pid)]


def wb_status(m):
    """`ctrfs --status MNT`: (exit status, its lines split at tabs)."""
    r = subprocess.run([CTRFS_BIN, "--status", m.path], stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    return r.returncode, [line.split("\t") for line in r.stdout.decode().splitlines()]


def run_tool(*argv, timeout=120, check=True, cwd=None):
    """Run a host command (cp, rsync, tar...) on paths through the mount."""
    argv = [str(a) for a in argv]
    try:
        r = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=timeout, cwd=cwd)
    except subprocess.TimeoutExpired:
        raise Hang(f"{' '.join(argv)} did not finish within {timeout} s") from None
    if check and r.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} exited {r.returncode}: {r.stderr.decode(errors='replace')}")
    return r


def _entry(kind, perm, uid, gid, mtime, size=0, sha256=None, target=None, mtime_ns=None):
    """mtime_ns: the exact time where it is known (a host or mount tree);
    a tar's mtime is whole seconds (on Podman rounded to the nearest)."""
    return {"type": kind, "perm": perm, "uid": uid, "gid": gid, "mtime": int(mtime),
            "size": size, "sha256": sha256, "target": target, "mtime_ns": mtime_ns}


def tar_tree(ctr, path, timeout=300):
    """Every entry under directory `path` as `docker cp NAME:path/. -` gives it.

    Returns relative name ('.' for `path` itself) -> dict of type, perm (with
    setuid/setgid/sticky), uid, gid, mtime, size, sha256 and symlink target.
    A hard link entry is reported as the file it links to, with `hardlink`
    naming the first name.
    """
    src = f"{path.rstrip('/')}/."
    top = None
    if PODMAN and path.rstrip("/"):
        # `podman cp C:DIR/. -` leaves out DIR itself: DIR's tar, names
        # under its base name
        src = path.rstrip("/")
        top = os.path.basename(src)
    p = subprocess.Popen(
        ctr.engine.argv("cp", f"{ctr.name}:{src}", "-"), env=ctr.engine.env(),
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    tree = {}
    try:
        with tarfile.open(fileobj=p.stdout, mode="r|") as tf:
            for m in tf:
                name = os.path.normpath(m.name)
                if top is not None:
                    name = os.path.relpath(name, top)
                perm = m.mode & 0o7777
                if m.isdir():
                    tree[name] = _entry("dir", perm, m.uid, m.gid, m.mtime)
                elif m.issym():
                    tree[name] = _entry("symlink", perm, m.uid, m.gid, m.mtime, target=m.linkname)
                elif m.islnk():
                    first = os.path.normpath(m.linkname)
                    if top is not None:
                        first = os.path.relpath(first, top)
                    e = dict(tree[first])
                    e.update(perm=perm, uid=m.uid, gid=m.gid, mtime=m.mtime, hardlink=first)
                    tree[name] = e
                elif m.isfile():
                    h = hashlib.sha256()
                    f = tf.extractfile(m)
                    while True:
                        b = f.read(MIB)
                        if not b:
                            break
                        h.update(b)
                    tree[name] = _entry("file", perm, m.uid, m.gid, m.mtime, m.size, h.hexdigest())
                else:
                    tree[name] = _entry("other", perm, m.uid, m.gid, m.mtime)
    finally:
        p.stdout.close()
        err = p.stderr.read()
        rc = p.wait(timeout)
        if rc != 0:
            raise AssertionError(f"docker cp {ctr.name}:{path} exited {rc}: {err.decode(errors='replace')}")
    return tree


def host_tree(root):
    """The same shape as tar_tree for a directory on the host (or the mount)."""
    tree = {}

    def add(rel, full):
        st = os.lstat(full)
        perm = stat.S_IMODE(st.st_mode)
        ns = st.st_mtime_ns
        if stat.S_ISDIR(st.st_mode):
            tree[rel] = _entry("dir", perm, st.st_uid, st.st_gid, st.st_mtime, mtime_ns=ns)
        elif stat.S_ISLNK(st.st_mode):
            tree[rel] = _entry("symlink", perm, st.st_uid, st.st_gid, st.st_mtime, target=os.readlink(full),
                               mtime_ns=ns)
        elif stat.S_ISREG(st.st_mode):
            tree[rel] = _entry("file", perm, st.st_uid, st.st_gid, st.st_mtime, st.st_size, sha256_file(full),
                               mtime_ns=ns)
        else:
            tree[rel] = _entry("other", perm, st.st_uid, st.st_gid, st.st_mtime, mtime_ns=ns)

    def walk():
        add(".", root)
        for dirpath, dirnames, filenames in os.walk(root):
            for n in dirnames + filenames:
                full = os.path.join(dirpath, n)
                add(os.path.relpath(full, root), full)

    call_with_timeout(walk, timeout=120, what=f"walking {root}")
    return tree


def _same_rounded(key, a, b):
    """Podman: a tar's mtime (podman cp's) is the exact time rounded to the
    nearest second (Go's tar writer), not cut to it; the same time when
    the other side's exact time rounds to it. A tar's owners are all 0:0,
    and the mount shows them so for what it knows from a listing."""
    if PODMAN and key in ("uid", "gid") and 0 in (a[key], b[key]):
        return True
    if not PODMAN or key != "mtime":
        return False

    def whole(e):
        return e["mtime_ns"] is None or e["mtime_ns"] % 1_000_000_000 == 0

    for tar, exact in ((a, b), (b, a)):
        if whole(tar) and not whole(exact):
            return (exact["mtime_ns"] + 500_000_000) // 1_000_000_000 == tar["mtime"]
    return False


def tree_diff(got, want, keys=("type", "perm", "uid", "gid", "mtime", "size", "sha256", "target")):
    """Differences between two trees: name -> (got, want) of the differing keys.

    Permissions and mtimes of symlinks are not compared (Linux ignores the
    first; the second is not what these tests are about).
    """
    diff = {}
    for name in sorted(set(got) | set(want)):
        if name not in got or name not in want:
            diff[name] = ("present" if name in got else "missing", "present" if name in want else "missing")
            continue
        g, w = got[name], want[name]
        ks = [k for k in keys if not (w["type"] == "symlink" and k in ("perm", "mtime"))]
        if w["type"] == "dir":
            ks = [k for k in ks if k != "size"]
        d = {k: (g[k], w[k]) for k in ks if g[k] != w[k] and not _same_rounded(k, g, w)}
        if d:
            diff[name] = d
    return diff
