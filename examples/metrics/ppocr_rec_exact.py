"""Exact line match for PP-OCRv4 recognition (CTC greedy decoding, blank 0, strip()).

The charset is the file $PPOCR_CHARSET names, else ``corpus/models/ppocrv4_rec/charset.txt`` under
$WORKBENCH_SHARED, else under the ``shared`` folder beside this checkout (as the tests and benchmarks
find the corpus). A missing charset fails the import with FileNotFoundError naming the path tried and
the variable to set.
Use: workbench-cli autotune model.onnx ... --metric examples/metrics/ppocr_rec_exact.py --allow-code
"""

import os
from pathlib import Path

import numpy as np

from workbench.core.analysis.metrics import ctc_greedy_decode

_CHECKOUT = Path(__file__).resolve().parents[2]


def charset_path() -> Path:
    """The charset file: $PPOCR_CHARSET, else $WORKBENCH_SHARED (default ../shared)/corpus/models/ppocrv4_rec."""
    if os.environ.get("PPOCR_CHARSET"):
        return Path(os.environ["PPOCR_CHARSET"])
    shared = Path(os.environ.get("WORKBENCH_SHARED", _CHECKOUT.parent / "shared"))
    return shared / "corpus/models/ppocrv4_rec/charset.txt"


def load_charset() -> list[str]:
    """The charset, one entry per line (index 0 is the CTC blank); FileNotFoundError if the file is missing."""
    path = charset_path()
    if not path.is_file():
        raise FileNotFoundError(f"ppocrv4_rec charset not found at {path}: set WORKBENCH_SHARED to the folder "
                                "holding corpus/ (or PPOCR_CHARSET to the charset file)")
    return path.read_text(encoding="utf-8").split("\n")


CHARSET = load_charset()


def metric(outputs, batch):
    """Share of rows whose decoded text equals batch["gt_text"] (probabilities: first output, [N, T, C])."""
    probs = next(iter(outputs.values()))
    texts = [t.strip() for t in ctc_greedy_decode(probs, CHARSET, blank=0)]
    gts = [str(t) for t in batch["gt_text"]]
    return float(np.mean([p == g for p, g in zip(texts, gts, strict=True)]))
