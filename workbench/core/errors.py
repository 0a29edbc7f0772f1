"""Error types of the core.

Every error a user can cause is a :class:`WorkbenchError` whose message names the file, node or
tensor involved and says what to do. The CLI prints ``str(err)`` on one line and exits 2; the app
shows it in a dialog.
"""

from __future__ import annotations

import re


class WorkbenchError(Exception):
    """Base class of all user-facing errors (bad input, unsupported model, cancelled job): ``message`` one line
    (what is wrong, naming the file / node / tensor), ``hint`` what to do, ``details`` the full text of a
    library's message it quotes a line of (the app's error dialog shows it below; the CLI does not print it)."""

    def __init__(self, message: str, *, hint: str | None = None, details: str = ""):
        self.message = message
        self.hint = hint
        self.details = details
        super().__init__(f"{message} {hint}" if hint else message)


_INFERENCE = re.compile(r"\[\w+\] Inference error\(s\): ")
_INFERENCE_NODE = re.compile(r"\(op_type:([^,]*), node name: (.*?)\): (?:\[\w+\] )?(.*)")
_UNSORTED = re.compile(r"Nodes in a graph must be topologically sorted, however input '(.*?)' of node: "
                       r"name: (.*?) OpType: (\S+) is not output of any previous nodes\.?")
_NODE_CONTEXT = re.compile(r"Bad node spec for node\. Name: (.*?) OpType: (\S+)")


def checker_line(text: str, limit: int = 240) -> str:
    """The first meaningful line of an ``onnx.checker`` / onnx shape inference message ``text`` (which may run
    over several lines: a node dumped inside it, one line per node that failed inference, a "==> Context:"
    paragraph), on one line of at most ``limit`` characters ending in a full stop, naming the node:

    - "[ShapeInferenceError] Inference error(s): (op_type:MatMul, node name: mm): [ShapeInferenceError]
      Incompatible dimensions ...\n(op_type:...)..." -> "node 'mm' (MatMul): Incompatible dimensions ...
      (and 1 more node)."
    - "Nodes in a graph must be topologically sorted, however input 'h' of node: \nname: r OpType: Relu\n is not
      output of any previous nodes." -> "node 'r' (Relu): its input 'h' is not the output of any node before it
      (...)."
    - "Unrecognized attribute: foo for operator Relu\n\n==> Context: Bad node spec for node. Name: r OpType:
      Relu" -> "node 'r' (Relu): Unrecognized attribute: foo for operator Relu."
    """
    text = text.strip()
    found = _INFERENCE.match(text)
    if found:
        errors = [line.strip() for line in text[found.end():].splitlines() if line.strip()]
        node = _INFERENCE_NODE.match(errors[0]) if errors else None
        line = errors[0] if errors else text
        if node:
            op, name, reason = node.groups()
            line = f"node '{name}' ({op}): {reason}" if name else f"a {op} node: {reason}"
        if len(errors) > 1:
            line = f"{line.rstrip('.')} (and {len(errors) - 1} more node{'s' if len(errors) > 2 else ''})"
    else:
        head, _, context = text.partition("==> Context:")
        line = " ".join(head.split())
        unsorted = _UNSORTED.fullmatch(line)
        node = _NODE_CONTEXT.search(context)
        if unsorted:
            tensor, name, op = unsorted.groups()
            line = (f"node '{name}' ({op}): its input '{tensor}' is not the output of any node before it "
                    "(the nodes must be in topological order, each input made before it is read)")
        elif node and not re.search(rf"(?<![\w.]){re.escape(node.group(1))}(?![\w.])", line):
            line = f"node '{node.group(1)}' ({node.group(2)}): {line}"
    return runtime_reason(line, limit)


def runtime_reason(exc: BaseException | str, limit: int = 400) -> str:
    """A library's message of ``exc`` (onnxruntime's) to quote in an error: on one line, at most ``limit``
    characters (cut between words, ending " ..."), else ending in a full stop so the hint after it reads as a
    sentence ("... must be within the inclusive range [-2,1]. Check ...")."""
    text = " ".join(str(exc).split())
    if len(text) > limit:
        return text[:limit].rsplit(" ", 1)[0] + " ..."
    return text.rstrip(".") + "."


class ModelError(WorkbenchError):
    """The model file cannot be read, is not ONNX, or cannot be prepared for quantization."""


class AlreadyQuantizedError(ModelError):
    """The model already contains quantized operators; quantizing again is refused."""


class DataError(WorkbenchError):
    """Calibration or evaluation data does not match the model (missing input, shape, dtype)."""


class RecipeError(WorkbenchError):
    """A recipe or quantization spec is invalid or names nodes that do not exist; ``node``: the
    node the error is about ("" when not one node's); ``field``: the recipe field the error is about when
    the message does not name the recipe's file (raised on a Recipe, not on its JSON text): a caller that
    read the recipe from a file names the file ("" otherwise); ``entry``: the entry of that field the error
    is about (the name an ``exclude`` entry gives: the CLI tells its --exclude names from the file's by it),
    "" when not one entry's. Callers decide on these fields, never on the message text."""

    def __init__(self, message: str, *, hint: str | None = None, node: str = "", details: str = "",
                 field: str = "", entry: str = ""):
        super().__init__(message, hint=hint, details=details)
        self.node = node
        self.field = field
        self.entry = entry


class CalibrationError(WorkbenchError):
    """Calibration failed (non-finite data, onnxruntime error on a sample)."""


class ExportError(WorkbenchError):
    """Writing a quantized model or project failed (target not writable, disk full)."""


class ProjectError(WorkbenchError):
    """A project file is malformed, from a newer schema, or its model moved or changed."""


class Cancelled(WorkbenchError):
    """A long job was cancelled by the user through its cancel token."""

    def __init__(self, message: str = "Cancelled by the user."):
        super().__init__(message)
