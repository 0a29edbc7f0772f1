"""Task metrics: built-in ``metric(outputs, batch) -> float`` functions and user metric files.

A metric receives

- ``outputs``: the model outputs, a ``dict[str, numpy.ndarray]`` in graph output order (or a
  list in that order, as ``onnxruntime.InferenceSession.run`` returns them), concatenated over
  the whole evaluation set along axis 0;
- ``batch``: ``dict[str, numpy.ndarray]`` of the evaluation data, also concatenated: the model
  inputs, the label arrays whose keys start with ``gt_`` (e.g. ``gt_label``), and, when the
  caller compares against a float model (:func:`workbench.core.analysis.evaluate.evaluate`), the float
  model's outputs under ``"ref:" + output_name``.

and returns one float where higher is better. Built-ins live in :data:`METRICS`; a user metric
is a Python file defining ``metric(outputs, batch) -> float``, loaded by :func:`load_metric`
only with the explicit opt-in ``allow_code=True`` (running a file runs arbitrary code).

The helpers :func:`ctc_greedy_decode`, :func:`edit_distance`, :func:`char_error_rate`,
:func:`roc_auc` and :func:`retrieval_top1` are the building blocks of common task metrics.
"""

from __future__ import annotations

import importlib.util
import logging
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np

from workbench.core.errors import DataError
from workbench.core.formats.numerics import sqnr_db

log = logging.getLogger(__name__)

#: Key prefix of the float model's outputs in a metric's ``batch``.
REF_PREFIX = "ref:"

Outputs = Mapping[str, np.ndarray] | Sequence[np.ndarray]
MetricFn = Callable[[Outputs, Mapping[str, np.ndarray]], float]


def first_output(outputs: Outputs) -> tuple[str | None, np.ndarray]:
    """``(name, array)`` of the first model output (name None when ``outputs`` is a list)."""
    if isinstance(outputs, Mapping):
        if not outputs:
            raise DataError("The model produced no outputs.", hint="Check the model's graph outputs.")
        name = next(iter(outputs))
        return name, np.asarray(outputs[name])
    if len(outputs) == 0:
        raise DataError("The model produced no outputs.", hint="Check the model's graph outputs.")
    return None, np.asarray(outputs[0])


