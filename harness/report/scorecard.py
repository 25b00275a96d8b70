"""A scorecard per implementation: what a team weighs when choosing a tool, each cell measured in
the results (best % of peak per problem, compile cold / warm, first call, launch overhead, LOC,
the dtypes it passed, import time in the cold compile processes) or read from the backend and the
packages (ahead-of-time target, minimum compute capability, licence; the CUDA release its extra's
packages are built for, which the driver must support, from pip's resolution where recorded),
never typed in; with `ways report --footprint FILE`, each extra's download size and package count
as `ways footprint` measured them with pip's resolver."""
from __future__ import annotations

import importlib.metadata
import re
import statistics
from collections import defaultdict

from harness.results.records import counts, impl_label


def licence(distribution: str, resolved: list[dict] = ()) -> str:
    """The licence a distribution declares: installed here, else as pip's resolution of its extra
    read it (`ways footprint`, `resolved`); "" where neither has it."""
    try:
        meta = importlib.metadata.metadata(distribution)
    except importlib.metadata.PackageNotFoundError:
        found = next((p for p in resolved if norm_name(p["name"]) == norm_name(distribution)), None)
        return (found or {}).get("licence") or ""
    return licence_text(meta.get("License-Expression"), meta.get("License"), meta.get_all("Classifier") or [])


# the opening words of the licence texts a License field holds whole, where no classifier names it
LICENCE_TEXTS = (("Redistribution and use in source and binary forms", "BSD (text)"),
                 ("Permission is hereby granted, free of charge", "MIT (text)"),
                 ("Apache License", "Apache-2.0 (text)"))


def licence_text(expression: str | None, text: str | None, classifiers: list[str]) -> str:
    """A distribution's licence from its core metadata's fields."""
    text = expression or text or ""
    if not text or len(text) > 40:       # a whole licence text pasted into the field: its classifier instead
        named = next((c.split(" :: ")[-1] for c in classifiers if c.startswith("License ::")), None)
        flat = " ".join(text.split())
        text = named or next((name for words, name in LICENCE_TEXTS if words in flat), text[:40])
    return text


