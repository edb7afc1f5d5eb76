# SPDX-License-Identifier: GPL-2.0-or-later
"""Write-back (-o writeback=SECS): what a user calls to be sure the data is
in the container (`sync DIR`), and how a failed commit is told (fsync,
close, `ctrfs --status`)."""

import errno
import os
import re
import subprocess
import time

from conftest import (CTRFS_BIN, PODMAN, SANITIZED, errname, host_tree, podman_limit, run_tool,
                      tar_tree, tree_diff, wait_for, wb_status)

KEYS = ("type", "perm", "uid", "gid", "mtime", "size", "sha256")


def fsync_path(path):
    """fsync(2) of a file or directory, as `sync PATH` does; the errno or None."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError as e:
        return e.errno
    finally:
        os.close(fd)
    return None


status = wb_status


def make_tree(root, dirs=3, files=10):
    for d in range(dirs):
        (root / f"d{d}").mkdir(parents=True)
        for i in range(files):
            p = root / f"d{d}" / f"f{i}"
            p.write_bytes(os.urandom(1 + 100 * i))
            os.chmod(p, 0o600 + (i % 3) * 0o40)
            os.utime(p, ns=(1_600_000_000_123_456_789 + i, 1_600_000_000_123_456_789 + i))
    return root


def put_fails(proxy):
    return proxy.hits.get(("PUT", "/archive"), 0)


def test_sync_dir_commits_what_write_back_holds(mount, container, tmp_path):
    """`cp -p` of files into a write-back mount returns with them still
    held (the delay is 30 s); `sync DIR` (fsync of the directory) sends
    them and returns once they are in the container: bytes, modes, owners
    and mtimes exact right after it returns. (The directories are made
    first: `cp -a` of the tree would set their times after the files,
    which commits them before the sync.)"""
    c = container()
    src = make_tree(tmp_path / "src")
    m = mount("-o", "writeback=30")
    for d in sorted(os.listdir(src)):
        os.makedirs(m.p(c, f"/sy/{d}"))
        run_tool("sh", "-c", 'cp -p "$1"/* "$2"/', "sh", src / d, m.p(c, f"/sy/{d}"))
    # the directories are pending too: /sy may not be there yet
    there = c.sh("test -d /sy && echo y || true").strip() == b"y"
    held = tar_tree(c, "/sy") if there else {}
    assert not any(v["type"] == "file" for v in held.values()), \
        "files landed before the sync: the test proves nothing"
    assert fsync_path(m.p(c, "/sy")) is None
    # the files (the directories' mtimes are the container's own)
    want = {k: v for k, v in host_tree(str(src)).items() if v["type"] == "file"}
    got = {k: v for k, v in tar_tree(c, "/sy").items() if v["type"] == "file"}
    diff = tree_diff(got, want, keys=KEYS)
    assert not diff, diff
    assert len(got) == 30
    assert status(m) == (0, [])


def test_sync_of_the_mount_root_commits_every_container(mount, container):
    a, b = container(), container()
    m = mount("-o", "writeback=30")
    for c in (a, b):
        with open(m.p(c, "/tmp/held"), "wb") as f:
            f.write(c.name.encode())
    code, lines = status(m)
    assert code == 1 and sorted(l[:3] for l in lines) == sorted(
        [["pending", a.name, "1"], ["pending", b.name, "1"]]), lines
    assert fsync_path(m.path) is None
    for c in (a, b):
        assert c.exec("cat", "/tmp/held") == c.name.encode()
    assert status(m) == (0, [])


def test_status_says_pending_files_and_bytes(mount, container):
    c = container()
    m = mount("-o", "writeback=30")
    assert status(m) == (0, [])
    for name, size in (("a", 1000), ("b", 24)):
        with open(m.p(c, f"/tmp/{name}"), "wb") as f:
            f.write(b"x" * size)
    assert status(m) == (1, [["pending", c.name, "2", "1024"]])
    assert fsync_path(m.p(c, "/tmp")) is None
    assert status(m) == (0, [])
    assert ".ctrfs-status" not in m.listdir(), "the status file is listed"


def test_status_of_something_else_exits_3(tmp_path):
    r = subprocess.run([CTRFS_BIN, "--status", str(tmp_path)], stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    assert r.returncode == 3, r
    assert b"not a ctrfs mount" in r.stderr


def close_errno(f):
    try:
        f.close()
    except OSError as e:
        return e.errno
    return None


def failing_write(m, c, proxy, path, data):
    """Write path through a write-back mount whose engine refuses PUTs,
    and wait for the first refusal."""
    proxy.fail("PUT", "/archive", 500)
    with open(m.p(c, path), "wb") as f:
        f.write(data)
    assert wait_for(lambda: put_fails(proxy) >= 1, timeout=10, interval=0.01), m.log_text()


def test_sync_dir_while_a_commit_fails_is_eio(mount, container, proxy):
    """A write-back PUT failed after the close returned 0: the status lists
    the file as retrying (exit 2) and `sync DIR` fails with EIO; once the
    engine takes PUTs again, the file lands."""
    c = container()
    c.sh("mkdir /wf")
    m = mount("-o", "writeback=0.05", engine=proxy)
    failing_write(m, c, proxy, "/wf/a", b"first\n")
    code, lines = status(m)
    assert code == 2 and ["retrying", c.name, "/wf/a"] in [l[:3] for l in lines], lines
    e = fsync_path(m.p(c, "/wf"))
    assert e == errno.EIO, errname(e)
    proxy.clear()
    assert wait_for(lambda: c.exec("cat", "/wf/a", check=False) == b"first\n", timeout=15)


def test_a_failure_nobody_heard_of_is_told_once_to_fsync_and_once_to_close(mount, container, proxy):
    """A write-back PUT that failed and then succeeded: nobody was told of
    the failure, so the next fsync in the container and, apart from it, the
    next close of a file written there each fail once with EIO; the ones
    after are quiet, and every file lands."""
    c = container()
    c.sh("mkdir /wf")
    m = mount("-o", "writeback=0.05", engine=proxy)
    failing_write(m, c, proxy, "/wf/a", b"first\n")
    proxy.clear()
    assert wait_for(lambda: c.exec("cat", "/wf/a", check=False) == b"first\n", timeout=15)
    assert status(m) == (0, [])
    e = fsync_path(m.p(c, "/wf"))
    assert e == errno.EIO, f"the first fsync after the failure said {errname(e)}"
    assert fsync_path(m.p(c, "/wf")) is None
    f = open(m.p(c, "/wf/b"), "wb")
    f.write(b"second\n")
    e = close_errno(f)
    assert e == errno.EIO, f"the first close after the failure said {errname(e)}"
    f = open(m.p(c, "/wf/c"), "wb")
    f.write(b"third\n")
    assert close_errno(f) is None
    assert fsync_path(m.p(c, "/wf")) is None
    for name, data in (("b", b"second\n"), ("c", b"third\n")):
        assert c.exec("cat", f"/wf/{name}") == data
    assert status(m) == (0, [])


def make_rich_tree(root):
    """A tree as rsync -a and cp -a meet them: 40 files in 8 directories
    two deep, each file with its own mode, owner and mtime, a symlink in
    every other directory, the directories with a mode and mtime of their
    own (set last, as a copy must leave them). The number of files."""
    n = 0
    for d in range(8):
        p = root / f"d{d // 4}" / f"s{d}"
        p.mkdir(parents=True, exist_ok=True)
        for i in range(5):
            f = p / f"f{i}"
            f.write_bytes(os.urandom(1 + 211 * i + d))
            os.chmod(f, (0o600, 0o640, 0o755, 0o604, 0o700)[i])
            os.chown(f, 1000 + i, 2000 + d)
            t = 1_600_000_000_000_000_000 + (d * 10 + i) * 1_000_000_007
            os.utime(f, ns=(t, t))
            n += 1
        if d % 2 == 0:
            os.symlink(f"f{d % 5}", p / "ln")
    for dirpath in sorted((p for p in root.rglob("*") if p.is_dir() and not p.is_symlink()),
                          key=lambda p: -len(p.parts)) + [root]:
        os.chmod(dirpath, 0o750)
        os.utime(dirpath, (1_500_000_000, 1_500_000_000))
    return n


def landed(log, src=None):
    """The paths of the files the log says landed in the container, one
    for each time one did (without the directories and symlinks of src,
    copied to /cp/t, which land as entries)."""
    got = re.findall(r"landed '([^']*)' in container", log)
    if src is not None:
        entries = {os.path.normpath("/cp/t/" + k) for k, v in host_tree(str(src)).items()
                   if v["type"] != "file"}
        got = [p for p in got if p not in entries]
    return got


def check_calls(src, log, per_link):
    """No file cost a call to the container's shell or an exec of its own
    (an exec starts the shell, once): the tools run there are at most
    per_link for each symlink, the times (and owner) of a symlink being
    set in the container still (a symlink is made at once, not pending)."""
    nlinks = sum(1 for p in src.rglob("*") if p.is_symlink())
    tools = re.findall(r"agent: (\S+) in [0-9a-f]+ ->", log)
    if PODMAN:  # a directory's attributes put back ask its owner first:
        # Podman's archive API says 0:0 for all (docs/design.md, Podman)
        tools = [t for t in tools if t != "stat"]
    assert len(tools) <= len(per_link) * nlinks and set(tools) <= set(per_link), tools
    assert len(re.findall(r"engine: POST \S*/containers/\S+/exec ", log)) <= 1


def copy_and_sync(mount, container, tmp_path, tool):
    """tool (rsync -a or cp -a) copies a rich tree into a write-back mount
    whose delay (30 s) keeps every file pending; then `sync DIR`. The
    container, the source tree, the number of files and the log."""
    c = container()
    src = tmp_path / "src"
    nfiles = make_rich_tree(src)
    c.sh("mkdir /cp")
    m = mount("-d", "-o", "writeback=30")
    if tool == "rsync":
        run_tool("rsync", "-a", f"{src}/", m.p(c, "/cp/t/"))
    else:
        run_tool("cp", "-a", src, m.p(c, "/cp/t"))
    assert fsync_path(m.p(c, "/cp")) is None
    diff = tree_diff(tar_tree(c, "/cp/t"), host_tree(str(src)))
    assert not diff, diff
    assert status(m) == (0, [])
    with open(m.log, errors="replace") as f:
        log = f.read()
    return c, src, nfiles, log


def test_rsync_a_lands_each_file_once_under_its_final_name(mount, container, tmp_path):
    """rsync -a writes each file under a temporary name, closes it, sets its
    owner, mode and times and renames it: with write-back all of that folds
    into the pending file, which lands once, under its final name, with its
    final attributes (checked in the container right after `sync DIR`), and
    nothing runs in the container for a file: no mv, chmod, chown or touch
    (rsync sets each symlink's times: one `touch -h` each still)."""
    c, src, nfiles, log = copy_and_sync(mount, container, tmp_path, "rsync")
    check_calls(src, log, per_link=("touch",))
    files = sorted(landed(log, src))
    want = sorted("/cp/t/" + k for k, v in host_tree(str(src)).items() if v["type"] == "file")
    assert files == want, f"{len(files)} files landed for {nfiles}: {files[:6]}"


@podman_limit("a directory's attributes change at once, with the container's stat for its owner "
              "(quirk owners_zero), not in the batches; a batch takes every pending entry there "
              "(quirk batch_whole)")
def test_rsync_a_with_a_short_delay_lands_each_file_once(mount, container, tmp_path):
    """With a delay shorter than the copy, batches go while rsync still
    writes. A file it closed a moment ago is left for the next batch: rsync
    sets its times and mode and renames it right after the close, and in
    the batch each of those waited for the PUT and then needed a commit of
    its own (the rename a `mv` in the container). Each file lands once,
    under its final name, with no line to the container's shell."""
    c = container()
    src = tmp_path / "src"
    for d in range(5):
        (src / f"d{d}").mkdir(parents=True)
        for i in range(300):
            (src / f"d{d}" / f"f{i}").write_bytes(os.urandom(64 + i))
    m = mount("-d", "-o", "writeback=0.3")
    run_tool("rsync", "-a", f"{src}/", m.p(c, "/rs/"))
    assert fsync_path(m.p(c, "/rs")) is None
    keys = ("type", "perm", "mtime", "size", "sha256")
    diff = tree_diff(tar_tree(c, "/rs"), host_tree(str(src)), keys=keys)
    assert not diff, diff
    with open(m.log, errors="replace") as f:
        log = f.read()
    batches = len(re.findall(r"write-back: \d+ files in '[^']*' with one PUT", log))
    assert batches >= 3, f"{batches} batches: none went during the copy, the test proves nothing"
    lines = re.findall(r"agent: (\S+) in [0-9a-f]+ ->", log)
    if SANITIZED:
        # a sanitizer build can take longer than half the delay between a
        # file's close and its rename (rsync's steps are FUSE calls), and
        # a closed file that waited that long joins a batch: its rename is
        # then an `mv`, right but not what this test is about (seen once
        # in 1,500 files under TSan on 20.10)
        assert set(lines) <= {"mv"} and len(lines) <= 15, lines
    else:
        assert lines == []
    assert len(re.findall(r"engine: POST \S*/containers/\S+/exec ", log)) == 0
    files = [p for p in re.findall(r"landed '([^']*)' in container", log) if "/f" in p]
    assert len(files) == len(set(files)) == 1500, \
        f"{len(files)} landings of {len(set(files))} files"


def test_a_file_that_keeps_changing_still_lands_one_delay_past_its_due(mount, container):
    """A file never tried waits, beyond its due, until it has not changed
    for half the delay; one that keeps changing must still land, one delay
    past its due at most, and a reopen keeps the due its first close set,
    or a log that a program opens and appends to every moment would never
    reach the container while it runs. Appended every 0.1 s for 5 s with a
    0.5 s delay, it lands during the appends (about 1 s after its first
    close), not only once they stop. Fails with either rule taken out
    (checked). (On Podman nothing is held back: quirk batch_whole.)"""
    c = container()
    m = mount("-d", "-o", "writeback=0.5")
    # opened by name in a directory held open: a look at the directory
    # itself (the kernel's entry of /tmp expiring) would settle what is
    # pending in it, which is another rule
    dfd = os.open(m.p(c, "/tmp"), os.O_RDONLY | os.O_DIRECTORY)
    landed_during = None
    end = time.monotonic() + 5.0
    n = 0
    while time.monotonic() < end:
        fd = os.open("busy.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644, dir_fd=dfd)
        os.write(fd, b"%d\n" % n)
        os.close(fd)
        n += 1
        if landed_during is None:
            with open(m.log, errors="replace") as f:
                if "landed '/tmp/busy.log' in container" in f.read():
                    landed_during = n
        time.sleep(0.1)
    os.close(dfd)
    assert landed_during is not None, \
        f"{n} appends over 5 s and the file never landed while they went on"
    assert fsync_path(m.p(c, "/tmp")) is None
    assert c.exec("cat", "/tmp/busy.log") == b"".join(b"%d\n" % i for i in range(n))


def test_cp_a_lands_each_file_once_with_its_attributes(mount, container, tmp_path):
    """cp -a writes each file under its name, closes it, then sets its
    times, owner and mode: those fold into the pending file, which lands
    once with them; no file costs an exec or a shell line (cp -a sets the
    owner and times of symlinks too, which still go to the container's
    shell: two lines per symlink)."""
    c, src, nfiles, log = copy_and_sync(mount, container, tmp_path, "cp")
    check_calls(src, log, per_link=("chown", "touch"))
    files = sorted(landed(log, src))
    want = sorted("/cp/t/" + k for k, v in host_tree(str(src)).items() if v["type"] == "file")
    assert files == want, f"{len(files)} files landed for {nfiles}: {files[:6]}"


def calls(log, method):
    """The engine calls of a method the -d log shows (HEAD, PUT, GET)."""
    return len(re.findall(rf"engine: {method} \S+ -> ", log))


def check_entries_exact(c, src, top):
    """Every directory and symlink of src as the container's stat says it
    under top: mode, owner and mtime."""
    bad = {}
    for p in [src] + sorted(src.rglob("*")):
        st = os.lstat(p)
        if not (os.path.isdir(p) and not os.path.islink(p)) and not os.path.islink(p):
            continue
        rel = os.path.relpath(p, src)
        got = c.stat(os.path.normpath(f"{top}/{rel}"))
        want = {"perm": st.st_mode & 0o7777 if not os.path.islink(p) else got["perm"],
                "uid": st.st_uid, "gid": st.st_gid, "mtime": int(st.st_mtime)}
        have = {k: got[k] for k in want}
        if have != want:
            bad[rel] = (have, want)
    assert not bad, bad


def check_batched(log):
    """The tree went in the write-back batches alone: one PUT per batch,
    a handful of them, no directory or symlink made or changed by a PUT or
    a shell line of its own, no exec."""
    batches = len(re.findall(r"write-back: \d+ files in '[^']*' with one PUT", log))
    puts = calls(log, "PUT")
    assert 1 <= batches <= 2 and puts <= batches, f"{puts} PUTs for {batches} batches"
    lines = re.findall(r"agent: (\S+) in [0-9a-f]+ ->", log)
    if SANITIZED:
        # a sanitizer build can take longer than half the delay between a
        # file's close and its rename (rsync's steps are FUSE calls), and
        # a closed file that waited that long joins a batch: its rename is
        # then an `mv`, right but not what this test is about (seen once
        # in 1,500 files under TSan on 20.10)
        assert set(lines) <= {"mv"} and len(lines) <= 15, lines
    else:
        assert lines == []
    assert len(re.findall(r"engine: POST \S*/containers/\S+/exec ", log)) == 0


def test_rsync_a_tree_goes_in_the_batch_puts_alone(mount, container, tmp_path):
    """rsync -a of a tree with nested directories and symlinks: mkdir,
    symlink and the directories' modes and times are pending entries that
    ride in the batch PUT with the files (each directory's entry after its
    files, so its mtime is the last word); lookups of the new names ask
    nothing of the engine. Exact in the container after `sync DIR`."""
    c, src, nfiles, log = copy_and_sync(mount, container, tmp_path, "rsync")
    check_batched(log)
    check_entries_exact(c, src, "/cp/t")
    assert calls(log, "HEAD") <= 4, calls(log, "HEAD")


def test_cp_a_tree_goes_in_the_batch_puts_alone(mount, container, tmp_path):
    """The same for cp -a, which sets each directory's times, owner and
    mode after its files, and each symlink's owner and times."""
    c, src, nfiles, log = copy_and_sync(mount, container, tmp_path, "cp")
    check_batched(log)
    check_entries_exact(c, src, "/cp/t")
    assert calls(log, "HEAD") <= 4, calls(log, "HEAD")


def test_pending_directories_are_listed_read_and_counted(mount, container):
    """A pending directory and symlink are seen through the mount before
    they are in the container (stat, readlink, listing), counted by
    `ctrfs --status`, and land with `sync DIR`."""
    c = container()
    c.sh("mkdir /pd")
    m = mount("-o", "writeback=30")
    os.makedirs(m.p(c, "/pd/a/b"))
    os.symlink("b/x", m.p(c, "/pd/a/ln"))
    # a target above the batch's directory: the engine refuses such a
    # link in a PUT at /pd, and with it the whole tar
    os.symlink("../../etc/hostname", m.p(c, "/pd/a/up"))
    with open(m.p(c, "/pd/a/b/x"), "wb") as f:
        f.write(b"x" * 10)
    os.chmod(m.p(c, "/pd/a"), 0o711)
    assert c.sh("test -e /pd/a && echo there || echo absent").strip() == b"absent"
    assert sorted(os.listdir(m.p(c, "/pd/a"))) == ["b", "ln", "up"]
    assert os.readlink(m.p(c, "/pd/a/ln")) == "b/x"
    assert os.stat(m.p(c, "/pd/a")).st_mode & 0o7777 == 0o711
    assert status(m) == (1, [["pending", c.name, "5", "10"]])
    assert fsync_path(m.p(c, "/pd")) is None
    assert status(m) == (0, [])
    assert c.stat("/pd/a")["perm"] == 0o711
    assert c.exec("readlink", "/pd/a/ln") == b"b/x\n"
    assert c.exec("readlink", "/pd/a/up") == b"../../etc/hostname\n"
    assert c.exec("cat", "/pd/a/b/x") == b"x" * 10


def test_a_pending_directory_made_by_a_landing_below_it_keeps_its_names(mount, container):
    """A PUT of a name below directories that are pending and not made yet
    makes them in the container (0755); their entries come later. Those
    directories hold more than their pending names then: a name that
    landed is still found (it was ENOENT: cp -a failed setting the times
    of such a directory on Podman), and a name that is nowhere is still
    answered without asking the engine (the listing ctrfs made says so)."""
    c = container()
    c.sh("mkdir /mb")
    m = mount("-d", "-o", "writeback=30")
    os.makedirs(m.p(c, "/mb/t/d"))
    with open(m.p(c, "/mb/t/d/a"), "wb") as f:
        f.write(b"one\n")
    # sync of d commits d and a, not t: the PUT makes t on the way
    assert fsync_path(m.p(c, "/mb/t/d")) is None
    assert c.exec("cat", "/mb/t/d/a") == b"one\n"
    assert not os.path.exists(m.p(c, "/mb/t/nowhere"))
    with open(m.log, errors="replace") as f:
        asked = [ln for ln in f if "engine:" in ln and "/mb/t" in ln.replace("%2F", "/")
                 and "PUT" not in ln]
    assert asked == []
    for p in ("/mb/t/d", "/mb/t/d/a"):
        assert os.path.exists(m.p(c, p)), p
    assert os.listdir(m.p(c, "/mb/t")) == ["d"]
    os.utime(m.p(c, "/mb/t/d"), (1_000_000_000, 1_000_000_000))
    assert fsync_path(m.p(c, "/mb")) is None
    assert c.sh("stat -c %Y /mb/t/d").strip() == b"1000000000"


def test_cp_a_hard_link_into_a_pending_directory(mount, container, tmp_path):
    """A hard link made by a PUT at its names' directory: when that
    directory (and the file) are still pending, they go first, so cp -a of
    a tree with two names of one file succeeds, and the container holds one
    file under both."""
    c = container()
    src = tmp_path / "src"
    (src / "d").mkdir(parents=True)
    (src / "d" / "a").write_bytes(b"hello\n")
    os.link(src / "d" / "a", src / "d" / "b")
    c.sh("mkdir /hl")
    m = mount("-o", "writeback=30")
    run_tool("cp", "-a", src, m.p(c, "/hl/t"))
    assert fsync_path(m.p(c, "/hl")) is None
    ino = c.sh("stat -c %i /hl/t/d/a /hl/t/d/b").split()
    assert len(ino) == 2 and ino[0] == ino[1], ino
    assert c.exec("cat", "/hl/t/d/b") == b"hello\n"


def test_a_hard_linked_file_is_written_through_its_names_at_the_sync(mount, container):
    """Write-back takes a file that has other names out of its batch PUT
    (which would put a new file under the one name) and writes it through
    the container's `head`: after `sync DIR` both names hold the new
    bytes, as one file with its number and link count, and nothing is
    pending or failed."""
    c = container()
    c.sh("mkdir /h; printf 'before\\n' > /h/a; ln /h/a /h/b")
    ino = c.exec("stat", "-c", "%i", "/h/a").strip()
    m = mount("-d", "-o", "writeback=30")
    with open(m.p(c, "/h/a"), "wb") as f:
        f.write(b"after, and longer\n")
    with open(m.p(c, "/h/new"), "wb") as f:  # rides in a batch beside it
        f.write(b"new\n")
    assert c.exec("cat", "/h/b") == b"before\n", "landed before the sync: the test proves nothing"
    assert fsync_path(m.p(c, "/h")) is None
    assert c.exec("cat", "/h/b", "/h/new") == b"after, and longer\nnew\n"
    assert c.exec("stat", "-c", "%i %h", "/h/a", "/h/b").split() == [ino, b"2"] * 2
    assert status(m) == (0, [])
    log = open(m.log, errors="replace").read()
    assert "through its 2 names" in log and " hard links: " not in log
