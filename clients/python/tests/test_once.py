"""Exactly-once tools and approvals that ask once through PtcClient against the real `ptc serve`:
a tool that asks for its call context gets a stable idempotency key; a server killed (SIGKILL)
while a tool runs is resumed by a new one, whose Tool.reconcile says the call took effect, so
its side effect happens once; an answer scoped to the run covers the tool's later calls; and
approve_program asks once for the whole program."""
import os
import signal
import threading

from ptc_client import AsyncPtcClient, PtcClient, Tool


def test_a_call_killed_mid_tool_is_reconciled_on_resume_and_its_effect_happens_once(binary, tmp_path):
    config = {"timeoutMs": 30000, "journal": str(tmp_path / "runs.db"), "policy": {"mode": "full-access"}}
    ledger = []  # the payment service: one entry per charge, by idempotency key
    contexts = []
    started = threading.Event()
    hang = threading.Event()

    def charge(amount, context):
        contexts.append(context)
        ledger.append((context["idempotencyKey"], amount))
        started.set()
        hang.wait(30)  # the server dies before this tool answers
        return "late"

    first = PtcClient(binary=binary, config=config)
    runner = threading.Thread(target=lambda: _swallow(lambda: first.run("return await pay(42)", {"pay": Tool(charge, context=True)}, run_id="pay-1")), daemon=True)
    runner.start()
    assert started.wait(30)
    os.kill(first._process.pid, signal.SIGKILL)
    first.close()
    hang.set()
    runner.join(10)
    assert [(c["runId"], c["sequence"], c["attempt"]) for c in contexts] == [("pay-1", 1, 1)]
    key = contexts[0]["idempotencyKey"]

    asked = []

    def reconcile(context):
        asked.append(context)
        done = [amount for charged, amount in ledger if charged == context["idempotencyKey"]]
        return {"outcome": "took-effect", "value": {"charged": done[0]}} if done else {"outcome": "run-again"}

    with PtcClient(binary=binary, config=config) as second:
        result = second.resume("pay-1", {"pay": Tool(charge, context=True, reconcile=reconcile)})
        assert result["status"] == "ok" and result["value"] == {"charged": 42}, result
        assert [call["reconciled"] for call in second.calls("pay-1")] == ["took-effect"]
    assert asked == [{"runId": "pay-1", "sequence": 1, "attempt": 1, "idempotencyKey": key, "args": [42]}]
    assert ledger == [(key, 42)], "charged exactly once"


def test_an_answer_scoped_to_the_run_approves_the_next_calls_and_not_the_next_run(binary):
    asked = []
    sent = []
    on_approval = lambda action: asked.append((action["runId"], action["sequence"])) or {"approved": True, "scope": "run"}
    with PtcClient(binary=binary, config={"timeoutMs": 30000, "policy": {"mode": "full-access"}}) as ptc:
        first = ptc.run("return [await send('a'), await send('b'), await send('c')]", {"send": lambda to: sent.append(to) or to},
                        approval=["send"], on_approval=on_approval, run_id="first")
        second = ptc.run("return await send('d')", {"send": lambda to: sent.append(to) or to}, approval=["send"], on_approval=on_approval, run_id="second")
    assert first["value"] == ["a", "b", "c"] and second["value"] == "d"
    assert asked == [("first", 1), ("second", 1)]
    assert sent == ["a", "b", "c", "d"]


def test_the_async_client_approves_a_whole_program_once(binary):
    import asyncio

    async def main():
        seen = []
        async with AsyncPtcClient(binary=binary, config={"timeoutMs": 30000, "policy": {"mode": "full-access"}}) as ptc:
            result = await ptc.run("for (const b of ['x', 'y']) await git.remove(b); return await git.list()",
                                   {"git.remove": lambda b: b, "git.list": lambda: [], "mail.send": lambda: None},
                                   approval=["git.remove", "mail.send"], approve_program=True,
                                   on_approval=lambda action: seen.append(action) or True)
        assert result["status"] == "ok", result
        assert [(a["sequence"], a["kind"], a.get("names")) for a in seen] == [(0, "program", ["git.remove"])]

    asyncio.run(main())


def _swallow(fn):
    try:
        fn()
    except Exception:
        pass
