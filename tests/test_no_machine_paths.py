"""No source, test or benchmark names a folder of one machine: the corpus and cases are found through
``WORKBENCH_SHARED`` or ``../shared`` beside the checkout (``tests/shared_paths.py``), so a checkout elsewhere
runs the same tests. Thirteen test files once read ``/work/shared/...`` literally."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: a quoted absolute path into this machine's work tree
MACHINE_PATH = re.compile(r"""["']/work/""")


def test_no_file_names_this_machine_s_work_folder():
    found = [f"{path.relative_to(ROOT)}:{n}"
             for folder in ("workbench", "tests", "benchmarks", "scripts") if (ROOT / folder).is_dir()
             for path in sorted((ROOT / folder).rglob("*.py"))
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if MACHINE_PATH.search(line) and path.name != Path(__file__).name]
    assert found == []
