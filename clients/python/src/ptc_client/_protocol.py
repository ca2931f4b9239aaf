"""What both clients share: the wire format, the tool table and the shapes of requests and replies.

Numbers stay exact both ways: Python's json reads every integer as an int (however large) and
writes it as digits, which ptc reads back as a bigint; floats are IEEE doubles on both sides.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import sysconfig
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, Mapping, Optional, Union, Tuple

#: The revision of the `ptc serve` protocol this client speaks.
PROTOCOL_VERSION = 1

#: The JSON-RPC code of a tool's error reply (the server range, as ptc's own codes).
TOOL_ERROR = -32000


class PtcError(Exception):
    """A JSON-RPC error reply from `ptc serve` (bad parameters, a busy owner), or the server went away."""

    def __init__(self, message: str, code: Optional[int] = None, data: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.data = data


def _scripts_directories() -> list:
    """Where pip puts a wheel's scripts for this interpreter: its own scheme (a venv's ``bin``),
    then the user scheme (``pip install --user``)."""
    if hasattr(sysconfig, "get_preferred_scheme"):  # Python >= 3.10
        user = sysconfig.get_preferred_scheme("user")
    else:
        user = f"{os.name}_user"
    places = [sysconfig.get_path("scripts")]
    try:
        places.append(sysconfig.get_path("scripts", user))
    except KeyError:
        pass
    return places


def default_binary() -> str:
    """The ptc executable to start when none is named: the one a ptc platform wheel installed
    for this interpreter, else ``ptc`` on PATH."""
    name = "ptc.exe" if os.name == "nt" else "ptc"
    places = _scripts_directories()
    for place in places:
        candidate = os.path.join(place, name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which(name)
    if found:
        return found
    raise PtcError(f"no ptc executable: none in {' or '.join(places)} and no {name} on PATH; "
                   "pass binary= (the path of a ptc binary), or pip install a ptc platform wheel")


@dataclass
class Tool:
    """A tool with its schema, for when a bare function is not enough to describe it to the model."""

    fn: Callable[..., Any]
    description: Optional[str] = None
    input_schema: Optional[Dict[str, Any]] = None
    output_schema: Optional[Dict[str, Any]] = None
    name: str = field(default="")
    #: With True, ``fn`` is also called with ``context=`` the call's context: ``{runId, sequence,
    #: attempt, idempotencyKey}``, the key the same for every attempt of one call and different
    #: for every other call, to hand to the service the tool calls.
    context: bool = False
    #: Settles a call that was running when the host died, on resume: called with the call's
    #: context plus ``args``; returns ``{"outcome": "took-effect", "value": ...}``,
    #: ``{"outcome": "run-again"}`` or ``{"outcome": "fail", "reason": ...}``.
    reconcile: Optional[Callable[[Dict[str, Any]], Any]] = None


ToolSpec = Union[Callable[..., Any], Tool]
Tools = Optional[Union[Mapping[str, ToolSpec], Iterable[Tool]]]


def tool_table(tools: Tools) -> Dict[str, Tool]:
    """Names to tools; a dotted name (``github.listIssues``) is a namespace in the program."""
    table: Dict[str, Tool] = {}
    if tools is None:
        return table
    items = tools.items() if isinstance(tools, Mapping) else ((tool.name, tool) for tool in tools)
    for name, spec in items:
        if not isinstance(name, str) or name == "":
            raise TypeError(f"a tool name must be a non-empty string, got {name!r}")
        if isinstance(spec, Tool):
            tool = Tool(spec.fn, spec.description, spec.input_schema, spec.output_schema, name, spec.context, spec.reconcile)
        elif callable(spec):
            tool = Tool(spec, name=name)
        else:
            raise TypeError(f"tool {name!r} must be a function or a Tool, got {spec!r}")
        table[name] = tool
    return table


def describe_tools(table: Mapping[str, Tool]) -> list:
    described = []
    for name, tool in table.items():
        entry: Dict[str, Any] = {"name": name}
        if tool.description is not None:
            entry["description"] = tool.description
        if tool.input_schema is not None:
            entry["inputSchema"] = tool.input_schema
        if tool.output_schema is not None:
            entry["outputSchema"] = tool.output_schema
        described.append(entry)
    return described


def reconciled_names(table: Mapping[str, Tool]) -> list:
    """The tools whose in-doubt calls this client reconciles (the ``reconcile`` parameter)."""
    return [name for name, tool in table.items() if tool.reconcile is not None]


def tool_arguments(tool: Tool, params: Mapping[str, Any]) -> Tuple[list, Dict[str, Any]]:
    """The positional and keyword arguments of one invoke: ``context=`` for a tool that asked for it."""
    args = list(params.get("args", []))
    return args, ({"context": dict(params.get("context") or {})} if tool.context else {})


def declarations_params(tools: Tools, budget: Optional[int]) -> Dict[str, Any]:
    params: Dict[str, Any] = {"tools": describe_tools(tool_table(tools))}
    if budget is not None:
        params["budget"] = budget
    return params


class _Default:
    def __repr__(self) -> str:
        return "DEFAULT"


#: ``timeout_ms=DEFAULT`` (the default) uses the server's configured deadline; ``None`` means no deadline.
#: ``cpu_time_ms`` works the same way for the CPU-time budget.
DEFAULT: Any = _Default()


def run_params(program: str, table: Mapping[str, Tool], run_id: str, *, cwd: Optional[str], timeout_ms: Any,
               cpu_time_ms: Any, policy: Optional[Mapping[str, Any]], owner: Optional[str],
               discard_completion: bool, on_policy_change: Optional[str] = None,
               approval: Optional[Iterable[str]] = None, approve_program: bool = False,
               traceparent: Optional[str] = None, tracestate: Optional[str] = None,
               yield_after_ms: Optional[int] = None) -> Dict[str, Any]:
    if not isinstance(program, str):
        raise TypeError(f"program must be a string, got {program!r}")
    params: Dict[str, Any] = {"program": program, "runId": run_id, "tools": describe_tools(table)}
    if cwd is not None:
        params["cwd"] = str(cwd)
    if timeout_ms is not DEFAULT:
        params["timeoutMs"] = timeout_ms
    if cpu_time_ms is not DEFAULT:
        params["cpuTimeMs"] = cpu_time_ms
    if policy is not None:
        params["policy"] = dict(policy)
    if owner is not None:
        params["owner"] = owner
    if discard_completion:
        params["discardCompletion"] = True
    if on_policy_change is not None:
        params["onPolicyChange"] = on_policy_change
    if approval is not None:
        params["approval"] = list(approval)
    reconcile = reconciled_names(table)
    if reconcile:
        params["reconcile"] = reconcile
    if approve_program:
        params["approveProgram"] = True
    # The server checks the W3C form and says what is wrong with a malformed one.
    for field, value in (("traceparent", traceparent), ("tracestate", tracestate)):
        if value is None:
            continue
        if not isinstance(value, str):
            raise TypeError(f"{field} must be a string, got {value!r}")
        params[field] = value
    if yield_after_ms is not None:
        params["yieldAfterMs"] = yield_after_ms
    return params


def resume_params(run_id: str, table: Mapping[str, Tool], approval: Optional[Iterable[str]]) -> Dict[str, Any]:
    params: Dict[str, Any] = {"runId": run_id, "tools": describe_tools(table)}
    if approval is not None:
        params["approval"] = list(approval)
    reconcile = reconciled_names(table)
    if reconcile:
        params["reconcile"] = reconcile
    return params


def decision_params(run_id: str, sequence: int, reason: Optional[str] = None, scope: Optional[str] = None) -> Dict[str, Any]:
    """The params of approve/reject: ``scope`` "call", "run" (the rest of the run) or "owner" (the owner's later runs)."""
    params: Dict[str, Any] = {"runId": run_id, "sequence": sequence}
    if reason is not None:
        params["reason"] = reason
    if scope is not None:
        params["scope"] = scope
    return params


def is_final(look: Mapping[str, Any]) -> bool:
    """Whether a look at a run is its final result (not ``{"status": "running", ...}``)."""
    return look.get("status") != "running"


def approval_decision(decision: Any) -> Optional[Dict[str, Any]]:
    """What an ``on_approval`` callback returned, as the method and reason to send: True approves,
    False rejects, a string rejects with that reason, a dict ``{"approved", "reason"?, "scope"?}``
    decides with a scope, None leaves the decision to approve()/reject()."""
    if decision is None:
        return None
    if isinstance(decision, Mapping):
        approved = decision.get("approved")
        if not isinstance(approved, bool):
            raise TypeError(f"on_approval's dict needs \"approved\": True or False, got {decision!r}")
        answer: Dict[str, Any] = {"method": "approve" if approved else "reject"}
        if not approved and decision.get("reason") is not None:
            answer["reason"] = str(decision["reason"])
        if decision.get("scope") is not None:
            answer["scope"] = decision["scope"]
        return answer
    if decision is True:
        return {"method": "approve"}
    if decision is False:
        return {"method": "reject"}
    if isinstance(decision, str):
        return {"method": "reject", "reason": decision}
    raise TypeError(f"on_approval must return True, False, a rejection reason, a decision dict or None, got {decision!r}")


def approval_reply(params: Mapping[str, Any], value: Any = None,
                   error: Optional[BaseException] = None) -> Optional[Tuple[str, Dict[str, Any]]]:
    """The approve or reject call (method, params) for an approval notification, from what
    ``on_approval`` returned or raised; None when the callback left the decision for later. A
    callback that raised, or returned something else, rejects: nobody approved the call."""
    decision: Optional[Dict[str, Any]] = None
    if error is None:
        try:
            decision = approval_decision(value)
        except TypeError as bad:
            error = bad
    if error is not None:
        decision = {"method": "reject", "reason": f"on_approval raised {error!r}"}
    if decision is None:
        return None
    method = decision.pop("method")
    return method, {"runId": params.get("runId"), "sequence": params.get("sequence"), **decision}


def encode(message: Mapping[str, Any]) -> bytes:
    # allow_nan=False: NaN and Infinity are not JSON, and ptc would refuse the line.
    return (json.dumps(message, ensure_ascii=False, allow_nan=False, separators=(",", ":")) + "\n").encode("utf-8")


def decode(line: bytes) -> Dict[str, Any]:
    return json.loads(line)


def request(id: int, method: str, params: Mapping[str, Any]) -> bytes:
    return encode({"jsonrpc": "2.0", "id": id, "method": method, "params": params})


def tool_result(id: Any, value: Any) -> bytes:
    """The reply to an invoke; a value that is not JSON becomes an error the program sees."""
    try:
        return encode({"jsonrpc": "2.0", "id": id, "result": value})
    except (TypeError, ValueError) as error:
        return encode({"jsonrpc": "2.0", "id": id, "error": {"code": TOOL_ERROR, "message": f"the tool returned a value that is not JSON: {error}", "data": {"code": "PTC_INVALID_RESULT"}}})


def reconcile_result(id: Any, value: Any) -> bytes:
    """The reply to a reconcile request: the tool's reconcile answer as it returned it (ptc checks it)."""
    return tool_result(id, value)


def tool_error(id: Any, error: BaseException) -> bytes:
    """The reply for a tool that raised: its message, and its ``code`` attribute when it has one."""
    message = str(error) or type(error).__name__
    data: Dict[str, Any] = {"type": type(error).__name__}
    code = getattr(error, "code", None)
    if isinstance(code, (str, int)) and not isinstance(code, bool):
        data["code"] = str(code)
    return encode({"jsonrpc": "2.0", "id": id, "error": {"code": TOOL_ERROR, "message": message, "data": data}})


def unknown_tool(id: Any, name: Any) -> bytes:
    return encode({"jsonrpc": "2.0", "id": id, "error": {"code": TOOL_ERROR, "message": f"this client has no tool named {name!r} for that run", "data": {"code": "PTC_UNKNOWN_TOOL"}}})


def reply_error(message: Mapping[str, Any]) -> PtcError:
    error = message.get("error") or {}
    return PtcError(str(error.get("message", "ptc serve answered with an error")), error.get("code"), error.get("data"))
