"""Tensors of some samples kept from a calibration pass's runs, so a caller does not run the float model on
them again (the recipe choice's float outputs of its held-out rows).

The instrumented session outputs the kept tensors beside the observed ones when they are outputs of it
already (graph outputs, or observed tensors): asking for them changes neither its graph nor its values.
A batch of several samples is cut along axis 0 only when it holds one row per sample and each kept
tensor's axis 0 is the model's batch axis (the same symbolic dimension as every input's axis 0); otherwise
the samples of that batch are not kept and :attr:`KeptOutputs.complete` says so.
"""

from __future__ import annotations

import numpy as np
import onnx


class KeptOutputs:
    """``names`` (tensors of the float model) of samples ``first .. end - 1`` of a calibration pass.

    ``rows``: sample index -> its tensors, in the order of ``names``, as :func:`~workbench.core.calibration.
    calibrate.calibrate_split` fills it; :attr:`complete`: every sample was kept; :meth:`in_order`: the
    tensors of each sample, ``first`` first."""

    def __init__(self, names: list[str], first: int, end: int) -> None:
        self.names, self.first, self.end = list(names), first, end
        self.rows: dict[int, list[np.ndarray]] = {}
        #: False when the session cannot output a name, or a batch could not be cut by sample
        self.usable = True
        self._batched: bool | None = None

    @property
    def complete(self) -> bool:
        return self.usable and all(i in self.rows for i in range(self.first, self.end))

    def in_order(self) -> list[list[np.ndarray]]:
        return [self.rows[i] for i in range(self.first, self.end)]

    def wants(self, idx: list[int]) -> bool:
        """Whether a batch of samples ``idx`` holds samples to keep (no batch holds samples on both sides of
        ``first``; one past ``end`` is not kept)."""
        return self.usable and any(self.first <= i < self.end for i in idx)

    def check(self, proto: onnx.ModelProto, outputs: set[str]) -> None:
        """Give up (:attr:`usable` False) unless every name is one of ``outputs`` (the session's); note
        whether each name's axis 0 is the batch axis of ``proto``'s inputs."""
        if not set(self.names) <= outputs:
            self.usable = False
            return
        dims = {
            vi.name: vi.type.tensor_type.shape.dim
            for vi in [*proto.graph.input, *proto.graph.output, *proto.graph.value_info]
        }
        inits = {i.name for i in proto.graph.initializer}
        batch = {
            d[0].dim_param if len(d := dims[vi.name]) else ""
            for vi in proto.graph.input
            if vi.name not in inits
        }
        axis0 = {d[0].dim_param if len(d := dims.get(n, ())) else "" for n in self.names}
        self._batched = len(batch) == 1 and "" not in batch and axis0 == batch

    def take(self, idx: list[int], feed: dict[str, np.ndarray], outs: list[np.ndarray]) -> None:
        """Keep ``outs`` (one array per name) of the batch of samples ``idx`` run on ``feed``."""
        if len(idx) == 1:
            self.rows[idx[0]] = outs
            return
        rows = {np.shape(v)[0] if np.ndim(v) else -1 for v in feed.values()}
        if (
            not self._batched
            or rows != {len(idx)}
            or any(np.ndim(a) == 0 or a.shape[0] != len(idx) for a in outs)
        ):
            self.usable = False
            return
        for k, i in enumerate(idx):
            self.rows[i] = [a[k : k + 1] for a in outs]
