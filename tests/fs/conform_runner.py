# SPDX-License-Identifier: GPL-2.0-or-later
"""Run by test_conform.py as root or as uid 65534 (python3 -c): one system
call per case, each in its case's directory under BASE (argv[1]); the
cases come as JSON on stdin ([id, op, [args...], watch]), the outcome of
each goes to stdout as JSON: id -> [errno name or null, result, what the
call did to the watched file (watch: [name before, name after]) or
null]."""

import ctypes
import errno
import json
import os
import subprocess
import sys

libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD = -100
AT_SYMLINK_NOFOLLOW = 0x100
UTIME_NOW = (1 << 30) - 1
UTIME_OMIT = (1 << 30) - 2


class Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


def spec(t):
    if t == "now":
        return Timespec(0, UTIME_NOW)
    if t == "omit":
        return Timespec(0, UTIME_OMIT)
    return Timespec(t // 10**9, t % 10**9)


def utimensat(path, atime, mtime, nofollow=False):
    """atime/mtime: ns, "now" or "omit"; both None: times NULL."""
    times = None if atime is None else (Timespec * 2)(spec(atime), spec(mtime))
    if libc.utimensat(AT_FDCWD, os.fsencode(path), times, AT_SYMLINK_NOFOLLOW if nofollow else 0):
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e), path)


def renameat2(a, b, how):
    fl = {"noreplace": 1, "exchange": 2}[how]
    if libc.renameat2(AT_FDCWD, os.fsencode(a), AT_FDCWD, os.fsencode(b), fl):
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e), a)


def flags(names):
    f = 0
    for n in names:
        f |= getattr(os, n)
    return f


def op_open(path, fl, mode=0o644):
    os.close(os.open(path, flags(fl), mode))


def op_creat(path, mode):
    os.close(os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, mode))


def op_write(path, fl, n):
    fd = os.open(path, flags(fl), 0o644)
    try:
        os.write(fd, b"w" * n)
    finally:
        os.close(fd)


def op_ftruncate(path, fl, size):
    fd = os.open(path, flags(fl))
    try:
        os.ftruncate(fd, size)
    finally:
        os.close(fd)


def op_mv(a, b):
    """GNU mv (the host's coreutils): its exit status is the result."""
    return subprocess.run(["/bin/mv", "--", a, b], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode


OPS = {
    "mv": op_mv,
    "open": op_open,
    "creat": op_creat,
    "write": op_write,
    "ftruncate": op_ftruncate,
    "mkdir": os.mkdir,
    "rmdir": os.rmdir,
    "unlink": os.unlink,
    "rename": os.rename,
    "renameat2": renameat2,
    "link": lambda a, b: os.link(a, b, follow_symlinks=False),
    "symlink": os.symlink,
    "readlink": os.readlink,
    "chmod": os.chmod,
    "chown": os.chown,
    "lchown": os.lchown,
    "truncate": os.truncate,
    "utimensat": utimensat,
    "mknod": lambda p, mode, ma=0, mi=0: os.mknod(p, mode, os.makedev(ma, mi)),
    "mkfifo": os.mkfifo,
}


def observe(before, after):
    """What the call did to the watched file: its ctime moved forward
    ("advanced"), stayed ("same") or went back ("back"), and whether its
    inode number is the one it had (after a rename: under its new name)."""
    ct = ("advanced" if after.st_ctime_ns > before.st_ctime_ns else
          "same" if after.st_ctime_ns == before.st_ctime_ns else "back")
    return {"ctime": ct, "ino": after.st_ino == before.st_ino}


def main():
    base = sys.argv[1]
    os.umask(0)
    out = {}
    for cid, op, args, watch in json.load(sys.stdin):
        try:
            os.chdir(os.path.join(base, cid))
            before = watch and os.lstat(watch[0])
            res = OPS[op](*args)
            obs = watch and observe(before, os.lstat(watch[1]))
            out[cid] = [None, res if isinstance(res, (str, int)) else None, obs]
        except OSError as e:
            out[cid] = [errno.errorcode.get(e.errno, str(e.errno)), None, None]
        finally:
            os.chdir("/")
    json.dump(out, sys.stdout)


main()
