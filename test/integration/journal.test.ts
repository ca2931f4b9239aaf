// launch: source only (the journal is the host's: resume, replay and the torn write do not depend on how the carrier is launched, and each kill starts a host of its own)
// The journal with real carriers and real kills: a run waiting for approval whose host is killed
// (SIGKILL) resumes in this process from the journal, answering journaled calls without running
// them again (each execution is counted in a file), step() values come back, Promise.all of gated
// calls replays, a divergent resume fails naming the position, and a journal whose writer is
// killed in the middle of a stream of commits keeps every call whose answer the program had.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { appendFileSync, chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { binding, createRuntime, type RunResult } from '../../host/index.ts';
import { createTestRuntime, repoRoot } from '../helpers/runtime.ts';
import { valueOf } from '../helpers/assert.ts';

const HOST = join(repoRoot, 'test/fixtures/journal/host.ts');

function scratch(): { dir: string; journal: string; executions: string; done(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'ptc-journal-test-'));
  return { dir, journal: join(dir, 'runs.db'), executions: join(dir, 'executions'), done: () => rmSync(dir, { recursive: true, force: true }) };
}

function executions(file: string): string[] {
  return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
}

/** Starts the host fixture and SIGKILLs it once `until` matches its output; resolves with that output. */
function runAndKill(journal: string, program: string, executionsFile: string, until: (out: string) => boolean): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [HOST, journal, program, executionsFile], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    let killed = false;
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      if (!killed && until(out)) {
        killed = true;
        child.kill('SIGKILL');
      }
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
    child.on('exit', (code, signal) => (signal === 'SIGKILL' ? resolve(out) : reject(new Error(`the host exited with ${code} before the kill: ${out}${err}`))));
  });
}

const pendingOf = (out: string): Array<{ runId: string; sequence: number }> =>
  [...out.matchAll(/^pending (\S+) (\d+)$/gm)].map((match) => ({ runId: match[1]!, sequence: Number(match[2]) }));

/** The fixture's bindings, counting each execution in the same file. */
function counting(file: string) {
  return {
    read: async (key: string) => (appendFileSync(file, `read ${key}\n`), { key, rows: 3 }),
    send: async (...args: unknown[]) => (appendFileSync(file, `send ${JSON.stringify(args)}\n`), 'sent'),
  };
}

async function rejection(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('expected a rejection');
}

test('a run waiting for approval survives kill -9 of its host: resumed, no journaled call runs again, step values come back', async () => {
  const place = scratch();
  try {
    const program = 'const a = await read("users"); const id = await step("id", () => Math.random()); inspect("read", a.rows); return await send(a.key, id)';
    const out = await runAndKill(place.journal, program, place.executions, (text) => pendingOf(text).length === 1);
    const [{ runId, sequence }] = pendingOf(out) as [{ runId: string; sequence: number }];
    assert.equal(executions(place.executions), ['read users']);
    assert.is((statSync(place.journal).mode & 0o777).toString(8), '600');

    const runtime = createTestRuntime({ journal: place.journal, timeoutMs: 20_000 });
    try {
      assert.equal(runtime.runs().map((run) => ({ runId: run.runId, status: run.status })), [{ runId, status: 'waiting' }]);
      const asked: number[] = [];
      const bindings = { ...counting(place.executions), send: binding(counting(place.executions).send, { approval: true }) };
      const result = await runtime.resume(runId, { bindings, onApproval: (action) => (asked.push(action.sequence), true) });
      assert.equal(valueOf(result), 'sent');
      assert.is(result.runId, runId);
      assert.equal(result.output, [{ type: 'text', text: 'read 3\n', stream: 'stdout' }]);
      assert.equal(asked, [sequence], 'the waiting call is asked again, at its journaled position');
      const lines = executions(place.executions);
      assert.is(lines.length, 2, lines.join('\n'));
      assert.is(lines[0], 'read users');
      const calls = runtime.calls(runId);
      const id = calls.find((call) => call.binding === 'step')!.value;
      assert.type(id, 'number');
      assert.is(lines[1], `send ${JSON.stringify(['users', id])}`, 'the step value of the killed host is the one the resumed run used');
      assert.equal(calls.map((call) => [call.sequence, call.binding, call.state]), [[1, 'read', 'done'], [2, 'step', 'done'], [3, 'send', 'done']]);
      assert.equal(runtime.runs()[0]!.status, 'ok');
      assert.equal(runtime.runs()[0]!.attempts, 2);
      assert.is(await rejection(runtime.resume(runId, { bindings })), `ptc resume(): run "${runId}" has finished (ok); only a run that never finished can be resumed`);
      assert.is(await rejection(runtime.resume('nope', { bindings })), 'ptc resume(): the journal has no run "nope"');
    } finally {
      await runtime.dispose();
    }
  } finally {
    place.done();
  }
});

