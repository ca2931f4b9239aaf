// launch: source only (yields and handles are the host's; the kill test starts a host of its own)
// Runs that yield, with real carriers: a long program yielded and polled with every output line
// once across the looks and the final value last; a handle's output stream; cancel leaving no
// process; a journaled run that yielded, its host SIGKILLed, resumed from the journal.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { OutputEntry, RunResult, RunningLook } from '../../host/index.ts';
import { childrenOf, createTestRuntime, repoRoot, runtimesPerTest, waitUntil } from '../helpers/runtime.ts';
import { processesNaming } from '../helpers/users.ts';
import { show } from '../helpers/assert.ts';

const runtimeFor = runtimesPerTest(test, { timeoutMs: 60_000, prestartCarrier: false });

/** A program that prints `line <i>` every ~200 ms for `count` lines, then returns "done". */
const ticking = (count: number): string => `for (let i = 0; i < ${count}; i++) { console.log("line " + i); await new Promise((r) => setTimeout(r, 200)); }\nreturn "done";`;

const textOf = (output: OutputEntry[]): string => output.map((entry) => (entry.type === 'text' ? entry.text : '')).join('');
const liveChildren = (): number[] => childrenOf(process.pid).filter((child) => child.state !== 'Z').map((child) => child.pid);

test('a 10-second program yielded at 1 s and polled three times: every line exactly once across the looks, the final value last', async () => {
  const runtime = runtimeFor();
  const first = await runtime.run(runtime.resolve({ program: ticking(50) }), { yieldAfterMs: 1000 });
  assert.is(first.status, 'running', show(first));
  if (first.status !== 'running') return;
  const looks: Array<RunningLook | RunResult> = [first];
  looks.push(await first.handle.wait(1000));
  looks.push(await first.handle.wait(1000));
  looks.push(await first.handle.wait());
  assert.equal(looks.map((look) => look.status), ['running', 'running', 'running', 'ok']);
  const final = looks.at(-1)!;
  assert.is(final.status === 'ok' && final.value, 'done');
  assert.is(looks.map((look) => textOf(look.output)).join(''), Array.from({ length: 50 }, (_, i) => `line ${i}\n`).join(''));
  // Every entry of every look is stdout text (how many each look holds depends on the machine's speed).
  for (const look of looks) assert.ok(look.output.every((entry) => entry.type === 'text' && entry.stream === 'stdout'), show(look));
  // The handle's result is the whole run; a look after the final one repeats nothing.
  assert.is(textOf((await first.handle.result).output), Array.from({ length: 50 }, (_, i) => `line ${i}\n`).join(''));
  assert.equal((await first.handle.wait()).output, []);
});

test('a run that ends before yieldAfterMs answers its final result, all of its output included', async () => {
  const runtime = runtimeFor();
  const result = await runtime.run(runtime.resolve({ program: 'console.error("warned"); return 7;' }), { yieldAfterMs: 60_000 });
  assert.is(result.status, 'ok');
  assert.equal(result.output, [{ type: 'text', text: 'warned\n', stream: 'stderr' }]);
});

test('a program that calls yieldControl() answers the waiting caller at once with the output so far, and goes on', async () => {
  const runtime = runtimeFor();
  const program = 'console.log("before");\nfor (let i = 0; i < 1000; i++) yieldControl();\nawait new Promise((r) => setTimeout(r, 300));\nconsole.log("after");\nreturn 2;';
  // Far past the run's deadline: only the program's yield can answer this look while it runs.
  const first = await runtime.run(runtime.resolve({ program }), { yieldAfterMs: 600_000 });
  assert.is(first.status, 'running', show(first));
  if (first.status !== 'running') return;
  assert.equal(first.output, [{ type: 'text', text: 'before\n', stream: 'stdout' }]);
  const final = await first.handle.wait();
  assert.is(final.status === 'ok' && final.value, 2);
  assert.equal(final.output, [{ type: 'text', text: 'after\n', stream: 'stdout' }]);
});

test('a binding named yieldControl is refused: the name is the runtime\'s', async () => {
  const runtime = runtimeFor();
  assert.throws(() => runtime.run(runtime.resolve({ program: 'return 1', bindings: { yieldControl: async () => 1 } })), /yieldControl/);
});

test('start() returns a handle whose async iteration streams every entry, from the first, as the run prints it', async () => {
  const runtime = runtimeFor();
  const handle = runtime.start(runtime.resolve({ program: ticking(5) }));
  const seen: string[] = [];
  for await (const entry of handle) seen.push(entry.type === 'text' ? entry.text : entry.type);
  assert.equal(seen, ['line 0\n', 'line 1\n', 'line 2\n', 'line 3\n', 'line 4\n']);
  const result = await handle.result;
  assert.is(result.status === 'ok' && result.value, 'done');
  // A look after the end is the final result with every entry no look returned.
  const look = await handle.wait(0);
  assert.is(textOf(look.output), seen.join(''));
});

