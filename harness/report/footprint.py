"""Install footprint of backends' extras, from pip's own resolver: in a fresh virtual environment
`pip install --dry-run --ignore-installed --report` resolves the extra (nothing is installed); each
resolved file's download size comes from the index (HTTP HEAD, Content-Length). With --install the
extra is also installed there and its size on disk measured. Writes one JSON file that
`ways report --footprint FILE` puts into the scorecard.

    ways footprint --out FOOTPRINT.json [--install] [EXTRA ...]    # default: every backend's extra
"""
from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

from harness.report.scorecard import norm_name, licence_text

ROOT = Path(__file__).resolve().parents[2]     # the checkout: pip installs its extras


def venv(where: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True)
    return where / "bin" / "python"


def resolve(python: Path, extra: str, report: Path) -> list[dict]:
    """What pip would install for the lab with `extra`, the lab itself left out."""
    target = f"{ROOT}[{extra}]" if extra else str(ROOT)
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--dry-run", "--ignore-installed", "--report",
                    str(report), target], check=True, capture_output=True, text=True)
    items = json.loads(report.read_text())["install"]
    return [{"name": i["metadata"]["name"], "version": i["metadata"]["version"], "url": i["download_info"]["url"],
             "licence": licence_text(i["metadata"].get("license_expression"), i["metadata"].get("license"),
                                     i["metadata"].get("classifier") or [])}
            for i in items if i["metadata"]["name"] != "ways"]


def download_bytes(url: str) -> int | None:
    if url.startswith("file://"):                      # a local index or cache
        path = Path(urllib.request.url2pathname(url[len("file://"):]))
        return path.stat().st_size if path.is_file() else None
    if not url.startswith("http"):
        return None
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=60) as r:
            return int(r.headers["Content-Length"])
    except (OSError, KeyError, ValueError):
        return None


def tree_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


def footprint(extra: str, install: bool) -> dict:
    with tempfile.TemporaryDirectory(prefix="ways-footprint-") as tmp:
        python = venv(Path(tmp) / "venv")
        packages = resolve(python, extra, Path(tmp) / "report.json")
        for p in packages:
            p["download_bytes"] = download_bytes(p["url"])
        sizes = [p["download_bytes"] for p in packages]
        out = {"packages": len(packages), "resolved": packages,
               "download_bytes": sum(s for s in sizes if s) if all(sizes) else None, "installed_bytes": None}
        if install:
            site = Path(tmp) / "venv" / "lib"
            before = tree_bytes(site)
            subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps",
                            *[f"{p['name']}=={p['version']}" for p in packages]], check=True)
            out["installed_bytes"] = tree_bytes(site) - before
            found = installed_licences(python)
            for p in packages:          # pip's report leaves out most licence fields: the installed metadata has them
                p["licence"] = found.get(norm_name(p["name"])) or p["licence"]
        return out


def installed_licences(python: Path) -> dict[str, str]:
    """Each distribution installed in the environment of `python`: its licence, from its metadata."""
    script = ("import importlib.metadata as m, json; print(json.dumps({d.metadata['Name']: [d.metadata.get("
              "'License-Expression'), d.metadata.get('License'), d.metadata.get_all('Classifier') or []] "
              "for d in m.distributions()}))")
    found = json.loads(subprocess.run([str(python), "-c", script], check=True, capture_output=True, text=True).stdout)
    return {norm_name(name): licence_text(*fields) for name, fields in found.items()}


def extras_of_backends() -> list[str]:
    import backends
    found = {backends.get(n, v).extra_for() for n in backends.names() for v in backends.get(n).variants}
    return sorted(e for e in found if e)


def add_arguments(ap) -> None:
    ap.add_argument("extras", nargs="*", help="pyproject extras (default: the lab alone and every backend's extra)")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--install", action="store_true", help="also install each extra and measure it on disk")


def main(args) -> int:
    os.environ.setdefault("PIP_DISABLE_PIP_VERSION_CHECK", "1")
    doc = {"python": platform.python_version(), "platform": f"{sys.platform}-{platform.machine()}",
           "pip": subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True,
                                 text=True).stdout.split()[1], "extras": {}}
    for extra in args.extras or ["", *extras_of_backends()]:     # "": the lab alone, what every extra adds to
        print(f"{extra or '(the lab alone)'}: resolving", flush=True)
        doc["extras"][extra] = footprint(extra, args.install)
        e = doc["extras"][extra]
        print(f"  {e['packages']} packages, download {e['download_bytes']} bytes, installed {e['installed_bytes']}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    return 0

