"""Compile LLVM IR text for this CPU with llvmlite: the one compile step of the core's compiled loops.

Used by the observers' loops (:mod:`workbench.core.calibration.observers._llvm`) and bias correction's sums
(:mod:`workbench.core.transforms._sums_jit`), each imported on first use, so ``import workbench.core`` does not
import llvmlite. The IR is optimised at ``-O3`` (LLVM's new pass manager) for the host CPU and its features and
compiled with MCJIT; no fast-math flags are added, so the loops keep the arithmetic their IR states.
"""

from __future__ import annotations

import llvmlite.binding as llvm


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
    mod = llvm.parse_assembly("\n".join(lines))
    mod.triple, mod.data_layout = tm.triple, str(tm.target_data)
    mod.verify()
    pb = llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(speed_level=3))
    pb.getModulePassManager().run(mod, pb)
    engine = llvm.create_mcjit_compiler(mod, tm)
    engine.finalize_object()
    return engine
