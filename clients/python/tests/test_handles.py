"""Run handles, yields and cancellation against the real `ptc serve`: a cancelled asyncio task and
a sync client's Ctrl-C stop the run and leave no process; handles wait, stream and cancel."""
import asyncio
import os
import signal

import pytest

from conftest import descendants
from ptc_client import AsyncPtcClient, PtcClient

# No warm carrier waits beside the runs, so every descendant of the server belongs to a run.
CONFIG = {"timeoutMs": 60000, "prestartCarrier": False}
SPIN = 'console.log("spinning"); while (true) {}'


def ticking(count: int) -> str:
    return (f'for (let i = 0; i < {count}; i++) {{ console.log("line " + i); await new Promise((r) => setTimeout(r, 200)); }}\n'
            'console.error("finished"); return "done";')


def text(output) -> str:
    return "".join(entry["text"] for entry in output if entry["type"] == "text")


LINES = "".join(f"line {i}\n" for i in range(10))


def test_cancelling_an_asyncio_task_cancels_its_run_and_leaves_no_process(binary):
    async def main():
        async with AsyncPtcClient(binary=binary, config=CONFIG) as ptc:
            spinning = asyncio.Event()
            task = asyncio.ensure_future(ptc.run(SPIN, on_output=lambda entry: spinning.set()))
            await spinning.wait()
            assert descendants(ptc._process.pid) != []
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert descendants(ptc._process.pid) == []
            assert (await ptc.run("return 1"))["value"] == 1

    asyncio.run(main())


def test_ctrl_c_in_the_sync_client_cancels_the_run_and_leaves_no_process(binary):
    with PtcClient(binary=binary, config=CONFIG) as ptc:
        def interrupt(entry):
            os.kill(os.getpid(), signal.SIGINT)

        with pytest.raises(KeyboardInterrupt):
            ptc.run(SPIN, on_output=interrupt)
        assert descendants(ptc._process.pid) == []
        assert ptc.run("return 2")["value"] == 2


def test_a_sync_handle_yields_then_every_line_once_across_the_looks_with_streams(binary):
    with PtcClient(binary=binary, config=CONFIG) as ptc:
        handle = ptc.start_run(ticking(10), yield_after_ms=500)
        looks = [handle.wait(500), handle.wait(500)]
        while looks[-1]["status"] == "running":
            looks.append(handle.wait())
        assert looks[0]["status"] == "running" and looks[0]["runId"] == handle.run_id
        final = looks[-1]
        assert final["status"] == "ok" and final["value"] == "done"
        outputs = [entry for look in looks for entry in look["output"]]
        assert text(entry for entry in outputs if entry["stream"] == "stdout") == LINES
        assert [entry for entry in outputs if entry["stream"] == "stderr"] == [{"type": "text", "text": "finished\n", "stream": "stderr"}]
        assert text(handle.result()["output"]) == LINES + "finished\n"


def test_a_sync_handle_streams_its_output_and_a_cancelled_handle_fails_as_abort(binary):
    with PtcClient(binary=binary, config=CONFIG) as ptc:
        handle = ptc.start_run(ticking(5))
        assert [entry["text"] for entry in handle] == [f"line {i}\n" for i in range(5)] + ["finished\n"]
        assert handle.result()["value"] == "done"
        spinning = ptc.start_run(SPIN, yield_after_ms=0)
        assert next(iter(spinning))["text"] == "spinning\n"
        assert spinning.cancel() is True
        assert spinning.result()["failure"]["kind"] == "abort"
        assert descendants(ptc._process.pid) == []


def test_an_async_handle_waits_streams_and_cancels(binary):
    async def main():
        async with AsyncPtcClient(binary=binary, config=CONFIG) as ptc:
            handle = await ptc.start_run(ticking(10), yield_after_ms=300)
            first = await handle.wait(300)
            assert first["status"] == "running"
            final = await handle.result()
            assert final["value"] == "done" and text(final["output"]) == LINES + "finished\n"
            streamed = await ptc.start_run(ticking(3))
            assert [entry["text"] async for entry in streamed] == ["line 0\n", "line 1\n", "line 2\n", "finished\n"]
            spinning = await ptc.start_run(SPIN)
            async for entry in spinning:
                assert entry["text"] == "spinning\n"
                break
            assert await spinning.cancel() is True
            assert (await spinning.result())["failure"]["kind"] == "abort"
            assert descendants(ptc._process.pid) == []

    asyncio.run(main())


def test_wait_on_a_run_that_never_yielded_names_it(binary):
    with PtcClient(binary=binary, config=CONFIG) as ptc:
        from ptc_client import PtcError
        with pytest.raises(PtcError, match='wait: no yielded run "nope" is in flight'):
            ptc._call("wait", {"runId": "nope"})
