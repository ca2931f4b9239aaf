"""The Python side of the `ptc serve` bench (test/bench/serve.ts runs it): a warm server's `run` of
`return 1` and sequential binding calls from Python, each against a raw JSON-line ping-pong over
stdio between Python and a Node process. Prints one JSON object of figures on stdout.

    python3 serve_driver.py <dist/ptc> <node> <clients/python/src>
"""
import json
import statistics
import subprocess
import sys
import time

binary, node, client_src = sys.argv[1:4]
sys.path.insert(0, client_src)
from ptc_client import PtcClient  # noqa: E402

# The floor: parse and re-encode each line, as the server does, with no RPC and no validation.
ECHO = """
let pending = '';
process.stdin.setEncoding('utf8').on('data', (chunk) => {
  pending += chunk;
  let newline;
  while ((newline = pending.indexOf('\\n')) !== -1) {
    const line = pending.slice(0, newline);
    pending = pending.slice(newline + 1);
    process.stdout.write(JSON.stringify(JSON.parse(line)) + '\\n');
  }
});
"""


class Echo:
    def __init__(self):
        self.process = subprocess.Popen([node, "-e", ECHO], stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def round_trip(self, id):
        self.process.stdin.write((json.dumps({"jsonrpc": "2.0", "id": id, "method": "ping", "params": {"args": [id]}}) + "\n").encode())
        self.process.stdin.flush()
        reply = json.loads(self.process.stdout.readline())
        assert reply["id"] == id

    def close(self):
        self.process.stdin.close()
        assert self.process.wait() == 0


def timed(fn):
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def main():
    echo = Echo()
    with PtcClient(binary=binary) as ptc:
        def run_one():
            result = ptc.run("return 1")
            assert result["status"] == "ok" and result["value"] == 1, result

        for i in range(3):
            run_one()
            echo.round_trip(i)
        raw_ms, run_ms, retained_ms = [], [], []
        # A retained owner's warm environment: the run is one round trip to a carrier that is already up.
        with PtcClient(binary=binary, config={"executionMode": "persistent-in-memory"}) as kept:
            def run_kept():
                result = kept.run("1", owner="bench")
                assert result["status"] == "ok" and result["value"] == 1, result

            for _ in range(3):
                run_kept()
            for i in range(30):
                raw_ms.append(timed(lambda: echo.round_trip(i)))
                retained_ms.append(timed(run_kept))
                time.sleep(0.1)  # let the next spare carrier boot, as the library's bench does
                run_ms.append(timed(run_one))

        def raw_rate(n):
            start = time.perf_counter()
            for i in range(n):
                echo.round_trip(i)
            return n / (time.perf_counter() - start)

        def ptc_rate(n):
            stamps = []

            def ping(x):
                stamps.append(time.perf_counter())
                return x

            result = ptc.run(f"for (let i = 0; i < {n}; i++) await ping(i)", tools={"ping": ping}, timeout_ms=None)
            assert result["status"] == "ok" and len(stamps) == n, result
            return (n - 1) / (stamps[-1] - stamps[0])

        sizes = {"raw": max(1000, int(raw_rate(2000) * 1.5)), "ptc": max(1000, int(ptc_rate(1000) * 1.5))}
        raw_rates, ptc_rates = [], []
        for _ in range(5):
            raw_rates.append(raw_rate(sizes["raw"]))
            ptc_rates.append(ptc_rate(sizes["ptc"]))
    echo.close()
    print(json.dumps({
        "rawMs": statistics.median(raw_ms), "runMs": statistics.median(run_ms), "retainedMs": statistics.median(retained_ms),
        "rawP90Ms": sorted(raw_ms)[26], "runP90Ms": sorted(run_ms)[26], "retainedP90Ms": sorted(retained_ms)[26],
        "rawRate": statistics.median(raw_rates), "ptcRate": statistics.median(ptc_rates), "sizes": sizes,
    }))


main()
