"""Where the shared real-model corpus and the failure cases are: one definition for the tests.

``SHARED`` is ``$WORKBENCH_SHARED``, else ``../shared`` beside the checkout; ``CORPUS`` its ``corpus/models`` and
``CASES`` its ``cases``. Import them as ``from shared_paths import CORPUS`` (``tests/`` is on ``sys.path`` through
its conftest). Tests that need them should also take the ``corpus`` / ``cases`` fixture, which skips, or fails
under ``WORKBENCH_REQUIRE_CORPUS=1``, where the folder is absent.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("WORKBENCH_SHARED", ROOT.parent / "shared")).resolve()
CORPUS = SHARED / "corpus" / "models"
CASES = SHARED / "cases"
