"""PtcClient: `ptc serve` driven from threads. A reader thread routes replies to the waiting call,
runs each tool call on a worker thread (so tools run concurrently and never block the reader)
and hands output entries to ``on_output`` in the order they happened. The workers are daemon
threads, reused across calls and added when all are busy: a tool still blocked when the harness
exits does not keep the interpreter alive, as concurrent.futures' joined workers would."""
from __future__ import annotations

import asyncio
import inspect
import itertools
import queue
import subprocess
import sys
import threading
import uuid
from concurrent.futures import Future
from typing import IO, Any, Callable, Dict, Mapping, Optional, Sequence

from ._protocol import (DEFAULT, default_binary, PROTOCOL_VERSION, PtcError, Tool, Tools, approval_reply, decision_params, declarations_params, decode, resume_params, tool_arguments,
                        describe_tools, is_final, reply_error, request, run_params,
                        tool_error, tool_result, tool_table, unknown_tool)


class _Workers:
    """Daemon threads that run tool calls; one more starts whenever none is idle."""

    def __init__(self) -> None:
        self._queue: "queue.SimpleQueue[Callable[[], None]]" = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0

    def submit(self, task: Callable[[], None]) -> None:
        with self._lock:
            start = self._idle == 0
            if not start:
                self._idle -= 1
        self._queue.put(task)
        if start:
            threading.Thread(target=self._work, name="ptc-tool", daemon=True).start()

    def _work(self) -> None:
        while True:
            self._queue.get()()
            with self._lock:
                self._idle += 1


class _Run:
    def __init__(self, tools: Dict[str, Tool], on_output: Optional[Callable[[Dict[str, Any]], Any]],
                 on_approval: Optional[Callable[[Dict[str, Any]], Any]] = None) -> None:
        self.tools = tools
        self.on_output = on_output
        self.on_approval = on_approval
        #: Output entries for the handle's iterators, in order.
        self.entries: list = []
        self.changed = threading.Condition()

    def add(self, entry: Any) -> None:
        with self.changed:
            self.entries.append(entry)
            self.changed.notify_all()


class RunHandle:
    """A run in flight on a ``PtcClient`` (from ``start_run``): look at it with ``wait``, stream its
    output by iterating, take its final result with ``result``, stop it with ``cancel``."""

    def __init__(self, client: "PtcClient", run_id: str, run: _Run, first: Dict[str, Any]) -> None:
        self.run_id = run_id
        self._client = client
        self._run = run
        self._lock = threading.Lock()
        self._looked: list = list(first.get("output") or [])
        #: Output of the first look that no wait() has returned yet.
        self._unseen: list = list(self._looked)
        self._final: Optional[Dict[str, Any]] = first if is_final(first) else None
        self._watching = False
        if self._final is not None:
            client._end_run(run_id, run)

    def wait(self, timeout_ms: Optional[int] = None) -> Dict[str, Any]:
        """The output since the last look: ``{"status": "running", "runId", "output"}`` once
        ``timeout_ms`` passes, else the final result, whose ``output`` holds what no earlier look
        returned. Without ``timeout_ms`` it waits for the end."""
        with self._lock:
            unseen, self._unseen = self._unseen, []
            final = self._final
        if final is not None:
            return {**final, "output": unseen}
        params: Dict[str, Any] = {"runId": self.run_id}
        if timeout_ms is not None:
            params["timeoutMs"] = timeout_ms
        look = self._client._call("wait", params)
        output = list(look.get("output") or [])
        with self._lock:
            self._looked.extend(output)
            if is_final(look):
                self._final = look
        if is_final(look):
            self._client._end_run(self.run_id, self._run)
        return {**look, "output": unseen + output}

    def result(self) -> Dict[str, Any]:
        """Waits for the end; the final result with every output entry of the run."""
        while True:
            look = self.wait()
            if is_final(look):
                with self._lock:
                    return {**look, "output": list(self._looked)}

    def cancel(self) -> bool:
        """Stops the run (its result fails as ``abort``); False when it had already ended."""
        return self._client.cancel(self.run_id)

    def __iter__(self):
        """Every output entry of the run from the first, as it arrives, until the run ends. The
        iterator takes the looks itself (it waits for the result in a thread): iterate, or wait."""
        with self._lock:
            watch = self._final is None and not self._watching
            self._watching = True
        if watch:
            threading.Thread(target=self._watch_end, name="ptc-run-end", daemon=True).start()
        at = 0
        while True:
            with self._run.changed:
                while at >= len(self._run.entries):
                    if self._final is not None and at >= len(self._run.entries):
                        return
                    self._run.changed.wait()
                entry = self._run.entries[at]
            at += 1
            yield entry

    def _watch_end(self) -> None:
        try:
            self.result()
        except PtcError:
            pass
        with self._run.changed:
            self._run.changed.notify_all()


