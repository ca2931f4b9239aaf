// The resident pool through the built binary (docs/cli.md, "The resident pool"): a `ptc run` it
// serves prints exactly what the ordinary path prints, gets a fresh carrier, ends on Ctrl-C or when
// its client dies; and the pool is this user's alone: another user cannot reach it, a listener that
// cannot prove the token (planted, or left in a directory another user owns) never learns a
// program, a stale socket is replaced, a changed executable gets a fresh pool, and a stopped or
// idle pool leaves no process or file. Assumes `npm run build`.
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { processAlive, repoRoot } from '../helpers/runtime.ts';
import { asUser, binaryFor, ensureUser, processesNaming, removeReachableBinary, VICTIM } from '../helpers/users.ts';

const BUILT = join(repoRoot, 'dist', 'ptc');
const work = realpathSync(mkdtempSync(join(tmpdir(), 'ptc-resident-')));
const isRoot = process.getuid?.() === 0;
let case_ = 0;

interface Place {
  env: Record<string, string>;
  dir: string;
  bin: string;
}

/** A world of its own for one test: XDG_RUNTIME_DIR, HOME, TMPDIR and a workspace. */
function place(bin = BUILT): Place {
  const dir = join(work, `case-${++case_}`);
  for (const sub of ['run', 'home', 'tmp', 'ws']) mkdirSync(join(dir, sub), { recursive: true, mode: 0o700 });
  chmodSync(join(dir, 'run'), 0o755); // others may traverse it: the pool's own directory inside must stop them
  chmodSync(dir, 0o755);
  return { dir, bin, env: { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: join(dir, 'home'), XDG_RUNTIME_DIR: join(dir, 'run'), TMPDIR: join(dir, 'tmp') } };
}

