# SPDX-License-Identifier: GPL-2.0-or-later
"""The house: docs/design.md's component table and src/ name the same
files, each with one row, and no file of src/ passes 1,000 lines."""

import os
import re

from conftest import REPO

SRC = os.path.join(REPO, "src")
MAX_LINES = 1000


def _table():
    """File -> role, from the table under '## Components (src/)'."""
    with open(os.path.join(REPO, "docs", "design.md")) as f:
        text = f.read()
    part = text.split("## Components (src/)", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([^`]+)` \| (.+) \|$", part, re.M)
    return rows


def test_component_table_matches_src():
    rows = _table()
    named = [f for f, _ in rows]
    assert len(named) == len(set(named)), f"named twice: {sorted(f for f in named if named.count(f) > 1)}"
    sources = sorted(f for f in os.listdir(SRC) if f.endswith(".c"))
    assert sorted(named) == sources, (
        f"in src/ but not in the table: {sorted(set(sources) - set(named))}; "
        f"in the table but not in src/: {sorted(set(named) - set(sources))}")
    assert all(role.strip() for _, role in rows)


def test_no_source_file_over_1000_lines():
    long = {}
    for f in sorted(os.listdir(SRC)):
        if f.endswith((".c", ".h")):
            with open(os.path.join(SRC, f)) as fh:
                n = sum(1 for _ in fh)
            if n > MAX_LINES:
                long[f] = n
    assert not long, f"over {MAX_LINES} lines: {long}"
