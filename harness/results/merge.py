"""Reading results documents, and merging several (parts of one run, or runs on several GPUs) into
one: every record keeps where it came from; where two runs measured the same implementation x
case on the same GPU, the record from the file named last is kept unless only an earlier one was timed,
was ok, or came to a verdict at all (a failed or skipped row is one a later part, or another lane of
a resumed run, ran again)."""
from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

from harness.results.records import SCHEMA_VERSION, UNSETTLED


class NotResults(ValueError):
    """The file is missing or is not a ways results document."""


def read_text(path: Path) -> str:
    """A results file's text: results.json, or results.json.gz as evidence keeps them."""
    return gzip.decompress(path.read_bytes()).decode() if path.suffix == ".gz" else path.read_text()


def load(path: str | Path) -> dict:
    path = Path(path)
    if not path.is_file():
        raise NotResults(f"no results file at {path}")
    try:
        doc = json.loads(read_text(path))
        doc["records"], doc["run"]["id"]
    except (json.JSONDecodeError, KeyError, TypeError, OSError, UnicodeDecodeError):
        raise NotResults(f"{path} is not a ways results file") from None
    return doc


def gpu_name(doc: dict) -> str:
    env = doc.get("environment") or {}
    gpus = env.get("gpus") or []
    return (env.get("device") or {}).get("name") or (gpus[0]["name"] if gpus else "no GPU")


def short_gpu(name: str) -> str:
    """'NVIDIA H100 80GB HBM3' -> 'H100'."""
    words = name.replace("NVIDIA", "").split()
    return words[0] if words else name


def _rank(record: dict) -> tuple[bool, bool, bool]:
    return record.get("timing") is not None, record["status"] == "ok", record["status"] not in UNSETTLED


def environment(docs: list[dict]) -> dict:
    """The first run's environment, with every run's commit and package versions: parts of one
    run may have had different packages importable, or run at different commits."""
    envs = [d.get("environment") or {} for d in docs]
    versions: dict[str, list[str]] = {}
    for env in envs:
        for package, version in (env.get("versions") or {}).items():
            versions.setdefault(package, [])
            if version not in versions[package]:
                versions[package].append(version)
    commits = list(dict.fromkeys(e.get("git_commit") for e in envs if e.get("git_commit")))
    return {**envs[0], "versions": {k: " / ".join(v) for k, v in sorted(versions.items())},
            "git_commit": ", ".join(commits) or None}


def merge(docs: list[dict], names: list[str] | None = None) -> dict:
    """One document from several. A single document comes back unchanged."""
    if len(docs) == 1:
        return docs[0]
    names = names or [d["run"]["id"] for d in docs]
    gpus = {gpu_name(d) for d in docs}
    kept: dict[tuple, dict] = {}
    crosscheck = []
    for doc, name in zip(docs, names, strict=True):
        source = {"run": doc["run"]["id"], "file": name, "gpu": gpu_name(doc),
                  "commit": (doc.get("environment") or {}).get("git_commit")}
        if len(gpus) > 1:
            source["tag"] = short_gpu(source["gpu"])
        for r in doc["records"]:
            r = {**r, "source": source}
            key = (source["gpu"], r["problem"], r["case"], r["backend"], r["variant"])
            if key not in kept or _rank(r) >= _rank(kept[key]):
                kept[key] = r
        crosscheck += [{**x, "source": source} for x in doc.get("crosscheck") or []]
    orphans = _join_compiles(docs, kept)
    runs = [{"id": d["run"]["id"], "file": n, "started": d["run"].get("started"), "finished": d["run"].get("finished"),
             "argv": d["run"].get("argv"), "gpu": gpu_name(d),
             "commit": (d.get("environment") or {}).get("git_commit"), "complete": d["run"].get("complete")}
            for d, n in zip(docs, names, strict=True)]
    digest = hashlib.sha1(json.dumps([r["id"] for r in runs]).encode()).hexdigest()[:12]
    return {
        "schema_version": SCHEMA_VERSION,
        "run": {"id": f"merged-{digest}", "started": min(r["started"] or "" for r in runs),
                "argv": ["ways", "report", *names], "kinds": sorted({k for d in docs for k in d["run"]["kinds"]}),
                "complete": all(r["complete"] for r in runs), "merged_from": runs},
        "environment": environment(docs),
        "environments": {d["run"]["id"]: d["environment"] for d in docs},
        "records": list(kept.values()),
        "crosscheck": crosscheck,
        "references": docs[0].get("references") or {},
        "references_by_run": {d["run"]["id"]: d.get("references") or {} for d in docs},
        **({"compiles": orphans} if orphans else {}),
    }


def _join_compiles(docs: list[dict], kept: dict[tuple, dict]) -> list[dict]:
    """Compile figures measured by one document (a lane) onto the rows of the same implementation and
    GPU model that another holds without them; those no row takes are returned."""
    found: dict[tuple, dict] = {}
    for doc in docs:
        gpu = gpu_name(doc)
        for x in [*doc["records"], *(doc.get("compiles") or [])]:
            if x.get("compile"):
                found.setdefault((gpu, x["backend"], x["variant"], x["problem"]), x["compile"])
    taken = set()
    for (gpu, problem, _case, backend, variant), r in kept.items():     # each r is the merge's own copy
        key = (gpu, backend, variant, problem)
        if key in found:
            taken.add(key)
            r["compile"] = r.get("compile") or found[key]
    return [{"backend": k[1], "variant": k[2], "problem": k[3], "compile": c}
            for k, c in found.items() if k not in taken]
