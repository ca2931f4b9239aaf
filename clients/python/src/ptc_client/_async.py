"""AsyncPtcClient: the same API as PtcClient with async/await, on one event loop. Async tools run
as tasks, plain functions on worker threads, so neither blocks the loop or the other runs."""
from __future__ import annotations

import asyncio
import inspect
import itertools
import sys
import uuid
from typing import IO, Any, Callable, Dict, Mapping, Optional, Sequence

from ._protocol import (DEFAULT, default_binary, PROTOCOL_VERSION, PtcError, Tool, Tools, approval_reply, decision_params, declarations_params, decode, resume_params, tool_arguments,
                        describe_tools, is_final, reply_error, request, run_params,
                        tool_error, tool_result, tool_table, unknown_tool)

# One line may hold a whole result (up to maxOutputBytes of output, escaped): asyncio's 64 KiB default is far too small.
_LINE_LIMIT = 1 << 30


class _Run:
    def __init__(self, tools: Dict[str, Tool], on_output: Optional[Callable[[Dict[str, Any]], Any]],
                 on_approval: Optional[Callable[[Dict[str, Any]], Any]] = None) -> None:
        self.tools = tools
        self.on_output = on_output
        self.on_approval = on_approval
        #: Output entries for the handle's iterators, in order; `changed` is set when one arrives or the run ends.
        self.entries: list = []
        self.changed = asyncio.Event()

    def wake(self) -> None:
        changed, self.changed = self.changed, asyncio.Event()
        changed.set()


class AsyncRunHandle:
    """A run in flight on an ``AsyncPtcClient`` (from ``start_run``); the same API as ``RunHandle``,
    awaited, and ``async for entry in handle`` streams its output."""

    def __init__(self, client: "AsyncPtcClient", run_id: str, run: _Run, first: Dict[str, Any]) -> None:
        self.run_id = run_id
        self._client = client
        self._run = run
        self._looked: list = list(first.get("output") or [])
        self._unseen: list = list(self._looked)
        self._final: Optional[Dict[str, Any]] = first if is_final(first) else None
        self._watch: Optional["asyncio.Task[Any]"] = None
        if self._final is not None:
            client._end_run(run_id, run)

    async def wait(self, timeout_ms: Optional[int] = None) -> Dict[str, Any]:
        """See ``RunHandle.wait``."""
        unseen, self._unseen = self._unseen, []
        if self._final is not None:
            return {**self._final, "output": unseen}
        params: Dict[str, Any] = {"runId": self.run_id}
        if timeout_ms is not None:
            params["timeoutMs"] = timeout_ms
        look = await self._client._call("wait", params)
        output = list(look.get("output") or [])
        self._looked.extend(output)
        if is_final(look):
            self._final = look
            self._client._end_run(self.run_id, self._run)
        return {**look, "output": unseen + output}

    async def result(self) -> Dict[str, Any]:
        """Waits for the end; the final result with every output entry of the run."""
        while True:
            look = await self.wait()
            if is_final(look):
                return {**look, "output": list(self._looked)}

    async def cancel(self) -> bool:
        """Stops the run (its result fails as ``abort``); False when it had already ended."""
        return await self._client.cancel(self.run_id)

    async def __aiter__(self):
        """Every output entry from the first, as it arrives, until the run ends; it takes the looks itself."""
        if self._final is None and self._watch is None:
            self._watch = asyncio.ensure_future(self.result())
        at = 0
        while True:
            while at < len(self._run.entries):
                at += 1
                yield self._run.entries[at - 1]
            if self._final is not None:
                return
            await self._run.changed.wait()


