"""tools/gpu_node.py, the GPU session's steps, without a GPU: each step is documented where the docs
say, carries its sites, stops its command with SIGINT at its limit (a run writes what it measured),
and packs its folder as $OUT/STEP.tgz."""
import signal
import subprocess
import sys
import tarfile
import time

import pytest

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import gpu_node  # noqa: E402


def test_every_step_is_a_documented_function():
    guide = (ROOT / "docs" / "GPU-NODE.md").read_text()
    for name, fn in gpu_node.STEPS.items():
        assert fn.__doc__ and f"`{name}" in guide and f"gpu_node.py {name}" in gpu_node.__doc__
    assert "`wait STEP`" in guide and "gpu_node.py wait STEP" in gpu_node.__doc__


def test_a_dry_run_prints_each_command_with_the_sites(capsys):
    assert gpu_node.main(["--dry-run", "full", "--", "-b", "triton", "--resume"]) == 0
    line = capsys.readouterr().out.strip()
    assert line.endswith("run --jobs 8 --out /tmp/ways-node/full/run -b triton --resume")
    assert "WAYS_CUTILE_SITE=/tmp/cutile-site" in line and "PYTHONPATH=/tmp/gpu-site" in line
    assert "WAYS_SECOND_TIMER=headline" in line                    # the full run checks its headline rows
    assert gpu_node.main(["--dry-run", "--name", "again", "full"]) == 0
    assert "--out /tmp/ways-node/again/run" in capsys.readouterr().out
    assert gpu_node.main(["--dry-run", "sweep", "cutile:gemm"]) == 0
    assert "PYTHONPATH=/tmp/cutile-site:/tmp/gpu-site" in capsys.readouterr().out     # cuTile's site first
    with pytest.raises(SystemExit):
        gpu_node.main(["update"])                                                   # needs its RESULTS


def test_a_step_stops_its_command_at_the_limit_and_packs_its_folder(tmp_path, monkeypatch):
    monkeypatch.setattr(gpu_node, "WORK", tmp_path / "work")
    monkeypatch.setattr(gpu_node, "STOP_GRACE_S", 5)
    script = ("import signal, sys, time, pathlib\n"
              "def stop(*a):\n    pathlib.Path(sys.argv[1]).write_text('kept'); sys.exit(130)\n"
              "signal.signal(signal.SIGINT, stop)\nprint('started', flush=True)\ntime.sleep(60)\n")

    def slow(step):
        step.run([sys.executable, "-c", script, str(step.folder / "written-on-sigint.txt")])
    monkeypatch.setitem(gpu_node.STEPS, "demo", slow)
    t0 = time.monotonic()
    assert gpu_node.main(["demo", "--out", str(tmp_path / "out"), "--limit", "1", "--partial-sites"]) == 0
    assert time.monotonic() - t0 < 30
    with tarfile.open(tmp_path / "out" / "demo.tgz") as tar:
        assert tar.extractfile("demo/written-on-sigint.txt").read() == b"kept"
        assert tar.extractfile(f"demo/{gpu_node.OUTPUT_LOG}").read() == b"started\n"     # its output kept
    assert signal.SIGINT == 2


def test_unpack_takes_every_carried_part_into_its_bundles_site(tmp_path, monkeypatch):
    part = tmp_path / ".gpu-bundle-cutile" / "0"
    part.mkdir(parents=True)
    (part / "unpack.sh").write_text('echo "$GPU_SITE" > "$(dirname "$0")/site.txt"\n')
    monkeypatch.setattr(gpu_node, "ROOT", tmp_path)
    monkeypatch.setattr(gpu_node, "WORK", tmp_path / "work")
    assert gpu_node.main(["unpack", "--out", str(tmp_path / "out")]) == 0
    assert (part / "site.txt").read_text() == "/tmp/cutile-site\n" and (tmp_path / "out" / "unpack.tgz").is_file()
    assert subprocess.run(["bash", "-n", str(part / "unpack.sh")]).returncode == 0


def test_unpack_installs_carried_wheels_into_the_labs_site(tmp_path, monkeypatch, capsys):
    (tmp_path / gpu_node.WHEELS).mkdir()
    (tmp_path / gpu_node.WHEELS / "tool-1.0-py3-none-any.whl").touch()
    monkeypatch.setattr(gpu_node, "ROOT", tmp_path)
    assert gpu_node.main(["unpack", "--out", str(tmp_path / "out"), "--dry-run"]) == 0
    command = capsys.readouterr().out
    assert f"--no-index --no-deps --upgrade --target {gpu_node.SITES['lab']}" in command
    assert command.rstrip().endswith("tool-1.0-py3-none-any.whl")


def test_a_step_refuses_to_run_while_a_bundle_is_not_wholly_unpacked(tmp_path, monkeypatch, capsys):
    """A part that missed its call leaves its bundle's site without env.sh: a run would time the lab's
    tools from the node's own packages (or fail them), so the step says which and stops."""
    sites = {name: str(tmp_path / name) for name in gpu_node.BUNDLES}
    monkeypatch.setattr(gpu_node, "SITES", {**gpu_node.SITES, **sites})
    monkeypatch.setitem(gpu_node.STEPS, "demo", lambda step: pytest.fail("ran"))
    for name in ("cutile", "tilelang"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "env.sh").touch()
    assert gpu_node.main(["demo", "--out", str(tmp_path / "out")]) == 2
    assert f"lab ({tmp_path / 'lab'})" in capsys.readouterr().err and gpu_node.incomplete_bundles() == ["lab"]
    assert not (tmp_path / "out" / "demo.tgz").exists()


def test_a_step_after_another_starts_once_that_ones_pack_is_made(tmp_path, monkeypatch):
    """Detached steps of one sitting in turn: `--after NAME` waits for NAME's pack, then runs its own
    step under its own limit (two runs at once would time each other's kernels)."""
    import threading
    monkeypatch.setattr(gpu_node, "WORK", tmp_path / "work")
    monkeypatch.setattr(gpu_node, "WAIT_POLL_S", 0.05)
    started = []
    monkeypatch.setitem(gpu_node.STEPS, "demo", lambda step: started.append(time.monotonic()))
    first = tmp_path / "work" / "packs" / "first.tgz"
    made = []

    def make_first():
        time.sleep(0.5)
        first.parent.mkdir(parents=True, exist_ok=True)
        first.touch()
        made.append(time.monotonic())
    threading.Thread(target=make_first).start()
    assert gpu_node.main(["demo", "--after", "first", "--out", str(tmp_path / "out"), "--partial-sites"]) == 0
    assert made and started and started[0] >= made[0] and (tmp_path / "out" / "demo.tgz").is_file()
