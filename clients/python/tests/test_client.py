"""PtcClient against the real `ptc serve`: tools, output, errors, owners, cancel, timeouts, cleanup."""
import json
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

from conftest import REPO, alive, descendants
from ptc_client import PtcClient, PtcError, Tool


class NotFound(Exception):
    code = "E_NOT_FOUND"


def test_the_readme_example_runs_with_big_integers_namespaces_and_output_in_order(binary):
    seen = []

    def get_user(id):
        seen.append(id)
        return {"id": id, "name": "Ada"}

    def list_issues(query):
        return [{"id": 2 ** 64 + 1, "repo": query["repo"]}]

    entries = []
    with PtcClient(binary=binary, config={"timeoutMs": 30000}) as ptc:
        assert ptc.info["protocolVersion"] == 1
        assert ptc.info["programFormat"] == "async-function"
        assert "inspect" in ptc.info["executionInstructions"]
        assert ptc.info["timeout"] == {"defaultMs": 30000, "maxMs": 600000}
        result = ptc.run(
            "const u = await getUser(12345678901234567890n); inspect(u.name);\n"
            "const [issue] = await github.listIssues({ repo: 'ptc' }); inspect(typeof issue.id);\n"
            "return { id: u.id, next: issue.id + 1n }",
            tools={"getUser": get_user, "github.listIssues": list_issues},
            on_output=entries.append,
        )
    assert seen == [12345678901234567890] and type(seen[0]) is int
    assert result["status"] == "ok"
    assert result["value"] == {"id": 12345678901234567890, "next": 2 ** 64 + 2}
    assert entries == [{"type": "text", "text": "Ada\n", "stream": "stdout"}, {"type": "text", "text": "bigint\n", "stream": "stdout"}]
    assert result["output"] == [{"type": "text", "text": "Ada\nbigint\n", "stream": "stdout"}]


def test_the_result_is_shaped_exactly_like_ptc_run_json(binary):
    program = "inspect('before', 0.1 * 3);\nthrow new RangeError('too far')"
    with PtcClient(binary=binary) as ptc:
        served = ptc.run(program, cwd=str(REPO))
    printed = subprocess.run([binary, "run", "--json", "-"], input=program, capture_output=True, text=True, cwd=REPO)
    assert printed.returncode == 1
    expected = json.loads(printed.stdout)
    # The one difference is the program's name in the stack: `ptc run -` calls it [stdin], a served
    # program is the library's default, program.ts in its cwd.
    expected["failure"]["stack"] = expected["failure"]["stack"].replace("at [stdin]:", f"at {REPO / 'program.ts'}:")
    # Whether each took a booted carrier depends on how far its pool had come: both say, as a bool.
    assert type(served.pop("warm")) is bool and type(expected.pop("warm")) is bool
    assert served == expected
    assert served["failure"]["kind"] == "exception"
    assert served["failure"]["name"] == "RangeError"
    assert served["output"] == [{"type": "text", "text": "before 0.30000000000000004\n", "stream": "stdout"}]


def test_async_tools_and_floats_are_exact(binary):
    async def scale(x):
        return x * 3

    with PtcClient(binary=binary) as ptc:
        result = ptc.run("return [await scale(0.1), await scale(2 ** 52)]", tools={"scale": scale})
    assert result["value"] == [0.30000000000000004, 3 * 2 ** 52]


def test_an_exception_becomes_a_binding_error_with_its_message_and_code(binary):
    def get_user(id):
        raise NotFound(f"no user {id}")

    def plain(_):
        raise ValueError("bad value")

    def lossy():
        return {"when": float("nan")}

    program = """
    const out = [];
    for (const f of [() => getUser(7), () => plain(1), () => lossy()]) {
      try { await f() } catch (e) { out.push({ name: e.name, message: e.message, code: e.code ?? null, binding: e.binding }) }
    }
    return out"""
    with PtcClient(binary=binary) as ptc:
        result = ptc.run(program, tools={"getUser": get_user, "plain": plain, "lossy": lossy})
    assert result["status"] == "ok", result
    assert result["value"][0] == {"name": "BindingError", "message": "no user 7", "code": "E_NOT_FOUND", "binding": "getUser"}
    assert result["value"][1] == {"name": "BindingError", "message": "bad value", "code": None, "binding": "plain"}
    assert result["value"][2]["code"] == "PTC_INVALID_RESULT"
    assert result["value"][2]["message"].startswith("the tool returned a value that is not JSON: ")