def _reference(outputs: Outputs, batch: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """First output and the float model's matching output from ``batch`` (``ref:<name>``)."""
    name, out = first_output(outputs)
    key = REF_PREFIX + name if name is not None else None
    if key is None or key not in batch:
        refs = [k for k in batch if k.startswith(REF_PREFIX)]
        if not refs:
            raise DataError(
                "This metric compares against the float model, but the batch has no 'ref:' outputs.",
                hint="Use it through evaluate(float_model, quant_model, data), which adds them.")
        key = refs[0]
    return out, np.asarray(batch[key])


def top1(outputs: Outputs, batch: Mapping[str, np.ndarray]) -> float:
    """Top-1 accuracy: argmax of the first output over its last axis against ``batch["gt_label"]``.

    Parameters
    ----------
    outputs : first output float array, shape ``[N, C]`` (or ``[N, ..., C]``), logits or scores.
    batch : must hold ``gt_label``, integer array of shape ``[N]`` (or the leading shape of
        the output without its last axis).

    Returns
    -------
    float
        Fraction of rows whose argmax equals the label, in [0, 1].

    Raises
    ------
    DataError
        ``gt_label`` missing, its shape does not match the output, or a label is not a class of the output
        (``>= C``).
    """
    _, out = first_output(outputs)
    if "gt_label" not in batch:
        raise DataError("top1 needs a 'gt_label' array in the evaluation data.",
                        hint="Add gt_label (int class per sample) to the eval npz, or pick another metric.")
    labels = np.asarray(batch["gt_label"])
    bad = label_problem(labels)
    if bad is not None:
        raise DataError(f"top1: gt_label {bad}; top1 needs integer class indices (0 .. classes - 1).",
                        hint=LABEL_HINT)
    labels = labels.astype(np.int64)
    pred = out.argmax(axis=-1)
    if pred.size != labels.size:
        raise DataError(f"top1: output of shape {list(out.shape)} gives {pred.size} predictions but "
                        f"gt_label has {labels.size} entries.",
                        hint="gt_label needs one class index per sample.")
    classes = out.shape[-1] if out.ndim else 0
    beyond = np.flatnonzero(labels.reshape(-1) >= classes)
    if beyond.size:  # such a row never matches: the score would be silently low (1-based labels: every 10 of 10 classes)
        i = int(beyond[0])
        raise DataError(f"top1: gt_label holds {labels.reshape(-1)[i]} at row {i}, but the output of shape "
                        f"{list(out.shape)} has {classes} classes (0 .. {classes - 1}); top1 needs class indices "
                        "below the class count.",
                        hint="Save 0-based class indices (subtract 1 from 1-based labels), or pick a metric without "
                             "labels (cosine, output_sqnr).")
    return float(np.mean(pred.reshape(-1) == labels.reshape(-1)))


#: What to do with labels top1 cannot score.
LABEL_HINT = ("Save the labels as integers, one class index per row (e.g. np.savez(..., gt_label="
              "np.asarray(indices, dtype=np.int64))), or pick a metric without labels (cosine, output_sqnr).")


def label_problem(labels: np.ndarray) -> str | None:
    """Why ``labels`` are not class indices (``"holds strings (dtype <U3)"``, ``"holds -1 at row 4"``), or None.

    Integers >= 0 are class indices; so are floats and bools whose values all are (a float 3.0 is
    class 3; 3.5 is not a class).
    """
    a = np.asarray(labels)
    kind = a.dtype.kind
    if kind in "USO":
        return f"holds {'strings' if kind in 'US' else 'Python objects'} (dtype {a.dtype})"
    if kind not in "iubf":
        return f"holds {a.dtype} values"
    if kind == "f":
        frac = ~np.isfinite(a) | (a != np.floor(a))
        if frac.any():
            i = int(np.flatnonzero(frac.reshape(-1))[0])
            return f"holds {float(a.reshape(-1)[i]):g} at row {np.unravel_index(i, a.shape)[0] if a.ndim else 0}, not a whole number"
    if kind in "if" and a.size and (a < 0).any():
        i = int(np.flatnonzero((a < 0).reshape(-1))[0])
        return f"holds {a.reshape(-1)[i]} at row {np.unravel_index(i, a.shape)[0] if a.ndim else 0}, a negative class"
    return None


#: Label array each built-in metric reads (metrics not listed read none).
METRIC_LABELS = {"top1": "gt_label"}


def check_metric_labels(metric: str | MetricFn | None, labels: Mapping[str, np.ndarray], rows: int | None,
                        source: str) -> None:
    """Refuse, before any model runs, labels a built-in metric cannot score.

    Parameters
    ----------
    metric : name, metric function or None
        A name of :data:`METRICS` (or ``"sqnr"``), one of its functions, a user function or None
        (the last two are not checked: what they read is their own).
    labels : dict of str to numpy.ndarray
        The ``gt_*`` arrays of the evaluation data (``DataSource.labels()``).
    rows : int or None
        Rows of model inputs in the data (None: unknown, the length is not checked).
    source : str
        The data file, named in the error.

    Raises
    ------
    DataError
        The label array is missing, its length differs from ``rows``, it holds more than one value per row
        (one-hot), or its values are not integer class indices (strings, fractions, negatives); one line naming
        ``source`` and the array.
    """
    name = metric if isinstance(metric, str) else next((k for k, f in METRICS.items() if f is metric), None)
    key = METRIC_LABELS.get(name)
    if key is None:
        return
    if key not in labels:
        have = ", ".join(repr(k) for k in labels) or "none"
        raise DataError(f"{source}: metric {name} needs a {key!r} array (one class index per row); its label "
                        f"arrays: {have}.", hint=f"Add {key} to the file, or pick a metric without labels "
                                                 "(cosine, output_sqnr).")
    arr = np.asarray(labels[key])
    n = len(arr) if arr.ndim else 1
    if rows is not None and n != rows:
        raise DataError(f"{source}: array {key!r} has {n} labels for {rows} rows of inputs.",
                        hint=f"Give one label per input row, in the same order (metric {name} pairs row i with "
                             f"{key}[i]).")
    if arr.ndim > 1 and int(np.prod(arr.shape[1:])) != 1:
        raise DataError(f"{source}: array {key!r} has shape {list(arr.shape)}, not one label per row (one-hot?); "
                        f"metric {name} needs integer class indices (0 .. classes - 1).",
                        hint=f"For one-hot labels store {key}.argmax(axis=1).")
    bad = label_problem(arr)
    if bad is not None:
        raise DataError(f"{source}: array {key!r} {bad}; metric {name} needs integer class indices "
                        "(0 .. classes - 1).", hint=LABEL_HINT)


def check_metric_output(metric: str | MetricFn | None, output: str, dims: Sequence[int | str] | None,
                        model: str) -> None:
    """Refuse, before any model runs, a built-in metric that cannot read the model's first output.

    ``dims``: the declared shape of the first output ``output`` (ints, or names of symbolic dims; None
    when unknown, which passes). ``top1`` needs a class axis (rank >= 2); ``detection_scores`` a
    ``[N, 4 + classes, anchors]`` output (rank 3, more than 4 rows where fixed).

    Raises
    ------
    DataError
        One line naming ``model``, the output and its shape.
    """
    name = metric if isinstance(metric, str) else next((k for k, f in METRICS.items() if f is metric), None)
    if dims is None or name not in ("top1", "detection_scores"):
        return
    shown = "[" + ", ".join(str(d) for d in dims) + "]"
    if name == "top1" and len(dims) < 2:
        raise DataError(f"{model}: metric top1 takes the argmax over the class axis of the first output, but "
                        f"{output!r} has shape {shown} (no class axis).",
                        hint="Pick a metric that reads this output (cosine, output_sqnr), or a .py metric file.")
    if name == "detection_scores" and (len(dims) != 3 or (isinstance(dims[1], int) and dims[1] <= 4)):
        raise DataError(f"{model}: metric detection_scores expects a first output [N, 4 + classes, anchors], but "
                        f"{output!r} has shape {shown}.",
                        hint="Use it on a YOLO-style detector output without NMS, or pick cosine / output_sqnr.")


def cosine(outputs: Outputs, batch: Mapping[str, np.ndarray]) -> float:
    """Cosine similarity of the flattened first output with the float model's (``ref:<name>``).

    ``dot(q, f) / (|q| |f|)`` over all elements in float64; 1.0 when both are all zero, 0.0 when
    only one is.
    """
    out, ref = _reference(outputs, batch)
    return cosine_similarity(ref, out)


def output_sqnr(outputs: Outputs, batch: Mapping[str, np.ndarray]) -> float:
    """SQNR in dB of the first output against the float model's (``ref:<name>``).

    ``10 log10(sum(f^2) / sum((f - q)^2))`` (:func:`workbench.core.formats.numerics.sqnr_db`).
    """
    out, ref = _reference(outputs, batch)
    return sqnr_db(ref, out)


def cosine_similarity(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine similarity of two arrays flattened, in float64 (1.0 if both zero, 0.0 if one is)."""
    x = np.asarray(a, dtype=np.float64).ravel()
    y = np.asarray(b, dtype=np.float64).ravel()
    nx, ny = float(np.linalg.norm(x)), float(np.linalg.norm(y))
    if nx == 0.0 and ny == 0.0:
        return 1.0
    if nx == 0.0 or ny == 0.0:
        return 0.0
    return float(np.dot(x, y) / (nx * ny))


#: Score from which a class counts as detected in an image (nudenet's and YOLO's default).
DETECTION_THRESHOLD = 0.25


def class_max_scores(out: np.ndarray, n_box: int = 4) -> np.ndarray:
    """Per image, the max score of each class over all anchors: float64 ``[N, C]``.

    ``out`` is a YOLOv8-style detector output ``[N, n_box + C, anchors]`` (box coordinates, then
    class scores already through Sigmoid), as exported by ultralytics without NMS.
    """
    a = np.asarray(out)
    if a.ndim != 3 or a.shape[1] <= n_box:
        raise DataError(f"detection_scores expects an output [N, {n_box} + classes, anchors], got shape "
                        f"{list(a.shape)}.", hint="Use it on a YOLO-style detector output without NMS.")
    return a[:, n_box:, :].max(axis=2).astype(np.float64)


def detection_scores(outputs: Outputs, batch: Mapping[str, np.ndarray]) -> float:
    """Minus the largest score change of a detection: ``-max |s_q - s_f|`` (higher is better, 0 = same).

    ``s`` is the per-image, per-class max score of the first output (:func:`class_max_scores`);
    the max runs over the (image, class) pairs that either model detects (``s >= 0.25``), so a
    class that appears or disappears counts with its full change. 0.0 when neither model detects
    anything. Use ``--min-score -0.05`` for "scores within 0.05 of the float model's".
    """
    out, ref = _reference(outputs, batch)
    q, f = class_max_scores(out), class_max_scores(ref)
    either = (q >= DETECTION_THRESHOLD) | (f >= DETECTION_THRESHOLD)
    return -float(np.abs(q - f)[either].max()) if either.any() else 0.0


#: Built-in metrics by name (all: higher is better).
METRICS: dict[str, MetricFn] = {"top1": top1, "cosine": cosine, "output_sqnr": output_sqnr,
                                "detection_scores": detection_scores}


#: names a user may try for a built-in metric (lower case, "-" as "_") -> that metric
METRIC_ALIASES = {"accuracy": "top1", "acc": "top1", "top_1": "top1", "top1_accuracy": "top1",
                  "cos": "cosine", "cosine_similarity": "cosine", "snr": "output_sqnr"}
#: what each metric an alias points to measures, in the refusal of the alias
METRIC_WORDS = {"top1": "the accuracy: the share of rows whose top class is their gt_label",
                "cosine": "the cosine similarity of the first output to the float model's",
                "output_sqnr": "the SQNR in dB of the first output against the float model's"}


def load_metric(spec: str | Path, *, allow_code: bool = False) -> MetricFn:
    """A metric by built-in name (:data:`METRICS`) or from a Python file defining ``metric``.

    Parameters
    ----------
    spec : str or Path
        ``"top1"``, ``"cosine"``, ``"output_sqnr"`` (``"sqnr"`` is the same), or the path of a ``.py``
        file that defines ``metric(outputs, batch) -> float``.
    allow_code : bool
        Must be True to load a file: loading executes the file's code.

    Raises
    ------
    DataError
        Unknown name, file missing, ``allow_code`` not given, the file fails to import, or it
        defines no callable ``metric``.
    """
    if isinstance(spec, str) and spec in METRICS:
        return METRICS[spec]
    if spec == "sqnr":  # autotune's spelling; every verb takes both
        return METRICS["output_sqnr"]
    path = Path(spec)
    if path.suffix != ".py":
        meant = METRIC_ALIASES.get(str(spec).lower().replace("-", "_"))
        said = f" ({meant} is {METRIC_WORDS[meant]})" if meant else ""
        raise DataError(f"--metric {str(spec)!r}: unknown metric{said}.",
                        hint=f"Use one of {', '.join(METRICS)}, or the path of a .py file defining metric().")
    if not path.is_file():
        raise DataError(f"{path}: metric file not found.", hint="Check the path.")
    if not allow_code:
        raise DataError(f"{path}: loading a metric file runs its Python code, which is off by default.",
                        hint="Pass --allow-code on the command line (allow_code=True in Python) "
                             "if you trust this file.")
    return _import_metric(path)


def _import_metric(path: Path) -> MetricFn:
    module_name = f"workbench_user_metric_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise DataError(f"{path}: cannot be loaded as a Python module.", hint="Check the file.")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - any error in user code
        # a file it reads is missing (examples/metrics/ppocr_rec_exact.py's charset): the message says what to set
        hint = ("It could not open a file it reads (named in brackets): make that path exist or set what the "
                "message in brackets says." if isinstance(exc, OSError) else "Fix the error in the file.")
        raise DataError(f"{path}: importing the metric file failed ({exc.__class__.__name__}: {exc}).",
                        hint=hint) from exc
    fn = getattr(module, "metric", None)
    if not callable(fn):
        raise DataError(f"{path}: defines no function metric(outputs, batch).",
                        hint="Add `def metric(outputs, batch) -> float:` to the file.")
    log.info("Loaded user metric from %s", path)

    def from_file(outputs, batch):
        try:
            value = fn(outputs, batch)
        except DataError:
            raise
        except Exception as exc:  # noqa: BLE001 - any error in user code
            raise DataError(f"{path}: metric(outputs, batch) raised {exc.__class__.__name__}: {exc}.",
                            hint="Fix the function; it gets (outputs dict, batch dict) and returns one "
                                 "number, higher is better.") from exc
        return metric_value(value, str(path))

    from_file.__name__ = path.name  # what reports call it: the file, not every file's "metric"
    return from_file


def metric_value(value, source: str) -> float:
    """A user metric's return value as a float: a real number or a 0-d / one-element array; +-inf passes
    (an identical output's SQNR), NaN does not (no comparison can use it).

    Raises
    ------
    DataError
        ``value`` is not a number (a string, a list, an array of several values, a bool) or is NaN;
        one line naming ``source`` (the metric file) and the value.
    """
    arr = np.asarray(value) if not isinstance(value, (str, bytes, bool, np.bool_)) else None
    if arr is None or arr.size != 1 or arr.dtype.kind not in "iuf":
        shown = repr(value)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        raise DataError(f"{source}: metric(outputs, batch) returned {shown}, not one number.",
                        hint="Return one float, higher is better (e.g. float(accuracy)).")
    number = float(arr.reshape(()))
    if math.isnan(number):
        raise DataError(f"{source}: metric(outputs, batch) returned NaN, which no target can compare.",
                        hint="Return a number for every input (check for empty selections or 0 / 0).")
    return number


# --- building blocks of task metrics ------------------------------------------------------------

def ctc_greedy_decode(probs: np.ndarray, charset: Sequence[str], *, blank: int = 0) -> list[str]:
    """Greedy (best path) CTC decoding.

    Argmax over classes per time step, collapse repeated indices, drop ``blank``
    (Graves et al., "Connectionist Temporal Classification", ICML 2006, best path decoding).

    Parameters
    ----------
    probs : numpy.ndarray, float, shape ``[N, T, C]`` (or ``[T, C]`` for one sequence)
        Per-step class scores (probabilities or logits; only the argmax is used).
    charset : sequence of str, length C
        String of each class index (index ``blank`` is never emitted).

    Returns
    -------
    list of str
        One decoded string per sequence.
    """
    scores = np.asarray(probs)
    if scores.ndim == 2:
        scores = scores[None]
    if scores.shape[-1] != len(charset):
        raise DataError(f"CTC output has {scores.shape[-1]} classes but the charset has {len(charset)}.",
                        hint="Use the charset that belongs to the model (blank first).")
    best = scores.argmax(axis=-1)
    texts = []
    for seq in best:
        keep = np.ones(seq.shape, dtype=bool)
        keep[1:] = seq[1:] != seq[:-1]
        texts.append("".join(charset[i] for i in seq[keep] if i != blank))
    return texts


def edit_distance(a: Sequence, b: Sequence) -> int:
    """Levenshtein distance (insertions, deletions, substitutions of cost 1), O(len(a) len(b))."""
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb))
        prev = cur
    return prev[-1]


def char_error_rate(reference: str, hypothesis: str) -> float:
    """CER = edit_distance(reference, hypothesis) / len(reference) (0 or 1 for an empty reference)."""
    if not reference:
        return 0.0 if not hypothesis else 1.0
    return edit_distance(reference, hypothesis) / len(reference)


def roc_auc(labels: np.ndarray, scores: np.ndarray) -> float:
    """Area under the ROC curve, as the Mann-Whitney U statistic with average ranks for ties.

    ``AUC = (sum of positive ranks - P (P + 1) / 2) / (P N)`` (Hanley & McNeil 1982).

    Parameters
    ----------
    labels : numpy.ndarray, shape ``[M]``, 0/1 (or bool)
    scores : numpy.ndarray, float, shape ``[M]``; higher means more likely positive.

    Raises
    ------
    DataError
        Only one class present.
    """
    y = np.asarray(labels).reshape(-1).astype(bool)
    s = np.asarray(scores, dtype=np.float64).reshape(-1)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if n_pos == 0 or n_neg == 0:
        raise DataError("ROC-AUC needs both positive and negative labels.", hint="Check the labels.")
    order = np.argsort(s, kind="mergesort")
    sorted_s = s[order]
    ranks = np.empty(len(s), dtype=np.float64)
    # average rank (1-based) of each group of tied scores
    _, first, counts = np.unique(sorted_s, return_index=True, return_counts=True)
    avg = first + (counts + 1) / 2.0
    ranks[order] = np.repeat(avg, counts)
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def retrieval_top1(queries: np.ndarray, candidates: np.ndarray) -> float:
    """Fraction of queries whose most cosine-similar candidate is the one with the same row index.

    Parameters
    ----------
    queries, candidates : numpy.ndarray, float, shape ``[P, D]``; row i of each is a pair.
    """
    q = np.asarray(queries, dtype=np.float64)
    c = np.asarray(candidates, dtype=np.float64)
    q = q / np.maximum(np.linalg.norm(q, axis=1, keepdims=True), 1e-12)
    c = c / np.maximum(np.linalg.norm(c, axis=1, keepdims=True), 1e-12)
    best = (q @ c.T).argmax(axis=1)
    return float(np.mean(best == np.arange(len(q))))
