"""Where a worker's JIT caches live: kept across runs, so a second run builds nothing the first built.

Each implementation's workers share one folder per tool version and implementation source, under
WAYS_CACHE_DIR (default: $XDG_CACHE_HOME/ways, or ~/.cache/ways): a new tool version or a changed
implementation file starts an empty one, the folder of the old is left for the user to remove. The
cold compile figure never comes from these (compile_times.py builds in empty folders of its own)."""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from harness.run import fingerprint

CACHE_VAR = "WAYS_CACHE_DIR"


def root() -> Path:
    if os.environ.get(CACHE_VAR):
        return Path(os.environ[CACHE_VAR])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ways"


def worker_cache(impl, versions: dict[str, str]) -> Path:
    """The JIT cache folder of `impl`'s workers for these package versions (made where new)."""
    fp = fingerprint.of_row({"backend": impl.backend, "variant": impl.variant, "problem": impl.problem}, versions)
    key = hashlib.sha256(json.dumps([fp["source"], fp["tool"]], sort_keys=True).encode()).hexdigest()
    folder = root() / "jit" / impl.label / key[:fingerprint.HASH_CHARS]
    folder.mkdir(parents=True, exist_ok=True)
    return folder
