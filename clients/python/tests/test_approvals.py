"""Approvals through PtcClient against the real `ptc serve`: approve, reject, the approval timeout
and Promise.all of gated calls; the tool runs only once it is approved."""
import threading

from ptc_client import PtcClient

CAUGHT = "catch (e) { return { code: e.code, message: e.message } }"


def test_an_approved_call_runs_after_the_decision_and_the_action_names_it(binary):
    sent = []
    seen = []

    def on_approval(action):
        seen.append(action)
        assert sent == [], "the tool has not run before the decision"
        return True

    with PtcClient(binary=binary, config={"timeoutMs": 30000, "policy": {"mode": "full-access"}}) as ptc:
        result = ptc.run("return await mail.send('ann', 2 ** 70)", tools={"mail.send": lambda to, n: sent.append((to, n)) or "ok"},
                         approval=["mail.send"], on_approval=on_approval, run_id="r1")
    assert result["status"] == "ok" and result["value"] == "ok", result
    assert sent == [("ann", 2 ** 70)]
    assert seen == [{"runId": "r1", "sequence": 1, "kind": "call", "name": "mail.send", "args": ["ann", 2 ** 70]}]


def test_rejected_with_a_reason_and_a_later_decision_through_reject(binary):
    sent = []
    with PtcClient(binary=binary, config={"timeoutMs": 30000, "policy": {"mode": "full-access"}}) as ptc:
        result = ptc.run(f"try {{ return await drop('db') }} {CAUGHT}", tools={"drop": sent.append}, approval=["drop"],
                         on_approval=lambda action: "not today")
        assert result["value"] == {"code": "PTC_REJECTED", "message": "drop: rejected: not today"}
        decided = []
        # None leaves the decision to reject(), called from another thread.
        def later(action):
            threading.Thread(target=lambda: decided.append(ptc.reject(action["runId"], action["sequence"], "later"))).start()
        result = ptc.run(f"try {{ return await drop('db') }} {CAUGHT}", tools={"drop": sent.append}, approval=["drop"], on_approval=later)
        assert result["value"] == {"code": "PTC_REJECTED", "message": "drop: rejected: later"}
        assert decided == [True]
        assert ptc.approve("gone", 1) is False
    assert sent == []


def test_an_undecided_call_times_out(binary):
    with PtcClient(binary=binary, config={"timeoutMs": 30000, "approval": {"timeoutMs": 300}, "policy": {"mode": "full-access"}}) as ptc:
        result = ptc.run(f"try {{ return await drop('db') }} {CAUGHT}", tools={"drop": lambda x: x}, approval=["drop"], on_approval=lambda action: None)
    assert result["value"] == {"code": "PTC_APPROVAL_TIMEOUT", "message": "drop: no decision within the approval timeout (approvalTimeoutMs 300 ms)"}


def test_promise_all_of_gated_calls_each_decided_on_its_own(binary):
    both = threading.Barrier(2, timeout=20)

    def on_approval(action):
        both.wait()  # both calls wait at once
        return action["args"][0] == "a"

    with PtcClient(binary=binary, config={"timeoutMs": 30000, "policy": {"mode": "full-access"}}) as ptc:
        result = ptc.run("return await Promise.all(['a', 'b'].map((x) => send(x).catch((e) => e.code)))",
                         tools={"send": lambda x: x.upper()}, approval=["send"], on_approval=on_approval)
    assert result["value"] == ["A", "PTC_REJECTED"], result


def test_the_async_client_approves_and_rejects_with_an_async_callback(binary):
    import asyncio

    from ptc_client import AsyncPtcClient

    async def main():
        sent = []

        async def on_approval(action):
            await asyncio.sleep(0)
            return action["args"][0] != "b"

        async with AsyncPtcClient(binary=binary, config={"timeoutMs": 30000, "policy": {"mode": "full-access"}}) as ptc:
            result = await ptc.run("return await Promise.all(['a', 'b'].map((x) => send(x).catch((e) => e.code)))",
                                   tools={"send": lambda x: sent.append(x) or x}, approval=["send"], on_approval=on_approval)
            assert await ptc.approve("gone", 1) is False
        return result, sent

    result, sent = asyncio.run(main())
    assert result["value"] == ["a", "PTC_REJECTED"], result
    assert sent == ["a"]