test('cancel() stops a yielded run spinning in while(true) and leaves no process, its children included', async () => {
  const runtime = runtimeFor();
  // The sleep's length, unique to this test process and moment (the suite runs under other
  // launches at once), names the program's child and grandchild alike: `sh -c "sleep N"` (which
  // may fork, and is then two processes for a moment) and the `sleep N` it starts.
  const marker = String(900_000_000 + process.pid * 1000 + Math.floor(Math.random() * 1000));
  const program = `const { spawn } = await import("node:child_process");\nspawn("sh", ["-c", "sleep ${marker}"], { stdio: "ignore" });\nconsole.log("spinning");\nwhile (true) {}`;
  const handle = runtime.start(runtime.resolve({ program }));
  // The first entry comes once the child was spawned and the loop is about to start.
  for await (const entry of handle) if (entry.type === 'text' && entry.text === 'spinning\n') break;
  const look = await handle.wait(0);
  assert.is(look.status, 'running');
  assert.ok(processesNaming(marker).length >= 1, 'the program\'s child runs');
  const result = await handle.cancel();
  assert.is(result.status, 'failed');
  assert.is(result.status === 'failed' && result.failure.kind, 'abort');
  // The result comes as the run ends; its processes are reaped moments later (a generous bound, not a speed check).
  assert.ok(await waitUntil(() => liveChildren().length === 0, 15_000), `children of the host left running: ${liveChildren().join(', ')}`);
  assert.ok(await waitUntil(() => processesNaming(marker).length === 0, 15_000), 'the program\'s child or grandchild left running');
  const final = await handle.wait();
  assert.is(final.status, 'failed');
});

test('yieldAfterMs and a look\'s timeoutMs are checked, naming the value', async () => {
  const runtime = runtimeFor();
  const spec = runtime.resolve({ program: 'return 1' });
  try {
    await runtime.run(spec, { yieldAfterMs: -5 });
    assert.unreachable('a negative yieldAfterMs was accepted');
  } catch (error) {
    assert.is((error as Error).message, 'ptc run(): yieldAfterMs must be a non-negative integer of milliseconds, got -5');
  }
  const handle = runtime.start(spec);
  try {
    await handle.wait(1.5);
    assert.unreachable('a fractional timeoutMs was accepted');
  } catch (error) {
    assert.is((error as Error).message, 'ptc wait(): timeoutMs must be a non-negative integer of milliseconds, got 1.5');
  }
  await handle.result;
});

test('a journaled run that yielded survives its host\'s SIGKILL: resume re-runs it from the journal, the answered call not made again', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'ptc-handles-test-'));
  const journal = join(dir, 'runs.db');
  const executions = join(dir, 'executions');
  try {
    const program = `const n = await count();\nconsole.log("counted " + n);\n${ticking(15).replace('return "done";', 'return n + 1;')}`;
    const out = await new Promise<string>((resolve, reject) => {
      const child = spawn(process.execPath, [join(repoRoot, 'test/fixtures/handles/host.ts'), journal, program, executions], { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      let err = '';
      let killed = false;
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
        out += chunk;
        // Killed while it runs: after it yielded and printed past the journaled call.
        if (!killed && out.includes('yielded ') && out.includes('line 1\\n')) {
          killed = true;
          child.kill('SIGKILL');
        }
      });
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
      child.on('exit', (code, signal) => (signal === 'SIGKILL' ? resolve(out) : reject(new Error(`the host exited with ${code} before the kill: ${out}${err}`))));
    });
    const runId = /^yielded (\S+)$/m.exec(out)![1]!;
    assert.ok(out.includes('counted 41'), out);
    assert.equal(readFileSync(executions, 'utf8'), 'count\n');
    const runtime = createTestRuntime({ journal, timeoutMs: 60_000, prestartCarrier: false });
    try {
      assert.is(runtime.runs().find((run) => run.runId === runId)?.status, 'running');
      let called = 0;
      const resumed = await runtime.resume(runId, { bindings: { count: async () => ++called }, yieldAfterMs: 200 });
      const looks: Array<RunningLook | RunResult> = [resumed];
      if (resumed.status === 'running') looks.push(await resumed.handle.wait());
      const final = looks.at(-1)!;
      assert.is(final.status === 'ok' && final.value, 42, show(final));
      assert.is(textOf(looks.flatMap((look) => look.output)), `counted 41\n${Array.from({ length: 15 }, (_, i) => `line ${i}\n`).join('')}`);
      assert.is(called, 0, 'the journaled call was made again');
      assert.equal(readFileSync(executions, 'utf8'), 'count\n');
      assert.is(runtime.runs().find((run) => run.runId === runId)?.status, 'ok');
    } finally {
      await runtime.dispose();
    }
  } finally {
    if (existsSync(dir)) rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
