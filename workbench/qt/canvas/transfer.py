"""Move a laid-out graph from the layout process to the GUI in small pieces.

``pickle.loads`` of a whole :class:`~workbench.qt.canvas.scene_data.SceneData` of 20,000 nodes is
one C call of 40-150 ms (hundreds of thousands of lists, tuples and strings), during which the GUI
thread can do nothing else. :func:`split` therefore pickles a tree of dataclasses field by field and
long lists and dicts in slices of at most :data:`CHUNK` elements; :class:`Assembler` unpickles one
piece per call, so the GUI can interleave its events between pieces (a millisecond or two each), and
rebuilds the same tree at the end (dataclass instances are re-created without running
``__init__``, so nothing is recomputed).

``QPainterPath`` is not picklable by PySide6; it travels as the bytes of its ``QDataStream`` form
(one C++ call each way). Objects reachable by two paths of the tree arrive as two copies; the
scene data has none (``SceneData.hierarchy`` is a property of its ``plan``).
"""

from __future__ import annotations

import copyreg
import dataclasses
import pickle
from typing import Any

from PySide6.QtCore import QByteArray, QDataStream, QIODevice
from PySide6.QtGui import QPainterPath

#: Most elements of a list or dict pickled as one piece.
CHUNK = 500
#: Dataclasses nested deeper than this travel as one piece.
MAX_DEPTH = 4


def _path_to_bytes(path: QPainterPath) -> bytes:
    data = QByteArray()
    stream = QDataStream(data, QIODevice.OpenModeFlag.WriteOnly)
    stream << path
    return data.data()


def path_from_bytes(raw: bytes) -> QPainterPath:
    """The ``QPainterPath`` written by its ``QDataStream`` operator (the pickled form used here)."""
    path = QPainterPath()
    buffer = QByteArray(raw)  # the stream reads it in place: keep it alive until done
    stream = QDataStream(buffer)
    stream >> path
    return path


def _reduce_path(path: QPainterPath):
    return path_from_bytes, (_path_to_bytes(path),)


copyreg.pickle(QPainterPath, _reduce_path)


def split(obj: Any) -> list[bytes]:
    """Pickled pieces of ``obj`` (any picklable value; dataclasses, lists and dicts are cut up).

    The pieces are instructions for :class:`Assembler`, in order: ``("dc", path, cls, field
    names)`` opens a dataclass, ``("list", path)`` / ``("dict", path)`` an empty container,
    ``("extend", path, items)`` / ``("update", path, items)`` fill it, ``("value", path, v)`` sets a
    leaf. ``path`` is the tuple of field names from the root.
    """
    out: list[bytes] = []
    _split(obj, (), 0, out)
    return out


def _dump(piece: tuple) -> bytes:
    return pickle.dumps(piece, protocol=pickle.HIGHEST_PROTOCOL)


def _split(obj: Any, path: tuple, depth: int, out: list[bytes]) -> None:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type) and depth < MAX_DEPTH \
            and not hasattr(obj, "__slots__"):
        names = [f.name for f in dataclasses.fields(obj)]
        out.append(_dump(("dc", path, type(obj), names)))
        for name in names:
            _split(getattr(obj, name), (*path, name), depth + 1, out)
    elif type(obj) is list and len(obj) > CHUNK:
        out.append(_dump(("list", path)))
        for i in range(0, len(obj), CHUNK):
            out.append(_dump(("extend", path, obj[i:i + CHUNK])))
    elif type(obj) is dict and len(obj) > CHUNK:
        out.append(_dump(("dict", path)))
        items = list(obj.items())
        for i in range(0, len(items), CHUNK):
            out.append(_dump(("update", path, items[i:i + CHUNK])))
    else:
        out.append(_dump(("value", path, obj)))


class Assembler:
    """Rebuilds the object :func:`split` cut up: call :meth:`feed` with each piece in order,
    then :meth:`result`."""

    def __init__(self) -> None:
        self._values: dict[tuple, Any] = {}
        self._classes: dict[tuple, tuple[type, list[str]]] = {}

    def feed(self, piece: bytes) -> None:
        """Unpickle one piece (raises ``pickle.UnpicklingError`` on bytes that are not a piece)."""
        kind, path, *rest = pickle.loads(piece)
        if kind == "dc":
            self._classes[path] = (rest[0], rest[1])
        elif kind == "list":
            self._values[path] = []
        elif kind == "dict":
            self._values[path] = {}
        elif kind == "extend":
            self._values[path].extend(rest[0])
        elif kind == "update":
            self._values[path].update(rest[0])
        else:
            self._values[path] = rest[0]

    def result(self) -> Any:
        """The rebuilt object (dataclasses are made innermost first, bypassing ``__init__``)."""
        for path in sorted(self._classes, key=len, reverse=True):
            cls, names = self._classes[path]
            obj = cls.__new__(cls)
            for name in names:
                object.__setattr__(obj, name, self._values.pop((*path, name)))
            self._values[path] = obj
        return self._values[()]
