# SPDX-License-Identifier: GPL-2.0-or-later
"""File contents through the mount, compared with what `docker cp` gives."""

import errno
import hashlib
import os
import random
import re
import subprocess
import threading
import time

import pytest

from conftest import (podman_limit, MIB, SANITIZED, STATIC_FILES, call_with_timeout, errname, errno_of, read_file,
                      sha256_file, wait_for)

SIZES = [0, 1, 511, 512, 513, MIB - 1, MIB, MIB + 1]


def test_sizes_match_docker_cp(mount, container):
    c = container()
    c.exec("mkdir", "/sizes")
    for n in SIZES:
        c.sh('head -c "$1" /dev/urandom > "$2"', str(n), f"/sizes/f{n}")
    m = mount()
    wrong = {}
    for n in SIZES:
        want = c.cp_out(f"/sizes/f{n}")
        assert len(want) == n
        got = call_with_timeout(read_file, m.p(c, f"/sizes/f{n}"))
        if got != want:
            wrong[n] = f"got {len(got)} bytes, sha256 {hashlib.sha256(got).hexdigest()[:12]}"
        assert os.path.getsize(m.p(c, f"/sizes/f{n}")) == n
    assert not wrong, f"contents differ from docker cp for sizes {wrong}"


def test_random_access_reads(mount, container):
    c = container()
    size = 3 * MIB + 17
    c.sh('head -c "$1" /dev/urandom > /ra', str(size))
    want = c.cp_out("/ra")
    m = mount()
    rng = random.Random(1234)
    offsets = [rng.randrange(0, size) for _ in range(150)]
    offsets += list(range(size - 1, 0, -(size // 40)))  # walking backwards
    offsets += [0, size - 1, size, size + 100, MIB - 1, MIB, 2 * MIB + 1]

    def check():
        bad = []
        with open(m.p(c, "/ra"), "rb", buffering=0) as f:
            for off in offsets:
                n = rng.choice([1, 100, 4095, 4096, 4097, 65536, 200_000])
                f.seek(off)
                got = f.read(n)
                # A read may return fewer bytes; read on until n or EOF.
                while len(got) < n:
                    more = f.read(n - len(got))
                    if not more:
                        break
                    got += more
                if got != want[off:off + n]:
                    bad.append((off, n, len(got)))
                p = os.pread(f.fileno(), 512, off)
                if p != want[off:off + 512][:len(p)] or (off + 512 <= size and len(p) == 0):
                    bad.append(("pread", off, len(p)))
        return bad

    bad = call_with_timeout(check, timeout=240)
    assert not bad, f"{len(bad)} mismatched reads, first ones: {bad[:10]}"


def test_large_file_matches_docker_cp(mount, container, big_file):
    path, digest = big_file
    c = container()
    c.cp_in(path, "/big.bin")
    assert c.cp_sha256("/big.bin") == digest
    m = mount()
    assert os.path.getsize(m.p(c, "/big.bin")) == os.path.getsize(path)
    assert call_with_timeout(sha256_file, m.p(c, "/big.bin"), timeout=240) == digest


def test_peak_memory_while_copying_large_file(mount, container, big_file, tmp_path):
    path, digest = big_file
    c = container()
    c.cp_in(path, "/big.bin")
    m = mount()
    out = tmp_path / "copy.bin"
    r = subprocess.run(["cp", m.p(c, "/big.bin"), str(out)], stdin=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, timeout=240)
    assert r.returncode == 0, r.stderr
    hwm_kib = m.status("VmHWM")
    assert sha256_file(str(out)) == digest
    out.unlink()
    if SANITIZED:
        pytest.skip(f"peak memory not checked in a sanitizer build (VmHWM {hwm_kib} kB)")
    assert hwm_kib < 32 * 1024, f"ctrfs peak RSS {hwm_kib} kB while copying 200 MiB"


def test_read_resumes_after_idle_handle(mount, container):
    c = container()
    size = 64 * MIB
    c.sh('head -c "$1" /dev/urandom > /idle', str(size))
    want = c.cp_out("/idle")
    m = mount()
    f = open(m.p(c, "/idle"), "rb", buffering=0)
    try:
        first = call_with_timeout(f.read, MIB)
        assert first == want[:len(first)] and first
        time.sleep(3)
        # While the handle sits idle, nothing may hold the container's lock.
        try:
            r = c.docker("exec", c.name, "true", check=False, timeout=20)
        except subprocess.TimeoutExpired:
            pytest.fail("docker exec did not finish in 20 s while a ctrfs handle sat idle")
        assert r.returncode == 0, r.stderr
        pos = len(first)
        nxt = call_with_timeout(f.read, MIB)
        assert nxt == want[pos:pos + len(nxt)] and nxt, "bytes after the idle period differ"
        pos += len(nxt)

        def rest():
            h = hashlib.sha256()
            while True:
                b = f.read(MIB)
                if not b:
                    return h.hexdigest()
                h.update(b)

        assert call_with_timeout(rest, timeout=120) == hashlib.sha256(want[pos:]).hexdigest()
    finally:
        f.close()


def test_grep_recursive(mount, container):
    c = container()
    c.sh("""
        mkdir -p /tree/a/b/c /tree/d /tree/e
        echo 'nothing here' > /tree/top
        echo 'the needle is here' > /tree/a/one
        echo 'no match' > /tree/a/b/two
        printf 'x\\nneedle\\ny\\n' > /tree/a/b/c/three
        head -c 100000 /dev/zero > /tree/d/zeros
        echo 'needle' > /tree/e/four
    """)
    inside = set(c.exec("grep", "-rl", "needle", "/tree").decode().split())
    assert inside == {"/tree/a/one", "/tree/a/b/c/three", "/tree/e/four"}
    m = mount()
    root = m.p(c, "/tree")
    r = subprocess.run(["grep", "-rl", "needle", root], stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    assert r.returncode == 0, r.stderr
    found = {"/tree" + p[len(root):] for p in r.stdout.decode().split()}
    assert found == inside
    assert not r.stderr


def test_shell_less_container_reads(mount, container):
    c = container("static")
    m = mount()
    names = m.listdir(m.p(c))
    assert "pause" in names and "data" in names
    assert call_with_timeout(read_file, m.p(c, "/pause")) == c.cp_out("/pause")
    for name, (data, *_rest) in STATIC_FILES.items():
        got = call_with_timeout(read_file, m.p(c, name))
        assert got == data == c.cp_out("/" + name), name


def test_stopped_container_readable_with_all(mount, container):
    c = container()
    c.sh('head -c 300000 /dev/urandom > /kept; echo small > /small')
    c.docker("stop", "-t", "0", c.id)
    assert c.state() == "exited"
    m = mount("-o", "all")
    assert c.name in m.listdir()
    assert call_with_timeout(read_file, m.p(c, "/kept")) == c.cp_out("/kept")
    assert call_with_timeout(read_file, m.p(c, "/small")) == b"small\n"


def test_nonexistent_path_is_enoent(mount, container):
    c = container()
    m = mount()
    for p in ("/no-such-file", "/etc/no-such-file", "/no/such/dir/file"):
        e = errno_of(os.stat, m.p(c, p))
        assert e == errno.ENOENT, (p, errname(e))
        e = errno_of(open, m.p(c, p), "rb")
        assert e == errno.ENOENT, (p, errname(e))
    e = errno_of(os.listdir, m.p(c, "/no-such-dir"))
    assert e == errno.ENOENT, errname(e)


@podman_limit("its GET goes on streaming the file after `rm -f` of the container, so the read "
              "ends well (seen; Docker ends the transfer)")
def test_container_removed_during_read(mount, container, big_file):
    path, digest = big_file
    victim, other = container(), container()
    victim.cp_in(path, "/big.bin")
    other.write("/still-here", b"still here\n")
    m = mount()
    f = open(m.p(victim, "/big.bin"), "rb", buffering=0)
    error = None
    try:
        got = 0
        while got < 8 * MIB:
            b = call_with_timeout(f.read, MIB)
            assert b
            got += len(b)
        # The handle is idle now, so ctrfs holds no request that would block
        # the removal.
        try:
            victim.docker("rm", "-f", victim.id, timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail("docker rm -f did not finish in 60 s while a ctrfs handle sat idle")

        def read_to_end():
            while f.read(MIB):
                pass

        try:
            call_with_timeout(read_to_end, timeout=120)
        except OSError as e:
            error = e
    finally:
        f.close()
    assert error is not None, "reading a removed container's file to the end succeeded"
    assert error.errno in (errno.EIO, errno.ENOENT), errname(error.errno)
    assert m.alive(), "ctrfs died"
    assert wait_for(lambda: victim.name not in m.listdir()), "removed container still listed"
    assert call_with_timeout(read_file, m.p(other, "/still-here")) == b"still here\n"



def test_concurrent_reads_of_different_files(mount, container):
    c = container()
    names = [f"/conc/f{i}" for i in range(6)]
    c.exec("mkdir", "/conc")
    for i, n in enumerate(names):
        c.sh('head -c "$1" /dev/urandom > "$2"', str(2 * MIB + 1000 * i), n)
    want = {n: hashlib.sha256(c.cp_out(n)).hexdigest() for n in names}
    m = mount()
    got = {}
    errors = []

    def reader(n):
        try:
            got[n] = sha256_file(m.p(c, n), chunk=65536)
        except OSError as e:
            errors.append((n, e))

    threads = [threading.Thread(target=reader, args=(n,), daemon=True) for n in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join(240)
    assert not any(t.is_alive() for t in threads), "a concurrent read hung"
    assert not errors, errors
    assert got == want


def test_two_handles_on_one_file_interleaved(mount, container):
    c = container()
    size = 4 * MIB + 123
    c.sh('head -c "$1" /dev/urandom > /two', str(size))
    want = c.cp_out("/two")
    m = mount()

    def interleave():
        bad = []
        with open(m.p(c, "/two"), "rb", buffering=0) as a, open(m.p(c, "/two"), "rb", buffering=0) as b:
            # a reads forwards from the start, b backwards from the end.
            chunk = 256 * 1024 + 7
            pos_b = size
            for pos_a in range(0, size, chunk):
                a.seek(pos_a)
                if a.read(chunk) != want[pos_a:pos_a + chunk]:
                    bad.append(("a", pos_a))
                pos_b = max(0, pos_b - chunk)
                b.seek(pos_b)
                if b.read(chunk) != want[pos_b:pos_b + chunk]:
                    bad.append(("b", pos_b))
        return bad

    bad = call_with_timeout(interleave, timeout=240)
    assert not bad, bad


def test_big_readahead_reads_the_file_in_one_pass(mount, container, tmp_path):
    """With the mount's readahead raised (read_ahead_kb, as root may set it)
    the kernel asks for several MiB ahead at once, and an O_DIRECT read of
    8 MiB is split into 1 MiB requests. The file is still one forward
    stream: no read may fall behind the transfer's history and restart the
    GET from byte 0 (async readahead did, 4-12 times per 96 MiB; async
    direct I/O 1-2 times)."""
    c = container()
    size = 96 * MIB
    c.sh('mkdir /ra; dd if=/dev/urandom of=/ra/f bs=1048576 count=96 2>/dev/null')
    digest = c.cp_sha256("/ra/f")
    m = mount("-d")
    st = os.stat(m.path)
    knob = f"/sys/class/bdi/{os.major(st.st_dev)}:{os.minor(st.st_dev)}/read_ahead_kb"
    try:
        with open(knob, "w") as f:
            f.write("8192")
    except OSError as e:
        pytest.skip(f"cannot raise {knob}: {e}")
    out = tmp_path / "f"
    # cp: 1 MiB reads with POSIX_FADV_SEQUENTIAL, the readahead doubled
    r = subprocess.run(["cp", m.p(c, "/ra/f"), str(out)], stdin=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, timeout=240)
    assert r.returncode == 0, r.stderr
    assert sha256_file(str(out)) == digest
    out.unlink()
    r = subprocess.run(["dd", f"if={m.p(c, '/ra/f')}", f"of={out}", "bs=8M", "iflag=direct",
                        "status=none"], stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=240)
    assert r.returncode == 0, r.stderr
    assert sha256_file(str(out)) == digest
    # a GET is logged when it ends: at the close, which the kernel sends
    # after cp has exited
    assert not m.unmount()
    with open(m.log, errors="replace") as f:
        gets = re.findall(r"engine: GET [0-9a-f]+:/ra/f -> \d+, (\d+) bytes( \(aborted\))?", f.read())
    whole = [int(n) for n, aborted in gets if not aborted]
    # a first look at the path may read its header (a few KiB); a restart
    # is a GET given up after MiBs. One is allowed: the kernel may ask
    # again for a page it evicted (in one CI run of 2026-12-03 it asked for
    # two 8 KiB pieces 30 MiB behind); async readahead made 3-11 per pass.
    restarts = [int(n) for n, aborted in gets if aborted and int(n) > MIB]
    assert len(whole) == 2 and len(restarts) <= 1, f"GETs of /ra/f: {gets}"


def test_reading_to_the_size_ends_the_get(mount, container):
    """The kernel asks nothing past the size it knows: a file whose size is
    a multiple of 4 KiB (65 MiB here) is read in requests that end exactly
    at its end, and no read finds the archive's end marker. The GET must still complete with the last read
    (the engine holds the container for it: exec, stop and our own next
    archive call wait), not when the handle closes or the reaper finds it
    idle."""
    c = container()
    # past 64 MiB: no listing or probe keeps the content, the read GETs it
    c.sh('mkdir /e4; dd if=/dev/urandom of=/e4/f bs=1048576 count=65 2>/dev/null')
    digest = c.cp_sha256("/e4/f")
    m = mount("-d")
    fd = os.open(m.p(c, "/e4/f"), os.O_RDONLY)
    try:
        h, left = hashlib.sha256(), 65 * MIB
        while left:
            b = os.read(fd, min(left, MIB))
            assert b, "short file"
            h.update(b)
            left -= len(b)
        assert h.hexdigest() == digest
        with open(m.log, errors="replace") as f:
            log = f.read()
        # ended: whole, or closed just before curl saw the last chunk
        assert re.search(r"engine: GET [0-9a-f]+:/e4/f -> 200, \d+ bytes (\(aborted\) )?in", log), \
            "the GET was still open after the file's last byte was read"
    finally:
        os.close(fd)


def test_two_files_of_one_container_read_alternately(mount, container):
    """The engine runs one archive call per container at a time: reading two
    files in turn (cmp, diff) must not stall on our own open GETs."""
    c = container()
    c.sh("head -c 20000000 /dev/urandom > /alt1; cp /alt1 /alt2; echo x >> /alt2")
    m = mount()

    def alternate():
        chunks = 0
        with open(m.p(c, "/alt1"), "rb") as f1, open(m.p(c, "/alt2"), "rb") as f2:
            while True:
                a, b = f1.read(131072), f2.read(131072)
                chunks += 1
                if len(a) < 131072:  # the last one: /alt2 has 2 bytes more
                    return chunks, a + b"x\n" == b + f2.read()
                assert a == b, f"chunk {chunks} differs"

    chunks, same = call_with_timeout(alternate, timeout=120, what="alternate reads")
    assert same and chunks == 153


def test_whole_second_not_before_the_content_is_read_anew(mount, container):
    """A tar header gives whole seconds: content changed in the second it
    was read in, to the same size, keeps its mtime. So a HEAD past the TTL
    that gives the same size and an mtime second not before the second the
    content held from the listing was read in (here one in the future, as
    a skewed clock gives) does not vouch for that content: the change is
    read anew."""
    c = container()
    old, new = b"a" * 4096, b"b" * 4096
    c.write("/ss", old)
    stamp = int(c.sh("date +%s").decode().strip()) + 100
    c.exec("touch", "-d", f"@{stamp}", "/ss")
    m = mount()
    assert call_with_timeout(read_file, m.p(c, "/ss")) == old
    c.write("/ss", new)
    c.exec("touch", "-d", f"@{stamp}", "/ss")
    time.sleep(1.3)
    assert call_with_timeout(read_file, m.p(c, "/ss")) == new


def test_mtime_stays_put_across_a_head(mount, container):
    """A listing gives a file's mtime in whole seconds, a HEAD with
    nanoseconds. A HEAD past the TTL that confirms the file leaves the mtime
    as it was: an mtime moving on an unchanged file makes tar say "file
    changed as we read it" and rsync or make see a change."""
    c = container()
    c.write("/ns", b"n" * 100)  # written now: nanoseconds in its mtime
    time.sleep(2.1)  # its second before the listing's
    m = mount()
    first = os.stat(m.p(c, "/ns")).st_mtime_ns
    time.sleep(1.3)
    assert os.stat(m.p(c, "/ns")).st_mtime_ns == first
    assert call_with_timeout(read_file, m.p(c, "/ns")) == b"n" * 100


def test_a_rewrite_in_the_same_second_shows_its_mtime(mount, container):
    """A HEAD that saw a change leaves the entry with the HEAD's
    nanoseconds. A rewrite to the same size within that second gives the
    next HEAD other nanoseconds: that is a change, and the mount shows the
    new mtime (not the one held, as when such a HEAD was taken for a
    confirmation). attr_timeout=0: every stat is a HEAD."""
    c = container()
    c.write("/rw", b"x")
    m = mount("-o", "attr_timeout=0")
    p = m.p(c, "/rw")
    assert os.stat(p).st_size == 1  # the first look: owner known, whole second
    for attempt in range(8):
        n = 10 + attempt
        # two writes of the same size; %Y and %y: seconds, and with fraction
        first = c.sh('printf %s "$1" > /rw; stat -c "%Y %y" /rw', "a" * (n + 1)).decode()
        before = os.stat(p)  # a new size: the HEAD's answer is stored
        second = c.sh('printf %s "$1" > /rw; stat -c "%Y %y" /rw', "b" * (n + 1)).decode()
        if first.split()[0] == second.split()[0] and first != second:
            break  # the same second, other nanoseconds: the case wanted
    else:
        pytest.skip("two docker exec calls never fell within one second")
    assert before.st_size == n + 1
    after = os.stat(p)
    assert after.st_mtime_ns != before.st_mtime_ns, (first, second)
    assert call_with_timeout(read_file, p) == b"b" * (n + 1)


def test_a_write_queued_behind_a_long_read_waits_for_it(mount, container):
    """The engine runs one archive call per container at a time: a PUT made
    while another file of the container is being read waits for that GET
    to end. Here the GET (400 MiB) outlasts the stall timeout (1 s); a wait
    behind a transfer of ours that is moving is no stall, and the writes
    land. Before, a write whose PUT came while the reader was inside a
    read (so not drained first) failed with EIO after the timeout."""
    c = container()
    c.sh("dd if=/dev/zero of=/big bs=1M count=400 2>/dev/null; mkdir /w")
    m = mount("-o", "timeout=1")
    big = m.p(c, "/big")
    assert os.stat(big).st_size == 400 << 20
    got = {}

    def reader():
        n = 0
        with open(big, "rb", buffering=0) as f:
            while True:
                b = f.read(1 << 20)
                if not b:
                    break
                n += len(b)
        got["n"] = n

    t = threading.Thread(target=reader)
    t.start()
    results = []
    for i in range(3):
        time.sleep(0.2)  # the GET is flowing
        try:
            with open(m.p(c, f"/w/f{i}"), "wb") as f:
                f.write(b"x" * 1000)
            results.append("ok")
        except OSError as e:
            results.append(errno.errorcode.get(e.errno, e.errno))
    t.join(120)
    assert got.get("n") == 400 << 20
    assert results == ["ok"] * 3
    assert c.sh("cat /w/f0 /w/f1 /w/f2 | wc -c").strip() == b"3000"


def test_a_paused_read_with_little_left_frees_the_container_early(mount, container):
    """The engine serializes a container's archive calls and execs behind
    an open GET, so a read that pauses holds up everyone else's `docker
    exec` and `docker cp` on that container until the idle rule ends its
    transfer. When the rest fits the 64 MiB drain, that happens half a
    second after the last read, not at the 2 s idle close (which stays for
    a transfer with more left: resuming that costs a new GET and a skip).
    Then the rest reads from the spool, byte for byte."""
    c = container()
    # the first look at / stops before /dr: the read is a GET of its own
    c.sh("head -c 9437184 /dev/zero > /0-first-look-stops-here; "
         "dd if=/dev/urandom of=/dr bs=1M count=16 2>/dev/null")
    want = c.cp_sha256("/dr")
    m = mount("-d")
    log = lambda: open(m.log, errors="replace").read()
    with open(m.p(c, "/dr"), "rb", buffering=0) as f:
        h = hashlib.sha256(call_with_timeout(f.read, MIB))
        # the reaper announces the drain before it runs: wait for its end
        done = lambda: re.search(r"drained (\d+) bytes to the spool", log())
        assert wait_for(done, timeout=30), "the paused transfer was not drained"
        found = done()
        assert found and int(found[1]) > 0, log()[-2000:]
        # drained by the early rule, not the 2 s one (the daemon says which)
        assert "its rest fits the spool, drained early" in log(), log()[-2000:]
        while True:
            b = call_with_timeout(f.read, MIB)
            if not b:
                break
            h.update(b)
    assert h.hexdigest() == want
    assert "transfer idle, closed" not in log()


def test_a_reader_that_pauses_is_not_a_stalled_engine(mount, container):
    """The stall timeout is about the engine: a reader that takes its time
    between reads (a pager, a slow pipe) leaves its GET paused, and the
    engine is not stalled for that. Pauses longer than the timeout (1 s
    here) but shorter than the idle close (2 s) must not fail the next
    read. (It passes without the stall clock's restart at each read too:
    curl counts the bytes it reads on resuming before it asks the
    progress callback.)"""
    c = container()
    # past the 64 MiB a listing keeps and the idle reaper drains
    c.sh('mkdir /p; dd if=/dev/urandom of=/p/f bs=1048576 count=80 2>/dev/null')
    digest = c.cp_sha256("/p/f")
    m = mount("-o", "timeout=1")
    fd = os.open(m.p(c, "/p/f"), os.O_RDONLY)
    try:
        h, n = hashlib.sha256(), 0
        while True:
            try:
                b = os.read(fd, MIB)
            except OSError as e:
                pytest.fail(f"read at {n} after a pause: {errname(e.errno)}")
            if not b:
                break
            h.update(b)
            n += len(b)
            if n <= 4 * MIB:
                time.sleep(1.6)
        assert n == 80 * MIB
        assert h.hexdigest() == digest
    finally:
        os.close(fd)


@pytest.mark.parametrize("size", [4, 4096])
def test_a_file_that_grows_while_open_reads_on(mount, container, size):
    """`tail -f` of a log in the container: it reads to the end, then
    polls with fstat and reads again from there once the size grew. The
    handle's transfer had delivered the whole file, and every later read
    was the end of the file to it: tail showed no new line, ever. The
    kernel asks past that end only when a getattr said the file grew, and
    the file is then read again from its start (no ranges in the API)."""
    c = container()
    first = bytes(random.randrange(256) for _ in range(size))
    c.write("/tmp/log", first)
    m = mount()
    fd = call_with_timeout(os.open, m.p(c, "/tmp/log"), os.O_RDONLY)
    try:
        got = b""
        while chunk := os.read(fd, 65536):
            got += chunk
        assert got == first
        for line in (b"two\n", b"three\n"):
            c.sh('printf "%s" "$1" >> /tmp/log', line.decode())
            time.sleep(1.3)  # past the attribute timeout
            assert os.fstat(fd).st_size == len(got) + len(line)
            assert os.read(fd, 65536) == line
            got += line
            assert os.read(fd, 65536) == b""
    finally:
        os.close(fd)
    assert got == c.cp_out("/tmp/log")
