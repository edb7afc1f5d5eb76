# SPDX-License-Identifier: GPL-2.0-or-later
"""Writes that cannot land: stopped containers (archive API only), read-only
root filesystems and volumes, tmpfs mounts, and a container removed while a
file is being written."""

import errno
import os
import re
import subprocess

import pytest

from conftest import (MIB, podman_limit, call_with_timeout, errname, errno_of, read_file, run_tool, tar_tree,
                      wait_for)


def create(path, data=b"new data\n"):
    """open/write/close; raises the OSError of whichever step fails."""

    def go():
        with open(path, "wb") as f:
            f.write(data)

    call_with_timeout(go, what=f"creating {path}")


def exists_inside(c, path):
    return c.docker("exec", c.name, "test", "-e", path, check=False).returncode == 0


def test_stopped_container_create_and_mkdir(mount, container):
    c = container()
    c.docker("stop", "-t", "0", c.id)
    assert c.state() == "exited"
    m = mount("-o", "all")
    data = os.urandom(50_000)
    create(m.p(c, "/tmp/new"), data)
    call_with_timeout(os.mkdir, m.p(c, "/tmp/dir"))
    create(m.p(c, "/tmp/dir/inner"), b"inner\n")
    assert c.cp_out("/tmp/new") == data
    tree = tar_tree(c, "/tmp")
    assert tree["dir"]["type"] == "dir"
    assert tree["dir/inner"]["size"] == 6
    assert call_with_timeout(read_file, m.p(c, "/tmp/dir/inner")) == b"inner\n"
    assert sorted(m.listdir(m.p(c, "/tmp"))) == ["dir", "new"]
    assert c.state() == "exited"


@pytest.mark.parametrize("op", ["unlink", "rename"])
def test_stopped_container_rm_mv_not_supported(mount, container, op):
    c = container()
    c.write("/tmp/old", b"old content\n")
    c.docker("stop", "-t", "0", c.id)
    m = mount("-o", "all")
    f = m.p(c, "/tmp/old")
    fn = {"unlink": lambda: os.unlink(f), "rename": lambda: os.rename(f, m.p(c, "/tmp/moved"))}[op]
    e = errno_of(fn)
    assert e == errno.EOPNOTSUPP, f"{op}: {errname(e)}"
    assert c.cp_out("/tmp/old") == b"old content\n"
    assert sorted(tar_tree(c, "/tmp")) == [".", "old"]
    assert sorted(m.listdir(m.p(c, "/tmp"))) == ["old"]
    assert call_with_timeout(read_file, f) == b"old content\n"


def _assert_erofs_and_nothing_lands(m, c, dirpath, tmp_path):
    e = errno_of(create, m.p(c, f"{dirpath}/new"))
    assert e == errno.EROFS, f"creating a file: {errname(e)}"
    src = tmp_path / "copied"
    src.write_bytes(os.urandom(10_000))
    r = run_tool("cp", src, m.p(c, f"{dirpath}/"), check=False)
    assert r.returncode != 0, "cp reported success on a read-only file system"
    for name in ("new", "copied"):
        assert not exists_inside(c, f"{dirpath}/{name}"), f"{name} appeared inside"
        assert errno_of(os.lstat, m.p(c, f"{dirpath}/{name}")) == errno.ENOENT, name
    assert not {"new", "copied"} & set(m.listdir(m.p(c, dirpath)))
    assert m.alive()


def test_read_only_rootfs_is_erofs(mount, container, tmp_path):
    c = container(args=["--read-only"])
    m = mount()
    _assert_erofs_and_nothing_lands(m, c, "/etc", tmp_path)


def test_read_only_rootfs_overwrite_is_erofs(mount, container):
    c = container(args=["--read-only"])
    before = c.cp_out("/etc/passwd")
    m = mount()
    e = errno_of(create, m.p(c, "/etc/passwd"), b"replaced\n")
    assert e == errno.EROFS, f"overwriting a file: {errname(e)}"
    assert c.cp_out("/etc/passwd") == before
    assert call_with_timeout(read_file, m.p(c, "/etc/passwd")) == before


