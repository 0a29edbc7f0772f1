"""Issues: what a pass could not do as asked, or decided on the user's behalf (never silent).

Every preparation step, plan pass, guard and writer reports through :class:`PlanIssue`: the node
it concerns, a :class:`Severity`, a human-readable message and a machine-readable
:class:`IssueCode`. Front ends decide by ``severity`` and ``code``, never by message text.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Severity(StrEnum):
    """How much an issue matters. A ``StrEnum``: compares equal to its value ("info", ...)."""

    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


class IssueCode(StrEnum):
    """What kind of issue it is, for programs (filters, the app's Problems list, tests)."""

    # planning: a unit or tensor left float, or quantized differently from what was asked
    QONNX_ONLY_DTYPE = "qonnx-only-dtype"              # int2..int7 / bipolar outside a QONNX recipe
    WEIGHT_SATURATION = "weight-saturation"            # full-range int8 weights on a CPU without VNNI
    ACTIVATION_GRANULARITY = "activation-granularity"  # per-channel / per-block activations
    MASK_INPUT = "mask-input"                          # an input holding a huge constant (attention mask)
    REDUCTION_STATISTIC = "reduction-statistic"        # a mean / variance / norm kept float
    FLOAT16 = "float16"                                # a 16-bit float weight or input
    MATMUL_ND_WEIGHT = "matmul-nd-weight"              # a 3-D+ MatMul weight
    NO_CONSTANT_WEIGHT = "no-constant-weight"          # Conv / MatMul / Gemm with a computed weight
    OUTPUT_KEPT_FLOAT = "output-kept-float"            # a producer excluded for a float consumer
    BIAS_FLOAT = "bias-float"                          # a bias left in float
    BIAS_OVERFLOW = "bias-overflow"                    # int32 bias out of range, rescaled
    SUBGRAPH = "subgraph"                              # a unit inside an If / Loop body
    SPEC_CONFLICT = "spec-conflict"                    # producer and consumer asked for different specs
    SPEC_SHARED = "spec-shared"                        # a tensor uses another unit's activation spec
    NEEDS_NEWER_OPSET = "needs-newer-opset"            # the dtype needs an opset the model cannot reach
    MX_ACTIVATION_FLOAT = "mx-activation-float"        # MX activations left in float
    MX_BLOCK_SIZE = "mx-block-size"                    # MX block size other than 32
    NON_NEGATIVE_GRID = "non-negative-grid"            # a non-negative tensor on [0, max] instead of symmetric
    UNMATCHED_RECIPE_ENTRY = "unmatched-recipe-entry"  # a rule / override / op_types entry matching no node
    # guards (plan passes that keep units float)
    FLOAT_ISLAND = "float-island"                      # element-wise units reaching no integer kernel
    WEIGHT_DQ_ONLY = "weight-dq-only"                  # a static unit that would quantize only its weight
    SENTINEL_RANGE = "sentinel-range"                  # a tensor reaching a mask / sentinel value
    DISPARATE_CONCAT = "disparate-concat"              # a Concat joining very different ranges
    NONFINITE_TENSOR = "nonfinite-tensor"              # a tensor holding +-inf by construction (a -inf mask)
    SIZE_DERIVED = "size-derived"                      # a tensor computed from a dynamic input size only
    # latency (onnxruntime CPU, 1 thread; workbench.core.pipeline.latency_check)
    LATENCY = "latency"                                # measured quantized / float latency
    SLOWER_THAN_FLOAT = "slower-than-float"            # the quantized model measured slower than float
    LATENCY_NOT_MEASURED = "latency-not-measured"      # no feed or no session to measure with
    LATENCY_KEPT_FLOAT = "latency-kept-float"          # a unit whose integer kernel measured slower than float
    PLACEMENT_UNDONE = "placement-undone"              # latency placement undone: it cost output SQNR
    # model preparation, projects
    PREPARATION_NOTE = "preparation-note"              # a remark of model preparation (renames, folds, ...)
    PLAN_ERROR = "plan-error"                          # the recipe could not be resolved at all
    CACHE_DROPPED = "cache-dropped"                    # an invalid cached range dropped and recalibrated
    CALIBRATION_DATA = "calibration-data"              # NaN / Inf or empty tensors met while calibrating
    DATA_CAST = "data-cast"                            # calibration data cast to the input's dtype (float64 -> float32)
    # writers
    OPSET_UPGRADE_FAILED = "opset-upgrade-failed"
    WEIGHT_OBSERVER = "weight-observer"                # an observer that does not apply to weights
    RELU_REWRITTEN = "relu-rewritten"                  # Relu written as Max(x, 0) for onnxruntime
    CLIP_REWRITTEN = "clip-rewritten"                  # Clip written as Min(Max(x, lo), hi)
    GEMM_TRANS_A = "gemm-trans-a"                      # dynamic Gemm with transA: weight-only DQ
    ONE_ZERO_POINT = "one-zero-point"                  # ConvInteger takes one weight zero point
    NO_MATMULNBITS = "no-matmulnbits"                  # an int4 weight onnxruntime will not fuse
    MATMULNBITS_ACCURACY = "matmulnbits-accuracy"      # the accuracy level onnxruntime fuses int4 MatMuls with
    MX_ELEMENT_STORAGE = "mx-element-storage"          # MX 6-bit elements stored in 8 bits
    SHARED_TABLE = "shared-table"                      # a weight also read by a float node, stored once
    LARGER_THAN_FLOAT = "larger-than-float"            # the quantized tensors take more bytes than the float
    ORT_CANNOT_RUN = "ort-cannot-run"                  # valid ONNX that onnxruntime cannot run here


@dataclass
class PlanIssue:
    """Something a pass could not do as asked, or a decision it made (``node`` may be "").

    ``units``: the node units the issue is about when it is about more than ``node`` (a latency note on an island
    kept float names each of its units here, its message only the first three); ``ratio``: the quantized / float
    latency ratio a latency note reports (1.4: 1.4x the float latency), None for other issues; ``island``: True on
    the latency fallback's note on an island of units left float together (of one unit or more: ``units`` alone
    does not tell a one-unit island from a unit the latency placement probed alone); ``recipe_field``: the recipe
    field (``rules``, ``overrides``, ``exclude``, ``op_types``) of the entry an ``UNMATCHED_RECIPE_ENTRY`` warning
    is about, "" on other issues; ``recipe_entry``: that entry (the rule's label, the override's node name, the
    exclude pattern or the op type), so the CLI can name the --recipe file before it unless it came from
    --exclude. Programs read these, never the message text.
    """

    node: str
    severity: Severity
    message: str
    code: IssueCode
    units: tuple[str, ...] = ()
    ratio: float | None = None
    island: bool = False
    recipe_field: str = ""
    recipe_entry: str = ""

    def __post_init__(self) -> None:
        self.severity = Severity(self.severity)
        self.code = IssueCode(self.code)

    def record(self) -> dict[str, str]:
        """The human record stamped into a written model's ``workbench.issues`` metadata: node,
        severity and message (the code is for programs in this process)."""
        return {"node": self.node, "severity": str(self.severity), "message": self.message}
