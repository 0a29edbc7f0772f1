"""Bias correction: fold the mean output shift caused by rounding into each Conv bias.

Rounding a weight tensor changes a Conv's expected output. With float input ``x`` and weight error
``dW = W_q - W``, the expected shift of output channel ``c`` is (Nagel et al., "Data-Free
Quantization Through Weight Equalization and Bias Correction", ICCV 2019, section 4.2)::

    E[y_q - y]_c = sum_{i, kh, kw} dW[c, i, kh, kw] * E[x]_{group(c) * Cin_g + i}

The Conv's input is rounded too, on its activation grid ``fq`` (the QuantizeLinear / DequantizeLinear in
front of it), and that rounding is not unbiased: a clipped tail, a zero point that is rounded, values
that sit between grid points in a pattern. So the shift corrected is that of both roundings, the
"empirical" bias correction of the same paper, measured locally::

    E[conv(fq(x), W_q) - conv(x, W)] = conv(E[x], dW) + conv(E[fq(x)] - E[x], W_q)

Leaving out the second term was worse than no correction on PP-OCRv4 recognition (compute+mse
recipe, eval output SQNR 13.8 dB -> 8.2, exact line match 0.97 -> 0.78): there the input roundings'
mean shift offset the weights' (activations alone 7.3 dB, weights alone 13.5 dB, both 13.8 dB), and
correcting the weights' alone exposed it; with both terms it is 15.2 dB. Both means are taken over the
float model's inputs, so corrections do not double count the error inherited from upstream layers.
By linearity the expectation is exact: ``E[conv(x, dW)] = conv(E[x], dW)`` with the per-position input
mean, so zero padding at the borders is accounted for.
The corrected bias is ``b - E[y_q - y]`` on a copy of the model; the user's model is untouched.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from types import ModuleType

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from workbench.core.errors import WorkbenchError
from workbench.core.formats.numerics import dequantize, quantize
from workbench.core.formats.qparams import QParams
from workbench.core.formats.qtypes import get_qtype
from workbench.core.runtime.run_ahead import run_ahead
from workbench.core.runtime.session import add_outputs, make_session

log = logging.getLogger(__name__)


def correctable_units(plan) -> list:
    """Conv units of ``plan`` that are quantized and have a weight and a bias initializer."""
    return [u for u in plan.units.values()
            if u.op_type == "Conv" and not u.excluded and u.weight and u.bias]


def dequantized_weights(qproto: onnx.ModelProto, nodes: set[str] | None = None) -> dict[str, np.ndarray]:
    """Node name -> its dequantized weight (float64) for nodes whose input 1 is a DequantizeLinear of an
    initializer in ``qproto`` (the QDQ output of :mod:`workbench.core.writers.qdq`). ``nodes``: only these
    (the other weights are not dequantized)."""
    return {name: weight.value() for name, weight in quantized_weights(qproto, nodes).items()}


class QuantizedWeight:
    """A node's weight as a QDQ model holds it: ``key``, the integer tensor's dtype, shape and bytes with its
    scale's and zero point's bytes, the axis and the block size (equal keys dequantize to the same values;
    ``block_size`` 0: per-tensor or per-channel); ``shape``; :meth:`value`, the dequantized weight (float64),
    computed on first use only."""

    def __init__(self, q: onnx.TensorProto, scale: onnx.TensorProto, zero_point: onnx.TensorProto | None,
                 axis: int, block_size: int = 0) -> None:
        self._args = (q, scale, zero_point, axis, block_size)
        self.shape = tuple(q.dims)
        self.key = (q.data_type, self.shape, q.raw_data or q.SerializeToString(), scale.SerializeToString(),
                    zero_point.SerializeToString() if zero_point is not None else b"", axis, block_size)
        self._value: np.ndarray | None = None

    def value(self) -> np.ndarray:
        """The weight dequantized as DequantizeLinear does, float64 (kept after the first call)."""
        if self._value is None:
            q_init, s_init, zp_init, axis, block_size = self._args
            q = numpy_helper.to_array(q_init)
            scale = numpy_helper.to_array(s_init).astype(np.float32)
            zp = numpy_helper.to_array(zp_init) if zp_init is not None else np.zeros(scale.shape, dtype=q.dtype)
            qp = QParams(scale, zp, str(q.dtype), axis if scale.ndim else None, block_size or None)
            self._value = np.asarray(dequantize(q, qp), dtype=np.float64)
        return self._value


def quantized_weights(qproto: onnx.ModelProto, nodes: set[str] | None = None) -> dict[str, QuantizedWeight]:
    """Node name -> its :class:`QuantizedWeight` for nodes whose input 1 is a DequantizeLinear of an initializer
    in ``qproto`` with an initializer scale (and zero point, when given); ``nodes``: only these. Nothing is
    dequantized here: :func:`bias_shifts` keys its kept shifts by ``key`` and dequantizes only the weights of
    shifts it computes (nudenet_320n's recipe choice dequantized 58 weights in each of 8 quantizes, to float64,
    and serialised them again for its keys)."""
    inits = {i.name: i for i in qproto.graph.initializer}
    wanted = None if nodes is None else {n.input[1] for n in qproto.graph.node if n.name in nodes and len(n.input) > 1}
    dq_out: dict[str, QuantizedWeight] = {}
    for n in qproto.graph.node:
        if n.op_type != "DequantizeLinear" or n.input[0] not in inits or n.input[1] not in inits:
            continue
        if wanted is not None and n.output[0] not in wanted:
            continue
        zp = inits[n.input[2]] if len(n.input) > 2 and n.input[2] in inits else None
        axis = next((a.i for a in n.attribute if a.name == "axis"), 1)
        block_size = next((a.i for a in n.attribute if a.name == "block_size"), 0)
        dq_out[n.output[0]] = QuantizedWeight(inits[n.input[0]], inits[n.input[1]], zp, axis, block_size)
    return {n.name: dq_out[n.input[1]] for n in qproto.graph.node if len(n.input) > 1 and n.input[1] in dq_out}


#: One onnxruntime run of :func:`input_means` fetches about this many bytes at most (one row at least):
#: ppocrv4_rec's 38 Conv inputs take 21 MiB a row, so its 8-row batches fetched 166 MiB a run, and the
#: recipe choice, which corrects every variant it scores, peaked 250 MiB above a quantize without it.
RUN_BYTES = 32 << 20


def input_means(float_proto: onnx.ModelProto, tensors: list[str],
                batches: Iterable[dict[str, np.ndarray]],
                rounding: dict[str, QParams] | None = None,
                more: dict[str, list[QParams]] | None = None) -> dict:
    """Mean of each tensor over the samples (batch axis 0): float64 ``(1, C, *spatial)``.

    When a tensor's shape changes between batches (dynamic spatial size), its mean is taken over
    the spatial axes too and broadcast back: ``(1, C, 1, ...)``. ``rounding``: tensor -> qparams; the
    result then also holds, under ``(tensor, "rounded")``, the mean of the tensor quantized and
    dequantized with them (ONNX QuantizeLinear / DequantizeLinear numerics). ``more``: tensor -> further
    per-tensor grids, each rounded the same way from the same run's values and held under
    :func:`grid_key` ``(tensor, qparams)``: several grids of a tensor in one run of the float model, the
    same bits as a run with each of them as ``rounding``.

    Memory: a batch runs in slices of rows whose fetched tensors take at most about :data:`RUN_BYTES`
    (the first row, run alone, sets the size), and each slice is summed row by row and dropped
    (:class:`_Sums`), so no run holds every tensor of a whole batch. The sums are the same bits as
    summing whole batches. While a slice is summed, onnxruntime runs the next one on a helper thread
    (:func:`~workbench.core.runtime.run_ahead.run_ahead`), so two slices are held at once: the float run
    and the sums, about half each of this function's time on ppocrv4_rec, use both cores. A rounded
    tensor on an integer grid of at most 16 bits is summed a slice at once through its grid's table
    (:class:`_Table`), whose float64 sums are exact, so the same bits too.

    The sums are not made inside onnxruntime: one session with, per tensor, Cast to double -> ReduceSum
    over the rows and, per grid, QuantizeLinear -> DequantizeLinear -> Cast -> ReduceSum as outputs, run
    a whole batch at a time, gave the same bits (all 111 means of ppocrv4_rec's recipe choice) but took
    3.5 s of CPU where this function takes 1.7-2.1 s (its float run alone 1.1-1.2 s); each operator makes
    a full-size tensor, where the compiled loops read a slice once. Summing in float32 instead of double
    there: 3.45 s, and other bits.
    """
    rounding, more = rounding or {}, more or {}
    grids = {t: ([((t, "rounded"), rounding[t])] if t in rounding else []) + [(grid_key(t, qp), qp) for qp in more.get(t, ())]
             for t in tensors}
    tables = {key: _Table.of(qp) for pairs in grids.values() for key, qp in pairs}
    sess = make_session(add_outputs(float_proto, tensors), arena=False, spinning=False)  # summed between runs
    sums = _Sums()
    step = [0]  # rows per run, once the first row has been run alone (read as the slices are drawn)

    def slices() -> Iterator[tuple[dict[str, np.ndarray], bool]]:
        """Each run's feed and whether it ends its batch."""
        for feed in map(_finite_rows, batches):
            n, start = _rows(feed), 0
            if n == 0:  # every row of the batch holds NaN / Inf
                continue
            while True:
                stop = min(n, start + (step[0] or 1)) if n > 1 else n
                yield ({k: v[start:stop] for k, v in feed.items()} if n > 1 else feed), stop >= n
                start = stop
                if start >= n:
                    break

    for (_, last), outs in run_ahead(lambda item: sess.run(tensors, item[0]), slices()):
        if not step[0]:  # the first row: whether the compiled loops are worth loading for this job (KERNEL_MIN_ROW_VALUES)
            sums.may_load = "llvmlite.binding" in sys.modules or KERNEL_MIN_ROW_VALUES <= sum(
                np.size(a) * (1 + len(grids[t])) for t, a in zip(tensors, outs, strict=True))
            step[0] = max(1, RUN_BYTES // max(1, sum(np.asarray(a).nbytes for a in outs)))
        for t, a in zip(tensors, outs, strict=True):
            sums.add(t, np.asarray(a))
            for key, qp in grids[t]:
                if tables[key] is None or not sums.add_exact(key, np.asarray(a), tables[key]):
                    sums.add(key, _rounded(a, qp))
        outs = a = None  # this slice's tensors go before the run after next
        if last:
            sums.end_batch()
    return sums.means()


def _rounded(a, qp: QParams) -> np.ndarray:
    """``a`` as float32, quantized and dequantized on ``qp``."""
    return np.asarray(dequantize(quantize(np.asarray(a, np.float32), qp), qp))


class _Table:
    """One per-tensor integer grid of at most 16 bits whose rounded values sum exactly in float64.

    ``values``: DequantizeLinear's float32 value of each integer of the grid's type (float64, index
    ``q - qmin``). Each is an integer multiple of one power of two (the float32 spacing at the smallest
    nonzero value's magnitude; checked), so float64 sums of up to ``rows`` of them never round: the same
    bits in any order. :meth:`sum_rows` therefore rounds a slice in place (QuantizeLinear's then
    DequantizeLinear's float32 arithmetic, as :func:`_rounded`) and sums its rows at once, without the
    integer array and the float64 row by row adds of :class:`_Sums` ``add``: about half the time (a
    (1, 64, 12, 180) row: 0.28 instead of 0.5 ms a grid; ppocrv4_rec's recipe choice rounds 38 Conv inputs
    on 73 grids over 48 rows).
    """

    def __init__(self, qp: QParams, values: np.ndarray, rows: int) -> None:
        qt = qp.qt
        self.scale = np.asarray(qp.scale, np.float32)
        self.zero_point = np.asarray(qp.zero_point).astype(np.float32)
        self.qmin, self.qmax = qt.qmin, qt.qmax
        self.values, self.rows = values, rows
        # the saturation bounds and NaN's value less the zero point, for the compiled loop (:func:`_kernels`)
        self.bounds = tuple(np.float32(v) - self.zero_point.reshape(()) for v in (self.qmin, self.qmax, self.qmin))

    @classmethod
    def of(cls, qp: QParams) -> _Table | None:
        """The table of ``qp``; None when it is not a per-tensor integer grid of at most 16 bits or its
        values' sums could round."""
        qt = qp.qt
        if qt.is_float or np.ndim(qp.scale) or np.ndim(qp.zero_point) or qt.qmax - qt.qmin > 65535:
            return None
        values = np.asarray(dequantize(np.arange(qt.qmin, qt.qmax + 1).astype(qt.storage), qp), np.float64)
        nonzero = np.abs(values[values != 0])
        if not nonzero.size or not np.all(np.isfinite(nonzero)):
            return None
        unit = np.ldexp(1.0, int(np.frexp(nonzero.min())[1]) - 24)
        multiples = values / unit
        if not np.array_equal(multiples, np.rint(multiples)):
            return None
        return cls(qp, values, int(2.0 ** 53 // np.abs(multiples).max()))

    def sum_rows(self, a: np.ndarray) -> np.ndarray:
        """Sum over axis 0 (keepdims; float64, or the float32 row itself when there is one) of ``a`` quantized and dequantized on the grid: float32
        division, round half to even, zero point, saturation, NaN to qmin (as
        :func:`~workbench.core.formats.numerics.quantize`), then ``(q - zero point) * scale`` in float32 (as
        :func:`~workbench.core.formats.numerics.dequantize`; ``q - zero point`` is an integer float32 holds)."""
        y = np.asarray(a, np.float32) / self.scale
        np.rint(y, out=y)
        y += self.zero_point
        np.clip(y, self.qmin, self.qmax, out=y)
        nan = np.isnan(y)
        if nan.any():
            y[nan] = self.qmin
        y -= self.zero_point
        y *= self.scale
        return y if y.shape[0] == 1 else y.sum(axis=0, dtype=np.float64, keepdims=True)


class InputMeans:
    """Conv input means of one float model over one set of calibration rows, kept between the bias
    corrections of several plans of it (:func:`bias_shifts` ``means=``): the recipe choice corrects every
    variant and every promoted group it scores (about a dozen on ppocrv4_rec), a latency fallback's trials
    write the job again, and each ran the float model over every row. Here ``E[x]`` is kept per tensor and
    ``E[fq(x)]`` per tensor and grid (dtype, scale, zero point), so a call runs the float model only for
    the tensors whose mean or grid it has not seen: the choice's variants share most grids (``mse`` and
    ``compute+mse`` the same observers; a unit kept float leaves the others' grids as they were).

    Grids a caller expects later calls to ask for (:meth:`expect`: the recipe choice's other variants, whose
    ranges are known before the first is written) are rounded in the run a call makes anyway for their
    tensor, so those calls run nothing: on ppocrv4_rec the choice ran the float model over every row twice
    (the preset's MinMax grids, then the MSE variants'), 7.2 of its 19.4 s under a profiler, and now once.

    A mean is the one of the run that first computed it; onnxruntime may fuse an instrumented model
    differently when other tensors are fetched beside one, which can move a later run's values by an ulp.
    Given another float model (a SmoothQuant copy), the kept means and expected grids are dropped. The
    rows are the caller's to keep the same (one object per data source and sample count).
    """

    def __init__(self) -> None:
        self._proto: onnx.ModelProto | None = None
        self._means: dict = {}
        self._shifts: dict = {}
        self._expected: dict[str, dict[tuple, QParams]] = {}

    def _model(self, float_proto: onnx.ModelProto) -> None:
        """Keep what was kept only while ``float_proto`` is the model of the last call."""
        if self._proto is not float_proto:
            self._proto, self._means, self._shifts, self._expected = float_proto, {}, {}, {}

    def expect(self, float_proto: onnx.ModelProto, grids: dict[str, list[QParams]]) -> None:
        """Grids (tensor -> per-tensor qparams, as :func:`input_qparams` reads them from a written model) that
        later :meth:`get` calls will likely ask for: the next run of the float model that fetches one of these
        tensors also rounds it on them. It fetches no other tensor for them, so which tensors each run fetches,
        and so its values, stay as without; a grid no call asks for costs its rounding only."""
        self._model(float_proto)
        for t, qps in grids.items():
            self._expected.setdefault(t, {}).update({grid_key(t, qp): qp for qp in qps})

    def shifts(self, terms: list[tuple[tuple, Callable[[], tuple]]]) -> list[np.ndarray]:
        """Each term's Conv output shift (:func:`conv_output_shifts` of ``make()``, ``(node, dw, mean_x)``), kept
        under its key: the Conv, its quantized weight's bytes and its input mean's key, all of this model
        (:func:`bias_shifts`). Most repeat between the recipe choice's variants (the weights' grids do not
        change), and the missing ones are computed together, in one onnxruntime session: one session per
        term cost 197 session builds, 1.4 of 23 s under a profiler, in nudenet_320n's choice. Computing the
        terms of grids :meth:`expect` named ahead, in the first call's session (nudenet_320n's 4 sessions of
        126, 62, 8 and 1 terms made one of 202), took the same CPU (0.24-0.31 s against 0.26 s): each Conv's
        run over its full-size mean input, not the session build, is the cost."""
        todo = {key: make for key, make in terms if key not in self._shifts}
        if todo:
            self._shifts.update(zip(todo, conv_output_shifts([make() for make in todo.values()]), strict=True))
        return [self._shifts[key] for key, _ in terms]

    def get(self, float_proto: onnx.ModelProto, tensors: list[str], batches: Iterable[dict[str, np.ndarray]],
            rounding: dict[str, QParams]) -> dict:
        """What :func:`input_means` returns for these arguments; ``batches`` is read only when a tensor or
        grid is missing."""
        self._model(float_proto)
        grid = {t: grid_key(t, qp) for t, qp in rounding.items()}
        missing = [t for t in tensors if t not in self._means or (t in grid and grid[t] not in self._means)]
        if missing:
            more = {t: [qp for k, qp in self._expected.get(t, {}).items() if k not in self._means and k != grid.get(t)]
                    for t in missing}
            got = input_means(float_proto, missing, batches, {t: rounding[t] for t in missing if t in rounding},
                              more={t: qps for t, qps in more.items() if qps})
            for t in missing:
                if t in got:
                    self._means.setdefault(t, got[t])
                if (t, "rounded") in got:
                    self._means.setdefault(grid[t], got[(t, "rounded")])
                for qp in more[t]:
                    self._means.setdefault(grid_key(t, qp), got[grid_key(t, qp)])
        out = {t: self._means[t] for t in tensors if t in self._means}
        out.update({(t, "rounded"): self._means[k] for t, k in grid.items() if t in out and k in self._means})
        return out


def grid_key(tensor: str, qp: QParams) -> tuple:
    """A per-tensor grid as a dict key: the tensor, its dtype, and its scale's and zero point's bytes."""
    return (tensor, "rounded", qp.qtype, np.asarray(qp.scale).tobytes(), np.asarray(qp.zero_point).tobytes())


#: The compiled loops of :class:`_Sums` (:mod:`workbench.core.transforms._sums_jit`): None = not loaded yet,
#: False = numpy only (no usable llvmlite, ``WORKBENCH_NO_NUMBA=1``, or tests comparing both paths).
KERNELS: ModuleType | bool | None = None
#: Smaller float32 slices are summed by numpy: a model whose Conv inputs are all this small never loads the loops
#: for them (same bits either way).
KERNEL_MIN_SIZE = 1 << 15
#: ... and :func:`input_means` loads them (llvmlite's import and their compile, 0.05-0.07 s of CPU; 0.03-0.04 s
#: when the observers' loops already imported llvmlite, which then always loads them) only when a row of its
#: tensors, each counted once plus once per grid, holds at least this many values (ppocrv4_rec: about 16 M).
#: Set when they were numba's (0.3-0.5 s to load; ppocr_mobile_v2_cls's choice took 10 % more CPU with it).
KERNEL_MIN_ROW_VALUES = 1 << 22


def _kernels(a: np.ndarray, may_load: bool = True) -> ModuleType | None:
    """The compiled loops for a C-contiguous float32 slice ``a`` of at least :data:`KERNEL_MIN_SIZE` values, else
    None (numpy). Loaded on first use when ``may_load``; an llvmlite that cannot be imported or compile leaves numpy
    (logged once); ``WORKBENCH_NO_NUMBA=1`` (the observers' switch too) keeps numpy.
    The loops add exactly what the numpy code adds (tests/test_bias_correction_means.py), several times faster:
    ppocrv4_rec's recipe choice rounds 38 Conv inputs of 21 MiB a row on 73 grids over 48 rows."""
    global KERNELS
    if a.dtype != np.float32 or a.size < KERNEL_MIN_SIZE or not a.flags.c_contiguous or KERNELS is False:
        return None
    if KERNELS is None:
        if not may_load:
            return None
        if os.environ.get("WORKBENCH_NO_NUMBA", "") not in ("", "0"):
            KERNELS = False
            return None
        try:
            k = importlib.import_module("workbench.core.transforms._sums_jit")
            x, part = np.zeros((1, 2), np.float32), np.zeros(2)
            k.add_rows(x, part)
            k.add_rounded(x, part, np.float32(1), np.float32(0), np.float32(1), np.float32(0))
            KERNELS = k
        except Exception as exc:  # noqa: BLE001 - ImportError, or a broken llvmlite install
            KERNELS = False
            log.warning("The compiled loops of bias correction are not usable (%s: %s); its means use numpy "
                        "(same values, slower). Reinstall llvmlite to restore them.",
                        type(exc).__name__, exc)
            return None
    return KERNELS


def _finite_rows(feed: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``feed`` without its rows (axis 0) that hold NaN / Inf in a float input: calibration leaves those values
    out of its ranges, and one such row made every mean downstream NaN (the corrected biases too, which the
    writer then refused as the model's). ``feed`` itself when every row is finite or it has no common rows."""
    n = _rows(feed)
    if n <= 0:
        return feed
    keep = np.ones(n, dtype=bool)
    for v in feed.values():
        if np.asarray(v).dtype.kind == "f" and not np.isfinite(v).all():
            keep &= np.isfinite(np.asarray(v).reshape(n, -1)).all(axis=1)
    return feed if keep.all() else {k: np.asarray(v)[keep] for k, v in feed.items()}


def _rows(feed: dict[str, np.ndarray]) -> int:
    """The rows of ``feed`` (axis 0, the same in every input); -1 when an input has no axis 0 or they differ."""
    rows = {np.shape(v)[0] if np.ndim(v) else -1 for v in feed.values()}
    return rows.pop() if len(rows) == 1 else -1


class _Sums:
    """Float64 sums over samples of each key's tensor, fed slice by slice (:meth:`add`) and closed batch by
    batch (:meth:`end_batch`). A batch's rows are added one by one from zero (as numpy sums a batch along
    axis 0) into the batch's own sum, which is then added to the total: the same bits as summing whole
    batches. A batch whose shape differs from the total's adds its rows' spatial means (axes 2..), and the
    total is reduced to its spatial mean first."""

    def __init__(self) -> None:
        #: whether the compiled loops may be imported for these sums (:func:`_kernels`); used when loaded anyway
        self.may_load = True
        self.sums: dict = {}
        self.counts: dict = {}
        self._batch: dict = {}  # key -> [this batch's sum, summed over spatial axes too, its rows so far]

    def _part(self, key, a: np.ndarray) -> list:
        if key not in self._batch:
            prev = self.sums.get(key)
            spatial = prev is not None and prev.shape != (1, *a.shape[1:])
            shape = (1, a.shape[1], *([1] * (a.ndim - 2))) if spatial else (1, *a.shape[1:])
            self._batch[key] = [np.zeros(shape, np.float64), spatial, 0]
        entry = self._batch[key]
        entry[2] += a.shape[0]
        self.counts[key] = self.counts.get(key, 0) + a.shape[0]
        return entry

    def add(self, key, a: np.ndarray) -> None:
        """Add the rows of ``a`` (one slice of the current batch)."""
        part, spatial, _ = self._part(key, a)
        k = _kernels(a, self.may_load)
        if k is not None and not spatial:  # the same adds, element by element, in one pass over the slice
            k.add_rows(a.reshape(a.shape[0], -1), part.reshape(-1))
            return
        axes = tuple(range(2, a.ndim))
        for i in range(a.shape[0]):
            row = a[i:i + 1]
            part += np.asarray(row, dtype=np.float64).mean(axis=axes, keepdims=True) if spatial else row

    def add_exact(self, key, a: np.ndarray, table: _Table) -> bool:
        """Add the rows of ``a`` rounded on ``table``'s grid, summed at once: the bits of :meth:`add` of the
        rounded rows, as the batch's sum so far and this one's are exact (the batch has at most
        ``table.rows`` rows so far and is not summed over spatial axes). False, adding nothing, otherwise."""
        entry = self._batch.get(key)
        prev = self.sums.get(key)
        rows = (entry[2] if entry is not None else 0) + a.shape[0]
        spatial = entry[1] if entry is not None else prev is not None and prev.shape != (1, *a.shape[1:])
        if spatial or rows > table.rows:
            return False
        part = self._part(key, a)[0]
        k = _kernels(a, self.may_load)
        if k is not None:  # the rounding and the exact adds in one pass over the slice
            k.add_rounded(a.reshape(a.shape[0], -1), part.reshape(-1), table.scale.reshape(()), *table.bounds)
        else:
            part += table.sum_rows(a)
        return True

    def end_batch(self) -> None:
        for key, (part, spatial, _) in self._batch.items():
            prev = self.sums.get(key)
            if prev is not None and spatial:
                prev = prev.mean(axis=tuple(range(2, part.ndim)), keepdims=True)
            self.sums[key] = part if prev is None else prev + part
        self._batch.clear()

    def means(self) -> dict:
        return {k: s / self.counts[k] for k, s in self.sums.items()}


def input_qparams(qproto: onnx.ModelProto, nodes: set[str] | None = None) -> dict[str, QParams]:
    """Node name -> the per-tensor qparams of the DequantizeLinear feeding its input 0 in ``qproto``
    (its activation grid), for nodes whose input 0 comes from one with initializer scale and zero point;
    ``nodes``: only these (:func:`bias_shifts` reads its Conv units' grids, not every node's)."""
    inits = {i.name: i for i in qproto.graph.initializer}
    producer = {n.output[0]: n for n in qproto.graph.node if n.op_type == "DequantizeLinear"}
    out = {}
    for n in qproto.graph.node:
        if nodes is not None and n.name not in nodes:
            continue
        dq = producer.get(n.input[0]) if n.input else None
        if dq is None or dq.op_type != "DequantizeLinear" or dq.input[1] not in inits:
            continue
        if len(dq.input) < 3 or dq.input[2] not in inits:
            continue
        scale = numpy_helper.to_array(inits[dq.input[1]]).astype(np.float32)
        zp = numpy_helper.to_array(inits[dq.input[2]])
        if scale.ndim or zp.dtype.kind not in "iu":
            continue
        out[n.name] = QParams(scale, zp, str(zp.dtype), None, None)
    return out


def expected_grids(plan, observers: dict, own: bool = False) -> dict[str, list[QParams]]:
    """Conv input tensor -> ``[grid]``: the per-tensor grid a QDQ model of ``plan`` whose ranges are
    ``observers`` (tensor -> observer) puts in front of each Conv :func:`bias_shifts` corrects, in the form
    :func:`input_qparams` reads it back (float32 scale, zero point in its storage dtype); for
    :meth:`InputMeans.expect`, before that model is written. A tensor whose grid cannot be told so (no
    Q/DQ in the plan, no observer, per-channel, a range that gives no qparams) is left out.

    ``own``: only the Conv inputs ``plan`` aliases to another tensor's grid (a Split output), each on its
    own observer: the grid it gets in a plan of the same model where that alias ends (the recipe choice's
    step 6 keeps the unit that shares it float)."""
    out = {}
    for u in correctable_units(plan):
        t = u.inputs[0]
        if own:
            obs = observers.get(t) if plan.grid_of(t) != t else None
        else:
            obs = observers.get(plan.grid_of(t)) if t in plan.activations or t in plan.aliases else None
        try:
            qp = obs.qparams() if obs is not None else None
        except WorkbenchError:
            continue
        if qp is None or np.ndim(qp.scale) or np.ndim(qp.zero_point):
            continue
        zp = np.asarray(qp.zero_point).astype(get_qtype(qp.qtype).storage)
        if zp.dtype.kind in "iu":
            out[t] = [QParams(np.asarray(qp.scale, np.float32), zp, str(zp.dtype), None, None)]
    return out


def conv_output_shift(node: onnx.NodeProto, dw: np.ndarray, mean_x: np.ndarray) -> np.ndarray:
    """Expected output shift ``E[y_q - y]`` per output channel of Conv ``node``, float64 ``(Cout,)``.

    By linearity ``E[conv(x, W_q) - conv(x, W)] = conv(E[x], dW)``; the Conv runs in onnxruntime with
    ``node``'s attributes (pads, strides, dilations, group), so zero padding at the borders counts.
    ``dw``: ``(Cout, Cin/group, *kernel)``; ``mean_x``: ``(1, Cin, *spatial)``.
    """
    return conv_output_shifts([(node, dw, mean_x)])[0]


def conv_output_shifts(terms: list[tuple[onnx.NodeProto, np.ndarray, np.ndarray]]) -> list[np.ndarray]:
    """:func:`conv_output_shift` of each ``(node, dw, mean_x)``, the Convs side by side in one onnxruntime
    session (one session build instead of one per term; each Conv is the same kernel on the same values, so
    the same bits as alone).

    The session keeps onnxruntime's default optimisation level: its NCHWc layout rewrite is most of a build
    (nudenet_320n's first call of its recipe choice, 126 Convs: 0.026-0.063 s of CPU, run 0.044-0.069 s;
    ORT_ENABLE_EXTENDED 0.014-0.025 s, BASIC and DISABLE_ALL alike, 3 builds each), but without it the Convs
    run on other kernels and give other bits, so other biases written. ``session.disable_prepacking`` gives
    the same bits in the same CPU (build 0.025-0.051 s, run 0.052-0.085 s)."""
    if not terms:
        return []
    convs, inputs, outputs, inits = [], [], [], []
    for i, (node, dw, _) in enumerate(terms):
        conv = helper.make_node("Conv", [f"x{i}", f"w{i}"], [f"y{i}"], name=f"shift{i}")
        conv.attribute.extend(node.attribute)
        convs.append(conv)
        inputs.append(helper.make_tensor_value_info(f"x{i}", TensorProto.FLOAT, None))
        outputs.append(helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, None))
        inits.append(numpy_helper.from_array(dw.astype(np.float32), f"w{i}"))
    proto = helper.make_model(helper.make_graph(convs, "bias_shift", inputs, outputs, inits),
                              opset_imports=[helper.make_opsetid("", 13)])
    ys = make_session(proto, spinning=False).run(None, {f"x{i}": m.astype(np.float32) for i, (_, _, m) in enumerate(terms)})
    out = []
    for y in ys:
        y = y.astype(np.float64)
        out.append(y.reshape(y.shape[0], y.shape[1], -1).mean(axis=(0, 2)))
    return out


def bias_shifts(model, plan, quant_proto: onnx.ModelProto, batches,
                means: InputMeans | None = None) -> dict[str, np.ndarray]:
    """Bias initializer name -> expected output shift of its Conv from its weight's and its input's
    rounding (module docstring; float64 ``(Cout,)``). The input's grid is the one ``quant_proto`` writes in
    front of the Conv (per-tensor; a Conv without one gets the weight term only). ``means``: input means
    kept from earlier calls on the same model and rows (:class:`InputMeans`; ``batches`` is then read only
    for what it lacks)."""
    units = correctable_units(plan)
    wq = quantized_weights(quant_proto, {u.node for u in units}) if units else {}
    units = [u for u in units if u.node in wq]
    if not units:
        return {}
    grids = input_qparams(quant_proto, {u.node for u in units})
    rounding = {u.inputs[0]: grids[u.node] for u in units if u.node in grids}
    tensors = sorted({u.inputs[0] for u in units})
    kept = means if means is not None else InputMeans()
    got = kept.get(model.proto, tensors, batches, rounding)
    terms: dict[str, list] = {}  # bias -> its terms: the weight's rounding, then the input's
    for u in units:
        w = model.initializer(u.weight)  # in float64 only for a term not kept from an earlier call
        mean_x = got.get(u.inputs[0])
        if mean_x is None or wq[u.node].shape != w.shape:
            continue
        node, q = model.node(u.node), wq[u.node]
        key = (u.node, q.key)
        terms[u.bias] = [((*key, u.inputs[0]),
                          lambda n=node, q=q, w=w, m=mean_x: (n, q.value() - w.astype(np.float64), m))]
        rounded = got.get((u.inputs[0], "rounded"))
        if u.node in grids and rounded is not None and rounded.shape == mean_x.shape:
            grid = grid_key(u.inputs[0], grids[u.node])
            # the difference only for a term not kept from an earlier call, like the weight's float64
            terms[u.bias].append(((*key, grid), lambda n=node, q=q, r=rounded, m=mean_x: (n, q.value(), r - m)))
    values = iter(kept.shifts([t for ts in terms.values() for t in ts]))
    shifts = {}
    for bias, ts in terms.items():
        shifts[bias] = next(values)
        if len(ts) > 1:
            shifts[bias] = shifts[bias] + next(values)
    return shifts


def corrected_proto(proto: onnx.ModelProto, shifts: dict[str, np.ndarray]) -> onnx.ModelProto:
    """A copy of ``proto`` with ``bias -= shift`` for every bias initializer in ``shifts``."""
    out = onnx.ModelProto()
    out.CopyFrom(proto)
    for init in out.graph.initializer:
        if init.name in shifts:
            b = numpy_helper.to_array(init)
            fixed = (b.astype(np.float64) - shifts[init.name]).astype(b.dtype)
            init.CopyFrom(numpy_helper.from_array(fixed, init.name))
    log.info("bias correction: %d Conv biases adjusted", len(shifts))
    return out
