"""Exact line match for PP-OCRv4 recognition (CTC greedy decoding, blank 0, strip()).

The charset is read from $PPOCR_CHARSET, or from the corpus folder beside this repository.
Use: workbench-cli autotune model.onnx ... --metric examples/metrics/ppocr_rec_exact.py --allow-code
"""

import os
from pathlib import Path

import numpy as np

from workbench.core.analysis.metrics import ctc_greedy_decode

_DEFAULT = Path(__file__).resolve().parents[3] / "shared/corpus/models/ppocrv4_rec/charset.txt"
CHARSET = Path(os.environ.get("PPOCR_CHARSET", _DEFAULT)).read_text(encoding="utf-8").split("\n")


def metric(outputs, batch):
    probs = next(iter(outputs.values()))
    texts = [t.strip() for t in ctc_greedy_decode(probs, CHARSET, blank=0)]
    gts = [str(t) for t in batch["gt_text"]]
    return float(np.mean([p == g for p, g in zip(texts, gts, strict=True)]))