test('Promise.all of gated calls resumes after kill -9: concurrent calls are matched by binding and arguments', async () => {
  const place = scratch();
  try {
    const program = 'const [a, b] = await Promise.all([read("x"), read("y")]); return await Promise.all([send(b.key), send(a.key)])';
    const out = await runAndKill(place.journal, program, place.executions, (text) => pendingOf(text).length === 2);
    const runId = pendingOf(out)[0]!.runId;
    assert.equal(executions(place.executions).sort(), ['read x', 'read y']);
    const runtime = createTestRuntime({ journal: place.journal, timeoutMs: 20_000 });
    try {
      const bindings = { ...counting(place.executions), send: binding(counting(place.executions).send, { approval: true }) };
      const result = await runtime.resume(runId, { bindings, onApproval: () => true });
      assert.equal(valueOf(result), ['sent', 'sent']);
      assert.equal(executions(place.executions).sort(), ['read x', 'read y', 'send ["x"]', 'send ["y"]']);
    } finally {
      await runtime.dispose();
    }
  } finally {
    place.done();
  }
});

test('a divergent resume fails naming the position, the journaled call and the call made instead', async () => {
  const place = scratch();
  try {
    const program = 'const a = await read(String(Math.random())); return await send(a.key)';
    const out = await runAndKill(place.journal, program, place.executions, (text) => pendingOf(text).length === 1);
    const runId = pendingOf(out)[0]!.runId;
    const first = executions(place.executions)[0]!.slice('read '.length);
    const runtime = createTestRuntime({ journal: place.journal, timeoutMs: 20_000 });
    try {
      const result = await runtime.resume(runId, { bindings: counting(place.executions), onApproval: () => true });
      assert.is(result.status, 'failed');
      const failure = (result as Extract<RunResult, { status: 'failed' }>).failure;
      assert.is(failure.kind, 'divergence');
      assert.is(failure.position, 1);
      assert.equal(failure.expected, { binding: 'read', args: JSON.stringify([first]) });
      assert.is(failure.actual!.binding, 'read');
      assert.match(failure.message, new RegExp(`^the program diverged from its journal at call 1: the journal has read\\("${first.replace('.', '\\.')}"\\), the program called read\\("0\\.\\d+`));
      assert.equal(executions(place.executions), [`read ${first}`], 'nothing ran again, nothing new ran');
      assert.is(runtime.runs()[0]!.status, 'failed');
    } finally {
      await runtime.dispose();
    }
  } finally {
    place.done();
  }
});

test('a journal whose writer is killed amid a stream of commits keeps every call the program had an answer to', async () => {
  const place = scratch();
  try {
    const program = 'for (let i = 0; ; i++) await tick(i)';
    const out = await runAndKill(place.journal, program, place.executions, (text) => /^tick (\d{3,})$/m.test(text));
    const seen = Math.max(...[...out.matchAll(/^tick (\d+)$/gm)].map((match) => Number(match[1])));
    const sqlite = process.getBuiltinModule('node:sqlite') as typeof import('node:sqlite');
    const db = new sqlite.DatabaseSync(place.journal);
    try {
      assert.is((db.prepare('PRAGMA integrity_check').get() as { integrity_check: string }).integrity_check, 'ok');
      const done = db.prepare("SELECT count(*) AS n, max(sequence) AS last FROM calls WHERE state = 'done'").get() as { n: number; last: number };
      // tick(seen) ran, so the program had the answers of tick(0) … tick(seen - 1): calls 1 … seen.
      assert.ok(done.n >= seen && done.last >= seen, `committed ${done.n} calls (last ${done.last}), the program had answers to ${seen}`);
      assert.is(done.n, done.last, 'no committed call is missing');
    } finally {
      db.close();
    }
  } finally {
    place.done();
  }
});

test('the journal refuses a place others can write, a file others can read, and a retained mode', () => {
  const place = scratch();
  try {
    chmodSync(place.dir, 0o777);
    assert.throws(() => createRuntime({ journal: place.journal }), /the directory ".*" is writable by others \(mode 777\)/);
    chmodSync(place.dir, 0o700);
    writeFileSync(place.journal, '', { mode: 0o644 });
    chmodSync(place.journal, 0o644);
    assert.throws(() => createRuntime({ journal: place.journal }), /is readable or writable by others \(mode 644\); chmod 600 it/);
    assert.throws(() => createRuntime({ journal: place.journal, executionMode: 'persistent-in-memory' }), /journal requires executionMode "per-call"/);
    assert.throws(() => createRuntime({}).runs(), /this runtime has no journal/);
  } finally {
    place.done();
  }
});

test.run();
