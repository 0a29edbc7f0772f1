"""Error types of the core.

Every error a user can cause is a :class:`WorkbenchError` whose message names the file, node or
tensor involved and says what to do. The CLI prints ``str(err)`` on one line and exits 2; the app
shows it in a dialog.
"""

from __future__ import annotations


class WorkbenchError(Exception):
    """Base class of all user-facing errors (bad input, unsupported model, cancelled job)."""

    def __init__(self, message: str, *, hint: str | None = None):
        self.message = message
        self.hint = hint
        super().__init__(f"{message} {hint}" if hint else message)


def runtime_reason(exc: BaseException, limit: int = 400) -> str:
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
    node the error is about ("" when not one node's)."""

    def __init__(self, message: str, *, hint: str | None = None, node: str = ""):
        super().__init__(message, hint=hint)
        self.node = node


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
