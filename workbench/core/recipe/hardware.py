"""The CPU the recipe adapts to: whether onnxruntime's u8 x s8 kernels saturate here (no VNNI).

On x86 CPUs without VNNI, onnxruntime's u8 x s8 kernels use VPMADDUBSW, whose int16 pair sums
saturate for full 8-bit weights (255 * 127 * 2 > 32767); presets then store 7-bit weights.
"""

from __future__ import annotations

import functools
import platform

from workbench.core.io.cpu import cpu_description


@functools.lru_cache(maxsize=1)
def cpu_needs_reduce_range() -> bool:
    """True on x86-64 CPUs without AVX-VNNI / AVX512-VNNI / AMX (u8 x s8 pair sums saturate); False where the
    CPU's flags are unknown (no readable ``/proc/cpuinfo``: Windows, macOS), as before the flags were read
    through :func:`~workbench.core.io.cpu.cpu_description`."""
    if platform.machine().lower() not in ("x86_64", "amd64", "i686", "x86"):
        return False
    flags = cpu_description()[1]
    return bool(flags) and not ({"avx512_vnni", "avx_vnni", "amx_int8"} & flags)


