# SPDX-License-Identifier: GPL-2.0-or-later
"""Not a test: engine calls of rsync -a and cp -r of 1,000 x 1 KiB files in
10 directories (and a few symlinks) into a write-back mount, then `sync
DIR`, counted from the -d log (issue 27 item 4b). Run by name:
./scripts/run-tests tests/fs/measure_wb_tree.py -s"""

import os
import re

import pytest

from conftest import host_tree, run_tool, tar_tree, tree_diff


def counts(log):
    c = {m: len(re.findall(rf"engine: {m} \S+ -> ", log)) for m in ("PUT", "HEAD", "GET")}
    c["exec"] = len(re.findall(r"engine: POST \S*/containers/\S+/exec ", log))
    c["lines"] = len(re.findall(r"agent: (\S+) in [0-9a-f]+ ->", log))
    return c


@pytest.mark.parametrize("tool", ["rsync", "cp"])
def test_measure(mount, container, tmp_path, tool):
    c = container()
    src = tmp_path / "src"
    for d in range(10):
        (src / f"d{d}").mkdir(parents=True)
        for i in range(100):
            (src / f"d{d}" / f"f{i}").write_bytes(os.urandom(1024))
    for k in range(4):
        os.symlink(f"../d{k}/f{k}", src / f"d{k + 5}" / f"ln{k}")
    c.sh("mkdir /m")
    m = mount("-d", "-o", f"writeback={os.environ.get('MEASURE_WB', '1')}")
    if tool == "rsync":
        run_tool("rsync", "-a", f"{src}/", m.p(c, "/m/t/"), timeout=600)
    else:
        run_tool("cp", "-r", src, m.p(c, "/m/t"), timeout=600)
    fd = os.open(m.p(c, "/m"), os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)
    got = tar_tree(c, "/m/t")
    want = host_tree(str(src))
    keys = ("type", "size", "sha256") if tool == "cp" else None
    diff = tree_diff(got, want, keys=keys) if keys else tree_diff(got, want)
    log = open(m.log, errors="replace").read()
    print(f"\nMEASURE {os.environ.get('CTRFS_TEST_ENGINE', 'docker-current')} "
          f"{os.path.basename(os.path.dirname(os.path.dirname(os.environ.get('CTRFS_BIN', ''))))} "
          f"{tool}: {counts(log)} diff={len(diff)}")


def test_untar_of_directory_entries(container):
    """What the engine's untar does with a directory entry before or after
    its children, and over a directory that is there (docker cp - is a
    PUT of the tar as given)."""
    import io
    import tarfile

    c = container()
    c.sh("mkdir -p /u/ex && chmod 755 /u/ex && touch /u/ex/old")

    def entry(name, kind, mode, mtime, data=b""):
        ti = tarfile.TarInfo(name)
        ti.type = tarfile.DIRTYPE if kind == "d" else tarfile.REGTYPE
        ti.mode, ti.uid, ti.gid, ti.mtime = mode, 1234, 4321, mtime
        ti.size = len(data)
        return ti, io.BytesIO(data) if data else None

    for name, order in (("pa", "parents"), ("pb", "children"), ("ex", "over")):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
            d = entry(f"{name}", "d", 0o711, 1_500_000_000)
            f = [entry(f"{name}/f{i}", "f", 0o644, 1_600_000_000, b"x") for i in range(3)]
            sub = entry(f"{name}/s", "d", 0o700, 1_400_000_000)
            sf = entry(f"{name}/s/g", "f", 0o600, 1_600_000_000, b"y")
            seq = [d, sub, sf] + f if order != "children" else f + [sf, sub, d]
            if order == "over":
                seq = [sf] + f + [sub, d]
            for ti, data in seq:
                t.addfile(ti, data)
        c.docker("cp", "-", f"{c.name}:/u", input=buf.getvalue())
        print(f"\nUNTAR {os.environ.get('CTRFS_TEST_ENGINE', 'docker-current')} {order}: "
              f"{name}={c.stat('/u/' + name)} s={c.stat('/u/' + name + '/s')}")