function ptc(at: Place, args: string[], options: { input?: string; env?: Record<string, string> } = {}) {
  assert.ok(existsSync(at.bin), `${at.bin} is missing: run "npm run build" first`);
  const result = spawnSync(at.bin, args, { cwd: join(at.dir, 'ws'), input: options.input ?? '', encoding: 'utf8', env: { ...at.env, ...options.env }, timeout: 60_000 });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

interface Status { directory?: string; socket?: string; refused?: string; pools: Array<{ pid: number; runs: number; running: number; thisEnvironment: boolean; socket: string; unreachable?: string }> }

function status(at: Place): Status {
  const result = ptc(at, ['resident', 'status', '--json']);
  assert.is(result.code, 0, result.stderr);
  return JSON.parse(result.stdout) as Status;
}

function start(at: Place, extra: string[] = []): number {
  const result = ptc(at, ['resident', 'start', ...extra]);
  assert.is(result.code, 0, result.stderr);
  const pid = Number(/pool (\d+)/.exec(result.stdout)?.[1]);
  assert.ok(pid > 0, result.stdout);
  return pid;
}

function stop(at: Place): void {
  ptc(at, ['resident', 'stop']);
}

const alive = processAlive;

async function until(what: string, check: () => boolean, limitMs = 30_000): Promise<void> {
  for (let waited = 0; !check(); waited += 50) {
    if (waited > limitMs) throw new Error(`still not true after ${limitMs} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The JSON result with `warm` set aside: a pooled carrier is booted ahead, the ordinary path's beside the CLI. */
const unwarmed = (text: string): string => text.replace(/,"warm":(true|false)/, '');

const CASES: Array<{ name: string; args: string[]; input?: string; program?: string }> = [
  { name: 'output and a value', args: ['p.ts'], program: 'inspect("hello"); inspect({ a: [1, 2n] }); return { ok: true, n: 2 ** 60 }' },
  { name: 'the same, as JSON', args: ['p.ts', '--json'], program: 'inspect("hello"); return 12345678901234567890n' },
  { name: 'a thrown error', args: ['p.ts'], program: 'inspect("before"); throw new TypeError("boom")' },
  { name: 'stderr output', args: ['p.ts'], program: 'console.error("to stderr"); return 1' },
  { name: 'a syntax error', args: ['p.ts'], program: 'return (' },
  { name: 'a timeout', args: ['p.ts', '--timeout-ms', '300'], program: 'while (true) {}' },
  { name: 'a program from stdin', args: ['-', '--discard-completion'], input: 'inspect(1 + 1); 42' },
  { name: 'a limit the library refuses', args: ['p.ts', '--timeout-ms', '-5'], program: 'return 1' },
  { name: 'a retained mode', args: ['p.ts', '--mode', 'persistent-in-memory'], program: 'const x = 3\nx * 2' },
  { name: 'another cwd', args: ['p.ts', '--cwd', 'sub', '--json'], program: 'const fs = await import("node:fs"); fs.writeFileSync("made.txt", "x"); return process.cwd().endsWith("/sub")' },
];

test('a run through the pool prints what the ordinary path prints, byte for byte, with the same exit code', () => {
  const at = place();
  try {
    mkdirSync(join(at.dir, 'ws', 'sub'));
    const ordinary = CASES.map((item) => {
      if (item.program !== undefined) writeFileSync(join(at.dir, 'ws', 'p.ts'), item.program);
      return ptc(at, ['run', ...item.args], { input: item.input, env: { PTC_RESIDENT: '0' } });
    });
    start(at);
    CASES.forEach((item, index) => {
      if (item.program !== undefined) writeFileSync(join(at.dir, 'ws', 'p.ts'), item.program);
      const pooled = ptc(at, ['run', ...item.args], { input: item.input });
      const expected = ordinary[index]!;
      assert.is(pooled.code, expected.code, `${item.name}: exit code (${pooled.stderr})`);
      assert.is(unwarmed(pooled.stdout), unwarmed(expected.stdout), `${item.name}: stdout`);
      assert.is(pooled.stderr, expected.stderr, `${item.name}: stderr`);
    });
    const pool = status(at).pools.find((entry) => entry.thisEnvironment);
    assert.ok(pool, 'a pool serves this environment');
    assert.is(pool.runs, CASES.length, 'every run went through the pool');
    assert.ok(existsSync(join(at.dir, 'ws', 'sub', 'made.txt')), 'the program wrote in its --cwd');
  } finally {
    stop(at);
  }
});

const TOOLS = `
export const add = (a, b) => a + b;
export const ns = { big: () => 12345678901234567890n, negativeZero: () => -0, deep: { echo: (x) => x } };
export function fail() { throw Object.assign(new RangeError('nope'), { code: 'E_NOPE' }); }
export function throwsString() { throw 'plain words'; }
export function throwsObject() { throw { reason: 1 }; }
export const lossy = () => new Map([[1, 2]]);
export const nothing = () => undefined;
export const later = async (ms) => { await new Promise((r) => setTimeout(r, ms)); return ms; };
`;
const USES_TOOLS = `
inspect(await add(2, 3), await ns.big(), Object.is(await ns.negativeZero(), -0), await ns.deep.echo({ a: [1, 2n, "x"], b: null }));
for (const name of ['fail', 'throwsString', 'throwsObject', 'lossy']) {
  try { await globalThis[name](); } catch (error) { inspect(name, error.name, error.message, error.code); }
}
inspect(await nothing(), await Promise.all([later(30), later(10), add(1, 1)]));
return 'done';
`;

test('a run with --bindings is served too: the pool calls back into ptc run, and the program reads what it reads in-process', () => {
  const at = place();
  try {
    writeFileSync(join(at.dir, 'ws', 'tools.mjs'), TOOLS);
    writeFileSync(join(at.dir, 'ws', 'uses.ts'), USES_TOOLS);
    writeFileSync(join(at.dir, 'ws', 'marked.mjs'), `export const f = () => 1; f[Symbol.for('mark')] = true;`);
    const triage = ['run', join(repoRoot, 'examples', 'triage.ts'), '--bindings', join(repoRoot, 'examples', 'tools.mjs')];
    const cases = [['run', 'uses.ts', '--bindings', 'tools.mjs'], ['run', 'uses.ts', '--bindings', 'tools.mjs', '--json'], triage, ['run', '-', '--bindings', 'marked.mjs'], ['run', '-', '--bindings', 'missing.mjs']];
    const input = 'return await f()';
    const ordinary = cases.map((args) => ptc(at, args, { input, env: { PTC_RESIDENT: '0' } }));
    start(at);
    cases.forEach((args, index) => {
      const pooled = ptc(at, args, { input });
      assert.is(pooled.code, ordinary[index]!.code, `${args.join(' ')}: ${pooled.stderr}`);
      assert.is(unwarmed(pooled.stdout), unwarmed(ordinary[index]!.stdout), args.join(' '));
      assert.is(pooled.stderr, ordinary[index]!.stderr, args.join(' '));
    });
    assert.match(ordinary[0]!.stdout, /E_NOPE/);
    assert.match(ordinary[2]!.stdout, /unlabeled issues/);
    // The first three went through the pool; a binding() mark or a module that fails runs in-process.
    assert.is(status(at).pools[0]!.runs, 3);
  } finally {
    stop(at);
  }
});

test('each run gets a fresh carrier in every mode: nothing one program leaves reaches the next', () => {
  const at = place();
  try {
    start(at);
    const count = 'globalThis.count = (globalThis.count ?? 0) + 1';
    for (const mode of ['per-call', 'vm-script', 'persistent-in-memory']) {
      writeFileSync(join(at.dir, 'ws', 'p.ts'), mode === 'per-call' ? `${count}; return globalThis.count` : `${count}\nglobalThis.count`);
      for (let i = 0; i < 2; i++) {
        const result = ptc(at, ['run', 'p.ts', '--mode', mode, '--json']);
        assert.is(result.code, 0, result.stderr);
        assert.is(JSON.parse(result.stdout).value, 1, `${mode}, run ${i + 1}`);
      }
    }
    assert.is(status(at).pools[0]!.runs, 6);
  } finally {
    stop(at);
  }
});

/** Starts `ptc run` of a program that says "started" and waits; resolves once it has said it. */
function startedRun(at: Place): Promise<{ child: ReturnType<typeof spawn>; finished: Promise<{ code: number | null; stderr: string }> }> {
  writeFileSync(join(at.dir, 'ws', 'wait.ts'), 'inspect("started"); await new Promise((resolve) => setTimeout(resolve, 120_000)); return 1');
  const child = spawn(at.bin, ['run', 'wait.ts'], { cwd: join(at.dir, 'ws'), env: at.env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const finished = new Promise<{ code: number | null; stderr: string }>((resolve) => child.on('close', (code) => resolve({ code, stderr })));
  return new Promise((resolve) => {
    let stdout = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      if (stdout.includes('started')) resolve({ child, finished });
    });
  });
}

test('Ctrl-C ends a pooled run with the failure the ordinary path prints', async () => {
  const at = place();
  try {
    const ordinary = await startedRun({ ...at, env: { ...at.env, PTC_RESIDENT: '0' } });
    ordinary.child.kill('SIGINT');
    const expected = await ordinary.finished;
    start(at);
    const pooled = await startedRun(at);
    pooled.child.kill('SIGINT');
    const got = await pooled.finished;
    assert.is(got.code, expected.code);
    assert.is(got.stderr, expected.stderr);
    assert.match(got.stderr, /interrupted/);
    assert.is(status(at).pools[0]!.running, 0);
  } finally {
    stop(at);
  }
});

test('a client killed mid-run ends its run in the pool', async () => {
  const at = place();
  try {
    start(at);
    const pooled = await startedRun(at);
    assert.is(status(at).pools[0]!.running, 1);
    pooled.child.kill('SIGKILL');
    await pooled.finished;
    await until('the pool ended the run of its dead client', () => status(at).pools[0]!.running === 0);
  } finally {
    stop(at);
  }
});

test('the pool\'s directory, token and socket are this user\'s alone; start, status and stop say what docs/cli.md shows', () => {
  const at = place();
  try {
    const started = ptc(at, ['resident', 'start']);
    assert.match(started.stdout, /^ptc resident: pool \d+ started \(\/.+\.sock\)\n$/);
    assert.match(ptc(at, ['resident', 'status']).stdout, /^pool \d+: ptc \d+\.\d+\.\d+\S*, 0 runs, 0 running, carriers kept for 1 directories, exits after 300000 ms idle, serves this environment \(\/.+\.sock\)\n$/);
    assert.match(ptc(at, ['resident', 'start']).stdout, /^ptc resident: pool \d+ already serves this environment \(\/.+\.sock\)\n$/);
    const { directory, socket } = status(at);
    assert.is(statSync(directory!).mode & 0o777, 0o700);
    assert.is(statSync(join(directory!, 'token')).mode & 0o777, 0o600);
    assert.is(statSync(socket!).mode & 0o077, 0);
    assert.is(statSync(socket!).uid, process.getuid!());
    assert.match(ptc(at, ['resident', 'stop']).stdout, /^ptc resident: stopped pool \d+\n$/);
    assert.is(ptc(at, ['resident', 'stop']).stdout, 'ptc resident: no pool is running\n');
  } finally {
    stop(at);
  }
});

test('a pool whose socket is removed exits', async () => {
  const at = place();
  const pid = start(at, ['--idle-ms', '600000']);
  const { socket } = status(at);
  rmSync(socket!);
  await until('the pool noticed its socket is gone and exited', () => !alive(pid));
});

test('another user cannot connect to the pool, and their ptc run does not use it', async () => {
  if (!isRoot) return console.log('  (skipped: switching users needs root)');
  const at = place();
  const victim = ensureUser(VICTIM);
  try {
    start(at);
    const { socket } = status(at);
    const script = `require('node:net').connect(${JSON.stringify(socket)}).on('connect', () => { console.log('connected'); process.exit(0); }).on('error', (e) => { console.log(e.code); process.exit(0); })`;
    const attempt = spawnSync(asUser(victim, ['/usr/bin/node', '-e', script])[0]!, asUser(victim, ['/usr/bin/node', '-e', script]).slice(1), { encoding: 'utf8' });
    assert.is(attempt.stdout.trim(), 'EACCES', attempt.stderr);
    const bin = binaryFor(victim);
    const argv = asUser(victim, [bin, 'run', '-', '--json']);
    const run = spawnSync(argv[0]!, argv.slice(1), { cwd: '/tmp', input: 'return 7', encoding: 'utf8', env: { ...at.env, HOME: victim.home, TMPDIR: '/tmp' } });
    assert.is(run.status, 0, run.stderr);
    assert.is(JSON.parse(run.stdout).value, 7);
    assert.is(status(at).pools[0]!.runs, 0, 'the victim\'s run did not reach root\'s pool');
  } finally {
    stop(at);
    removeReachableBinary();
  }
});

/** A listener at `socket`, in a process of its own, that answers a hello without the token's proof; what it was sent. */
async function impostor(socket: string): Promise<{ received: () => string; close: () => Promise<void> }> {
  const script = `
    const server = require('node:net').createServer((connection) => {
      connection.setEncoding('utf8');
      connection.on('data', (chunk) => {
        process.stdout.write(JSON.stringify(chunk) + '\\n');
        if (chunk.includes('"hello"')) connection.write(JSON.stringify({ type: 'hello', proof: '0'.repeat(64), nonce: 'n', pid: 1, identity: 'x' }) + '\\n');
      });
    });
    server.listen(${JSON.stringify(socket)}, () => process.stdout.write('"listening"\\n'));
    process.stdin.on('end', () => server.close(() => process.exit(0))).resume();`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['pipe', 'pipe', 'inherit'] });
  let output = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  await until('the impostor listens', () => output.includes('"listening"'), 10_000);
  const exited = new Promise<void>((resolve) => child.on('close', () => resolve()));
  return {
    received: () => output.split('\n').filter((line) => line !== '' && line !== '"listening"').map((line) => JSON.parse(line) as string).join(''),
    close: () => {
      child.stdin!.end();
      return exited;
    },
  };
}

test('a listener at the pool\'s name that cannot prove the token never learns the program', async () => {
  const at = place();
  start(at);
  const { socket } = status(at);
  stop(at); // the token stays; the name is free
  const fake = await impostor(socket!);
  try {
    writeFileSync(join(at.dir, 'ws', 'secret.ts'), 'return "the-secret-program"');
    const result = ptc(at, ['run', 'secret.ts']);
    assert.is(result.code, 0, result.stderr);
    assert.is(result.stdout, "'the-secret-program'\n");
    await until('the impostor has reported the hello it was sent', () => fake.received().includes('"hello"'), 10_000);
    assert.not.match(fake.received(), /secret/, 'and sent nothing more');
  } finally {
    await fake.close();
  }
});

test('a directory another user owns is never used as the pool\'s, nor a listener planted there', async () => {
  if (!isRoot) return console.log('  (skipped: switching users needs root)');
  const at = place();
  const victim = ensureUser(VICTIM);
  // Where the pool would live if the runtime directory were root's, then given to the victim with a listener in it.
  mkdirSync(join(at.dir, 'run', 'ptc'), { mode: 0o700 });
  const { socket } = status(at);
  assert.ok(socket);
  chownSync(join(at.dir, 'run'), victim.uid, victim.gid);
  chownSync(join(at.dir, 'run', 'ptc'), victim.uid, victim.gid);
  const fake = await impostor(socket);
  try {
    const planted = status(at);
    assert.not.ok(planted.socket?.startsWith(join(at.dir, 'run')), `the pool's place is not the directory the victim owns: ${planted.socket}`);
    assert.equal(planted.pools, []);
    const result = ptc(at, ['run', '-'], { input: 'return "the-secret-program"', env: { PTC_RESIDENT: '1' } });
    assert.is(result.code, 0, result.stderr);
    assert.is(fake.received(), '', 'the planted listener was never connected to');
    // PTC_RESIDENT=1 started a pool in this user's own cache directory instead.
    await until('the pool started on demand answers', () => status(at).pools.length === 1);
    assert.is(fake.received(), '');
  } finally {
    await fake.close();
    stop(at);
  }
});

test('a stale socket is replaced: PTC_RESIDENT=1 runs the program, then starts a pool the next run uses', async () => {
  const at = place();
  start(at);
  const { socket } = status(at);
  stop(at);
  // A socket file nobody listens on, as a killed pool leaves.
  const bound = spawnSync('python3', ['-c', `import socket; s = socket.socket(socket.AF_UNIX); s.bind(${JSON.stringify(socket)})`]);
  assert.is(bound.status, 0, String(bound.stderr));
  assert.ok(existsSync(socket!));
  try {
    const first = ptc(at, ['run', '-'], { input: 'return 5', env: { PTC_RESIDENT: '1' } });
    assert.is(first.stdout, '5\n', first.stderr);
    await until('a pool serves this environment', () => status(at).pools.some((pool) => pool.thisEnvironment));
    const second = ptc(at, ['run', '-'], { input: 'return 6' });
    assert.is(second.stdout, '6\n', second.stderr);
    assert.is(status(at).pools.find((pool) => pool.thisEnvironment)!.runs, 1);
  } finally {
    stop(at);
  }
});

test('a changed executable is not served by the old pool: that one exits, and a fresh one starts', async () => {
  const binDir = mkdtempSync(join(work, 'bin-'));
  const copy = join(binDir, 'ptc');
  copyFileSync(BUILT, copy);
  chmodSync(copy, 0o755);
  const at = place(copy);
  try {
    const old = start(at);
    assert.is(ptc(at, ['run', '-'], { input: 'return 1' }).stdout, '1\n');
    // An upgrade in place: the same path, another file.
    const later = new Date(Date.now() + 60_000);
    utimesSync(copy, later, later);
    const after = status(at);
    assert.not.ok(after.pools.some((pool) => pool.thisEnvironment), 'the old pool no longer serves this executable');
    assert.is(ptc(at, ['run', '-'], { input: 'return 2' }).stdout, '2\n');
    assert.is(status(at).pools.find((pool) => pool.pid === old)?.runs ?? 1, 1, 'the old pool got no run');
    await until('the old pool noticed its executable changed and exited', () => !alive(old));
    // On demand: the run goes in-process and starts a pool for the new executable.
    assert.is(ptc(at, ['run', '-'], { input: 'return 2', env: { PTC_RESIDENT: '1' } }).stdout, '2\n');
    await until('a fresh pool serves the new executable', () => status(at).pools.some((pool) => pool.thisEnvironment));
    const fresh = status(at).pools.find((pool) => pool.thisEnvironment)!.pid;
    assert.is.not(fresh, old);
    assert.is(ptc(at, ['run', '-'], { input: 'return 3' }).stdout, '3\n');
    assert.is(status(at).pools.find((pool) => pool.pid === fresh)!.runs, 1);
  } finally {
    stop(at);
  }
});

test('a pool of another identity at this pool\'s name is not used, and PTC_RESIDENT=1 replaces it with a fresh one', async () => {
  const at = place();
  start(at);
  const { socket, directory } = status(at);
  stop(at);
  // A listener that holds the token and proves it, but is a pool of something else (another
  // version, another environment) under a colliding name.
  const script = `
    const { createHmac } = require('node:crypto');
    const token = require('node:fs').readFileSync(${JSON.stringify(join(directory!, 'token'))});
    const server = require('node:net').createServer((connection) => {
      connection.setEncoding('utf8');
      connection.on('data', (chunk) => {
        process.stdout.write(JSON.stringify(chunk) + '\\n');
        const hello = JSON.parse(chunk.split('\\n')[0]);
        if (hello.type === 'hello') connection.write(JSON.stringify({ type: 'hello', proof: createHmac('sha256', token).update('daemon\\0' + hello.nonce).digest('hex'), nonce: 'n', pid: 1, identity: '{"ptc":"0.0.0-other"}' }) + '\\n');
      });
    });
    server.listen(${JSON.stringify(socket)}, () => process.stdout.write('"listening"\\n'));
    process.stdin.on('end', () => process.exit(0)).resume();`;
  const fake = spawn(process.execPath, ['-e', script], { stdio: ['pipe', 'pipe', 'inherit'] });
  let output = '';
  fake.stdout!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  try {
    await until('the other pool listens', () => output.includes('"listening"'), 10_000);
    const first = ptc(at, ['run', '-'], { input: 'return "the-secret-program"', env: { PTC_RESIDENT: '1' } });
    assert.is(first.stdout, "'the-secret-program'\n", first.stderr);
    await until('a fresh pool took the name', () => status(at).pools.some((pool) => pool.thisEnvironment));
    assert.is(ptc(at, ['run', '-'], { input: 'return 4' }).stdout, '4\n');
    assert.is(status(at).pools.find((pool) => pool.thisEnvironment)!.runs, 1);
    assert.not.match(output, /secret/, 'the other pool never got the program');
  } finally {
    fake.stdin!.end();
    stop(at);
  }
});

test('a client that cannot prove the token gets no run', async () => {
  const at = place();
  try {
    start(at);
    const { socket } = status(at);
    const closed = await new Promise<string>((resolve) => {
      const client = connect(socket!);
      let text = '';
      client.setEncoding('utf8');
      client.on('data', (chunk: string) => {
        text += chunk;
        if (text.includes('\n') && !text.includes('"exit"')) client.write(`${JSON.stringify({ type: 'run', proof: 'f'.repeat(64), program: 'return 1', config: {}, cwd: '/', filename: 'x.ts' })}\n`);
      });
      client.on('close', () => resolve(text));
      client.write(`${JSON.stringify({ type: 'hello', nonce: 'abc' })}\n`);
    });
    assert.not.match(closed, /"exit"/);
    assert.is(status(at).pools[0]!.runs, 0);
  } finally {
    stop(at);
  }
});

test('an idle pool exits on its own and leaves no socket, process or temporary file', async () => {
  const at = place();
  const pid = start(at, ['--idle-ms', '1000']);
  const { socket } = status(at);
  assert.is(ptc(at, ['run', '-'], { input: 'return 1' }).stdout, '1\n');
  await until('the idle pool exited', () => !alive(pid));
  assert.not.ok(existsSync(socket!), 'its socket is gone');
  assert.equal(readdirSync(join(at.dir, 'tmp')), [], 'its carriers\' temporary files are gone');
  // Its carriers ran with this test's TMPDIR: none is left.
  const marker = `TMPDIR=${join(at.dir, 'tmp')}\0`;
  const left = readdirSync('/proc').filter((entry) => /^\d+$/.test(entry)).filter((entry) => {
    try {
      return readFileSync(`/proc/${entry}/environ`, 'utf8').includes(marker);
    } catch {
      return false;
    }
  });
  assert.equal(left, [], 'no process of the pool is left');
});

test('when a pooled ptc run exits, the processes its program started are gone, as in-process', () => {
  const at = place();
  try {
    start(at);
    for (const [how, env] of [['in-process', { PTC_RESIDENT: '0' }], ['pooled', {}]] as const) {
      const marker = `${how === 'pooled' ? 4321 : 1234}.5`;
      writeFileSync(join(at.dir, 'ws', 'spawn.ts'), `const cp = await import('node:child_process'); cp.spawn('sleep', ['${marker}'], { detached: true, stdio: 'ignore' }).unref(); await new Promise((r) => setTimeout(r, 200)); return 1`);
      const result = ptc(at, ['run', 'spawn.ts'], { env });
      assert.is(result.stdout, '1\n', `${how}: ${result.stderr}`);
      assert.equal(processesNaming(marker), [], `${how}: the program's sleep is gone when ptc run has exited`);
    }
    assert.is(status(at).pools[0]!.runs, 1);
  } finally {
    stop(at);
  }
});

test('a client in another mount namespace, or with lower resource limits, is not served by the pool', () => {
  const at = place();
  try {
    start(at);
    const other = (argv: string[]) => spawnSync(argv[0]!, argv.slice(1), { cwd: join(at.dir, 'ws'), input: 'return 9', encoding: 'utf8', env: at.env });
    const namespaced = other(isRoot ? ['unshare', '--mount', at.bin, 'run', '-'] : ['unshare', '--user', '--map-root-user', '--mount', at.bin, 'run', '-']);
    assert.is(namespaced.stdout, '9\n', namespaced.stderr);
    const limited = other(['sh', '-c', `ulimit -n 512 && exec '${at.bin}' run -`]);
    assert.is(limited.stdout, '9\n', limited.stderr);
    assert.is(status(at).pools[0]!.runs, 0, 'neither reached the pool');
    assert.is(ptc(at, ['run', '-'], { input: 'return 9' }).stdout, '9\n');
    assert.is(status(at).pools[0]!.runs, 1, 'the same environment does');
  } finally {
    stop(at);
  }
});

test('a pooled ptc run loads neither node:crypto nor child_process: it starts like one Node process', () => {
  const at = place();
  at.env.NODE_OPTIONS = `--require ${join(repoRoot, 'test', 'fixtures', 'start', 'loaded-builtins.cjs')}`;
  try {
    start(at);
    const result = ptc(at, ['run', '-', '--json'], { input: 'return 1' });
    assert.is(JSON.parse(result.stdout).value, 1, result.stderr);
    assert.is(status(at).pools[0]!.runs, 1, 'the pool ran it');
    const builtins = JSON.parse(result.stderr.split('\n').find((line) => line.startsWith('@builtins '))!.slice('@builtins '.length)) as string[];
    assert.equal(builtins.filter((builtin) => ['crypto', 'child_process', 'http', 'assert', 'perf_hooks'].includes(builtin)), [], builtins.join(' '));
  } finally {
    stop(at);
  }
});

test('PTC_RESIDENT=0 never uses a pool; without PTC_RESIDENT=1 none is started', () => {
  const at = place();
  try {
    assert.is(ptc(at, ['run', '-'], { input: 'return 1' }).stdout, '1\n');
    assert.equal(status(at).pools, [], 'no pool was started');
    start(at);
    assert.is(ptc(at, ['run', '-'], { input: 'return 1' }).stdout, '1\n');
    assert.is(ptc(at, ['run', '-'], { input: 'return 1', env: { PTC_RESIDENT: '0' } }).stdout, '1\n');
    assert.is(status(at).pools[0]!.runs, 1);
  } finally {
    stop(at);
  }
});

test.after(() => rmSync(work, { recursive: true, force: true }));

test.run();