def test_tools_with_schemas_and_bad_parameters(binary):
    with PtcClient(binary=binary) as ptc:
        tool = Tool(lambda q: q["n"] + 1, description="adds one", input_schema={"type": "object", "properties": {"n": {"type": "number"}}})
        assert ptc.run("return await inc({ n: 41 })", tools={"inc": tool})["value"] == 42
        with pytest.raises(PtcError) as raised:
            ptc.run("return 1", policy={"mode": "everything"})
        assert raised.value.code == -32602
        assert 'policy' in raised.value.message and "everything" in raised.value.message
        # A name that is not an identifier is called by the identifier its declaration gives it.
        assert ptc.run("return await not_an_identifier()", tools={"not-an-identifier": lambda: 1})["value"] == 1
        with pytest.raises(PtcError) as raised:
            ptc.run("return 1", tools={"a..b": lambda: 1})
        assert raised.value.message == "run: tool 0: name must be a non-empty string of dot-separated parts, got 'a..b'"


def test_each_result_says_whether_its_run_waited_for_no_carrier_to_boot(binary):
    with PtcClient(binary=binary, config={"executionMode": "persistent-in-memory"}) as ptc:
        first = ptc.run("1", owner="agent")
        assert type(first["warm"]) is bool
        # The owner's environment is live: its next run boots nothing.
        assert ptc.run("2", owner="agent")["warm"] is True


def test_owners_keep_an_environment_until_released_and_a_busy_owner_is_refused(binary):
    gate = threading.Event()
    called = threading.Event()

    def wait():
        called.set()
        gate.wait(30)
        return 1

    with PtcClient(binary=binary, config={"executionMode": "persistent-in-memory"}) as ptc:
        assert ptc.run("let n = 41", owner="agent")["status"] == "ok"
        results = {}
        first = threading.Thread(target=lambda: results.setdefault("first", ptc.run("n += await wait(); n", tools={"wait": wait}, owner="agent")))
        first.start()
        assert called.wait(30)
        with pytest.raises(PtcError) as raised:
            ptc.run("n", owner="agent")
        assert raised.value.code == -32001
        assert raised.value.message == 'run: owner "agent" already has a run in flight; wait for its reply before starting another'
        assert ptc.run("typeof n", owner="other")["value"] == "undefined"
        gate.set()
        first.join(30)
        assert results["first"]["value"] == 42
        assert ptc.run("n", owner="agent")["value"] == 42
        assert ptc.release("agent") is True
        assert ptc.release("agent") is False
        assert ptc.run("typeof n", owner="agent")["value"] == "undefined"


def test_an_owner_keeps_its_workspace_while_its_cwd_moves_and_a_move_out_raises_unless_replaced(binary):
    with tempfile.TemporaryDirectory(prefix="ptc-client-owner-") as tmp:
        owner_moves(binary, Path(tmp).resolve())


def owner_moves(binary, tmp):
    workspace = tmp / "workspace"
    inner = workspace / "inner"
    other = tmp / "other"
    inner.mkdir(parents=True)
    other.mkdir()
    with PtcClient(binary=binary, config={"executionMode": "persistent-in-memory"}) as ptc:
        assert ptc.run("var n = 41", owner="agent", cwd=str(workspace))["status"] == "ok"
        moved = ptc.run("[n + 1, process.cwd()]", owner="agent", cwd=str(inner))
        assert moved["value"] == [42, str(inner)] and moved["environment"] == {"fresh": False}
        with pytest.raises(PtcError) as raised:
            ptc.run("n", owner="agent", cwd=str(other))
        assert raised.value.code == -32602
        assert raised.value.message.startswith(f"run: ptc run(): cwd '{other}' is outside this stateOwner's workspace root '{workspace}'")
        assert 'onPolicyChange: "replace"' in raised.value.message
        assert ptc.run("n", owner="agent", cwd=str(workspace))["value"] == 41
        replaced = ptc.run("typeof n", owner="agent", cwd=str(other), on_policy_change="replace")
        assert replaced["value"] == "undefined" and replaced["environment"]["fresh"] is True
        assert replaced["environment"]["replaced"].startswith("the sandbox policy changed (workspaceRoot")