class AsyncPtcClient:
    """``async with AsyncPtcClient(binary="dist/ptc") as ptc: await ptc.run(...)``; see PtcClient."""

    def __init__(self, binary: Optional[str] = None, *, config: Optional[Mapping[str, Any]] = None, args: Sequence[str] = (),
                 cwd: Optional[str] = None, env: Optional[Mapping[str, str]] = None, stderr: Optional[IO[Any]] = None) -> None:
        self._command = [binary or default_binary(), "serve", *args]
        self._config = config
        self._cwd = cwd
        self._env = None if env is None else dict(env)
        self._stderr = stderr
        self._ids = itertools.count(1)
        self._pending: Dict[int, "asyncio.Future[Any]"] = {}
        self._runs: Dict[str, _Run] = {}
        self._tasks: set = set()
        self._closed: Optional[PtcError] = None
        self._process: Optional[asyncio.subprocess.Process] = None
        self._reader: Optional["asyncio.Task[None]"] = None
        self.info: Dict[str, Any] = {}

    async def start(self) -> "AsyncPtcClient":
        """Starts the server and initializes it (``async with`` does this)."""
        self._process = await asyncio.create_subprocess_exec(*self._command, stdin=asyncio.subprocess.PIPE,
                                                             stdout=asyncio.subprocess.PIPE, stderr=self._stderr,
                                                             cwd=self._cwd, env=self._env, limit=_LINE_LIMIT)
        self._reader = asyncio.ensure_future(self._read())
        params: Dict[str, Any] = {"protocolVersion": PROTOCOL_VERSION}
        if self._config is not None:
            params["config"] = dict(self._config)
        try:
            self.info = await self._call("initialize", params)
        except BaseException:
            await self.close()
            raise
        return self

    async def __aenter__(self) -> "AsyncPtcClient":
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def run(self, program: str, tools: Tools = None, *, on_output: Optional[Callable[[Dict[str, Any]], Any]] = None,
                  cwd: Optional[str] = None, timeout_ms: Any = DEFAULT, cpu_time_ms: Any = DEFAULT,
                  policy: Optional[Mapping[str, Any]] = None, owner: Optional[str] = None, run_id: Optional[str] = None,
                  discard_completion: bool = False, on_policy_change: Optional[str] = None,
                  approval: Optional[Sequence[str]] = None,
                  traceparent: Optional[str] = None, tracestate: Optional[str] = None,
                  on_approval: Optional[Callable[[Dict[str, Any]], Any]] = None, approve_program: bool = False) -> Dict[str, Any]:
        """Runs a program; returns the result dict exactly as ``ptc run --json`` prints it. ``on_output``
        and ``on_approval`` may be async; ``traceparent`` and ``tracestate`` as in the blocking client."""
        table = tool_table(tools)
        run_id = run_id if run_id is not None else uuid.uuid4().hex
        params = run_params(program, table, run_id, cwd=cwd, timeout_ms=timeout_ms, cpu_time_ms=cpu_time_ms,
                            policy=policy, owner=owner, discard_completion=discard_completion,
                            on_policy_change=on_policy_change, approval=approval, approve_program=approve_program,
                            traceparent=traceparent, tracestate=tracestate)
        return await self._start_run("run", run_id, params, _Run(table, on_output, on_approval))

    async def resume(self, run_id: str, tools: Tools = None, *, on_output: Optional[Callable[[Dict[str, Any]], Any]] = None,
                     approval: Optional[Sequence[str]] = None,
                     on_approval: Optional[Callable[[Dict[str, Any]], Any]] = None) -> Dict[str, Any]:
        """Takes up a journaled run that never finished; see PtcClient.resume."""
        table = tool_table(tools)
        params = resume_params(run_id, table, approval)
        return await self._start_run("resume", run_id, params, _Run(table, on_output, on_approval))

    async def start_run(self, program: str, tools: Tools = None, *, yield_after_ms: int = 0,
                    on_output: Optional[Callable[[Dict[str, Any]], Any]] = None,
                    cwd: Optional[str] = None, timeout_ms: Any = DEFAULT, cpu_time_ms: Any = DEFAULT,
                    policy: Optional[Mapping[str, Any]] = None, owner: Optional[str] = None, run_id: Optional[str] = None,
                    discard_completion: bool = False, on_policy_change: Optional[str] = None,
                    approval: Optional[Sequence[str]] = None,
                    on_approval: Optional[Callable[[Dict[str, Any]], Any]] = None) -> AsyncRunHandle:
        """Starts a program and returns its handle once ``yield_after_ms`` has passed; see PtcClient.start_run."""
        table = tool_table(tools)
        run_id = run_id if run_id is not None else uuid.uuid4().hex
        params = run_params(program, table, run_id, cwd=cwd, timeout_ms=timeout_ms, cpu_time_ms=cpu_time_ms,
                            policy=policy, owner=owner, discard_completion=discard_completion,
                            on_policy_change=on_policy_change, approval=approval, yield_after_ms=yield_after_ms)
        run = _Run(table, on_output, on_approval)
        if run_id in self._runs:
            raise PtcError(f"run_id {run_id!r} is already in flight on this client")
        self._runs[run_id] = run
        try:
            first = await self._call_run("run", run_id, params)
        except BaseException:
            self._end_run(run_id, run)
            raise
        return AsyncRunHandle(self, run_id, run, first)

    def _end_run(self, run_id: str, run: _Run) -> None:
        if self._runs.get(run_id) is run:
            del self._runs[run_id]
        run.wake()

    async def _start_run(self, method: str, run_id: str, params: Mapping[str, Any], run: _Run) -> Dict[str, Any]:
        if run_id in self._runs:
            raise PtcError(f"run_id {run_id!r} is already in flight on this client")
        self._runs[run_id] = run
        try:
            return await self._call_run(method, run_id, params)
        finally:
            self._runs.pop(run_id, None)

    async def _call_run(self, method: str, run_id: str, params: Mapping[str, Any]) -> Any:
        """A run request whose task, cancelled, cancels the run: the server stops it, and the
        cancellation goes on once the run has ended (its carrier gone)."""
        if self._closed is not None:
            raise self._closed
        id = next(self._ids)
        future: "asyncio.Future[Any]" = asyncio.get_running_loop().create_future()
        self._pending[id] = future
        self._write(request(id, method, params))
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            cancel_id = next(self._ids)
            self._pending[cancel_id] = asyncio.get_running_loop().create_future()
            self._write(request(cancel_id, "cancel", {"runId": run_id}))
            await asyncio.wait([future])
            raise

    async def declarations(self, tools: Tools, *, budget: Optional[int] = None) -> str:
        """The TypeScript declarations a model reads for ``tools``; see ``PtcClient.declarations``."""
        return str((await self._call("declarations", declarations_params(tools, budget)))["declarations"])
    async def runs(self) -> list:
        return list((await self._call("runs", {}))["runs"])

    async def calls(self, run_id: str) -> list:
        return list((await self._call("calls", {"runId": run_id}))["calls"])

    async def approve(self, run_id: str, sequence: int, scope: Optional[str] = None) -> bool:
        return bool((await self._call("approve", decision_params(run_id, sequence, scope=scope)))["decided"])

    async def reject(self, run_id: str, sequence: int, reason: Optional[str] = None, scope: Optional[str] = None) -> bool:
        return bool((await self._call("reject", decision_params(run_id, sequence, reason, scope)))["decided"])

    async def cancel(self, run_id: str) -> bool:
        return bool((await self._call("cancel", {"runId": run_id}))["cancelled"])

    async def release(self, owner: str) -> bool:
        return bool((await self._call("release", {"owner": owner}))["released"])

    async def close(self, timeout: float = 10.0) -> Optional[int]:
        """Closes the server's stdin, which ends every run and carrier; returns its exit code."""
        process = self._process
        if process is None:
            return None
        if process.stdin is not None and not process.stdin.is_closing():
            process.stdin.close()
        try:
            code = await asyncio.wait_for(process.wait(), timeout)
        except asyncio.TimeoutError:
            process.kill()
            code = await process.wait()
        if self._reader is not None:
            await self._reader
        for task in list(self._tasks):
            task.cancel()
        return code

    # ---- the wire ----

    async def _call(self, method: str, params: Mapping[str, Any]) -> Any:
        if self._closed is not None:
            raise self._closed
        id = next(self._ids)
        future: "asyncio.Future[Any]" = asyncio.get_running_loop().create_future()
        self._pending[id] = future
        self._write(request(id, method, params))
        return await future

    def _write(self, line: bytes) -> None:
        stdin = self._process.stdin if self._process is not None else None
        if stdin is None or stdin.is_closing():
            return
        stdin.write(line)

    async def _read(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        stdout = self._process.stdout
        while True:
            line = await stdout.readline()
            if not line:
                break
            try:
                message = decode(line)
            except ValueError:
                print(f"ptc_client: ignored a line that is not JSON: {line[:200]!r}", file=sys.stderr)
                continue
            method = message.get("method")
            if method in ("invoke", "reconcile"):
                task = asyncio.ensure_future(self._invoke(message, reconcile=method == "reconcile"))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
            elif method == "output":
                await self._output(message.get("params") or {})
            elif method == "approval":
                task = asyncio.ensure_future(self._approval(message.get("params") or {}))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
            elif method is None:
                future = self._pending.pop(message.get("id"), None)
                if future is None or future.done():
                    continue
                if "error" in message:
                    future.set_exception(reply_error(message))
                else:
                    future.set_result(message.get("result"))
        code = await self._process.wait()
        self._closed = PtcError(f"ptc serve exited with code {code}")
        pending, self._pending = self._pending, {}
        for future in pending.values():
            if not future.done():
                future.set_exception(self._closed)

    async def _output(self, params: Mapping[str, Any]) -> None:
        run = self._runs.get(params.get("runId"))
        if run is None:
            return
        run.entries.append(params.get("entry"))
        run.wake()
        if run.on_output is None:
            return
        try:
            value = run.on_output(params.get("entry"))
            if inspect.isawaitable(value):
                await value
        except Exception as error:  # a broken callback must not stop the reader
            print(f"ptc_client: on_output raised {error!r}", file=sys.stderr)

    async def _approval(self, params: Mapping[str, Any]) -> None:
        run = self._runs.get(params.get("runId"))
        if run is None or run.on_approval is None:
            return
        try:
            value = run.on_approval(dict(params))
            if inspect.isawaitable(value):
                value = await value
            reply = approval_reply(params, value)
        except Exception as error:
            reply = approval_reply(params, error=error)
        if reply is None:
            return
        try:
            await self._call(*reply)
        except PtcError:
            pass  # the server went away; the run ends with it

    async def _invoke(self, message: Mapping[str, Any], reconcile: bool = False) -> None:
        id = message.get("id")
        params = message.get("params") or {}
        run = self._runs.get(params.get("runId"))
        tool = run.tools.get(params.get("name")) if run is not None else None
        if tool is None or (reconcile and tool.reconcile is None):
            self._write(unknown_tool(id, params.get("name")))
            return
        if reconcile:
            assert tool.reconcile is not None
            fn: Callable[..., Any] = tool.reconcile
            args: list = [{**(params.get("context") or {}), "args": list(params.get("args", []))}]
            keywords: Dict[str, Any] = {}
        else:
            fn = tool.fn
            args, keywords = tool_arguments(tool, params)
        try:
            if inspect.iscoroutinefunction(fn):
                value = await fn(*args, **keywords)
            else:
                value = await asyncio.to_thread(fn, *args, **keywords)
                if inspect.isawaitable(value):
                    value = await value
        except Exception as error:
            self._write(tool_error(id, error))
            return
        self._write(tool_result(id, value))
