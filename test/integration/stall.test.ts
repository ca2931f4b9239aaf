// Programs that can never finish fail fast (carrier/channel/stall.ts): with nothing left that could
// settle the awaited promise, the run is an `exception` that says so instead of waiting out a
// 60-second deadline; anything that can still call back keeps it waiting until it does. Every
// evaluator, and retained environments survive the failure.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Bindings, Failure, RunResult, RuntimeConfig } from '../../host/index.ts';
import { runtimesPerTest } from '../helpers/runtime.ts';
import { show, valueOf } from '../helpers/assert.ts';

const STALL = 'ptc: the program is waiting on a promise that nothing can settle: no binding call, timer, I/O or child process is pending';
// Long enough that a run which waited for its deadline instead of failing fast is caught below.
const DEADLINE_MS = 60_000;
// The suite's own guard: a run still pending after this has not been detected as stalled. This
// is a test timeout (the deadline is far beyond it), not an assertion about speed.
const GUARD_MS = 30_000;


const runtimeWith = runtimesPerTest(test, { timeoutMs: DEADLINE_MS });

async function guarded(label: string, result: Promise<RunResult>): Promise<RunResult> {
  let timer: NodeJS.Timeout | undefined;
  const guard = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${label}: still waiting after ${GUARD_MS} ms (deadline ${DEADLINE_MS} ms)`)), GUARD_MS);
  });
  try {
    return await Promise.race([result, guard]);
  } finally {
    clearTimeout(timer);
  }
}

function stalled(label: string, result: RunResult): Failure {
  assert.is(result.status, 'failed', `${label}: expected the stall failure, got ${show(result)}`);
  const failure = (result as Extract<RunResult, { status: 'failed' }>).failure;
  assert.equal({ kind: failure.kind, name: failure.name, message: failure.message }, { kind: 'exception', name: 'Error', message: STALL }, label);
  return failure;
}

const NEVER_SETTLES: Array<[string, string]> = [
  ['a bare never-settling promise', 'await new Promise(() => {});'],
  ['after a binding call completed', 'await echo(1); await new Promise(() => {});'],
  ['after a timer fired', 'await new Promise((resolve) => setTimeout(resolve, 20)); await new Promise(() => {});'],
  ['after a file was read', 'await (await import("node:fs/promises")).readFile("/etc/hostname"); await new Promise(() => {});'],
  ['after a child process exited', 'const { spawn } = await import("node:child_process"); await new Promise((resolve) => spawn("/bin/sh", ["-c", "exit 0"]).on("close", resolve)); await new Promise(() => {});'],
  ['after a server closed', 'const net = await import("node:net"); const server = net.createServer(); await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve)); await new Promise((resolve) => server.close(resolve)); await new Promise(() => {});'],
  ['an interval that was cleared', 'const id = setInterval(() => {}, 5); await new Promise((resolve) => setTimeout(resolve, 20)); clearInterval(id); await new Promise(() => {});'],
  // Node's rule: unref() says "do not wait for me"; `node program.js` would not wait either.
  ['only an unref\'d timer', 'await new Promise((resolve) => setTimeout(resolve, 50_000).unref());'],
  ['a MessagePort that nobody listens on', 'const { port1, port2 } = new MessageChannel(); port2.postMessage(1); await new Promise((resolve) => { globalThis.unheard = [port1, resolve]; });'],
  ['a promise chain with one that never settles', 'await Promise.all([Promise.resolve(1), new Promise(() => {}).then(() => 2)]);'],
  ['Atomics.waitAsync without a timeout and no other thread', 'const cell = new Int32Array(new SharedArrayBuffer(4)); await Atomics.waitAsync(cell, 0, 0).value;'],
];

const echo: Bindings = { echo: async (value: unknown) => value };

test('never settles (per-call): every case fails fast as an exception that says why', async () => {
  const runtime = runtimeWith();
  for (const [label, program] of NEVER_SETTLES) {
    stalled(label, await guarded(label, runtime.run(runtime.resolve({ program, bindings: echo }))));
  }
});

test('never settles (vm-script): the evaluation fails fast', async () => {
  const runtime = runtimeWith({ executionMode: 'vm-script' });
  for (const program of ['await new Promise(() => {}); 0', 'await echo(1); await new Promise(() => {}); 0']) {
    stalled(program, await guarded(program, runtime.run(runtime.resolve({ program, bindings: echo }))));
  }
});

const RETAINED: Array<[string, RuntimeConfig, string, string]> = [
  ['vm-script + scriptPersistence', { executionMode: 'vm-script', scriptPersistence: true }, 'var kept = 41; kept', 'await new Promise(() => {}); 0'],
  ['scoped REPL', { executionMode: 'persistent-in-memory' }, 'var kept = 41; kept', 'await new Promise(() => {}); 0'],
  ['Node REPL', { executionMode: 'persistent-in-memory', replScoped: false }, 'var kept = 41; kept', 'await new Promise(() => {}); 0'],
];

for (const [label, config, setup, program] of RETAINED) {
  test(`never settles (${label}): the run fails fast and the environment survives it`, async () => {
    const runtime = runtimeWith(config);
    const owner = {};
    const run = (source: string) => guarded(label, runtime.run(runtime.resolve({ program: source, stateOwner: owner, bindings: echo })));
    assert.is(valueOf(await run(setup), label), 41);
    // Like any exception, it leaves the environment as it is (no `state`: nothing was cleared).
    const failure = stalled(label, await run(program));
    assert.is(failure.state, undefined, `${label}: ${show(failure)}`);
    const after = await run('await echo(kept + 1)');
    assert.is(valueOf(after, label), 42);
    assert.equal(after.environment, { fresh: false });
    // A stall after a binding call of the same environment is still found.
    stalled(label, await run('await echo(1); await new Promise(() => {}); 0'));
  });
}

for (const backend of ['bwrap', 'node-permission'] as const) {
  test(`never settles and keeps waiting under the ${backend} sandbox`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ptc-stall-ws-'));
    try {
      const runtime = runtimeWith({ sandbox: { backend, require: 'partial' }, policy: { mode: 'workspace-write', workspaceRoot: dir } });
      const run = (program: string) => guarded(backend, runtime.run(runtime.resolve({ program, cwd: dir, bindings: echo })));
      const failed = await run('await echo(1); await new Promise(() => {});');
      stalled(backend, failed);
      assert.is(failed.sandbox.backend, backend);
      assert.is(valueOf(await run('return await new Promise((resolve) => setTimeout(() => resolve("timer"), 200))'), backend), 'timer');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
}

test('never settles (environment initializer): the initializer failed, so the environment ends before the program', async () => {
  const runtime = runtimeWith({ executionMode: 'persistent-in-memory' });
  runtime.registerEnvironmentInitializer('globalThis.ready = false; await new Promise(() => {}); globalThis.ready = true');
  const owner = {};
  const result = await guarded('initializer', runtime.run(runtime.resolve({ program: 'inspect("never")', stateOwner: owner })));
  assert.is(result.status, 'failed', show(result));
  const failure = (result as Extract<RunResult, { status: 'failed' }>).failure;
  assert.is(failure.kind, 'exception');
  assert.is(failure.message, `the environment initializer failed: ${STALL}`);
  assert.equal(result.output, []);
});

// Each case settles later through the one thing that kept it waiting; `later` is a binding the
// host answers after a pause, `served` reports where the program's server listens.
interface Fixtures {
  url: string;
  fifo: string;
  module: string;
}

function keepWaiting(fixtures: Fixtures): Array<[string, string, unknown]> {
  return [
    ['a binding call in flight', 'return await later("done")', 'done'],
    ['a timer', 'return await new Promise((resolve) => setTimeout(() => resolve("timer"), 200))', 'timer'],
    ['an interval that ends itself', 'let ticks = 0; return await new Promise((resolve) => { const id = setInterval(() => { if (++ticks === 3) { clearInterval(id); resolve(ticks); } }, 50); })', 3],
    ['a child process', 'const { spawn } = await import("node:child_process"); return await new Promise((resolve) => spawn("/bin/sh", ["-c", "sleep 0.3; exit 7"]).on("exit", resolve))', 7],
    ['a file operation (a FIFO the host writes later)', `const fs = await import("node:fs"); return await new Promise((resolve, reject) => fs.readFile(${JSON.stringify(fixtures.fifo)}, "utf8", (error, text) => (error ? reject(error) : resolve(text))))`, 'through the fifo'],
    ['a fetch in flight (the host answers late)', `return await (await fetch(${JSON.stringify(fixtures.url)})).text()`, 'late answer'],
    ['a listening server the host connects to later', 'const net = await import("node:net"); const server = net.createServer(); await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve)); const connected = new Promise((resolve) => server.once("connection", (socket) => { socket.destroy(); server.close(); resolve("connected"); })); await served(server.address().port); return await connected', 'connected'],
    ['a dynamic import', `return (await import(${JSON.stringify(fixtures.module)})).answer`, 42],
    ['a worker thread', 'const { Worker } = await import("node:worker_threads"); const worker = new Worker("setTimeout(() => require(\'node:worker_threads\').parentPort.postMessage(\'from the worker\'), 200)", { eval: true }); return await new Promise((resolve) => worker.once("message", (message) => { worker.terminate(); resolve(message); }))', 'from the worker'],
    ['a listening MessagePort', 'const { port1, port2 } = new MessageChannel(); const got = new Promise((resolve) => { port1.onmessage = (event) => { port1.close(); resolve(event.data); }; }); port2.postMessage("posted"); return await got', 'posted'],
    ['Atomics.waitAsync with a timeout', 'const cell = new Int32Array(new SharedArrayBuffer(4)); return await Atomics.waitAsync(cell, 0, 0, 200).value', 'timed-out'],
    ['a thread-pool job (crypto.pbkdf2)', 'const crypto = await import("node:crypto"); return await new Promise((resolve, reject) => crypto.pbkdf2("secret", "salt", 200_000, 16, "sha256", (error, key) => (error ? reject(error) : resolve(key.length))))', 16],
    ['an off-thread WebAssembly compile', 'const module = await WebAssembly.compile(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0])); return module instanceof WebAssembly.Module', true],
    ['a resolved chain after a pending binding call', 'const first = later(1); await null; return [await first, await echo(2)]', [1, 2]],
  ];
}

test('keeps waiting (per-call): anything that can still call back settles the run later', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'ptc-stall-'));
  const fifo = join(dir, 'fifo');
  execFileSync('mkfifo', [fifo]);
  const module = join(dir, 'answer.mjs');
  writeFileSync(module, 'export const answer = 42;\n');
  const server: Server = createServer((_request, response) => setTimeout(() => response.end('late answer'), 300));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  const bindings: Bindings = {
    echo: async (value: unknown) => value,
    later: (value: unknown) => new Promise((resolve) => setTimeout(() => resolve(value), 300)),
    served: async (port: number) => {
      setTimeout(() => connect(port, '127.0.0.1').on('error', () => {}), 300);
      return null;
    },
  };
  const runtime = runtimeWith();
  try {
    for (const [label, program, expected] of keepWaiting({ url, fifo, module })) {
      let writer: Promise<void> | undefined;
      if (label.includes('FIFO')) {
        writer = new Promise((resolve) => setTimeout(resolve, 300)).then(async () => {
          const handle = await open(fifo, 'w');
          await handle.write('through the fifo');
          await handle.close();
        });
      }
      const result = await guarded(label, runtime.run(runtime.resolve({ program, bindings })));
      await writer;
      assert.equal(valueOf(result, label), expected, label);
    }
  } finally {
    server.closeAllConnections();
    server.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
