// The attacks on the host that matter most to the command line, through the built binary
// (`npm run build` first): a program that kills the host, and an image read that would block it.
// ptc must print the failure and exit on its own, under bubblewrap and Node's permission model.
import { BACKENDS, processesIn, removeTempRoot, tempLeftovers, workspace, type Failure } from '../helpers/hostile.ts';
import { failureOf } from '../helpers/assert.ts';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { RunResult } from '../../host/index.ts';
import { repoRoot } from '../helpers/runtime.ts';

const PTC = join(repoRoot, 'dist', 'ptc');

/** Runs `dist/ptc run --json -` in its own process group (a guard that failed would kill only it), with a hang watchdog. */
function ptcRun(program: string, args: string[], cwd: string): Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string; hung: boolean }> {
  return new Promise((resolve) => {
    const child = spawn(PTC, ['run', '--json', ...args, '-'], { cwd, stdio: ['pipe', 'pipe', 'pipe'], detached: true, env: process.env });
    let stdout = '';
    let stderr = '';
    let hung = false;
    child.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text));
    child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
    // Not a speed limit: ptc that printed its result and never exits is the bug this catches.
    const watchdog = setTimeout(() => {
      hung = true;
      process.kill(-child.pid!, 'SIGKILL');
    }, 60_000);
    child.on('close', (code, signal) => {
      clearTimeout(watchdog);
      resolve({ code, signal, stdout, stderr, hung });
    });
    child.stdin.end(program);
  });
}

for (const backend of BACKENDS) {
  const cliCases: Array<{ name: string; program: string; setup?(ws: string): void; expect(failure: Failure, ws: string): void }> = [
    {
      name: 'kill the host',
      program: "process.kill(process.ppid, 'SIGKILL'); await new Promise(() => {});",
      expect: (seen) => {
        assert.is(seen.kind, 'exception');
        assert.is(seen.code, 'EPERM');
        assert.match(seen.message, /^kill EPERM: pid \d+ is not a process this program started/);
      },
    },
    {
      name: 'Image.fromFile on a FIFO',
      setup: (ws) => execFileSync('mkfifo', [join(ws, 'pipe.png')]),
      program: "inspect(await Image.fromFile('pipe.png'));",
      expect: (seen, ws) => assert.equal([seen.kind, seen.message], ['exception', `Image.fromFile: "${ws}/pipe.png" is not a regular file (it is a FIFO)`]),
    },
  ];
  for (const row of cliCases) {
    test(`dist/ptc run, ${backend}: ${row.name} fails the run, and ptc exits on its own`, async () => {
      const ws = workspace();
      row.setup?.(ws);
      const run = await ptcRun(row.program, ['--sandbox-backend', backend], ws);
      assert.is(run.hung, false, 'ptc did not exit');
      assert.equal([run.code, run.signal], [1, null], run.stderr);
      const result = JSON.parse(run.stdout) as RunResult;
      assert.is(result.sandbox.backend, backend);
      row.expect(failureOf(result), ws);
      assert.equal(processesIn(ws), []);
      rmSync(ws, { recursive: true, force: true });
      assert.equal(tempLeftovers(), []);
    });
  }
}

test('dist/ptc run --json: a value nested 100,000 deep is printed whole on one line, not a stack overflow', async () => {
  const ws = workspace();
  const run = await ptcRun('let v = []; for (let i = 0; i < 100_000; i++) v = [v]; return v', [], ws);
  assert.is(run.hung, false, 'ptc did not exit');
  assert.equal([run.code, run.signal, run.stderr], [0, null, '']);
  const printed = JSON.parse(run.stdout) as RunResult;
  assert.is(run.stdout, `{"status":"ok","value":${'['.repeat(100_001)}${']'.repeat(100_001)},"output":[],"sandbox":${JSON.stringify(printed.sandbox)},"warm":${printed.warm}}\n`);
  assert.equal(processesIn(ws), []);
  rmSync(ws, { recursive: true, force: true });
  assert.equal(tempLeftovers(), []);
});

// Root removes any directory, so the host must be another user to see the leak: as root, the
// test runs ptc as nobody (setpriv, util-linux), with a copy of the binary where nobody cannot reach it.
const AS_USER = process.getuid?.() === 0 ? ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups'] : [];
const LOCKED_TMP = [
  'const fs = await import("node:fs"); const os = await import("node:os");',
  'fs.mkdirSync(`${os.tmpdir()}/locked/inner`, { recursive: true }); fs.writeFileSync(`${os.tmpdir()}/locked/inner/file`, "x");',
  'fs.chmodSync(`${os.tmpdir()}/locked/inner`, 0); fs.chmodSync(`${os.tmpdir()}/locked`, 0o500);',
  'return os.tmpdir()',
].join('\n');

for (const backend of BACKENDS) {
  test(`dist/ptc run, ${backend}: directories the program made unwritable in its temp directory are removed with it`, () => {
    const root = mkdtempSync(join(realpathSync('/tmp'), 'ptc-hostile-user-'));
    try {
      const ws = join(root, 'ws');
      const tmp = join(root, 'tmp');
      for (const directory of [ws, tmp]) mkdirSync(directory);
      for (const directory of [root, ws, tmp]) chmodSync(directory, 0o777);
      let binary = PTC;
      if (AS_USER.length > 0 && spawnSync(AS_USER[0]!, [...AS_USER.slice(1), 'test', '-x', PTC]).status !== 0) {
        binary = join(root, 'ptc');
        copyFileSync(PTC, binary);
        chmodSync(binary, 0o755);
      }
      const command = [...AS_USER, binary, 'run', '--json', '--sandbox-backend', backend, '-'];
      const run = spawnSync(command[0]!, command.slice(1), { cwd: ws, input: LOCKED_TMP, encoding: 'utf8', env: { PATH: process.env.PATH, HOME: root, TMPDIR: tmp }, timeout: 60_000 });
      assert.equal([run.status, run.signal, run.stderr], [0, null, '']);
      const result = JSON.parse(run.stdout) as RunResult;
      assert.is(result.status, 'ok');
      assert.match(String((result as { value?: unknown }).value), new RegExp(`^${tmp}/ptc-\\d+-\\d+-[^/]+/tmp-`));
      assert.equal(readdirSync(tmp), []);
      assert.equal(processesIn(ws), []);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
}

test.after(removeTempRoot);

test.run();
