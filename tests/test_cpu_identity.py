"""The CPU a measurement was taken on (workbench.core.io.cpu): read from /proc/cpuinfo, part of the latency
cache's key, so a figure measured on one CPU is not reused on another."""

from __future__ import annotations

import numpy as np
import pytest

from workbench.core.io import cpu
from workbench.core.recipe import hardware
from workbench.core.runtime import latency

EPYC = """processor\t: 0
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC 7B13
flags\t\t: fpu sse2 avx2 avx512f avx512_vnni
bogomips\t: 4899.99

processor\t: 1
model name\t: AMD EPYC 7B13
flags\t\t: fpu sse2 avx2 avx512f avx512_vnni
"""
XEON = EPYC.replace("AuthenticAMD", "GenuineIntel").replace("AMD EPYC 7B13", "Intel(R) Xeon(R) Processor") \
    .replace("avx512_vnni", "avx512_vnni avx_vnni amx_bf16")
ARM = """processor\t: 0
BogoMIPS\t: 50.00
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 asimddp
CPU implementer\t: 0x41
"""


def test_parse_cpuinfo_reads_the_first_processor():
    assert cpu.parse_cpuinfo(EPYC) == ("AMD EPYC 7B13", frozenset({"fpu", "sse2", "avx2", "avx512f", "avx512_vnni"}))
    name, flags = cpu.parse_cpuinfo(XEON)
    assert name == "Intel(R) Xeon(R) Processor" and {"avx_vnni", "amx_bf16"} <= flags and len(flags) == 7
    name, flags = cpu.parse_cpuinfo(ARM)  # no model name line (the index "processor : 0" is not one)
    assert name == "" and flags == frozenset({"fp", "asimd", "evtstrm", "aes", "pmull", "sha1", "sha2", "crc32",
                                              "asimddp"})
    assert cpu.parse_cpuinfo("") == ("", frozenset())


@pytest.fixture
def cpuinfo_file(tmp_path, monkeypatch):
    """Point the module at a cpuinfo file of the test's own (the cached description cleared around it)."""
    path = tmp_path / "cpuinfo"
    monkeypatch.setattr(cpu, "CPUINFO", path)
    cpu.cpu_description.cache_clear()
    hardware.cpu_needs_reduce_range.cache_clear()
    yield path
    cpu.cpu_description.cache_clear()
    hardware.cpu_needs_reduce_range.cache_clear()


def _key() -> str:
    cpu.cpu_description.cache_clear()
    return latency.cache_key(b"float", b"quant", {"x": np.zeros((1, 4), np.float32)})


def test_latency_cache_key_tells_cpus_apart(cpuinfo_file):
    """The same pair of models and feed measured on an AMD EPYC and on an Intel Xeon are two cache entries;
    before, the key held platform.processor(), which is '' on Linux, and the Xeon reused the EPYC's figure."""
    cpuinfo_file.write_text(EPYC)
    epyc = _key()
    assert _key() == epyc  # the same CPU: the same key
    cpuinfo_file.write_text(XEON)
    assert _key() != epyc
    cpuinfo_file.write_text(EPYC.replace(" avx512_vnni", ""))  # same model name, other flags
    assert _key() != epyc


def test_reduce_range_reads_the_flags(cpuinfo_file, monkeypatch):
    monkeypatch.setattr(hardware.platform, "machine", lambda: "x86_64")
    cpuinfo_file.write_text(EPYC.replace(" avx512_vnni", ""))
    assert hardware.cpu_needs_reduce_range() is True
    hardware.cpu_needs_reduce_range.cache_clear()
    cpuinfo_file.write_text(XEON)
    cpu.cpu_description.cache_clear()
    assert hardware.cpu_needs_reduce_range() is False


def test_unreadable_cpuinfo_falls_back_to_platform(cpuinfo_file, monkeypatch):
    monkeypatch.setattr(cpu.platform, "processor", lambda: "i386")
    assert cpu.cpu_description() == ("i386", frozenset())  # the file does not exist
    assert "|i386|" in cpu.cpu_identity()


def test_reduce_range_off_where_the_flags_are_unknown(cpuinfo_file, monkeypatch):
    """An x86 machine without /proc/cpuinfo (Windows' AMD64, an Intel Mac) stores full 8-bit weights as before
    the flags were read through cpu_description; it read no flags as 'no VNNI' and turned reduce_range on."""
    monkeypatch.setattr(hardware.platform, "machine", lambda: "AMD64")
    assert cpu.cpu_description()[1] == frozenset()  # the file does not exist
    assert hardware.cpu_needs_reduce_range() is False


def test_arm_cores_with_the_same_features_differ_by_their_cpu_part(cpuinfo_file):
    """ARM64 kernels write no model name; a Cortex-A53 (part 0xd03) and a Cortex-A72 (0xd08) list the same Features,
    so the key read them alike (name '' for both) though the module's docstring names the CPU part."""
    a53 = ARM + "CPU architecture: 8\nCPU variant\t: 0x0\nCPU part\t: 0xd03\nCPU revision\t: 4\n"
    assert cpu.parse_cpuinfo(a53)[0] == "0xd03"
    cpuinfo_file.write_text(a53)
    first = _key()
    cpuinfo_file.write_text(a53.replace("0xd03", "0xd08"))
    assert _key() != first


POWER = """processor\t: 0
cpu\t\t: POWER9 (architected), altivec supported
clock\t\t: 2200.000000MHz
revision\t: 2.2 (pvr 004e 1202)
"""
RISCV = """processor\t: 0
hart\t\t: 1
isa\t\t: rv64imafdc
mmu\t\t: sv39
uarch\t\t: sifive,u74-mc
"""


def test_power_and_riscv_cpus_are_told_apart(cpuinfo_file):
    """POWER kernels name the CPU on a 'cpu' line and RISC-V ones on 'uarch' (flags: 'isa'), with no model name or
    flags line: a POWER8 and a POWER9, or two RISC-V cores, gave one latency cache key."""
    assert cpu.parse_cpuinfo(POWER) == ("POWER9 (architected), altivec supported", frozenset())
    assert cpu.parse_cpuinfo(RISCV) == ("sifive,u74-mc", frozenset({"rv64imafdc"}))
    cpuinfo_file.write_text(POWER)
    power9 = _key()
    cpuinfo_file.write_text(POWER.replace("POWER9", "POWER8"))
    assert _key() != power9
    cpuinfo_file.write_text(RISCV)
    u74 = _key()
    cpuinfo_file.write_text(RISCV.replace("sifive,u74-mc", "thead,c906"))
    assert _key() != u74
