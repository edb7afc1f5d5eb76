# SPDX-License-Identifier: GPL-2.0-or-later
"""The harness self-test: checks of what the ctrfs tests compare against
(the private engine, the images, the docker cp / exec helpers). It runs
on its own (scripts/run-tests: "harness self-test"), apart from ctrfs's
tests and not counted with them, with tests/fs/conftest.py's fixtures as
they are: that file is loaded here as the module fs_conftest."""

import importlib.util
import os
import sys

FS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fs")
if FS not in sys.path:
    sys.path.insert(0, FS)  # for its own imports (faultproxy)
if "fs_conftest" not in sys.modules:
    _spec = importlib.util.spec_from_file_location("fs_conftest", os.path.join(FS, "conftest.py"))
    _mod = importlib.util.module_from_spec(_spec)
    sys.modules["fs_conftest"] = _mod
    _spec.loader.exec_module(_mod)

# the fixtures the self-test uses and the hooks (the report header, the
# daemon logs of a failure), picked up by pytest from this module
from fs_conftest import (base_dir, big_file, container, engine, mount, mount_root,  # noqa: E402,F401
                         private_engine, proxy, pytest_report_header,
                         pytest_runtest_makereport, rootfs)
