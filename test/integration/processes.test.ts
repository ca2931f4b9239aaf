// Process hygiene: each carrier is a session and process-group leader, and every way a per-call
// run ends (completion, timeout, abort, failure) kills the whole group, including processes the
// program started. The host reaps its children, closes its descriptors and does not grow with use.
// runs alone (test/run.ts gives it the machine): deadlines of 1 to 1.5 s count from the run's
// start, carrier start-up included, and the program must reach its code before they pass.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import v8 from 'node:v8';
import vm from 'node:vm';
import type { RunResult } from '../../host/index.ts';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { childrenOf, launchUnderTest, liveProcesses, liveProcessesInGroup, openFds, repoRoot, runProgram, waitUntil, createTestRuntime } from '../helpers/runtime.ts';

const commandLine = (pid: number): string => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    return '';
  }
};

/** Time for the kernel to finish deaths the host has already caused; not a speed assertion. */
const SETTLE_MS = 2_000;

/** Starts `sleep 1000` in the carrier's group and prints the carrier and sleep pids as JSON. */
const SPAWN_SLEEP = `
const { spawn } = await import('node:child_process');
const sleeper = spawn('sleep', ['1000'], { stdio: 'ignore' });
await new Promise((resolve, reject) => { sleeper.once('spawn', resolve); sleeper.once('error', reject); });
inspect(JSON.stringify({ carrier: process.pid, sleeper: sleeper.pid }));
`;

function reportedPids(result: RunResult): { carrier: number; sleeper: number } {
  const first = result.output[0];
  assert.ok(first?.type === 'text', `no pids in ${JSON.stringify(result)}`);
  return JSON.parse(first.text);
}

async function assertGroupGone(pgid: number): Promise<void> {
  const gone = await waitUntil(() => liveProcessesInGroup(pgid).length === 0, SETTLE_MS);
  assert.ok(gone, `processes left in group ${pgid}: ${JSON.stringify(liveProcessesInGroup(pgid))}`);
}

async function assertNoZombieChildren(): Promise<void> {
  const clean = await waitUntil(() => childrenOf(process.pid).every((child) => child.state !== 'Z'), SETTLE_MS);
  assert.ok(clean, `zombie children of the host: ${JSON.stringify(childrenOf(process.pid))}`);
}

test('the carrier leads its own session and process group', async () => {
  const result = await runProgram(`
    const stat = (await import('node:fs')).readFileSync('/proc/self/stat', 'utf8');
    const [, , pgid, sid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ').map(Number);
    return { pid: process.pid, pgid, sid };
  `);
  assert.equal(result.status, 'ok', JSON.stringify(result));
  const { pid, pgid, sid } = (result as Extract<RunResult, { status: 'ok' }>).value as { pid: number; pgid: number; sid: number };
  assert.is(pgid, pid);
  assert.is(sid, pid);
  assert.is.not(pgid, liveProcesses().find((entry) => entry.pid === process.pid)?.pgid);
  await assertGroupGone(pgid);
});

test('completion kills the group, including a process the program left running', async () => {
  const result = await runProgram(`${SPAWN_SLEEP} return 'done';`);
  assert.equal(result.status, 'ok', JSON.stringify(result));
  const { carrier, sleeper } = reportedPids(result);
  assert.ok(sleeper !== carrier);
  await assertGroupGone(carrier);
  assert.not.ok(liveProcesses().some((entry) => entry.pid === sleeper), 'the sleep survived');
  await assertNoZombieChildren();
});

test('completion kills a descendant that holds the carrier stdout and stderr', async () => {
  const program = SPAWN_SLEEP.replace("stdio: 'ignore'", "stdio: 'inherit'");
  const result = await runProgram(`${program} return 'done';`);
  assert.equal(result.status, 'ok', JSON.stringify(result));
  const { carrier } = reportedPids(result);
  await assertGroupGone(carrier);
  await assertNoZombieChildren();
});

