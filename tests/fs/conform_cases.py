# SPDX-License-Identifier: GPL-2.0-or-later
"""The cases of test_conform.py, per system call.

Each case has its own directory (named by its id); `setup` is a shell
script run there as root, the same in the container (busybox's or
Debian's sh) and in the reference directory on the host's disk (ext4);
then one call (conform_runner.py's `op` with `args`, paths relative to
the case's directory) as `who`: root or nobody (uid and gid 65534, no
groups). The expected outcome is not written here: it is what the same
call did in the reference directory.

`refuse=(errno name, reason)`: a documented refusal (README, Limits;
docs/design.md, Limits): ctrfs gives that errno where ext4 does
something else, and the container keeps what it had.

`deep=True`: paths near PATH_MAX in the container, which Docker 20.10
cannot stat (README, Limits): left out there.

`watch=(name, name after)`: the file's ctime must move forward (or stay)
as the reference's did, and its inode number stay (or change) as there
(docs/design.md, "Times" and "Inode numbers"); lstat before and after
the call, by the runner.

`expect=(errno name or None, reason)`: the outcome is written here, not
ext4's, where the reference cannot say it: for None the container holds
what the reference does, for an errno what it held before.
"""

import stat

NAME_MAX = 255
LONG = "n" * (NAME_MAX + 1)
MAXNAME = "m" * NAME_MAX
T1 = 1500000000_250000000  # explicit times the cases set (ns)
T2 = 1600000000_500000000
S1 = 1400000000 * 10**9
S2 = 1450000000 * 10**9
EXPLICIT = {T1 // 10**9, T2 // 10**9, S1 // 10**9, S2 // 10**9}
# Where the container's `touch` takes no fraction (busybox) a file's
# nanoseconds are set with a copy, whose PUT sets the atime to the later
# of the two (README, Limits); a symlink cannot be copied
NS_REFUSED = ("EOPNOTSUPP", "an atime before the mtime, with nanoseconds, where touch takes "
              "no fraction")
NS_LINK_REFUSED = ("EOPNOTSUPP", "a symlink's own times with nanoseconds where touch takes no "
                   "fraction")

# a file whose mtime is long past (not compared: the engine's reads move
# the atime the same touch set, in the container)
OLD = 1300000000
OLD_F = f"printf abcdef > f && touch -d @{OLD} f"
# root-owned file, directory, sticky world-writable directory, nobody's file
F = "printf abcdef > f"
D = "mkdir d"
STICKY = "mkdir -m 1777 s && printf x > s/root && printf x > s/mine && chown 65534:65534 s/mine"
OPEN777 = "mkdir -m 777 o && printf x > o/root && chmod 644 o/root"
MINE = "printf abc > mine && chown 65534:65534 mine && chmod 644 mine"
LOOP = "ln -s a b && ln -s b a"
DANGLING = "ln -s nowhere dl"


class Case:
    def __init__(self, cid, setup, op, *args, who="root", refuse=None, expect=None, watch=None,
                 deep=False):
        self.id, self.setup, self.op, self.args = cid, setup, op, list(args)
        self.who, self.refuse, self.expect, self.deep = who, refuse, expect, deep
        self.watch = list(watch) if watch else None

    def __repr__(self):
        return self.id


def C(*a, **kw):
    return Case(*a, **kw)


def N(*a, **kw):
    return Case(*a, who="nobody", **kw)


BADUTF8 = "\udcff\udcfe-x"  # bytes ff fe: not UTF-8 (surrogateescape)
NL = "n\nl"  # a newline in a name
NLEND = "e\n"  # at its end, where a shell's $(...) would drop it


def named(var, name):
    """Shell lines setting $var to the name (any bytes but NUL and '/'),
    for a case's setup: printf's octal escapes, and a '/' after it that
    $(...) keeps the trailing newlines before."""
    esc = "".join(chr(b) if b < 128 and chr(b).isalnum() else "\\%03o" % b
                  for b in name.encode(errors="surrogateescape"))
    return f"{var}=$(printf '{esc}/') && {var}=${{{var}%/}}"


PATH_MAX = 4096
# Paths in the container of PATH_MAX bytes or more are ENAMETOOLONG there
# (its kernel counts the NUL) and through the mount (pathmap_split():
# ctrfs names every path from the container's root, README, Limits). The
# call itself is relative to its case's directory, so ext4 takes a path
# that is too long in the container: the outcome is written down.
TOO_LONG = ("ENAMETOOLONG", "the path in the container (/t/CASE/...) has 4096 bytes or more")
FITS = (None, "the path in the container has 4095 bytes, one under PATH_MAX")


def at_length(cid, total):
    """(setup, path) for a case: directories of 200 bytes made by the
    setup, and the path under them whose path in the container,
    /t/<cid>/<path>, has total bytes."""
    left = total - len(f"/t/{cid}/")
    comps = []
    while left > NAME_MAX:
        comps.append("p" * 200)
        left -= 201
    leaf = "z" * left
    dirs = "/".join(comps)
    return f"mkdir -p {dirs} && printf abc > f", f"{dirs}/{leaf}"


def long_path_cases(op, *lengths):
    out = []
    for n in lengths:
        cid = f"{op}-path-{n}"
        setup, path = at_length(cid, n)
        args = {"mkdir": [path], "creat": [path, 0o644], "rename": ["f", path]}[op]
        out.append(C(cid, setup, op, *args, expect=FITS if n < PATH_MAX else TOO_LONG, deep=True))
    return out


W = ["O_WRONLY"]
CR = ["O_CREAT", "O_WRONLY"]
CREX = ["O_CREAT", "O_EXCL", "O_WRONLY"]

CASES = {
    "open": [
        C("open-excl-existing", F, "open", "f", CREX),
        C("open-excl-new", "", "open", "new", CREX, 0o640),
        C("open-creat-new", "", "open", "new", CR, 0o4755),
        C("open-missing", "", "open", "nothere", ["O_RDONLY"]),
        C("open-through-file", F, "open", "f/x", ["O_RDONLY"]),
        C("open-creat-through-file", F, "open", "f/x", CR),
        C("open-creat-missing-parent", "", "open", "nodir/x", CR),
        C("open-wronly-dir", D, "open", "d", W),
        C("open-directory-on-file", F, "open", "f", ["O_RDONLY", "O_DIRECTORY"]),
        C("open-creat-name-max", "", "open", MAXNAME, CR),
        C("open-creat-name-too-long", "", "open", LONG, CR),
        C("open-trunc", F, "open", "f", ["O_WRONLY", "O_TRUNC"]),
        C("open-excl-dangling", DANGLING, "open", "dl", CREX),
        C("open-creat-dangling", DANGLING, "open", "dl", CR, 0o600),
        C("open-nofollow-link", "printf x > t && ln -s t l", "open", "l", ["O_RDONLY", "O_NOFOLLOW"]),
        C("open-loop", LOOP, "open", "a", ["O_RDONLY"]),
        C("open-creat-invalid-utf8", "", "open", BADUTF8, CR),
        C("open-creat-dotdot-chain", "mkdir d e", "open", "d/../e/./../d/new", CR),
        C("open-path-max", "", "open", "a/" * 2100, ["O_RDONLY"]),
        C("open-loop-in-the-middle", LOOP, "open", "a/x", ["O_RDONLY"]),
        C("open-tmpfile", "", "open", ".", ["O_TMPFILE", "O_WRONLY"], 0o600,
          refuse=("EOPNOTSUPP", "O_TMPFILE: a file without a name has no tar entry")),
        C("open-creat-in-setgid-dir", "mkdir -m 2775 g && chown 0:1234 g", "open", "g/f", CR, 0o2755),
        N("open-creat-in-root-dir", "", "open", "new", CR),
        N("open-creat-in-777-dir", OPEN777, "open", "o/new", CR, 0o640),
        N("open-wronly-0444", "printf x > f && chmod 666 f && chmod 444 f", "open", "f", W),
        N("open-rdonly-0600", "printf x > f && chmod 600 f", "open", "f", ["O_RDONLY"]),
        N("write-0666", "printf x > f && chmod 666 f", "write", "f", ["O_WRONLY", "O_APPEND"], 5),
        N("write-setuid-0777", "printf x > f && chmod 4777 f", "write", "f", W, 3),
        N("write-setgid-0777", "printf x > f && chmod 2777 f", "write", "f", W, 3),
        N("write-setgid-noexec", "printf x > f && chmod 2767 f", "write", "f", W, 3),
        N("write-setgid-noexec-my-group", "printf x > f && chown 0:65534 f && chmod 2767 f", "write",
          "f", W, 3),
        N("open-trunc-setuid-0777", "printf x > f && chmod 4777 f", "open", "f", ["O_WRONLY", "O_TRUNC"]),
        N("open-excl-existing", "mkdir -m 777 o && printf x > o/f", "open", "o/f", CREX),
    ],
    "creat": [
        C("creat-new", "", "creat", "new", 0o600),
        C("creat-existing-truncates", F, "creat", "f", 0o600),
        C("creat-over-dir", D, "creat", "d", 0o644),
        C("creat-readonly-by-root", "printf x > f && chmod 444 f", "creat", "f", 0o644),
        C("creat-newline", "", "creat", NL, 0o644),
        C("creat-newline-at-end", "", "creat", NLEND, 0o644),
        C("creat-invalid-utf8", "", "creat", BADUTF8, 0o644),
        C("creat-existing-newline", named("n", NL) + ' && printf abc > "$n"', "creat", NL, 0o644),
        *long_path_cases("creat", 4095, 4096, 4097),
        N("creat-in-root-dir", "", "creat", "new", 0o644),
        N("creat-0444-other", "mkdir -m 777 o && printf x > o/f && chmod 444 o/f", "creat", "o/f", 0o644),
    ],
    "mkdir": [
        C("mkdir-existing-dir", D, "mkdir", "d"),
        C("mkdir-existing-file", F, "mkdir", "f"),
        C("mkdir-existing-dangling", DANGLING, "mkdir", "dl"),
        C("mkdir-missing-parent", "", "mkdir", "nodir/x"),
        C("mkdir-through-file", F, "mkdir", "f/x"),
        C("mkdir-0700", "", "mkdir", "n", 0o700),
        C("mkdir-mode-07777", "", "mkdir", "n", 0o7777),
        C("mkdir-sticky", "", "mkdir", "n", 0o1777),
        C("mkdir-name-too-long", "", "mkdir", LONG),
        C("mkdir-name-max", "", "mkdir", MAXNAME),
        C("mkdir-in-setgid-dir", "mkdir -m 2775 g && chown 0:1234 g", "mkdir", "g/sub", 0o755),
        C("mkdir-through-loop", LOOP, "mkdir", "a/x"),
        C("mkdir-invalid-utf8", "", "mkdir", BADUTF8),
        C("mkdir-newline", "", "mkdir", NL),
        C("mkdir-newline-at-end", "", "mkdir", NLEND),
        C("mkdir-in-newline-dir", named("n", NL) + ' && mkdir "$n"', "mkdir", NL + "/" + NLEND),
        *long_path_cases("mkdir", 4094, 4095, 4096, 4097),
        # a directory of 4095 bytes made in the container: listed through
        # the mount (a GET's tar names it with a '/' after it, PATH_MAX)
        C("mkdir-below-path-4095", f"mkdir -p {at_length('mkdir-below-path-4095', 4095)[1]}", "mkdir",
          at_length("mkdir-below-path-4095", 4095)[1] + "/x", expect=TOO_LONG, deep=True),
        N("mkdir-in-root-dir", "", "mkdir", "n"),
        N("mkdir-in-777-dir", OPEN777, "mkdir", "o/n", 0o750),
    ],
    "rmdir": [
        C("rmdir-non-empty", "mkdir d && printf x > d/f", "rmdir", "d"),
        C("rmdir-file", F, "rmdir", "f"),
        C("rmdir-missing", "", "rmdir", "nothere"),
        C("rmdir-empty", D, "rmdir", "d"),
        C("rmdir-symlink-to-dir", "mkdir d && ln -s d l", "rmdir", "l"),
        C("rmdir-dot", D, "rmdir", "d/."),
        N("rmdir-in-root-dir", D, "rmdir", "d"),
        N("rmdir-sticky-other", "mkdir -m 1777 s && mkdir s/d", "rmdir", "s/d"),
        N("rmdir-sticky-mine", "mkdir -m 1777 s && mkdir s/d && chown 65534:65534 s/d", "rmdir", "s/d"),
    ],
    "unlink": [
        C("unlink-dir", D, "unlink", "d"),
        C("unlink-missing", "", "unlink", "nothere"),
        C("unlink-file", F, "unlink", "f"),
        C("unlink-symlink", "printf x > t && ln -s t l", "unlink", "l"),
        C("unlink-fifo", "mkfifo p", "unlink", "p"),
        C("unlink-through-file", F, "unlink", "f/x"),
        C("unlink-hardlink", "printf x > f && ln f g", "unlink", "g"),
        C("unlink-through-loop", LOOP, "unlink", "a/x"),
        C("unlink-newline", named("n", NL) + ' && printf x > "$n"', "unlink", NL),
        C("unlink-newline-at-end", named("n", NLEND) + ' && printf x > "$n"', "unlink", NLEND),
        C("unlink-invalid-utf8", named("n", BADUTF8) + ' && printf x > "$n"', "unlink", BADUTF8),
        C("unlink-dotdot-chain", "mkdir d && printf x > f", "unlink", "d/../d/../f"),
        N("unlink-sticky-other", STICKY, "unlink", "s/root"),
        N("unlink-sticky-mine", STICKY, "unlink", "s/mine"),
        N("unlink-in-root-dir", MINE, "unlink", "mine"),
        N("unlink-777-dir-others", OPEN777, "unlink", "o/root"),
    ],
    "rename": [
        C("rename-file", F, "rename", "f", "g"),
        C("rename-file-over-file", "printf a > f && printf bb > g", "rename", "f", "g"),
        C("rename-dir-over-non-empty-dir", "mkdir a b && printf x > b/f", "rename", "a", "b"),
        C("rename-dir-over-empty-dir", "mkdir a b && printf x > a/f", "rename", "a", "b"),
        C("rename-dir-over-file", "mkdir a && printf x > f", "rename", "a", "f"),
        C("rename-file-over-dir", "mkdir d && printf x > f", "rename", "f", "d"),
        C("rename-dir-into-own-subdir", "mkdir -p a/b", "rename", "a", "a/b/c"),
        C("rename-missing", "", "rename", "nothere", "x"),
        C("rename-into-missing-dir", F, "rename", "f", "nodir/f"),
        C("rename-symlink", "ln -s target l", "rename", "l", "m"),
        C("rename-fifo", "mkfifo p", "rename", "p", "q"),
        C("rename-hardlinks-of-one-file", "printf x > f && ln f g", "rename", "f", "g"),
        C("rename-to-name-too-long", F, "rename", "f", LONG),
        C("rename-noreplace-existing", "printf a > f && printf b > g", "renameat2", "f", "g", "noreplace"),
        C("rename-noreplace-new", F, "renameat2", "f", "g", "noreplace"),
        C("rename-exchange", "printf a > f && mkdir g", "renameat2", "f", "g", "exchange",
          refuse=("EINVAL", "RENAME_EXCHANGE: no tool swaps two names at once")),
        C("rename-to-invalid-utf8", F, "rename", "f", BADUTF8),
        C("rename-newline", named("n", NL) + ' && printf x > "$n"', "rename", NL, NLEND),
        C("rename-to-newline", F, "rename", "f", NL),
        C("rename-invalid-utf8", named("n", BADUTF8) + ' && printf x > "$n"', "rename", BADUTF8, "g"),
        C("rename-dir-newline", named("n", NL) + ' && mkdir "$n" && printf x > "$n/$n"', "rename", NL,
          NLEND),
        C("rename-newline-over-file", named("n", NLEND) + ' && printf a > "$n" && printf bb > g',
          "rename", NLEND, "g"),
        C("rename-through-loop", "ln -s a b && ln -s b a && printf x > f", "rename", "f", "a/f"),
        *long_path_cases("rename", 4095, 4096),
        N("rename-dir-to-other-parent-without-write", "mkdir -m 777 o p && mkdir o/d && "
          "chown 65534:65534 o/d && chmod 555 o/d", "rename", "o/d", "p/d"),
        N("rename-sticky-other", STICKY, "rename", "s/root", "s/x"),
        N("rename-in-root-dir", MINE, "rename", "mine", "x"),
        N("rename-sticky-mine", STICKY, "rename", "s/mine", "s/x"),
    ],
    # GNU mv (the runner's, the host's coreutils), whose renameat2
    # (RENAME_NOREPLACE) fails and which then judges by st_dev and st_ino:
    # two names of one file are "the same file" (exit 1, both kept: 9.1;
    # older ones removed the source), which needs their one inode number
    "mv": [
        C("mv-hardlinks-of-one-file", "printf x > a && ln a b", "mv", "a", "b"),
        C("mv-hardlinks-other-dir", "mkdir d && printf x > a && ln a d/b", "mv", "a", "d/b"),
        C("mv-file-over-file", "printf a > a && printf bb > b", "mv", "a", "b"),
    ],
    "link": [
        C("link-dir", D, "link", "d", "e"),
        C("link-file", F, "link", "f", "g"),
        C("link-over-existing", "printf x > f && printf y > g", "link", "f", "g"),
        C("link-missing", "", "link", "nothere", "g"),
        C("link-fifo", "mkfifo p", "link", "p", "q"),
        C("link-chr", "mknod c c 1 3", "link", "c", "d"),
        C("link-symlink", "ln -s target l", "link", "l", "m",
          refuse=("EOPNOTSUPP", "Podman 4.3: a hard link to a symlink fails")),
        C("link-name-too-long", F, "link", "f", LONG),
        N("link-others-file", OPEN777, "link", "o/root", "o/l"),
        N("link-in-root-dir", MINE, "link", "mine", "l"),
    ],
    "symlink": [
        C("symlink-over-existing", F, "symlink", "t", "f"),
        C("symlink-new", "", "symlink", "../some/target", "l"),
        C("symlink-long-target", "", "symlink", "x/" * 500 + "y", "l"),
        C("symlink-missing-parent", "", "symlink", "t", "nodir/l"),
        C("symlink-name-too-long", "", "symlink", "t", LONG),
        C("symlink-newline", "", "symlink", "t\nu", NL),
        C("symlink-newline-at-end", "", "symlink", NLEND, NLEND),
        C("symlink-invalid-utf8", "", "symlink", BADUTF8, BADUTF8),
        C("symlink-newline-over-existing", named("n", NL) + ' && printf x > "$n"', "symlink", "t", NL),
        N("symlink-in-root-dir", "", "symlink", "t", "l"),
        N("symlink-in-777-dir", OPEN777, "symlink", "root", "o/l"),
    ],
    "readlink": [
        C("readlink-file", F, "readlink", "f"),
        C("readlink-dir", D, "readlink", "d"),
        C("readlink-missing", "", "readlink", "nothere"),
        C("readlink-link", "ln -s ../x/y l", "readlink", "l"),
        C("readlink-loop", LOOP, "readlink", "a"),
    ],
    "chmod": [
        C("chmod-missing", "", "chmod", "nothere", 0o600),
        C("chmod-file", F, "chmod", "f", 0o600),
        C("chmod-setuid", F, "chmod", "f", 0o4755),
        C("chmod-dir-sticky", D, "chmod", "d", 0o1777),
        C("chmod-through-symlink", "printf x > t && ln -s t l", "chmod", "l", 0o640),
        C("chmod-loop", LOOP, "chmod", "a", 0o600),
        N("chmod-mine-setuid", MINE, "chmod", "mine", 0o4755),
        N("chmod-others", F, "chmod", "f", 0o777),
        N("chmod-mine", MINE, "chmod", "mine", 0o600),
        N("chmod-mine-setgid-not-member", MINE, "chmod", "mine", 0o2755),
    ],
    "chown": [
        C("chown-missing", "", "chown", "nothere", 1, 1),
        C("chown-file", F, "chown", "f", 1234, 5678),
        C("chown-uid-only", "printf x > f && chown 0:42 f", "chown", "f", 1234, -1),
        C("chown-setuid-file", "printf x > f && chmod 4755 f", "chown", "f", 1234, 1234),
        C("chown-dir", D, "chown", "d", 1234, 5678),
        C("chown-loop", LOOP, "chown", "a", 1, 1),
        C("lchown-symlink", "printf x > t && ln -s t l", "lchown", "l", 1234, 5678),
        N("chown-others", F, "chown", "f", 65534, 65534),
        N("chown-mine-to-root", MINE, "chown", "mine", 0, -1),
        N("chgrp-mine-not-member", MINE, "chown", "mine", -1, 1234),
        N("chown-mine-noop", MINE, "chown", "mine", -1, -1),
    ],
    "truncate": [
        C("truncate-missing", "", "truncate", "nothere", 0),
        C("truncate-dir", D, "truncate", "d", 0),
        C("truncate-shrink", F, "truncate", "f", 2),
        C("truncate-zero", F, "truncate", "f", 0),
        C("truncate-grow", F, "truncate", "f", 100000),
        C("truncate-negative", F, "truncate", "f", -1),
        C("truncate-huge", F, "truncate", "f", 999999999999999),
        C("truncate-zero-hardlinked", "printf abcdef > f && ln f g", "truncate", "f", 0),
        C("truncate-shrink-hardlinked", "printf abcdef > f && ln f g", "truncate", "f", 1),
        C("truncate-through-file", F, "truncate", "f/x", 0),
        C("truncate-loop", LOOP, "truncate", "a", 0),
        N("truncate-0644-others", F, "truncate", "f", 0),
        N("truncate-mine", MINE, "truncate", "mine", 1),
        N("truncate-setuid-others", "printf abc > f && chmod 4777 f", "truncate", "f", 1),
    ],
    "ftruncate": [
        C("ftruncate-rdonly", F, "ftruncate", "f", ["O_RDONLY"], 0),
        C("ftruncate-shrink", F, "ftruncate", "f", ["O_RDWR"], 3),
        C("ftruncate-grow", F, "ftruncate", "f", ["O_WRONLY"], 70000),
        C("ftruncate-huge", F, "ftruncate", "f", ["O_WRONLY"], 999999999999999),
        # a new file is spooled in memory: past the cap it goes to the disk
        # spool, whose filesystem says EFBIG (in memory it took any size,
        # and close() then sent it)
        C("ftruncate-huge-new", "", "ftruncate", "new", ["O_WRONLY", "O_CREAT"], 999999999999999),
        C("ftruncate-grow-new", "", "ftruncate", "new", ["O_WRONLY", "O_CREAT"], 5000),
        N("ftruncate-mine", MINE, "ftruncate", "mine", ["O_RDWR"], 1),
    ],
    "utimensat": [
        C("utimensat-missing", "", "utimensat", "nothere", T1, T2),
        C("utimensat-file", F, "utimensat", "f", T1, T2, refuse=NS_REFUSED),
        C("utimensat-file-seconds", F, "utimensat", "f", S1, S2),
        C("utimensat-atime-after-mtime", F, "utimensat", "f", T2, T1),
        C("utimensat-omit-atime", F, "utimensat", "f", "omit", T2),
        C("utimensat-dir", D, "utimensat", "d", T1, T2),
        C("utimensat-symlink-nofollow", "printf x > t && ln -s t l", "utimensat", "l", T1, T2, True,
          refuse=NS_LINK_REFUSED),
        C("utimensat-symlink-nofollow-seconds", "printf x > t && ln -s t l", "utimensat", "l", S1, S2,
          True),
        C("utimensat-through-symlink", "printf x > t && ln -s t l", "utimensat", "l", T1, T2,
          refuse=NS_REFUSED),
        C("utimensat-through-symlink-seconds", "printf x > t && ln -s t l", "utimensat", "l", S1, S2),
        N("utimensat-explicit-others", "printf x > f && chmod 666 f", "utimensat", "f", T1, T2),
        N("utimensat-null-others-writable", "printf x > f && chmod 666 f", "utimensat", "f", None, None),
        N("utimensat-null-others-readonly", F, "utimensat", "f", None, None),
        N("utimensat-explicit-mine", MINE, "utimensat", "mine", T1, T2, refuse=NS_REFUSED),
        N("utimensat-seconds-mine", MINE, "utimensat", "mine", S1, S2),
    ],
    # the ctime and inode number of the file a call changes (watch=);
    # its mtime an old second first, which ctrfs shows as its ctime (a
    # file first seen), so a ctime moved to now differs from it
    "ctime": [
        C("ctime-chmod", OLD_F, "chmod", "f", 0o600, watch=("f", "f")),
        C("ctime-chmod-same-mode", OLD_F, "chmod", "f", 0o644, watch=("f", "f")),
        C("ctime-chown", OLD_F, "chown", "f", 1234, 5678, watch=("f", "f")),
        C("ctime-link", OLD_F, "link", "f", "g", watch=("f", "f")),
        C("ctime-link-new-name", OLD_F, "link", "f", "g", watch=("f", "g")),
        C("ctime-unlink-other-name", OLD_F + " && ln f g", "unlink", "g", watch=("f", "f")),
        C("ctime-rename", OLD_F, "rename", "f", "g", watch=("f", "g")),
        C("ctime-rename-over-file", OLD_F + " && printf y > g", "rename", "f", "g", watch=("f", "g")),
        C("ctime-utimensat", OLD_F, "utimensat", "f", S1, S2, watch=("f", "f")),
        C("ctime-truncate", OLD_F, "truncate", "f", 2, watch=("f", "f")),
        C("ctime-chmod-dir", f"mkdir d && touch -d @{OLD} d", "chmod", "d", 0o700, watch=("d", "d")),
        C("ctime-chmod-fifo", f"mkfifo p && touch -d @{OLD} p", "chmod", "p", 0o600, watch=("p", "p")),
        C("ino-rename-fifo", f"mkfifo p && touch -d @{OLD} p", "rename", "p", "q", watch=("p", "q")),
        C("ino-rename-symlink", f"ln -s t l && touch -h -d @{OLD} l", "rename", "l", "m",
          watch=("l", "m")),
        C("ino-rename-dir", f"mkdir d && printf x > d/f && touch -d @{OLD} d", "rename", "d", "e",
          watch=("d", "e")),
        C("ino-rename-dir-other-parent", f"mkdir d p && touch -d @{OLD} d", "rename", "d", "p/d",
          watch=("d", "p/d")),
    ],
    "mknod": [
        C("mknod-fifo", "", "mknod", "p", stat.S_IFIFO | 0o640),
        C("mknod-chr", "", "mknod", "c", stat.S_IFCHR | 0o600, 1, 3),
        C("mknod-blk", "", "mknod", "b", stat.S_IFBLK | 0o660, 7, 0),
        C("mknod-reg", "", "mknod", "r", stat.S_IFREG | 0o644),
        C("mknod-sock", "", "mknod", "s", stat.S_IFSOCK | 0o755,
          refuse=("EOPNOTSUPP", "a socket has no tar type")),
        C("mknod-existing", F, "mknod", "f", stat.S_IFIFO | 0o644),
        N("mknod-chr-unprivileged", OPEN777, "mknod", "o/c", stat.S_IFCHR | 0o600, 1, 3),
        N("mknod-fifo-unprivileged", OPEN777, "mknod", "o/p", stat.S_IFIFO | 0o600),
    ],
    "mkfifo": [
        C("mkfifo-new", "", "mkfifo", "p", 0o640),
        C("mkfifo-existing", F, "mkfifo", "f", 0o644),
        C("mkfifo-missing-parent", "", "mkfifo", "nodir/p", 0o644),
        N("mkfifo-in-root-dir", "", "mkfifo", "p", 0o644),
        N("mkfifo-in-777-dir", OPEN777, "mkfifo", "o/p", 0o600),
    ],
}

ALL = [c for cases in CASES.values() for c in cases]
# case ids are directory names, one per case: each call's own
for _syscall, _cases in CASES.items():
    for _c in _cases:
        if _c.who == "nobody":
            _c.id = "u-" + _c.id
assert len({c.id for c in ALL}) == len(ALL), "duplicate case ids"
