"""Steps of model preparation used by :mod:`workbench.core.model` (one job per module).

- :mod:`.graphs` walks the main graph and every If/Loop/Scan body.
- :mod:`.reader` reads a model file and its external data safely.
- :mod:`.naming` makes node and tensor names unique and reports the renames.
- :mod:`.weights` lifts Constant nodes to initializers and drops initializers from graph inputs.
- :mod:`.quantized` recognises already-quantized operators.
- :mod:`.opset` upgrades the default-domain opset.
- :mod:`.shapes` runs shape inference on a weight-less skeleton.
"""
