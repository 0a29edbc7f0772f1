"""This machine's CPU as the operating system describes it: its model name and feature flags.

Linux lists both in ``/proc/cpuinfo`` (the ``model name`` and ``flags`` lines of the first processor; ARM
kernels name them ``Hardware`` / ``CPU part`` and ``Features``, POWER ``cpu``, RISC-V ``uarch`` and ``isa``). Elsewhere the model name is
``platform.processor()`` and the flags are unknown (empty). ``platform.processor()`` alone is not a CPU
model on Linux: it is ``''`` (or ``uname -p``'s ``unknown``) on common distributions, so an AMD EPYC and an
Intel Xeon read alike there.
"""

from __future__ import annotations

import functools
import platform
from pathlib import Path

#: The file Linux describes its processors in.
CPUINFO = Path("/proc/cpuinfo")
_NAME_KEYS = ("model name", "hardware", "cpu model", "processor", "cpu part", "cpu", "uarch")
_FLAG_KEYS = ("flags", "features", "isa")


def parse_cpuinfo(text: str) -> tuple[str, frozenset[str]]:
    """The first processor's model name and feature flags in ``/proc/cpuinfo``'s text.

    Returns ``(name, flags)``: the value of the first ``model name`` line (else ``Hardware``, ``cpu model``, a
    ``Processor`` line that is not a number, ARM64's ``CPU part``: ``0xd08`` for a Cortex-A72, POWER's ``cpu``,
    RISC-V's ``uarch``), and the words of the first ``flags`` (or ``Features``, RISC-V's ``isa``) line;
    ``""`` / empty when absent."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        key = key.strip().lower()
        if sep and key not in fields and (key in _NAME_KEYS or key in _FLAG_KEYS):
            if key == "processor" and value.strip().isdigit():
                continue  # x86's "processor : 0" is an index, not a name
            fields[key] = value.strip()
    name = next((fields[k] for k in _NAME_KEYS if fields.get(k)), "")
    flags = next((fields[k] for k in _FLAG_KEYS if fields.get(k)), "")
    return name, frozenset(flags.split())


@functools.lru_cache(maxsize=1)
def cpu_description() -> tuple[str, frozenset[str]]:
    """``(model name, feature flags)`` of this machine's CPU (:func:`parse_cpuinfo` of :data:`CPUINFO`);
    ``(platform.processor(), frozenset())`` where that file cannot be read (macOS, Windows)."""
    try:
        name, flags = parse_cpuinfo(CPUINFO.read_text(errors="replace"))
    except OSError:
        name, flags = "", frozenset()
    return (name or platform.processor(), flags)


def cpu_identity() -> str:
    """One line that tells this machine's CPU apart for caches of measurements: architecture, model name and
    the sorted feature flags (two CPUs that share a model name but not, say, AVX512-VNNI differ)."""
    name, flags = cpu_description()
    return f"{platform.machine()}|{name}|{' '.join(sorted(flags))}"