def test_full_volume_is_enospc(mount, container, tmp_path):
    # A 1 MiB tmpfs-backed volume: a volume, so the archive API writes into
    # it, and it fills up.
    c = container(args=["--mount", "type=volume,dst=/full,volume-driver=local,volume-opt=type=tmpfs,"
                                   "volume-opt=device=tmpfs,volume-opt=o=size=1m"])
    m = mount()
    e = errno_of(create, m.p(c, "/full/big"), os.urandom(3 * MIB))
    assert e == errno.ENOSPC, f"writing 3 MiB into 1 MiB: {errname(e)}"
    src = tmp_path / "copied"
    src.write_bytes(os.urandom(3 * MIB))
    r = run_tool("cp", src, m.p(c, "/full/"), check=False)
    assert r.returncode != 0, "cp reported success into a full volume"
    assert b"No space left on device" in r.stderr, r.stderr
    assert m.alive()
    c.docker("rm", "-f", "-v", c.id, check=False)  # and its anonymous volume


def test_read_only_volume_is_erofs(mount, container, tmp_path):
    vol = tmp_path / "vol"
    vol.mkdir()
    os.chmod(vol, 0o755)
    c = container(args=["-v", f"{vol}:/ro:ro"])
    m = mount()
    _assert_erofs_and_nothing_lands(m, c, "/ro", tmp_path)
    assert os.listdir(vol) == []


def test_write_under_tmpfs_not_supported(mount, container, tmp_path):
    c = container(args=["--tmpfs", "/scratch"])
    m = mount()
    e = errno_of(create, m.p(c, "/scratch/new"))
    assert e == errno.EOPNOTSUPP, f"creating a file: {errname(e)}"
    e = errno_of(os.mkdir, m.p(c, "/scratch/dir"))
    assert e == errno.EOPNOTSUPP, f"mkdir: {errname(e)}"
    src = tmp_path / "copied"
    src.write_bytes(b"x" * 1000)
    assert run_tool("cp", src, m.p(c, "/scratch/"), check=False).returncode != 0
    # Not in the tmpfs, and not underneath it either (the archive API sees
    # the directory under the tmpfs).
    assert c.exec("ls", "-A", "/scratch") == b""
    assert sorted(tar_tree(c, "/scratch")) == ["."]
    assert m.alive()
    assert "etc" in m.listdir(m.p(c))


def _spool_dir(log_path):
    """The spool directory named in the -d log, or None."""
    with open(log_path, errors="replace") as f:
        for line in f:
            if "spool" in line.lower():
                for p in re.findall(r"(/[^\s'\"`,;:]+)", line):
                    if os.path.isdir(p):
                        return p
    return None


def _spool_fds(m, spool, min_size=0):
    """The daemon's open file descriptors that look like spool files (of
    min_size bytes or more)."""
    found = []
    fd_dir = f"/proc/{m.pid}/fd"
    for fd in os.listdir(fd_dir):
        try:
            target = os.readlink(os.path.join(fd_dir, fd))
            size = os.stat(os.path.join(fd_dir, fd)).st_size
        except OSError:
            continue
        if size < min_size:
            continue
        if target == m.log or (target.startswith(("/dev/", "socket:", "pipe:", "anon_inode:"))
                               and "ctrfs-spool" not in target):
            continue  # the memory spool is in /dev/shm
        if (spool and target.startswith(spool + "/")) or "ctrfs" in target or "(deleted)" in target:
            found.append(target)
    return found