test('a per-call program runs nothing after its result: its immediates, timers and I/O callbacks never fire', async () => {
  // Before the carrier halted at its reply, setImmediate ran in the turn the reply was written,
  // before the host had even read it, let alone killed the carrier.
  const dir = mkdtempSync(join(tmpdir(), 'ptc-late-'));
  try {
    for (let round = 0; round < 5; round++) {
      const result = await runProgram(`
        const fs = await import('node:fs');
        const mark = (how) => fs.writeFileSync(${JSON.stringify(dir)} + '/' + how + '-${round}', '');
        setImmediate(() => mark('immediate'));
        setTimeout(() => mark('timeout'), 0);
        fs.stat('.', () => mark('io'));
        Promise.resolve().then(() => setImmediate(() => mark('chained')));
        return 'done';
      `);
      assert.equal(result.status, 'ok', JSON.stringify(result));
      assert.is((result as Extract<RunResult, { status: 'ok' }>).value, 'done');
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal(readdirSync(dir), [], 'callbacks ran after the result');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a retained program goes on running between runs (only a per-call carrier halts at its result)', async () => {
  const runtime = createTestRuntime({ executionMode: 'persistent-in-memory', timeoutMs: 20_000 });
  const owner = {};
  try {
    const first = await runtime.run(runtime.resolve({ program: 'var ticks = 0; setInterval(() => ticks++, 5); 1', stateOwner: owner }));
    assert.is(first.status, 'ok', JSON.stringify(first));
    await new Promise((resolve) => setTimeout(resolve, 100));
    const second = await runtime.run(runtime.resolve({ program: 'ticks', stateOwner: owner }));
    assert.is(second.status, 'ok', JSON.stringify(second));
    assert.ok(((second as Extract<RunResult, { status: 'ok' }>).value as number) > 0, JSON.stringify(second));
  } finally {
    await runtime.dispose();
  }
});

test('timeout kills the group while the program loops forever', async () => {
  const result = await runProgram(`${SPAWN_SLEEP} while (true) {}`, { timeoutMs: 1_000 });
  assert.equal(result.status, 'failed');
  assert.is((result as Extract<RunResult, { status: 'failed' }>).failure.kind, 'timeout');
  const { carrier, sleeper } = reportedPids(result);
  await assertGroupGone(carrier);
  assert.not.ok(liveProcesses().some((entry) => entry.pid === sleeper), 'the sleep survived');
  await assertNoZombieChildren();
});

test('abort kills the group while the program awaits forever', async () => {
  const controller = new AbortController();
  const result = await runProgram(`${SPAWN_SLEEP} await new Promise(() => {});`, {}, {}, {
    signal: controller.signal,
    onOutput: () => controller.abort(),
  });
  assert.equal(result.status, 'failed');
  assert.is((result as Extract<RunResult, { status: 'failed' }>).failure.kind, 'abort');
  const { carrier, sleeper } = reportedPids(result);
  await assertGroupGone(carrier);
  assert.not.ok(liveProcesses().some((entry) => entry.pid === sleeper), 'the sleep survived');
  await assertNoZombieChildren();
});

test('a host that exits as soon as a per-call result arrives leaves no process and no sandbox files behind', async () => {
  // The result does not wait for the carrier's end (the kill has gone out, the rest finishes
  // later); a host that exits meanwhile must still finish it. The sandbox's private temp
  // directory goes under TMPDIR, so a fresh one shows what was left.
  const tmp = mkdtempSync(join(tmpdir(), 'ptc-exit-test-'));
  const marker = '1234.5';
  const host = `
    import { createRuntime } from ${JSON.stringify(`${repoRoot}host/index.ts`)};
    const launch = ${JSON.stringify(launchUnderTest() ?? null)};
    const runtime = createRuntime({ policy: { mode: 'workspace-write' }, prestartCarrier: false, ...(launch ? { launch } : {}) });
    const program = "const { spawn } = await import('node:child_process'); const s = spawn('sleep', ['${marker}'], { stdio: 'ignore' }); await new Promise((r) => s.once('spawn', r)); return 1";
    const result = await runtime.run(runtime.resolve({ program, cwd: ${JSON.stringify(tmp)} }));
    process.stdout.write(JSON.stringify(result));
    process.exit(0);
  `;
  try {
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', host], { cwd: tmp, env: { ...process.env, TMPDIR: tmp }, encoding: 'utf8' });
    assert.is(child.status, 0, child.stderr);
    const result = JSON.parse(child.stdout) as RunResult;
    assert.is(result.status, 'ok', child.stdout);
    assert.is((result as Extract<RunResult, { status: 'ok' }>).value, 1);
    assert.equal(readdirSync(tmp).filter((name) => /^ptc-\d+-\d+-/.test(name)), [], 'the host\'s temp directory left behind');
    const gone = await waitUntil(() => !liveProcesses().some(({ pid }) => commandLine(pid).includes(`sleep ${marker}`)), SETTLE_MS);
    assert.ok(gone, 'the program\'s sleep survived its host');
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
});

test('a carrier that exits on its own leaves no descendant behind', async () => {
  const result = await runProgram(`${SPAWN_SLEEP} process.exit(3);`);
  assert.equal(result.status, 'failed');
  assert.is((result as Extract<RunResult, { status: 'failed' }>).failure.kind, 'worker-exit');
  const { carrier } = reportedPids(result);
  await assertGroupGone(carrier);
  await assertNoZombieChildren();
});

test('the host fd count returns to its baseline after every kind of ending', async () => {
  await runProgram('return 1;');
  const baseline = openFds();
  const controller = new AbortController();
  const endings: Array<() => Promise<RunResult>> = [
    () => runProgram(`${SPAWN_SLEEP} return 1;`),
    () => runProgram(`${SPAWN_SLEEP} while (true) {}`, { timeoutMs: 1500 }),
    () => runProgram(`${SPAWN_SLEEP} await new Promise(() => {});`, {}, {}, { signal: controller.signal, onOutput: () => controller.abort() }),
    () => runProgram('process.exit(9);'),
    () => runProgram("(await import('node:fs')).writeSync(3, 'garbage\\n'); await new Promise(() => {});"),
    () => runProgram("process.stdout.write('x'.repeat(2000));", {}, { maxOutputBytes: 1000 }),
    () => runProgram('return 1;', {}, { launch: { kind: 'node-script', executable: '/nonexistent/ptc-node' } }),
  ];
  for (const ending of endings) await ending();
  const settled = await waitUntil(() => openFds() <= baseline, SETTLE_MS);
  assert.ok(settled, `fds: baseline ${baseline}, now ${openFds()}`);
  await assertNoZombieChildren();
});

// A thousand runs from source, where the host's own per-run path (spawn, channel, result, kill) is
// what leaks if anything does. Every other launch differs only in how a carrier starts (and over
// SSH a run costs a channel and two Node starts on the far side): a tenth as many runs shows the
// same leaks there (a process or descriptor left per run, each run's launch or connection objects)
// in a tenth of the time. The thousand are each a carrier's boot, about 200 s a launch on 2 cores.
const RUNS = [undefined, '', 'source'].includes(process.env.PTC_TEST_LAUNCH) ? 1_000 : 100;

test(`${RUNS.toLocaleString('en')} runs in a row leave no processes, no descriptors and little memory behind`, async () => {
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as () => void;
  // One pooled carrier ahead, always: a pool grown to the demand of the loop holds a few booted
  // carriers (and their descriptors) for 10 s after it, which is no leak.
  const runtime = createTestRuntime({ timeoutMs: 30_000, pool: { min: 1, max: 1 } });
  try {
    // pid and start time name a process uniquely even when pids wrap around (pid_max can be 32768).
    const spec = runtime.resolve({
      program: "const stat = (await import('node:fs')).readFileSync('/proc/self/stat', 'utf8'); return [process.pid, stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]];",
    });
    const warmup = await runtime.run(spec);
    assert.equal(warmup.status, 'ok', JSON.stringify(warmup));
    gc();
    const fdsBefore = openFds();
    const heapBefore = process.memoryUsage().heapUsed;

    const carriers = new Set<number>();
    const starts = new Set<string>();
    for (let i = 0; i < RUNS; i++) {
      const result = await runtime.run(spec);
      if (result.status !== 'ok') assert.unreachable(`run ${i}: ${JSON.stringify(result)}`);
      else {
        const [pid, started] = result.value as [number, string];
        carriers.add(pid);
        starts.add(`${pid}@${started}`);
      }
    }
    assert.is(starts.size, RUNS);

    const survivors = (): number[] => liveProcesses().filter((entry) => carriers.has(entry.pgid)).map((entry) => entry.pid);
    assert.ok(await waitUntil(() => survivors().length === 0, SETTLE_MS), `surviving carrier processes: ${survivors().join(', ')}`);
    await assertNoZombieChildren();
    assert.ok(await waitUntil(() => openFds() <= fdsBefore + 2, SETTLE_MS), `fds grew from ${fdsBefore} to ${openFds()}`);
    gc();
    const growth = process.memoryUsage().heapUsed - heapBefore;
    assert.ok(growth < 20 * 1024 * 1024, `heap grew by ${(growth / 1024 / 1024).toFixed(1)} MB`);
  } finally {
    await runtime.dispose();
  }
  // Disposal also ends the spare carrier the runtime kept booted for a next run. Over SSH the shared
  // master connection lingers 5 s after its last runtime (LINGER_MS in host/worker/confinement.ts), then goes too.
  const children = (): unknown[] => childrenOf(process.pid).filter((child) => child.state !== 'Z');
  const linger = process.env.PTC_TEST_LAUNCH === 'ssh' ? 5_000 : 0;
  assert.ok(await waitUntil(() => children().length === 0, SETTLE_MS + linger), `host children left: ${JSON.stringify(children())}`);
});

test.run();
