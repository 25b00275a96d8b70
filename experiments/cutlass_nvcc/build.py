"""The nvcc column: the nvrtc[cutlass] GEMM built the conventional C++ way. The same program
(backends/nvrtc/_gemm_cutlass.py: lab::Gemm, CUTLASS 4.2 headers from the nvidia-cutlass wheel) plus
CUTLASS's own host code (GemmUniversalAdapter: Params, TMA descriptors, launch) compiled by nvcc into
a shared library that ctypes loads. Times nvcc in fresh processes (device-only cubin; host + device
.so), then checks the .so's GEMM on the lab's cases from poisoned outputs and times it cold beside
cuBLAS in the same process (tools/sweep.py).

    python -m experiments.cutlass_nvcc.build --out DIR [--nvcc PATH] [--repeats 3] [--case NAME ...]

Writes DIR/cutlass_nvcc.json and prints the compile times and a table per case.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import shutil
import subprocess
import time
from pathlib import Path

import problems
from backends.nvrtc import _gemm_cutlass as cutlass_gemm
from harness.run.session import Session
from tools.knob_sweep import GEMM_CASES
from tools.sweep import build_and_check, failed, print_case, reference_ms, timed

HOST = r"""
#include "cutlass/gemm/device/gemm_universal_adapter.h"
using Kernel = lab::Gemm<LAB_T, LAB_CONFIG>::Kernel;
using Adapter = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;
static Adapter gemm;   // holds the Params between initialize() and run()

extern "C" int lab_init(int M, int N, int K, void const* A, void const* B, void* D, void* stream) {
  using T = LAB_T;
  auto args = lab::arguments<Kernel>(M, N, K, static_cast<T const*>(A), static_cast<T const*>(B), static_cast<T*>(D),
                                     cutlass::KernelHardwareInfo::query_device_multiprocessor_count(0));
  if (gemm.can_implement(args) != cutlass::Status::kSuccess) return -1;
  if (Adapter::get_workspace_size(args)) return -2;
  return int(gemm.initialize(args, nullptr, static_cast<cudaStream_t>(stream)));
}
extern "C" int lab_run(void* stream) { return int(gemm.run(static_cast<cudaStream_t>(stream))); }
"""


def source(dtype: str, config: str) -> str:
    """The NVRTC program with CUTLASS's host code for one (dtype, config) (nvcc splits -D values at commas)."""
    params = ", ".join(map(str, cutlass_gemm.CONFIGS[config]))
    return (cutlass_gemm.SOURCE + f"#define LAB_T {cutlass_gemm.ELEMENT[dtype]}\n#define LAB_CONFIG {params}\n"
            + HOST)


def nvcc_command(nvcc: str, src: Path, out: Path, device_only: bool) -> list[str]:
    kind = ["-cubin"] if device_only else ["-shared", "-Xcompiler", "-fPIC"]
    return [nvcc, "-O3", "-std=c++17", "-arch=sm_90a", "--expt-relaxed-constexpr", f"-I{cutlass_gemm.include_dir()}",
            *kind, str(src), "-o", str(out)]


def compile_once(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"nvcc failed ({done.returncode}): {done.stderr[-2000:]}")
    return time.perf_counter() - t0


def builder(libs: dict):
    """build() for tools.sweep.build_and_check: CUTLASS's adapter initialised on the case's arrays."""
    def build(case, inputs, outputs, stream):
        a, b, c = inputs["a"], inputs["b"], outputs["c"]
        (m, k), n = a.shape, b.shape[1]
        lib, handle = libs[case.dtype], ctypes.c_void_p(int(stream.handle))
        rc = lib.lab_init(m, n, k, ctypes.c_void_p(a.data.ptr), ctypes.c_void_p(b.data.ptr),
                          ctypes.c_void_p(c.data.ptr), handle)
        if rc:
            raise RuntimeError(f"GemmUniversalAdapter initialize/can_implement: {rc}")

        def run():
            if lib.lab_run(handle):
                raise RuntimeError("GemmUniversalAdapter run failed")
        return run
    return build


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.cutlass_nvcc.build", description=__doc__.splitlines()[0])
    ap.add_argument("--nvcc", default=shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--config", default=cutlass_gemm.CONFIG, choices=sorted(cutlass_gemm.CONFIGS))
    ap.add_argument("--case", action="append")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    version = subprocess.run([args.nvcc, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    result = {"nvcc": version, "config": args.config, "compile_s": {}, "cases": []}
    save = lambda: (args.out / "cutlass_nvcc.json").write_text(json.dumps(result, indent=1) + "\n")  # noqa: E731
    libs = {}
    for dtype in ("bfloat16", "float16"):
        lib, src = args.out / f"libcutlass_gemm_{dtype}.so", args.out / f"cutlass_gemm_{dtype}.cu"
        src.write_text(source(dtype, args.config))
        times = {"cubin": [], "so": []}
        for _ in range(args.repeats if dtype == "bfloat16" else 1):     # the talk's case: bf16
            times["cubin"].append(compile_once(nvcc_command(args.nvcc, src, args.out / "gemm.cubin", True)))
            times["so"].append(compile_once(nvcc_command(args.nvcc, src, lib, False)))
            print(f"nvcc {dtype}: cubin {times['cubin'][-1]:.1f} s, .so {times['so'][-1]:.1f} s", flush=True)
        result["compile_s"][dtype] = times
        save()
        libs[dtype] = ctypes.CDLL(str(lib.resolve()))
        libs[dtype].lab_init.argtypes = [ctypes.c_int] * 3 + [ctypes.c_void_p] * 4
        libs[dtype].lab_run.argtypes = [ctypes.c_void_p]

    prob, s, sessions = problems.get("gemm"), Session("nvrtc", ""), {}
    for name in args.case or GEMM_CASES:
        case = prob.case(name)
        label, ref_ms = reference_ms("gemm", case, s, sessions)
        row = {"case": name, "implementation": f"CUTLASS C++ (nvcc, {args.config})"}
        try:
            run, row["build_s"] = build_and_check(s, "gemm", case, s.arrays(prob, case, 0), {}, build=builder(libs))
            row.update(timed(s, "gemm", case, run, ref_ms, warm_s=0.5), gpu=s.device.properties()["name"])
        except Exception as exc:
            row.update(failed(exc))
        row.update(reference=label, reference_ms=ref_ms)
        result["cases"].append(row)
        save()
        print(f"\ngemm {name} ({label} {ref_ms:.4f} ms):")
        print_case([row], lambda r: r["implementation"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
