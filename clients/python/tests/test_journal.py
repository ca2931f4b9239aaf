"""The journal through PtcClient against the real `ptc serve`: a run waiting for approval whose
server is killed (SIGKILL) is resumed by a new server, the tool the journal answered is not called
again, and runs()/calls() list what happened."""
import os
import signal
import threading

from ptc_client import PtcClient


def test_a_run_waiting_for_approval_survives_kill_9_of_the_server_and_resumes(binary, tmp_path):
    journal = str(tmp_path / "runs.db")
    config = {"timeoutMs": 30000, "journal": journal, "policy": {"mode": "full-access"}}
    calls = []
    program = "const a = await fetch_rows('t'); return await drop(a.rows)"
    tools = {"fetch_rows": lambda table: calls.append(("fetch_rows", table)) or {"rows": 3}, "drop": lambda n: calls.append(("drop", n)) or f"dropped {n}"}

    pending = threading.Event()
    first = PtcClient(binary=binary, config=config)
    waiting = []

    def on_approval(action):
        waiting.append(action)
        pending.set()  # never decided: the server dies first

    runner = threading.Thread(target=lambda: _swallow(lambda: first.run(program, tools, approval=["drop"], on_approval=on_approval, run_id="job-1")), daemon=True)
    runner.start()
    assert pending.wait(30)
    os.kill(first._process.pid, signal.SIGKILL)
    first.close()
    runner.join(10)
    assert calls == [("fetch_rows", "t")]

    with PtcClient(binary=binary, config=config) as second:
        assert [(run["runId"], run["status"]) for run in second.runs()] == [("job-1", "waiting")]
        result = second.resume("job-1", tools, approval=["drop"], on_approval=lambda action: action["sequence"] == waiting[0]["sequence"])
        assert result["status"] == "ok" and result["value"] == "dropped 3", result
        assert [(call["binding"], call["state"]) for call in second.calls("job-1")] == [("fetch_rows", "done"), ("drop", "done")]
    assert calls == [("fetch_rows", "t"), ("drop", 3)], "fetch_rows ran once, before the kill"


def _swallow(fn):
    try:
        fn()
    except Exception:
        pass
