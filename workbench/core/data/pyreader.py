"""A user's Python file as data source (explicit opt-in: it runs code).

The file defines ``samples()`` yielding ``{input name: array}`` dicts, one model feed each. It
may define ``num_samples()`` (or an int ``NUM_SAMPLES``) so progress can show a total.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

from workbench.core.data.base import DataSource
from workbench.core.data.validate import check_feed, one_line
from workbench.core.errors import DataError
from workbench.core.model.load import PreparedModel


class PythonReaderSource(DataSource):
    """Samples yielded by ``samples()`` of a user Python file."""

    kind = "python"

    def __init__(self, model: PreparedModel, path: str | Path, allow_code: bool = False) -> None:
        super().__init__(model)
        self.path = Path(path)
        if allow_code is not True:
            raise DataError(f"{self.path}: a Python data reader runs code from this file, which is off by default.",
                            hint="If you trust the file, enable it with \"allow_code\": true in the data spec "
                                 "(CLI: --allow-code).")
        if not self.path.is_file():
            raise DataError(f"{self.path}: no such Python file.", hint="Check the path.")
        self.module = self._import()
        if not callable(getattr(self.module, "samples", None)):
            raise DataError(f"{self.path} defines no samples() function.",
                            hint="Add def samples(): yield {input_name: numpy_array}.")

    def _import(self) -> ModuleType:
        name = f"workbench_user_reader_{abs(hash(str(self.path.resolve())))}"
        spec = importlib.util.spec_from_file_location(name, self.path)
        if spec is None or spec.loader is None:
            raise DataError(f"{self.path}: cannot be imported as Python.", hint="Use a .py file.")
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except Exception as exc:  # noqa: BLE001 - the user's code may raise anything
            raise DataError(f"{self.path}: importing the reader failed ({exc.__class__.__name__}: {one_line(exc)}).",
                            hint="Fix the error in the reader file.") from None
        sys.modules.pop(name, None)
        return module

    def num_samples(self) -> int | None:
        fn = getattr(self.module, "num_samples", None)
        value = fn() if callable(fn) else getattr(self.module, "NUM_SAMPLES", None)
        return int(value) if isinstance(value, int) and value >= 0 else None

    def _iter_samples(self) -> Iterator[dict]:
        try:
            it = iter(self.module.samples())
        except Exception as exc:  # noqa: BLE001
            raise DataError(f"{self.path}: samples() raised {exc.__class__.__name__}: {one_line(exc)}.",
                            hint="Fix the reader.") from None
        i = 0
        while True:
            try:
                feed = next(it)
            except StopIteration:
                break
            except Exception as exc:  # noqa: BLE001
                raise DataError(f"{self.path}: samples() raised {exc.__class__.__name__} at sample {i}: {one_line(exc)}.",
                                hint="Fix the reader.") from None
            yield check_feed(feed, self.inputs, f"{self.path} (sample {i})", self.notes)
            i += 1
        if i == 0:
            raise DataError(f"{self.path}: samples() yielded zero samples.", hint="Yield at least one feed dict.")

    def to_json(self) -> dict:
        return {"kind": "python", "path": str(self.path), "allow_code": True}
