"""Compile LLVM IR text for this CPU with llvmlite: the one compile step of the core's compiled loops.

Used by the observers' loops (:mod:`workbench.core.calibration.observers._llvm`) and bias correction's sums
(:mod:`workbench.core.transforms._sums_jit`), each imported on first use, so ``import workbench.core`` does not
import llvmlite. The IR is optimised at ``-O3`` (LLVM's new pass manager) for the host CPU and its features and
compiled with MCJIT; no fast-math flags are added, so the loops keep the arithmetic their IR states.

The machine code is kept on disk (``$WORKBENCH_CACHE_DIR/llvm``, else ``<platformdirs user cache>/workbench/llvm``),
one file per IR text, host CPU, features and llvmlite / LLVM version: a later process loads it instead of
optimising and compiling again (the observers' two float32 loops: 0.055-0.07 s of CPU -> about 0.003 s). A file
that does not hold the bytes it was written with (its SHA-256 is stored with them) is compiled again; a cache that
cannot be written (read-only) only costs the compile.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

import llvmlite
import llvmlite.binding as llvm

from workbench.core import cache_dirs

#: the first bytes of a cached object file, then the SHA-256 of the machine code, then the code
_MAGIC = b"workbench-llvm-object-1\n"


def compile_ir(parts: list[str]) -> object:
    """One MCJIT engine holding the functions of ``parts`` (LLVM IR text; functions use attribute group
    ``#0``, which this defines as ``nounwind`` for the host CPU and its features).

    Each part may declare the intrinsics it calls; a declaration repeated across parts is kept once. Keep the
    returned engine alive while its functions are used (``engine.get_function_address(name)`` gives them).

    Raises
    ------
    RuntimeError
        llvmlite could not parse or verify the IR (a bug in the IR text, or an llvmlite too old for it).
    """
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    cpu, features = llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()
    tm = llvm.Target.from_default_triple().create_target_machine(cpu=cpu, features=features, opt=3,
                                                                 codemodel="jitdefault")
    text = "".join([*parts, f'attributes #0 = {{ nounwind "target-cpu"="{cpu}" "target-features"="{features}" }}\n'])
    seen: set[str] = set()
    lines = []
    for line in text.splitlines():
        if line.startswith("declare "):
            if line in seen:
                continue
            seen.add(line)
        lines.append(line)
    ir = "\n".join(lines)
    mod = llvm.parse_assembly(ir)
    mod.triple, mod.data_layout = tm.triple, str(tm.target_data)
    mod.verify()
    path = _cache_file(ir, tm.triple)
    code = _read_object(path)
    if code is None:  # optimised only when it is compiled here
        pb = llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(speed_level=3))
        pb.getModulePassManager().run(mod, pb)
    engine = llvm.create_mcjit_compiler(mod, tm)
    if code is None:
        engine.set_object_cache(notify_func=lambda _mod, buf: _write_object(path, buf))
    else:
        engine.set_object_cache(getbuffer_func=lambda _mod: code)
    engine.finalize_object()
    return engine


def cache_dir() -> Path:
    """``$WORKBENCH_CACHE_DIR/llvm`` when set, else ``<platformdirs user cache>/workbench/llvm``."""
    return cache_dirs.cache_dir("llvm")


def _cache_file(ir: str, triple: str) -> Path:
    """The cache file of IR text ``ir`` (which names the host CPU and its features) for ``triple``."""
    key = "\n".join([llvmlite.__version__, ".".join(map(str, llvm.llvm_version_info)), triple, ir])
    return cache_dir() / f"{hashlib.sha256(key.encode()).hexdigest()}.o"


def _read_object(path: Path) -> bytes | None:
    """The machine code kept at ``path``, or None (no file, unreadable, or not the bytes written)."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    head, digest, code = data[:len(_MAGIC)], data[len(_MAGIC):len(_MAGIC) + 32], data[len(_MAGIC) + 32:]
    if head != _MAGIC or not code or hashlib.sha256(code).digest() != digest:
        return None
    return code


def _write_object(path: Path, code: bytes) -> None:
    """Keep ``code`` at ``path`` (a temporary file renamed over it: readers see the whole file or none);
    a folder that cannot be written is left as it is."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".llvm-", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(_MAGIC + hashlib.sha256(code).digest() + bytes(code))
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError:
        pass
