"""tools/gpu_bundles.sh resplit: a packed bundle's parts cut again to another size, the same bytes
in the same order, each part with its unpack.sh and a MANIFEST naming the same bundle."""
import os
import subprocess

from tests.conftest import ROOT


def test_resplit_keeps_the_bundle_and_renumbers_its_parts(tmp_path):
    data = os.urandom(5 * 1024 * 1024 + 123)
    bundle = tmp_path / ".gpu-bundle-x"
    for k, start in enumerate(range(0, len(data), 2 * 1024 * 1024)):      # three parts of 2 MiB at most
        (bundle / str(k)).mkdir(parents=True)
        (bundle / str(k) / "part").write_bytes(data[start:start + 2 * 1024 * 1024])
        (bundle / str(k) / "MANIFEST").write_text(f"id=abc123\nindex={k}\ntotal=3\n")
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "pack.sh").write_text("")
    (shared / "unpack.sh").write_text("# unpack\n")
    r = subprocess.run(["bash", "tools/gpu_bundles.sh", "resplit", str(bundle)], cwd=ROOT, capture_output=True,
                       text=True, env={**os.environ, "PART_MIB": "1", "PACK_SH": str(shared / "pack.sh")})
    assert r.returncode == 0, r.stderr
    parts = sorted((p for p in bundle.iterdir() if p.is_dir()), key=lambda p: int(p.name))
    assert len(parts) == 6
    assert b"".join((p / "part").read_bytes() for p in parts) == data
    for k, p in enumerate(parts):
        assert (p / "MANIFEST").read_text() == f"id=abc123\nindex={k}\ntotal=6\n"
        assert (p / "unpack.sh").read_text() == "# unpack\n"