def test_runs_are_concurrent_and_cancel_ends_one_as_abort(binary):
    started = threading.Event()
    release = threading.Event()

    def block():
        started.set()
        release.wait(30)
        return "late"

    with PtcClient(binary=binary) as ptc:
        results = {}
        worker = threading.Thread(target=lambda: results.setdefault("slow", ptc.run("inspect('waiting'); return await block()", tools={"block": block}, run_id="slow")))
        worker.start()
        assert started.wait(30)
        # Another run completes while the first one waits.
        assert ptc.run("return 'quick'")["value"] == "quick"
        assert ptc.cancel("slow") is True
        worker.join(30)
        release.set()
        slow = results["slow"]
        assert slow["status"] == "failed"
        assert slow["failure"] == {"kind": "abort", "message": "execution aborted: cancelled by the client"}
        assert slow["output"] == [{"type": "text", "text": "waiting\n", "stream": "stdout"}]
        assert ptc.cancel("slow") is False
        assert ptc.run("return 'after'")["value"] == "after"


def test_timeouts(binary):
    with PtcClient(binary=binary, config={"timeoutMs": 60000}) as ptc:
        result = ptc.run("while (true) {}", timeout_ms=2000)
        assert result["failure"] == {"kind": "timeout", "message": "execution timed out during execution (deadline 2000 ms elapsed)", "timeoutMs": 2000}
        assert ptc.run("return 1", timeout_ms=None)["value"] == 1


def test_a_cpu_time_budget_per_run(binary):
    with PtcClient(binary=binary, config={"timeoutMs": 60000, "cpuTimeMs": 30000}) as ptc:
        burn = ptc.run("while (true) {}", cpu_time_ms=300)
        assert burn["status"] == "failed"
        failure = burn["failure"]
        assert failure["kind"] == "timeout" and failure["cpuTimeMs"] == 300 and failure["cpuUsedMs"] >= 300
        assert "over its cpuTimeMs budget of 300 ms" in failure["message"]
        # Waiting is free: a slow tool does not spend the budget.
        slow = ptc.run("return await wait()", {"wait": lambda: time.sleep(1) or "done"}, cpu_time_ms=300)
        assert slow["status"] == "ok" and slow["value"] == "done"
        # None lifts the configured budget for one run; DEFAULT keeps it.
        assert ptc.run("let i = 0; while (i < 1e7) i++; return i", cpu_time_ms=None)["value"] == 10000000
        with pytest.raises(PtcError, match="cpuTimeMs"):
            ptc.run("return 1", cpu_time_ms=-5)


def test_close_ends_every_run_and_leaves_no_process(binary):
    called = threading.Barrier(3)
    never = threading.Event()

    def block():
        called.wait(30)
        never.wait(600)

    ptc = PtcClient(binary=binary)
    results = []
    runs = [threading.Thread(target=lambda: results.append(ptc.run("await block()", tools={"block": block}))) for _ in range(2)]
    for run in runs:
        run.start()
    called.wait(30)
    processes = descendants(ptc._process.pid)
    assert len(processes) >= 2
    assert ptc.close() == 0
    for run in runs:
        run.join(30)
    assert [result["failure"]["kind"] for result in results] == ["abort", "abort"]
    pids = {pid for pid, _ in processes}
    groups = {pgid for _, pgid in processes} - {subprocess.os.getpgid(0)}
    deadline = time.monotonic() + 10
    while alive(pids, groups) and time.monotonic() < deadline:
        time.sleep(0.05)
    never.set()
    assert alive(pids, groups) == []
    with pytest.raises(PtcError) as raised:
        ptc.run("return 1")
    assert raised.value.message == "ptc serve exited with code 0"
