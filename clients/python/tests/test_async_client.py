"""AsyncPtcClient against the real `ptc serve`: the same API with async/await on one loop."""
import asyncio
import threading

import pytest

from ptc_client import AsyncPtcClient, PtcError


class Denied(Exception):
    code = "E_DENIED"


def test_async_and_plain_tools_output_and_errors(binary):
    async def main():
        entries = []

        async def record(entry):
            entries.append(entry)

        async def get_user(id):
            await asyncio.sleep(0)
            return {"id": id, "name": "Ada"}

        def on_thread(x):
            return threading.current_thread() is not threading.main_thread() and x

        async def denied():
            raise Denied("not yours")

        async with AsyncPtcClient(binary=binary, config={"timeoutMs": 30000}) as ptc:
            assert ptc.info["protocolVersion"] == 1
            result = await ptc.run(
                "const u = await getUser(12345678901234567890n); inspect(u.name);\n"
                "const t = await util.onThread(2 ** 70);\n"
                "try { await denied() } catch (e) { inspect(e.code, e.message) }\n"
                "return [u.id, t]",
                tools={"getUser": get_user, "util.onThread": on_thread, "denied": denied},
                on_output=record,
            )
        assert result["status"] == "ok", result
        assert result["value"] == [12345678901234567890, 2 ** 70]
        assert entries == [{"type": "text", "text": "Ada\n", "stream": "stdout"}, {"type": "text", "text": "E_DENIED not yours\n", "stream": "stdout"}]

    asyncio.run(main())


def test_concurrent_runs_cancel_owners_and_close(binary):
    async def main():
        started = asyncio.Event()

        async def block():
            started.set()
            await asyncio.sleep(600)

        async with AsyncPtcClient(binary=binary, config={"executionMode": "persistent-in-memory"}) as ptc:
            slow = asyncio.ensure_future(ptc.run("await block()", tools={"block": block}, run_id="slow", owner="a"))
            await asyncio.wait_for(started.wait(), 30)
            with pytest.raises(PtcError) as raised:
                await ptc.run("1", owner="a")
            assert raised.value.code == -32001
            quick = await asyncio.gather(ptc.run("let x = 1; x", owner="b"), ptc.run("2"))
            assert [result["value"] for result in quick] == [1, 2]
            assert await ptc.cancel("slow") is True
            aborted = await slow
            assert aborted["failure"]["kind"] == "abort"
            assert (await ptc.run("x", owner="b"))["value"] == 1
            assert await ptc.release("b") is True
            assert (await ptc.run("typeof x", owner="b"))["value"] == "undefined"
            result = await ptc.run("while (true) {}", timeout_ms=2000)
            assert result["failure"]["kind"] == "timeout"
            burn = await ptc.run("while (true) {}", cpu_time_ms=300)
            assert burn["failure"]["kind"] == "timeout" and burn["failure"]["cpuTimeMs"] == 300
        assert await ptc.close() == 0

    asyncio.run(main())
