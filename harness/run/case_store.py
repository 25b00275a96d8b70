"""A case's host inputs and float64 reference, made once a run and shared by its workers: a 1 GiB
input and its reference take longer to make than to time. Each is stored as a pickle of its
structure plus one file per array, which a worker maps (copy-on-write) instead of reading: a
pickle of a 2^28-element case takes seconds to read, and every worker would read it."""
from __future__ import annotations

import fcntl
import functools
import inspect
import os
import pickle
import shutil
from pathlib import Path

import numpy as np

CASE_CACHE_VAR = "WAYS_CASE_CACHE"


def case_data(problem, case, seed: int, cache: Path | None):
    """Host inputs and reference for (case, seed), from `cache` (a run's scratch folder) if made
    there already. With WAYS_CASE_CACHE set, kept in that folder between runs too, under a name that
    carries a hash of the code that makes them (the problem's module and problems/base.py) and
    numpy's version."""
    if cache is None and not os.environ.get(CASE_CACHE_VAR):
        inputs = problem.make_inputs(case, seed)
        return inputs, problem.reference(case, inputs)
    root = Path(os.environ[CASE_CACHE_VAR]) if os.environ.get(CASE_CACHE_VAR) else cache / "case-data"
    path = root / problem.name / f"{case.name}.seed{seed}.{_maker_hash(type(problem))}"
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.is_dir():       # (renamed into place whole: a folder there is complete)
        # one maker per case: `--jobs` workers wanting the same case wait for it instead of each making it
        with open(path.with_name(path.name + ".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not path.is_dir():
                inputs = problem.make_inputs(case, seed)
                data = inputs, problem.reference(case, inputs)
                save(path, data)
                return data
    return load(path)


def save(path: Path, data) -> None:
    """`data` into the folder `path`: structure.pkl, and each array's bytes in buffer<k> (pickle
    protocol 5's out-of-band buffers), written beside it first and renamed into place."""
    buffers: list[pickle.PickleBuffer] = []
    structure = pickle.dumps(data, protocol=5, buffer_callback=buffers.append)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    (tmp / "structure.pkl").write_bytes(structure)
    for k, buf in enumerate(buffers):
        with open(tmp / f"buffer{k}", "wb") as f:
            f.write(buf.raw())
    os.replace(tmp, path)


def load(path: Path):
    """What save() wrote, its arrays mapped copy-on-write from their files (writable, lazy)."""
    files = sorted(path.glob("buffer*"), key=lambda f: int(f.name.removeprefix("buffer")))
    buffers = [np.memmap(f, dtype=np.uint8, mode="c") if f.stat().st_size else bytearray() for f in files]
    return pickle.loads((path / "structure.pkl").read_bytes(), buffers=buffers)


@functools.cache
def _maker_hash(problem_class) -> str:
    """12 hex digits naming the code that makes a problem's inputs and reference."""
    import hashlib

    import problems.base
    h = hashlib.sha256(np.__version__.encode())
    for module in (inspect.getmodule(problem_class), problems.base):
        h.update(inspect.getsource(module).encode())
    return h.hexdigest()[:12]
