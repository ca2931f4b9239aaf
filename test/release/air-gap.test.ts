// Air-gapped and standalone: each binary that can run here (dist/ptc natively, the linux-arm64
// release binary under qemu-user) runs a full program with bindings under bubblewrap from an empty
// directory, with an empty environment (`env -i`), no Node on PATH and no network interfaces but
// a downed loopback (`unshare -n`).
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { decodeJson } from '../../wire/decode.ts';
import { repoRoot, withoutWarm, reportLimits } from '../helpers/runtime.ts';
import { ensureRelease, file } from './artifacts.ts';

ensureRelease();

// PATH holds nothing but `true`: the bubblewrap probe runs `true` inside its sandbox through PATH,
// and without it `auto` and `bwrap` report bwrap unusable. The directory is outside /tmp because
// the probe's sandbox mounts a fresh /tmp.
const PATH_DIR = join(repoRoot, 'release', '.cache', 'air-gap-path');
rmSync(PATH_DIR, { recursive: true, force: true });
mkdirSync(PATH_DIR, { recursive: true });
symlinkSync('/usr/bin/true', join(PATH_DIR, 'true'));

const bindingsDir = mkdtempSync(join(tmpdir(), 'ptc-air-gap-bindings-'));
copyFileSync(join(repoRoot, 'examples', 'tools.mjs'), join(bindingsDir, 'tools.mjs'));

/** Runs `argv` with no network, an empty environment but PATH_DIR, from `cwd`. */
function airGapped(argv: string[], cwd: string, input = '') {
  const result = spawnSync('/usr/bin/unshare', ['-n', '--', '/usr/bin/env', '-i', `PATH=${PATH_DIR}`, ...argv], {
    cwd,
    input,
    encoding: 'utf8',
    timeout: 180_000,
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

test('the air gap: no interface but a downed loopback, and no node on PATH', () => {
  const net = airGapped(['/bin/cat', '/proc/net/dev'], tmpdir());
  assert.is(net.code, 0, net.stderr);
  assert.equal(net.stdout.split('\n').slice(2).filter(Boolean).map((line) => line.trim().split(':')[0]), ['lo']);
  const node = airGapped(['/bin/sh', '-c', 'command -v node || echo none'], tmpdir());
  assert.is(node.stdout, 'none\n');
});

const PROGRAM = `
  const open = await tracker.listIssues({ unlabeled: true });
  inspect(open.length, 'unlabeled');
  const worst = await tracker.getIssue(open.sort((a, b) => b.comments - a.comments)[0].id);
  const fs = await import('node:fs');
  fs.writeFileSync('triage.txt', String(worst.id));
  return { id: worst.id, saved: fs.readFileSync('triage.txt', 'utf8'), arch: process.arch };
`;

for (const [name, binary, arch] of [['dist/ptc (linux-x64)', join(repoRoot, 'dist', 'ptc'), 'x64'], ['linux-arm64 under qemu-user', file('linux-arm64'), 'arm64']] as const) {
  test(`${name}: a program with bindings runs under bubblewrap from an empty directory`, () => {
    const cwd = mkdtempSync(join(tmpdir(), 'ptc-air-gap-'));
    assert.equal(readdirSync(cwd), []);
    const args = ['run', '--json', '--sandbox-backend', 'bwrap', '--require-enforcement', 'full', '--bindings', join(bindingsDir, 'tools.mjs'), '-'];
    const { code, stdout, stderr } = airGapped([binary, ...args], cwd, PROGRAM);
    assert.is(stderr, '');
    assert.is(code, 0, stdout);
    const result = decodeJson(stdout) as any;
    assert.equal(withoutWarm(result), {
      status: 'ok',
      value: { id: 9007199254740997n, saved: '9007199254740997', arch },
      output: [{ type: 'text', text: '4 unlabeled\n', stream: 'stdout' }],
      sandbox: { mode: 'workspace-write', backend: 'bwrap', enforcement: 'full', network: false, denied: false, memory: 'none', disk: 'watchdog', ...reportLimits() },
    });
    assert.equal(readdirSync(cwd), ['triage.txt']);
    assert.is(readFileSync(join(cwd, 'triage.txt'), 'utf8'), '9007199254740997');
    rmSync(cwd, { recursive: true, force: true });
  });
}

test.after(() => rmSync(bindingsDir, { recursive: true, force: true }));

test.run();
