"""Task metrics of the real-model corpus (``../shared/corpus/models``), one function per model family.

Each task function takes ``run`` (feeds dict -> outputs dict, see :func:`session_runner`) and the
model's corpus folder, reads ``eval.npz`` and returns ``{metric name: float}``; the post-processing
follows each folder's ``meta.json``. :data:`CORPUS_MODELS` lists every corpus ONNX file with its
task and the float numbers ``meta.json`` states, so the float side can be checked to reproduce them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

from workbench.core.analysis.metrics import char_error_rate, ctc_greedy_decode, retrieval_top1, roc_auc

Runner = Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]

#: NudeNet v3 class order of output0 rows 4..21 (nudenet 3.4 ``__labels``).
NUDENET_CLASSES = (
    "FEMALE_GENITALIA_COVERED", "FACE_FEMALE", "BUTTOCKS_EXPOSED", "FEMALE_BREAST_EXPOSED",
    "FEMALE_GENITALIA_EXPOSED", "MALE_BREAST_EXPOSED", "ANUS_EXPOSED", "FEET_EXPOSED", "BELLY_COVERED",
    "FEET_COVERED", "ARMPITS_COVERED", "ARMPITS_EXPOSED", "FACE_MALE", "BELLY_EXPOSED",
    "MALE_GENITALIA_EXPOSED", "ANUS_COVERED", "FEMALE_BREAST_COVERED", "BUTTOCKS_COVERED",
)
NUDENET_THRESHOLD = 0.25


def session_runner(model: str | Path | onnx.ModelProto, *, threads: int = 0) -> Runner:
    """A runner over an onnxruntime CPU session of ``model`` (file path or in-memory proto)."""
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.log_severity_level = 3
    src = model.SerializeToString() if isinstance(model, onnx.ModelProto) else str(model)
    sess = ort.InferenceSession(src, opts, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]

    def run(feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return dict(zip(names, sess.run(names, feeds), strict=True))

    return run


def _load_eval(folder: Path) -> dict[str, np.ndarray]:
    with np.load(folder / "eval.npz") as z:
        return {k: z[k] for k in z.files}


def _inputs(data: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {k: v for k, v in data.items() if not k.startswith("gt_")}


def _run_batched(run: Runner, feeds: dict[str, np.ndarray], batch: int) -> dict[str, np.ndarray]:
    """Run ``batch`` rows at a time (npz layout "batch") and concatenate outputs on axis 0."""
    n = len(next(iter(feeds.values())))
    parts: dict[str, list[np.ndarray]] = {}
    for i in range(0, n, batch):
        for k, v in run({k: a[i:i + batch] for k, a in feeds.items()}).items():
            parts.setdefault(k, []).append(v)
    return {k: np.concatenate(v, axis=0) for k, v in parts.items()}


def _first(outputs: dict[str, np.ndarray]) -> np.ndarray:
    return next(iter(outputs.values()))


# --- classification ------------------------------------------------------------------------------

def classification_accuracy(run: Runner, folder: Path, *, batch: int = 50) -> dict[str, float]:
    """Accuracy of argmax(first output) vs ``gt_label`` (digits_*, ppocr_mobile_v2_cls)."""
    data = _load_eval(folder)
    out = _first(_run_batched(run, _inputs(data), batch))
    return {"accuracy": float(np.mean(out.argmax(axis=-1) == data["gt_label"]))}


# --- CTC text recognition ------------------------------------------------------------------------

def load_charset(folder: Path) -> list[str]:
    """``charset.txt``: one class per line, blank first; split on '\\n' only (the last class is ' ')."""
    return (folder / "charset.txt").read_text(encoding="utf-8").split("\n")


def ctc_line_metrics(run: Runner, folder: Path, *, batch: int = 10) -> dict[str, float]:
    """ppocrv4_rec: CTC greedy decode (blank 0), strip(); exact line match and mean CER vs gt_text."""
    data = _load_eval(folder)
    charset = load_charset(folder)
    texts: list[str] = []
    feeds = _inputs(data)
    n = len(data["gt_text"])
    for i in range(0, n, batch):
        probs = _first(run({k: v[i:i + batch] for k, v in feeds.items()}))
        texts += [t.strip() for t in ctc_greedy_decode(probs, charset, blank=0)]
    gts = [str(t) for t in data["gt_text"]]
    return {
        "exact": float(np.mean([p == g for p, g in zip(texts, gts, strict=True)])),
        "exact_nospace": float(np.mean([p.replace(" ", "") == g.replace(" ", "")
                                        for p, g in zip(texts, gts, strict=True)])),
        "cer": float(np.mean([char_error_rate(g, p) for p, g in zip(texts, gts, strict=True)])),
    }


# --- sentence embeddings ---------------------------------------------------------------------------

def paraphrase_retrieval(run: Runner, folder: Path) -> dict[str, float]:
    """minilm_l6_v2: rows i and i+P are paraphrases; anchors retrieve among paraphrases by cosine.

    Uses the ``sentence_embedding`` output ([N, 384], already mean-pooled and L2-normalised).
    """
    data = _load_eval(folder)
    emb = run(_inputs(data))["sentence_embedding"].astype(np.float64)
    p = len(emb) // 2
    anchors, para = emb[:p], emb[p:]
    a = anchors / np.linalg.norm(anchors, axis=1, keepdims=True)
    b = para / np.linalg.norm(para, axis=1, keepdims=True)
    sim = a @ b.T
    off = ~np.eye(p, dtype=bool)
    return {"top1": retrieval_top1(anchors, para), "mean_cos_pair": float(np.mean(np.diag(sim))),
            "mean_cos_other": float(np.mean(sim[off]))}


# --- detector ----------------------------------------------------------------------------------------

def nudenet_class_scores(run: Runner, folder: Path, *, batch: int = 4) -> np.ndarray:
    """Per eval image, the max score of each class over all anchors: float64 ``[N, 18]``.

    output0 is ``[N, 4 + 18, anchors]`` (box, then class scores already through Sigmoid).
    """
    data = _load_eval(folder)
    out = _first(_run_batched(run, _inputs(data), batch))
    return out[:, 4:, :].max(axis=2).astype(np.float64)


def nudenet_detections(scores: np.ndarray, names, threshold: float = NUDENET_THRESHOLD) -> dict:
    """``{image name: {class: max score}}`` for classes whose max score >= ``threshold``."""
    return {str(n): {NUDENET_CLASSES[c]: float(s[c]) for c in np.flatnonzero(s >= threshold)}
            for n, s in zip(names, scores, strict=True)}


def nudenet_compare(scores: np.ndarray, reference: np.ndarray,
                    threshold: float = NUDENET_THRESHOLD) -> dict[str, float]:
    """Issue #5's comparison of quantized against float per-class max scores (both ``[N, 18]``).

    A detection is an (image, class) pair whose max score is ``>= threshold`` (meta.json:
    "per-class max score >=0.25"). Returns

    - ``same_classes``: fraction of images whose set of detected classes equals the float one;
    - ``classes_matched`` / ``classes_float``: (image, class) detections of the float model that the
      quantized model also makes, and their number;
    - ``max_score_diff``: ``max |score_quant - score_float|`` over the pairs detected by either model
      (0.0 when neither detects anything);
    - ``max_score_diff_all``: the same over every image and class (also the sub-threshold scores).
    """
    q_det, f_det = scores >= threshold, reference >= threshold
    either = q_det | f_det
    diff = np.abs(scores - reference)
    return {"same_classes": float(np.mean(np.all(q_det == f_det, axis=1))),
            "classes_matched": float((q_det & f_det).sum()), "classes_float": float(f_det.sum()),
            "max_score_diff": float(diff[either].max()) if either.any() else 0.0,
            "max_score_diff_all": float(diff.max())}


def nudenet_metrics(run: Runner, folder: Path, reference: np.ndarray | None = None) -> dict[str, float]:
    """Count of (image, class) max scores >= 0.25, and a comparison.

    Without ``reference``: ``meta_match`` = fraction of eval images whose detections (classes and
    scores rounded to 3 decimals) equal the float ones listed in meta.json. With ``reference``
    (float scores from :func:`nudenet_class_scores`): the figures of :func:`nudenet_compare`.
    """
    scores = nudenet_class_scores(run, folder)
    res = {"detections": float((scores >= NUDENET_THRESHOLD).sum())}
    if reference is None:
        listed = json.loads((folder / "meta.json").read_text(encoding="utf-8"))["fp32_metric"]["detections"]
        names = _load_eval(folder)["gt_image_name"]
        found = nudenet_detections(scores, names)
        res["meta_match"] = float(np.mean([
            found[n].keys() == listed[n].keys()
            and all(abs(found[n][c] - listed[n][c]) <= 5e-4 for c in listed[n]) for n in found]))
    else:
        res.update(nudenet_compare(scores, reference))
    return res


# --- voice activity detection ---------------------------------------------------------------------

def silero_metrics(run: Runner, folder: Path) -> dict[str, float]:
    """silero_vad: run the eval clips step by step in order, carrying ``stateN`` -> ``state``.

    State resets to zeros at each new ``gt_clip_id`` (the stored ``input`` rows already hold the
    64-sample context of the clip). Chunk accuracy of ``prob > 0.5`` vs ``gt_speech`` and ROC-AUC.
    """
    data = _load_eval(folder)
    clip = data["gt_clip_id"]
    probs = np.empty(len(clip), dtype=np.float64)
    state = np.zeros_like(data["state"][0])
    for i in range(len(clip)):
        if i == 0 or clip[i] != clip[i - 1]:
            state = np.zeros_like(data["state"][0])
        out = run({"input": data["input"][i], "state": state, "sr": np.asarray(data["sr"][i])})
        probs[i] = float(np.asarray(out["output"]).reshape(-1)[0])
        state = out["stateN"]
    gt = data["gt_speech"]
    return {"chunk_accuracy": float(np.mean((probs > 0.5) == (gt == 1))), "roc_auc": roc_auc(gt, probs)}


# --- registry ------------------------------------------------------------------------------------------

@dataclass
class CorpusModel:
    """One corpus ONNX file: where it is, its task metric, and the float values meta.json states."""

    name: str
    folder: str
    file: str
    task: Callable[..., dict[str, float]] | None
    headline: tuple[str, ...]
    expected: dict[str, float] = field(default_factory=dict)
    refuse: bool = False

    def path(self, corpus: Path) -> Path:
        return corpus / self.folder / self.file

    def meta(self, corpus: Path) -> dict:
        return json.loads((corpus / self.folder / "meta.json").read_text(encoding="utf-8"))


def _digits(folder: str, file: str) -> CorpusModel:
    return CorpusModel(f"{folder}/{file}", folder, file, classification_accuracy, ("accuracy",))


def _expected(meta: dict, model: CorpusModel) -> dict[str, float]:
    """The float metric values of ``model`` as written in its meta.json."""
    fm = meta["fp32_metric"]
    if model.folder.startswith("digits_"):
        opset = model.file.split("opset")[1].split(".")[0]
        return {"accuracy": fm[f"onnx_opset{opset}_test_accuracy"]}
    if model.folder == "ppocr_mobile_v2_cls":
        return {"accuracy": fm["accuracy"]}
    if model.folder == "ppocrv4_rec":
        return {"exact": fm["line_exact_match"], "exact_nospace": fm["line_exact_match_ignoring_spaces"],
                "cer": fm["mean_CER"]}
    if model.folder == "minilm_l6_v2":
        return {"top1": fm["paraphrase_retrieval_top1"], "mean_cos_pair": fm["mean_cos_paraphrase"],
                "mean_cos_other": fm["mean_cos_other"]}
    if model.folder == "nudenet_320n":
        return {"detections": float(sum(len(v) for v in fm["detections"].values())), "meta_match": 1.0}
    if model.folder == "silero_vad":
        m = fm[model.file]
        return {"chunk_accuracy": m["chunk_accuracy(prob>0.5 vs energy label)"], "roc_auc": m["roc_auc"]}
    return {}


def corpus_models(corpus: Path) -> list[CorpusModel]:
    """Every corpus ONNX file with its task metric and the float values from its meta.json."""
    models = [_digits(d, f) for d, files in (
        ("digits_cnn", ("model_opset17.onnx", "model_opset13.onnx")),
        ("digits_mlp", ("model_opset17.onnx", "model_opset13.onnx")),
        ("digits_transformer", ("model_opset17.onnx", "model_opset14.onnx"))) for f in files]
    models += [
        CorpusModel("ppocr_mobile_v2_cls", "ppocr_mobile_v2_cls", "model.onnx", classification_accuracy,
                    ("accuracy",)),
        CorpusModel("ppocrv4_rec", "ppocrv4_rec", "model.onnx", ctc_line_metrics, ("exact", "cer")),
        CorpusModel("minilm_l6_v2", "minilm_l6_v2", "model.onnx", paraphrase_retrieval, ("top1",)),
        CorpusModel("nudenet_320n", "nudenet_320n", "model.onnx", nudenet_metrics,
                    ("detections", "meta_match", "max_score_diff", "max_score_diff_all", "same_classes")),
    ]
    models += [CorpusModel(f"silero_vad/{f}", "silero_vad", f, silero_metrics, ("chunk_accuracy", "roc_auc"))
               for f in ("silero_vad.onnx", "silero_vad_op18_ifless.onnx", "silero_vad_16k_op15.onnx")]
    models.append(CorpusModel("ddddocr_common_old_int8", "ddddocr_common_old_int8", "model.onnx", None, (),
                              refuse=True))
    for m in models:
        if (corpus / m.folder / "meta.json").is_file():
            m.expected = _expected(m.meta(corpus), m)
    return models
