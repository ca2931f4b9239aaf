// --cpu-time-ms and --max-memory-mb through the built binary, its embedded carrier confined by
// bubblewrap: the host measures the whole tree under bwrap's pid namespace (bwrap, its init and
// the carrier are all below the pid it started). Assumes `npm run build` has run.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { decodeJson } from '../../wire/decode.ts';
import { repoRoot, withoutWarm, reportLimits } from '../helpers/runtime.ts';

const BIN = join(repoRoot, 'dist', 'ptc');
const BWRAP = ['--sandbox-backend', 'bwrap', '--require-enforcement', 'full'];

function ptc(args: string[], program: string) {
  assert.ok(existsSync(BIN), `${BIN} is missing: run "npm run build" first`);
  const result = spawnSync(BIN, ['run', '-', ...args], { cwd: repoRoot, input: program, encoding: 'utf8', env: { PATH: '/usr/bin:/bin' }, timeout: 60_000 });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

const CONFINED = { mode: 'workspace-write', backend: 'bwrap', enforcement: 'full', network: false, denied: false };

test('--cpu-time-ms under bwrap: a child process burning CPU fails the run as timeout naming the budget', () => {
  // The carrier only waits for the child; a ten-second child would end the run normally.
  const { code, stdout, stderr } = ptc(['--json', '--cpu-time-ms', '400', ...BWRAP], `
    const { spawn } = await import('node:child_process');
    const child = spawn('node', ['-e', 'for (;;);'], { stdio: 'ignore' });
    setTimeout(() => child.kill(), 10_000);
    await new Promise((resolve) => child.once('exit', resolve));
    return 'child ended'`);
  assert.is(stderr, '');
  assert.is(code, 1);
  const result = decodeJson(stdout) as any;
  assert.is(result.status, 'failed');
  assert.is(result.failure.kind, 'timeout');
  assert.match(result.failure.message, /^the program used [\d,]+ ms of CPU time, over its cpuTimeMs budget of 400 ms$/);
  assert.is(result.failure.cpuTimeMs, 400);
  assert.ok(result.failure.cpuUsedMs > 400);
  assert.equal(result.sandbox, { ...CONFINED, memory: 'none', disk: 'watchdog', ...reportLimits(true) });
});

test('--max-memory-mb under bwrap: native memory growth is worker-exit naming the limit, and the result says what enforced it', () => {
  const { code, stdout, stderr } = ptc(['--json', '--max-memory-mb', '200', ...BWRAP], `
    const kept = [];
    for (let i = 0; i < 40; i++) { kept.push(Buffer.alloc(16 * 1024 * 1024, 1)); await new Promise((resolve) => setTimeout(resolve, 10)); }
    return kept.length`);
  assert.is(stderr, '');
  assert.is(code, 1);
  const result = decodeJson(stdout) as any;
  assert.is(result.status, 'failed');
  assert.is(result.failure.kind, 'worker-exit');
  assert.is(result.failure.maxMemoryMb, 200);
  assert.match(result.failure.message, /maxMemoryMb limit of 200 MiB/);
  assert.ok(['cgroup', 'watchdog'].includes(result.sandbox.memory), result.sandbox.memory);
  assert.equal(result.sandbox, { ...CONFINED, memory: result.sandbox.memory, disk: 'watchdog', ...reportLimits() });
});

test('a run within both limits succeeds, and bad values are usage errors that quote them', () => {
  const ok = ptc(['--json', '--cpu-time-ms', '5000', '--max-memory-mb', '512', ...BWRAP], 'return 1 + 1');
  assert.is(ok.code, 0, ok.stderr);
  const within = decodeJson(ok.stdout) as any;
  assert.ok(['cgroup', 'watchdog'].includes(within.sandbox.memory), within.sandbox.memory);
  assert.equal(withoutWarm(within), { status: 'ok', value: 2, output: [], sandbox: { ...CONFINED, memory: within.sandbox.memory, disk: 'watchdog', ...reportLimits(true) } });
  const word = ptc(['--cpu-time-ms', 'abc'], 'return 1');
  assert.equal([word.code, word.stdout, word.stderr], [2, '', 'ptc: --cpu-time-ms must be a number, got "abc"\n']);
  const small = ptc(['--max-memory-mb', '10'], 'return 1');
  assert.equal([small.code, small.stdout, small.stderr], [2, '', 'ptc: config: maxMemoryMb must be at least 64 (a carrier needs that much to start), got 10\n']);
});

/** One `ptc serve` process: sends requests as lines and resolves each with its reply. */
function serve() {
  const child = spawn(BIN, ['serve'], { cwd: repoRoot, env: { PATH: '/usr/bin:/bin' } });
  const replies = new Map<number, (message: any) => void>();
  let pending = '';
  let nextId = 0;
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    pending += chunk;
    for (let newline = pending.indexOf('\n'); newline !== -1; newline = pending.indexOf('\n')) {
      const message = decodeJson(pending.slice(0, newline)) as any;
      pending = pending.slice(newline + 1);
      replies.get(message.id)?.(message);
    }
  });
  return {
    request(method: string, params: unknown): Promise<any> {
      const id = ++nextId;
      const reply = new Promise((resolve) => replies.set(id, resolve));
      child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
      return reply;
    },
    close: () => new Promise<number | null>((resolve) => {
      child.once('exit', resolve);
      child.stdin.end();
    }),
  };
}

test('ptc serve: the limits come with initialize\'s config, and a run may set its own cpuTimeMs', async () => {
  const server = serve();
  try {
    const init = await server.request('initialize', { protocolVersion: 1, config: { cpuTimeMs: 300, maxMemoryMb: 256 } });
    assert.ok(init.result !== undefined, JSON.stringify(init));
    const hot = await server.request('run', { program: '{ const end = Date.now() + 10_000; while (Date.now() < end) {} } return 1' });
    assert.is(hot.result.failure.kind, 'timeout');
    assert.match(hot.result.failure.message, /over its cpuTimeMs budget of 300 ms$/);
    assert.ok(['cgroup', 'watchdog'].includes(hot.result.sandbox.memory), JSON.stringify(hot.result.sandbox));
    const free = await server.request('run', { program: '{ const s = process.cpuUsage(); for (;;) { const u = process.cpuUsage(s); if ((u.user + u.system) / 1000 >= 500) break; } } return 2', cpuTimeMs: null });
    assert.is(free.result?.value, 2, JSON.stringify(free));
    const bad = await server.request('run', { program: '1', cpuTimeMs: 'x' });
    assert.equal(bad.error, { code: -32602, message: "run: ptc request: cpuTimeMs must be a positive integer or null for none, got 'x'" });
  } finally {
    assert.is(await server.close(), 0);
  }
});

test.run();
