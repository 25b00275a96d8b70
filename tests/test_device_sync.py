"""The worker synchronizes the whole device after uploads and around every checked call, so a
backend that uploads on a stream of its own cannot make a correct kernel 'wrong'. Here on the CPU:
the sidestream fixture's uploads are deferred work that lands only at a device-wide sync."""
import backends
import problems
from harness.measure.device import HostDevice
from harness.results import records
from harness.run import session


class DeferredDevice(HostDevice):
    """Runs the backend's in-flight copies when synchronized, as cudaDeviceSynchronize would."""

    def __init__(self, backend):
        self.backend, self.syncs = backend, 0

    def sync(self):
        self.syncs += 1
        while self.backend.pending:
            self.backend.pending.pop(0)()


def test_uploads_on_another_stream_come_out_ok(bad_backends, monkeypatch):
    backend = backends.get("sidestream")
    monkeypatch.setattr(session, "open_device", lambda kind: DeferredDevice(backend))
    s = session.Session("sidestream", "numpy")
    problem = problems.get("elementwise")
    for case in [c for c in problem.cases() if c.kind == "test" and c.dtype == "float32"]:
        rec = records.new_record(problem.name, case, "sidestream", "numpy")
        session.check_case(s, problem, case, rec, None)
        assert rec["status"] == "ok", rec["error"]
        assert not backend.pending
    assert s.device.syncs > 0


def test_a_worker_that_did_not_sync_would_be_caught(bad_backends, monkeypatch):
    """The control: the same fixture on a device that never runs the deferred copies is wrong."""
    backend = backends.get("sidestream")
    monkeypatch.setattr(session, "open_device", lambda kind: HostDevice())
    s = session.Session("sidestream", "numpy")
    problem = problems.get("elementwise")
    case = problem.case("1001-float32")
    rec = records.new_record(problem.name, case, "sidestream", "numpy")
    session.check_case(s, problem, case, rec, None)
    backend.pending.clear()
    assert rec["status"] == "wrong"