def test_container_removed_while_writing(mount, container):
    victim, other = container(), container()
    other.write("/still-here", b"still here\n")
    m = mount("-d")
    spool = _spool_dir(m.log)
    chunk = os.urandom(MIB)
    fd = call_with_timeout(os.open, m.p(victim, "/tmp/big.bin"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    error = None
    try:
        for _ in range(64):
            call_with_timeout(os.write, fd, chunk)
        try:
            victim.docker("rm", "-f", victim.id, timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail("docker rm -f did not finish in 60 s while a file was open for writing")
        for _ in range(8):
            call_with_timeout(os.write, fd, chunk)
    except OSError as e:
        error = e
    finally:
        try:
            call_with_timeout(os.close, fd, timeout=120)
        except OSError as e:
            error = error or e
    assert error is not None, "the write and close both succeeded into a removed container"
    assert error.errno == errno.EIO, f"want EIO, got {errname(error.errno)} ({error})"
    assert m.alive(), "ctrfs died"
    assert wait_for(lambda: victim.name not in m.listdir(), timeout=10)
    assert call_with_timeout(read_file, m.p(other, "/still-here")) == b"still here\n"
    # The spool file is gone (release comes after close, so allow it a moment).
    if spool:
        assert wait_for(lambda: not os.listdir(spool), timeout=10), \
            f"spool directory {spool} not empty: {os.listdir(spool)}"
    # the file contents a listing keeps are spool files too (the first
    # look at the other container's root): the writer's had 64 MiB
    assert wait_for(lambda: not _spool_fds(m, spool, 64 * MIB), timeout=10), \
        f"ctrfs still holds spool files open: {_spool_fds(m, spool, 64 * MIB)}"


@pytest.mark.parametrize("mem_spool", ["0", "2"])
def test_host_spool_full_is_enospc(mount, container, tmp_path, mem_spool):
    """The host's disk spool runs out of space: the write or the close fails
    with ENOSPC, and nothing half-written reaches the container. Written to
    disk from the start (-o mem_spool=0), or moved there from the memory
    spool once the file passes 2 MiB (the move itself fails then: the file
    goes on in memory, past the cap, and lands)."""
    c = container()
    spool_base = tmp_path / "tiny"
    spool_base.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(spool_base)], check=True)
    try:
        env = dict(os.environ)
        env.pop("DOCKER_HOST", None)
        env["TMPDIR"] = str(spool_base)
        m = mount("-o", f"mem_spool={mem_spool}", env=env)
        error = None
        fd = call_with_timeout(os.open, m.p(c, "/tmp/too-big"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
                               0o644)
        try:
            for _ in range(4):
                call_with_timeout(os.write, fd, os.urandom(MIB))
        except OSError as e:
            error = e
        finally:
            try:
                call_with_timeout(os.close, fd)
            except OSError as e:
                error = error or e
        if mem_spool == "0":
            assert error is not None, "4 MiB went through a 1 MiB spool"
            assert error.errno == errno.ENOSPC, errname(error.errno)
            assert not exists_inside(c, "/tmp/too-big"), "a half-written file reached the container"
        else:
            assert error is None, f"a full disk spool failed a write kept in memory: {error}"
            assert c.stat("/tmp/too-big")["size"] == 4 * MIB
            assert "cannot move '/tmp/too-big'" in open(m.log, errors="replace").read()
        assert m.alive()
    finally:
        # lazily: the daemon still holds its spool directory in it
        subprocess.run(["umount", "-l", str(spool_base)], check=False)


def test_memory_spool_full_moves_the_file_to_disk(engine, container, tmp_path):
    """/dev/shm fills up (someone else's files, or a small one) while a
    file is written into the memory spool, well under ctrfs's own cap: the
    write that meets ENOSPC moves the file to the disk spool and goes on
    there, and every byte lands. The daemon runs in its own mount namespace
    with a 1 MiB tmpfs on /dev/shm; its FUSE mount reaches this namespace
    through a shared bind mount."""
    from conftest import CTRFS_BIN

    if not os.path.ismount("/dev/shm"):
        pytest.skip("/dev/shm is not a mount of its own here")
    c = container()
    shared = tmp_path / "shared"
    (shared / "mnt").mkdir(parents=True)
    subprocess.run(["mount", "--bind", str(shared), str(shared)], check=True)
    proc = None
    try:
        subprocess.run(["mount", "--make-shared", str(shared)], check=True)
        mnt = shared / "mnt"
        log = tmp_path / "ctrfs.log"
        env = dict(os.environ)
        env.pop("DOCKER_HOST", None)
        env["TMPDIR"] = str(tmp_path)
        # /dev/shm private first: where the host's mounts are shared, the
        # small tmpfs would show on the host's /dev/shm too
        script = ("mount --make-private /dev/shm && "
                  "mount -t tmpfs -o size=1m tmpfs /dev/shm && "
                  'exec "$0" -d -o "host=$1" -o mem_spool=64 "$2"')
        with open(log, "wb") as logf:
            proc = subprocess.Popen(
                ["unshare", "-m", "--propagation", "unchanged", "--", "sh", "-c", script,
                 CTRFS_BIN, engine.url, str(mnt)],
                stdin=subprocess.DEVNULL, stdout=logf, stderr=subprocess.STDOUT, env=env)
        assert wait_for(lambda: os.path.ismount(mnt) or proc.poll() is not None, timeout=30)
        assert os.path.ismount(mnt), log.read_text(errors="replace")
        data = os.urandom(3 * MIB + 1)
        target = mnt / c.name / "tmp" / "shm-full"
        call_with_timeout(target.write_bytes, data)
        text = log.read_text(errors="replace")
        assert "goes on on disk after" in text, text[-4000:]
        assert "cannot write" not in text
        assert c.cp_out("/tmp/shm-full") == data
        r = subprocess.run(["fusermount3", "-u", str(mnt)], capture_output=True, timeout=60)
        assert r.returncode == 0, r.stderr
        assert proc.wait(30) == 0, log.read_text(errors="replace")[-4000:]
        assert "size=1024k" not in open("/proc/self/mountinfo").read(), \
            "the small tmpfs shows in this namespace"
    finally:
        if proc is not None and proc.poll() is None:
            subprocess.run(["fusermount3", "-uz", str(shared / "mnt")], check=False)
            proc.kill()
            proc.wait(10)
        subprocess.run(["umount", "-l", str(shared)], check=False)


@podman_limit("its archive API reports every owner as 0:0 and a paused container runs no stat: "
              "ctrfs refuses to put a file back (touch by copy) over its owner")
def test_a_paused_container(mount, container):
    """Paused, a container still serves the archive API but no exec: reads,
    new files and times (with a copy) work, a removal fails with
    EOPNOTSUPP and a log line with the engine's reason, not a claim that
    the container lacks `rm`; unpaused, it works."""
    c = container()
    c.write("/tmp/kept", b"kept\n")
    c.write("/tmp/doomed", b"doomed\n")
    m = mount()
    c.docker("pause", c.name)
    try:
        assert call_with_timeout(read_file, m.p(c, "/tmp/kept")) == b"kept\n"
        create(m.p(c, "/tmp/new"), b"made while paused\n")
        run_tool("touch", "-d", "@1700000000", m.p(c, "/tmp/kept"))
        assert errno_of(lambda: os.unlink(m.p(c, "/tmp/doomed"))) == errno.EOPNOTSUPP
    finally:
        c.docker("unpause", c.name)
    log = open(m.log, errors="replace").read()
    assert "cannot rm '/tmp/doomed'" in log and "paused" in log
    assert "lacks it" not in log
    assert c.exec("cat", "/tmp/new") == b"made while paused\n"
    assert c.stat("/tmp/kept")["mtime"] == 1700000000
    assert c.exec("cat", "/tmp/kept") == b"kept\n"
    call_with_timeout(os.unlink, m.p(c, "/tmp/doomed"))
    assert not exists_inside(c, "/tmp/doomed")


# Writes a file through the mount in a process of its own, so that no
# process of the test shares its descriptor: a child of a process holding
# it (docker exec, say) would close it at its exec, and that close commits.
HOLD_OPEN = """
import os, sys
f = open(sys.argv[1], "wb")
f.write(os.urandom(int(sys.argv[2])))
f.flush()
print("written", flush=True)
sys.stdin.readline()
try:
    f.close()
except OSError as e:
    print(e.errno, flush=True)
else:
    print(0, flush=True)
"""


@pytest.mark.parametrize("size", [MIB - 1, 8 * MIB], ids=["through-curl", "by-sendfile"])
def test_a_file_whose_directory_went_away_is_enoent(mount, container, size):
    """The engine refuses a PUT into a directory that is gone before it
    reads the body: ctrfs stops sending, and the close fails with ENOENT
    at once (a body sent by sendfile as well as one through curl)."""
    c = container()
    c.sh("mkdir /gone")
    m = mount()
    w = subprocess.Popen(["/usr/bin/python3", "-c", HOLD_OPEN, m.p(c, "/gone/f"), str(size)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert w.stdout.readline() == "written\n"
        c.sh("rm -rf /gone")
        w.stdin.write("\n")
        w.stdin.flush()
        out, _ = w.communicate(timeout=30)
    finally:
        w.kill()
    assert out.strip() == str(errno.ENOENT), out
    assert "cannot write '/gone/f' in container" in m.log_text()
    assert not exists_inside(c, "/gone")
    assert m.alive()



@pytest.mark.parametrize("size", [MIB - 1, 8 * MIB], ids=["through-curl", "by-sendfile"])
def test_a_file_whose_directory_became_a_file_is_enotdir(mount, container, size):
    """The engine refuses a PUT into a directory that the container has
    made a file meanwhile ("extraction point is not a directory"): the
    close fails with ENOTDIR (EIO until 2026-12-06), the file stays."""
    c = container()
    c.sh("mkdir /was")
    m = mount()
    w = subprocess.Popen(["/usr/bin/python3", "-c", HOLD_OPEN, m.p(c, "/was/f"), str(size)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert w.stdout.readline() == "written\n"
        c.sh("rm -rf /was && echo file > /was")
        w.stdin.write("\n")
        w.stdin.flush()
        out, _ = w.communicate(timeout=30)
    finally:
        w.kill()
    assert out.strip() == str(errno.ENOTDIR), errname(int(out.strip()))
    assert c.exec("cat", "/was") == b"file\n"
    assert m.alive()


def test_mkdir_in_a_directory_made_a_file_is_enotdir(mount, container):
    """mkdir and symlink (one PUT each, at once) into a directory the kernel
    and ctrfs still hold, which the container has made a file: ENOTDIR,
    not EIO, and nothing is changed."""
    c = container()
    c.sh("mkdir -p /was/sub")
    m = mount("-o", "attr_timeout=60")
    assert os.path.isdir(m.p(c, "/was/sub"))
    c.sh("rm -rf /was && echo file > /was")
    e = errno_of(os.mkdir, m.p(c, "/was/newdir"))
    assert e == errno.ENOTDIR, errname(e)
    e = errno_of(os.symlink, "target", m.p(c, "/was/newlink"))
    assert e == errno.ENOTDIR, errname(e)
    assert c.exec("cat", "/was") == b"file\n"
    assert "does not know" not in m.log_text()
    assert m.alive()


# A Debian root (GNU coreutils and dash) that bench/suite debootstraps once;
# read here, never written. Tests that need it skip where it is not.
DEBROOT = "/var/tmp/ctrfs-bench-debroot/root"


@pytest.fixture(scope="module")
def debian_image(engine):
    """ctrfs-test/debian in the session's engine, from DEBROOT."""
    if not os.path.exists(os.path.join(DEBROOT, "usr/bin/mv")):
        pytest.skip(f"no Debian root in {DEBROOT} (bench/suite makes one)")
    tar = subprocess.run(["tar", "-C", DEBROOT, "-c", "."], stdout=subprocess.PIPE, check=True)
    engine.docker("import", "-c", "ENV PATH=/usr/sbin:/usr/bin:/sbin:/bin", "-",
                  "ctrfs-test/debian", input=tar.stdout, timeout=300)
    return "ctrfs-test/debian"


@pytest.fixture(params=["busybox", "debian"])
def tools_image(request):
    """busybox's tools, then GNU coreutils (Debian)."""
    if request.param == "debian":
        return request.getfixturevalue("debian_image")
    return "busybox"


@pytest.mark.parametrize("op", ["unlink", "rename"])
def test_over_a_name_made_a_directory_is_eisdir(mount, container, tools_image, op):
    """unlink, or rename a file over, a name the kernel still holds as a
    file that the container has made a directory: busybox's rm and mv say
    "'P' is a directory", GNU mv "cannot overwrite directory 'P' with
    non-directory" (no strerror text either): EISDIR, not EIO."""
    c = container(image=tools_image, cmd=["sleep", "1000000"])
    c.sh("echo a > /tmp/src && echo b > /tmp/t")
    m = mount("-o", "attr_timeout=60")
    assert os.path.isfile(m.p(c, "/tmp/t")) and os.path.isfile(m.p(c, "/tmp/src"))
    c.sh("rm /tmp/t && mkdir /tmp/t")
    if op == "unlink":
        e = errno_of(os.unlink, m.p(c, "/tmp/t"))
    else:
        e = errno_of(os.rename, m.p(c, "/tmp/src"), m.p(c, "/tmp/t"))
    assert e == errno.EISDIR, errname(e)
    assert c.exec("stat", "-c", "%F", "/tmp/t") == b"directory\n"
    assert c.exec("cat", "/tmp/src") == b"a\n"
    assert "does not know" not in m.log_text()
    assert m.alive()


def test_a_long_path_keeps_the_tools_reason(mount, container, tmp_path):
    """unlink of a file 1,100 bytes deep in a read-only volume: busybox's
    rm names the whole path before the reason, which must still decide
    the errno (EROFS; EIO when only the first 512 bytes were kept)."""
    deep = "/".join(["d" * 50] * 21)
    vol = tmp_path / "vol"
    (vol / deep).mkdir(parents=True)
    (vol / deep / "f").write_bytes(b"kept\n")
    c = container(args=["-v", f"{vol}:/ro:ro"])
    m = mount()
    f = m.p(c, f"/ro/{deep}/f")
    assert call_with_timeout(read_file, f) == b"kept\n"
    e = errno_of(os.unlink, f)
    assert e == errno.EROFS, errname(e)
    assert (vol / deep / "f").read_bytes() == b"kept\n"
    assert m.alive()