def norm_name(name: str) -> str:
    """A distribution name as pip compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


# a wheel built for one CUDA major says so in its name (cupy-cuda13x, nvidia-libmathdx-cu13,
# nvidia-cutlass-dsl-libs-cu13, jax-cuda13-plugin) or, for NVIDIA's CUDA wheels, in its version's major
CUDA_IN_NAME = re.compile(r"(?:^|[-_])cu(?:da)?(\d{2})(?:x)?(?:[-_]|$)")
CUDA_BY_VERSION = ("cuda-bindings", "cuda-toolkit", "nvidia-cuda-runtime", "nvidia-cuda-nvrtc", "nvidia-cuda-nvcc",
                   "nvidia-nvjitlink", "nvidia-nvvm")


def cuda_from_packages(resolved: list[dict]) -> str:
    """The newest CUDA major the resolved packages are built for, and the package that says so
    ("13 (cupy-cuda13x)"): a driver of that CUDA release at least is needed. "" when none is
    (nothing CUDA in the extra)."""
    found = []
    for p in resolved:
        name = p["name"].lower()
        m = CUDA_IN_NAME.search(name)
        if m:
            found.append((int(m.group(1)), name))
        elif name in CUDA_BY_VERSION and p.get("version", "").split(".")[0].isdigit():
            found.append((int(p["version"].split(".")[0]), f"{name} {p['version']}"))
    if not found:
        return ""
    major = max(v for v, _ in found)
    return f"{major} ({next(n for v, n in sorted(found) if v == major)})"


def peak_column(r: dict) -> str:
    """The % of peak column a record counts in: its problem, and its GPU where a merged document
    spans several ("gemm H200")."""
    tag = (r.get("source") or {}).get("tag")
    return f"{r['problem']} {tag}" if tag else r["problem"]


def rows(doc: dict) -> list[dict]:
    """One dict per implementation, over every GPU of the document: the columns of table() ("per
    problem": best % of peak by peak_column(); times: the longest, or median, over problems and GPUs)."""
    import backends
    by_impl: dict[str, list[dict]] = defaultdict(list)
    for r in doc["records"]:
        by_impl[impl_label({**r, "source": None})].append(r)
    out = []
    for label, recs in sorted(by_impl.items()):
        backend = backends.get(recs[0]["backend"], recs[0]["variant"])
        best: dict[str, float] = {}
        for r in recs:
            pct = (r.get("timing") or {}).get("pct_of_peak")
            if pct is not None and counts(r):
                best[peak_column(r)] = max(best.get(peak_column(r), 0.0), pct)
        compiles = [r["compile"] for r in recs if r.get("compile") and r["compile"].get("cold_s") is not None]
        launches = [r["timing"]["launch_us"] for r in recs if (r.get("timing") or {}).get("launch_us") is not None]
        loc = {r["problem"]: (r.get("loc") or {}).get("total") for r in recs if r.get("loc")}
        extra = backend.extra_for()
        fp = ((doc.get("footprint") or {}).get("extras") or {}).get(extra) or {}
        out.append({
            "implementation": label,
            "install MB": fp["download_bytes"] / 1e6 if fp.get("download_bytes") else None,
            "installed MB": fp["installed_bytes"] / 1e6 if fp.get("installed_bytes") else None,
            "packages": fp.get("packages"),
            "best % of peak": max(best.values()) if best else None,
            "per problem": best,
            "import s": max((c["import_s"] for c in compiles if c.get("import_s") is not None), default=None),
            "compile cold s": max((c["cold_s"] for c in compiles), default=None),
            "compile warm s": max((c["warm_s"] for c in compiles if c.get("warm_s") is not None), default=None),
            "first call s": max((c["first_call_s"] for c in compiles if c.get("first_call_s") is not None),
                                default=None),
            "launch µs": statistics.median(launches) if launches else None,
            "LOC": sum(v for v in loc.values() if v) or None,
            "dtypes": sorted({r["dtype"] for r in recs if r["status"] in ("ok", "compile_only")}),
            "not applicable": sorted({f"{r['problem']}: {r['reason']}" for r in recs
                                      if r["status"] == "not_applicable" and r.get("reason")}),
            "ahead of time": backend.aot_target or "no",
            # no package metadata names it (a wheel's bundled cubins, e.g. CUPTI's in Triton's, are not its floor)
            "min compute capability": ".".join(map(str, backend.min_compute_capability)) + " (declared)",
            # from the extra's packages where pip's resolution names a CUDA release, else what the backend declares
            "min driver CUDA": cuda_from_packages(fp.get("resolved") or [])
            or ".".join(map(str, backend.min_driver_cuda)) + " (declared)",
            "licence": licence(backend.distributions[0], fp.get("resolved") or []) if backend.distributions else "",
        })
    return out


NOTE = ("Per implementation: best % of peak (cold) per problem (and per GPU, where the results span several), the "
        "longest import (tool and device, in a fresh process), cold / warm compile and first call over its problems "
        "(and GPUs' hosts), the median launch overhead, LOC summed over its problems, the dtypes whose cases passed, "
        "and what the backend declares; the licence is read from the packages installed where this report was made, "
        "else from its extra's footprint (blank: neither); install MB (download) and packages: pip's resolution of "
        "the backend's extra, installed MB: the same installed in a fresh environment and measured on disk "
        "(`ways footprint`, given with --footprint; they include the lab's own few dependencies; blank: not "
        "measured); not applicable: the reasons its cases gave (the dtypes and shapes it does not take); min driver "
        "CUDA: the newest CUDA major among the extra's resolved packages (named by the package that says so; "
        "\"(declared)\": no package names one, or no resolution recorded: the backend's own figure); min cc: what "
        "the backend declares (no package metadata gives it).")
TEXT_COLUMNS = ("dtypes", "ahead of time", "min cc", "min driver", "licence", "not applicable")


def table(doc: dict) -> tuple[list[str], list[list[str]], int]:
    """The scorecard as (header, rows of cells, how many columns after the first are numbers): the
    one table report.md and the page both show."""
    def num(v, spec=".3g"):
        return "" if v is None else format(v, spec)
    rows_ = rows(doc)
    problems_seen = sorted({p for r in rows_ for p in r["per problem"]})
    numeric = [*(f"% peak {p}" for p in problems_seen), "install MB", "installed MB", "packages", "import s",
               "compile cold s",
               "compile warm s", "first call s", "launch µs", "LOC"]
    body = [[r["implementation"], *(num(r["per problem"].get(p), ".1f") for p in problems_seen),
             num(r["install MB"]), num(r["installed MB"]), num(r["packages"], "d"), num(r["import s"]),
             num(r["compile cold s"]),
             num(r["compile warm s"]), num(r["first call s"]), num(r["launch µs"]), num(r["LOC"], "d"),
             ", ".join(r["dtypes"]), r["ahead of time"], r["min compute capability"], r["min driver CUDA"],
             r["licence"], "; ".join(r["not applicable"])] for r in rows_]
    return ["implementation", *numeric, *TEXT_COLUMNS], body, len(numeric)


def markdown_lines(doc: dict) -> list[str]:
    header, body, numeric = table(doc)
    return ["## Scorecard", "", NOTE, "", "| " + " | ".join(header) + " |",
            "|---|" + "---:|" * numeric + "---|" * len(TEXT_COLUMNS),
            *("| " + " | ".join(cells) + " |" for cells in body), ""]