class PtcClient:
    """Starts ``binary serve`` and runs programs through it; use it as a context manager.

    ``config`` is ptc's runtime configuration (``{"timeoutMs": 30000, "executionMode": ...}``),
    sent with ``initialize``; ``info`` holds the server's answer (versions, program format,
    ``executionInstructions`` for the model, working sandbox backends).
    """

    def __init__(self, binary: Optional[str] = None, *, config: Optional[Mapping[str, Any]] = None, args: Sequence[str] = (),
                 cwd: Optional[str] = None, env: Optional[Mapping[str, str]] = None, stderr: Optional[IO[Any]] = None) -> None:
        self._process = subprocess.Popen([binary or default_binary(), "serve", *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=stderr, cwd=cwd, env=None if env is None else dict(env))
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._pending: Dict[int, "Future[Any]"] = {}
        self._runs: Dict[str, _Run] = {}
        self._closed: Optional[PtcError] = None
        self._workers = _Workers()
        self._reader = threading.Thread(target=self._read, name="ptc-reader", daemon=True)
        self._reader.start()
        try:
            params: Dict[str, Any] = {"protocolVersion": PROTOCOL_VERSION}
            if config is not None:
                params["config"] = dict(config)
            self.info: Dict[str, Any] = self._call("initialize", params)
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> "PtcClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def run(self, program: str, tools: Tools = None, *, on_output: Optional[Callable[[Dict[str, Any]], Any]] = None,
            cwd: Optional[str] = None, timeout_ms: Any = DEFAULT, cpu_time_ms: Any = DEFAULT,
            policy: Optional[Mapping[str, Any]] = None, owner: Optional[str] = None, run_id: Optional[str] = None,
            discard_completion: bool = False, on_policy_change: Optional[str] = None,
            approval: Optional[Sequence[str]] = None,
            traceparent: Optional[str] = None, tracestate: Optional[str] = None,
            on_approval: Optional[Callable[[Dict[str, Any]], Any]] = None, approve_program: bool = False) -> Dict[str, Any]:
        """Runs a program; returns the result dict exactly as ``ptc run --json`` prints it.

        ``tools`` maps names to functions (plain or ``async``) or ``Tool``s; a function's exception
        becomes a ``BindingError`` in the program. ``timeout_ms=None`` runs without a deadline;
        ``cpu_time_ms`` bounds the CPU time of the carrier's process tree for this run (``None``: no budget).
        Pass ``run_id`` to ``cancel()`` the run from another thread. A run whose ``policy`` (or, with no
        ``workspaceRoot``, whose ``cwd`` outside the workspace) would change a retained ``owner``'s raises
        ``PtcError`` unless ``on_policy_change="replace"`` asks for a new environment.
        ``approval`` names the tools whose calls wait for a person: each waiting call goes to
        ``on_approval`` (``{runId, sequence, kind, name, args}``, on a worker thread), which returns True to
        approve, False or a reason to reject, ``{"approved", "reason", "scope"}`` to decide with a scope, or
        None to decide later with ``approve()``/``reject()``. ``approve_program=True`` asks first about the
        whole program (``{runId, sequence: 0, kind: "program", program, names}``).
        ``traceparent`` (and ``tracestate``), a W3C trace context such as your tracer's current span
        gives, makes the server's span of the run a child of that span (docs/traces.md).
        """
        table = tool_table(tools)
        run_id = run_id if run_id is not None else uuid.uuid4().hex
        params = run_params(program, table, run_id, cwd=cwd, timeout_ms=timeout_ms, cpu_time_ms=cpu_time_ms,
                            policy=policy, owner=owner, discard_completion=discard_completion,
                            on_policy_change=on_policy_change, approval=approval, approve_program=approve_program,
                            traceparent=traceparent, tracestate=tracestate)
        with self._lock:
            if run_id in self._runs:
                raise PtcError(f"run_id {run_id!r} is already in flight on this client")
            self._runs[run_id] = _Run(table, on_output, on_approval)
        try:
            return self._call("run", params, cancel_run=run_id)
        finally:
            with self._lock:
                self._runs.pop(run_id, None)

    def start_run(self, program: str, tools: Tools = None, *, yield_after_ms: int = 0,
              on_output: Optional[Callable[[Dict[str, Any]], Any]] = None,
              cwd: Optional[str] = None, timeout_ms: Any = DEFAULT, cpu_time_ms: Any = DEFAULT,
              policy: Optional[Mapping[str, Any]] = None, owner: Optional[str] = None, run_id: Optional[str] = None,
              discard_completion: bool = False, on_policy_change: Optional[str] = None,
              approval: Optional[Sequence[str]] = None,
              on_approval: Optional[Callable[[Dict[str, Any]], Any]] = None) -> RunHandle:
        """Starts a program and returns its ``RunHandle`` once ``yield_after_ms`` has passed (or the
        run ended sooner); the tools keep being served while it runs. Takes ``run``'s arguments."""
        table = tool_table(tools)
        run_id = run_id if run_id is not None else uuid.uuid4().hex
        params = run_params(program, table, run_id, cwd=cwd, timeout_ms=timeout_ms, cpu_time_ms=cpu_time_ms,
                            policy=policy, owner=owner, discard_completion=discard_completion,
                            on_policy_change=on_policy_change, approval=approval, yield_after_ms=yield_after_ms)
        run = _Run(table, on_output, on_approval)
        with self._lock:
            if run_id in self._runs:
                raise PtcError(f"run_id {run_id!r} is already in flight on this client")
            self._runs[run_id] = run
        try:
            first = self._call("run", params, cancel_run=run_id)
        except BaseException:
            self._end_run(run_id, run)
            raise
        return RunHandle(self, run_id, run, first)

    def _end_run(self, run_id: str, run: _Run) -> None:
        with self._lock:
            if self._runs.get(run_id) is run:
                del self._runs[run_id]
        with run.changed:
            run.changed.notify_all()

    def declarations(self, tools: Tools, *, budget: Optional[int] = None) -> str:
        """The TypeScript declarations a model reads for ``tools`` (as ``run`` takes them).

        With ``config={"discovery": True}`` they end with ``search`` and ``describe``, and past
        ``budget`` characters they list the namespaces instead of every tool, for the program to
        find them with ``search``.
        """
        return str(self._call("declarations", declarations_params(tools, budget))["declarations"])

    def cancel(self, run_id: str) -> bool:
        """Ends the run as ``abort``; False when no such run was in flight."""
        return bool(self._call("cancel", {"runId": run_id})["cancelled"])

    def resume(self, run_id: str, tools: Tools = None, *, on_output: Optional[Callable[[Dict[str, Any]], Any]] = None,
               approval: Optional[Sequence[str]] = None,
               on_approval: Optional[Callable[[Dict[str, Any]], Any]] = None) -> Dict[str, Any]:
        """Takes up a journaled run that never finished (a config with ``journal``): its program runs
        again, the calls the journal answered are not made again, and the rest go to ``tools``."""
        table = tool_table(tools)
        params = resume_params(run_id, table, approval)
        with self._lock:
            if run_id in self._runs:
                raise PtcError(f"run_id {run_id!r} is already in flight on this client")
            self._runs[run_id] = _Run(table, on_output, on_approval)
        try:
            return self._call("resume", params, cancel_run=run_id)
        finally:
            with self._lock:
                self._runs.pop(run_id, None)

    def runs(self) -> list:
        """The journaled runs, oldest first (a config with ``journal``)."""
        return list(self._call("runs", {})["runs"])

    def calls(self, run_id: str) -> list:
        """One journaled run's binding calls, in sequence."""
        return list(self._call("calls", {"runId": run_id})["calls"])

    def approve(self, run_id: str, sequence: int, scope: Optional[str] = None) -> bool:
        """Lets the run's waiting call at ``sequence`` go ahead (sequence 0: the program); ``scope="run"``
        or ``"owner"`` approves the tool's later calls too. False when it is not waiting (any more)."""
        return bool(self._call("approve", decision_params(run_id, sequence, scope=scope))["decided"])

    def reject(self, run_id: str, sequence: int, reason: Optional[str] = None, scope: Optional[str] = None) -> bool:
        """Makes the waiting call throw ``PTC_REJECTED`` in the program; False when it is not waiting."""
        return bool(self._call("reject", decision_params(run_id, sequence, reason, scope))["decided"])

    def release(self, owner: str) -> bool:
        """Ends the owner's retained environment; False when it had none."""
        return bool(self._call("release", {"owner": owner})["released"])

    def close(self, timeout: float = 10.0) -> Optional[int]:
        """Closes the server's stdin, which ends every run and carrier; returns its exit code."""
        try:
            if self._process.stdin is not None and not self._process.stdin.closed:
                with self._write_lock:
                    self._process.stdin.close()
        except OSError:
            pass
        try:
            code = self._process.wait(timeout)
        except subprocess.TimeoutExpired:
            self._process.kill()
            code = self._process.wait()
        self._reader.join(timeout)
        return code

    # ---- the wire ----

    def _call(self, method: str, params: Mapping[str, Any], cancel_run: Optional[str] = None) -> Any:
        future: "Future[Any]" = Future()
        with self._lock:
            if self._closed is not None:
                raise self._closed
            id = next(self._ids)
            self._pending[id] = future
        self._write(request(id, method, params))
        if cancel_run is None:
            return future.result()
        try:
            return future.result()
        except KeyboardInterrupt:
            # Ctrl-C stops the run too: the server cancels it, and the interrupt goes on once the
            # run has ended (its carrier gone). A second Ctrl-C stops waiting for that.
            with self._lock:
                cancel_id = next(self._ids)
                self._pending[cancel_id] = Future()
            self._write(request(cancel_id, "cancel", {"runId": cancel_run}))
            future.exception()
            raise

    def _write(self, line: bytes) -> None:
        with self._write_lock:
            stdin = self._process.stdin
            if stdin is None or stdin.closed:
                return
            try:
                stdin.write(line)
                stdin.flush()
            except (BrokenPipeError, ValueError):
                pass

    def _read(self) -> None:
        assert self._process.stdout is not None
        for line in self._process.stdout:
            try:
                message = decode(line)
            except ValueError:
                print(f"ptc_client: ignored a line that is not JSON: {line[:200]!r}", file=sys.stderr)
                continue
            method = message.get("method")
            if method == "invoke":
                self._workers.submit(lambda message=message: self._invoke(message))
            elif method == "reconcile":
                self._workers.submit(lambda message=message: self._invoke(message, reconcile=True))
            elif method == "output":
                self._output(message.get("params") or {})
            elif method == "approval":
                self._workers.submit(lambda params=message.get("params") or {}: self._approval(params))
            elif method is None:
                with self._lock:
                    future = self._pending.pop(message.get("id"), None)
                if future is None:
                    continue
                if "error" in message:
                    future.set_exception(reply_error(message))
                else:
                    future.set_result(message.get("result"))
        code = self._process.wait()
        error = PtcError(f"ptc serve exited with code {code}")
        with self._lock:
            self._closed = error
            pending, self._pending = self._pending, {}
        for future in pending.values():
            future.set_exception(error)

    def _output(self, params: Mapping[str, Any]) -> None:
        with self._lock:
            run = self._runs.get(params.get("runId"))
        if run is None:
            return
        run.add(params.get("entry"))
        if run.on_output is None:
            return
        try:
            run.on_output(params.get("entry"))
        except Exception as error:  # a broken callback must not stop the reader
            print(f"ptc_client: on_output raised {error!r}", file=sys.stderr)

    def _approval(self, params: Mapping[str, Any]) -> None:
        with self._lock:
            run = self._runs.get(params.get("runId"))
        if run is None or run.on_approval is None:
            return
        try:
            reply = approval_reply(params, run.on_approval(dict(params)))
        except Exception as error:
            reply = approval_reply(params, error=error)
        if reply is None:
            return
        try:
            self._call(*reply)
        except PtcError:
            pass  # the server went away; the run ends with it

    def _invoke(self, message: Mapping[str, Any], reconcile: bool = False) -> None:
        id = message.get("id")
        params = message.get("params") or {}
        with self._lock:
            run = self._runs.get(params.get("runId"))
        tool = run.tools.get(params.get("name")) if run is not None else None
        if tool is None or (reconcile and tool.reconcile is None):
            self._write(unknown_tool(id, params.get("name")))
            return
        try:
            if reconcile:
                assert tool.reconcile is not None
                value = tool.reconcile({**(params.get("context") or {}), "args": list(params.get("args", []))})
            else:
                args, keywords = tool_arguments(tool, params)
                value = tool.fn(*args, **keywords)
            if inspect.isawaitable(value):
                value = asyncio.run(_awaited(value))
        except Exception as error:
            self._write(tool_error(id, error))
            return
        self._write(tool_result(id, value))


async def _awaited(value: Any) -> Any:
    return await value
