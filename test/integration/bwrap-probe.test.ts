// The bubblewrap probe across processes: found and run without PATH, its pass kept in a per-user
// cache file keyed by the bwrap binary and the kernel, and probed again when the key no longer
// matches or the file cannot be trusted. Each step is a fresh Node process, as each `ptc run` is;
// where the answer came from is read from bwrapStatus's `source`, never from timing.
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { withoutWarm, reportLimits } from '../helpers/runtime.ts';
import { probeCacheFile } from '../../host/sandbox/index.ts';
import { probeKey, recordPass } from '../../host/sandbox/probe-cache.ts';
import { privateMountPrefix } from '../../supervision/private-mounts.ts';
import { createRuntime } from '../../host/index.ts';

const DETECT = pathToFileURL(join(import.meta.dirname, '..', '..', 'host', 'sandbox', 'detect.ts')).href;

let dir = '';
let bwrap = '';
let cacheFile = '';
test.before(() => {
  dir = mkdtempSync(join(tmpdir(), 'ptc-bwrap-probe-'));
  // A bwrap of our own whose mtime we may change; under /tmp, which the probe sandbox hides unless it binds it back.
  bwrap = join(dir, 'bin', 'bwrap');
  mkdirSync(join(dir, 'bin'));
  copyFileSync('/usr/bin/bwrap', bwrap);
  chmodSync(bwrap, 0o755);
  cacheFile = join(dir, 'cache', 'ptc', 'bwrap-probe.json');
});
test.after(() => rmSync(dir, { recursive: true, force: true }));

/** bwrapStatus in a new process, with PATH pointing nowhere. */
function status(path = bwrap): { unavailable?: string; source: string; cacheFile?: string } {
  const script = `const { bwrapStatus } = await import(${JSON.stringify(DETECT)}); process.stdout.write(JSON.stringify(await bwrapStatus(${JSON.stringify(path)}, { cacheFile: ${JSON.stringify(cacheFile)} })));`;
  return JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', env: { PATH: '/nonexistent' } }));
}

test('a first probe runs a sandbox (without PATH), records the pass 0600 in a 0700 directory; the next process uses it', () => {
  assert.equal(status(), { source: 'probe', cacheFile });
  assert.is(statSync(cacheFile).mode & 0o777, 0o600);
  assert.is(statSync(join(cacheFile, '..')).mode & 0o777, 0o700);
  const recorded = JSON.parse(readFileSync(cacheFile, 'utf8'));
  assert.is(recorded.format, 2);
  assert.is(recorded.passes.length, 1);
  assert.is(recorded.passes[0].bwrap.path, bwrap);
  assert.is(recorded.passes[0].kernel.bootId, readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim());
  assert.equal(status(), { source: 'cache', cacheFile });
});

test('a changed bwrap binary (mtime) is probed again, and its new key replaces the old one', () => {
  assert.equal(status(), { source: 'cache', cacheFile });
  utimesSync(bwrap, new Date(), new Date(Date.now() - 3_600_000));
  assert.equal(status(), { source: 'probe', cacheFile });
  assert.equal(status(), { source: 'cache', cacheFile });
  assert.is(JSON.parse(readFileSync(cacheFile, 'utf8')).passes.length, 1);
});

test('a different kernel (boot id or release in the key) is probed again', () => {
  assert.equal(status(), { source: 'cache', cacheFile });
  const recorded = JSON.parse(readFileSync(cacheFile, 'utf8'));
  recorded.passes[0].kernel.bootId = '00000000-0000-0000-0000-000000000000';
  writeFileSync(cacheFile, JSON.stringify(recorded));
  assert.equal(status(), { source: 'probe', cacheFile });
  recorded.passes[0].kernel.bootId = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  recorded.passes[0].kernel.release = '1.0.0-other';
  writeFileSync(cacheFile, JSON.stringify(recorded));
  assert.equal(status(), { source: 'probe', cacheFile });
  assert.equal(status(), { source: 'cache', cacheFile });
});

test('a corrupt, truncated, oversized or foreign-format file means probe, and is replaced by a good one', () => {
  const good = readFileSync(cacheFile, 'utf8');
  // Format 1 is a pass of the probe before it loaded the seccomp filter: it must not stand.
  for (const bad of ['{"format":1,"passes":[{"bwr', 'not json at all', `{"format":1,"passes":${JSON.stringify(JSON.parse(good).passes)}}`, `{"format":3,"passes":${JSON.stringify(JSON.parse(good).passes)}}`, `${good.trimEnd()}${' '.repeat(70_000)}`, '{"format":1,"passes":"all"}', '{"format":1,"passes":[{},{"bwrap":null},{"bwrap":{"path":7}}]}']) {
    writeFileSync(cacheFile, bad, { mode: 0o600 });
    assert.equal(status(), { source: 'probe', cacheFile }, `after ${JSON.stringify(bad.slice(0, 40))}`);
    assert.equal(status(), { source: 'cache', cacheFile }, `rewritten after ${JSON.stringify(bad.slice(0, 40))}`);
  }
});

test('a cache directory others may write to is not trusted: probe, and nothing written there', () => {
  chmodSync(join(cacheFile, '..'), 0o777);
  try {
    assert.equal(status(), { source: 'probe', cacheFile });
    rmSync(cacheFile);
    assert.equal(status(), { source: 'probe', cacheFile });
    assert.throws(() => statSync(cacheFile), /ENOENT/);
  } finally {
    chmodSync(join(cacheFile, '..'), 0o700);
  }
});

test('a failing bwrap is not cached, and a missing one needs no probe at all', () => {
  const refusing = join(dir, 'bin', 'refusing-bwrap');
  writeFileSync(refusing, '#!/bin/sh\necho "bwrap: setting up uid map: Permission denied" >&2\nexit 1\n', { mode: 0o755 });
  const refused = { unavailable: `bubblewrap at ${refusing} cannot create a sandbox here (user namespaces refused or restricted): bwrap: setting up uid map: Permission denied`, source: 'probe', cacheFile };
  assert.equal(status(refusing), refused);
  assert.equal(status(refusing), refused);
  const missing = join(dir, 'bin', 'missing-bwrap');
  assert.equal(status(missing), { unavailable: `bubblewrap is not installed (${missing} not found)`, source: 'none' });
});

test('a cached pass that went stale in a way the key does not see: the run fails as worker-exit with bwrap\'s message, as README says', async () => {
  const broken = join(dir, 'bin', 'broken-bwrap');
  writeFileSync(broken, '#!/bin/sh\necho "bwrap: No permissions to create new namespace" >&2\nexit 1\n', { mode: 0o755 });
  const xdg = join(dir, 'stale-xdg');
  recordPass(probeCacheFile({ XDG_CACHE_HOME: xdg }), probeKey(broken, statSync(broken), privateMountPrefix()?.executable ?? null));
  const saved = process.env.XDG_CACHE_HOME;
  process.env.XDG_CACHE_HOME = xdg;
  const runtime = createRuntime({ sandbox: { bwrapPath: broken } });
  try {
    const result = await runtime.run(runtime.resolve({ program: 'return 1' }));
    assert.equal(withoutWarm(result), {
      status: 'failed',
      failure: { kind: 'worker-exit', message: 'the carrier exited with code 1 before the program finished', exitCode: 1, signal: null, stderrTail: 'bwrap: No permissions to create new namespace\n' },
      output: [{ type: 'text', text: 'bwrap: No permissions to create new namespace\n', stream: 'stderr' }],
      sandbox: { mode: 'workspace-write', backend: 'bwrap', enforcement: 'full', network: false, denied: false, memory: 'none', disk: 'watchdog', ...reportLimits() },
    });
  } finally {
    await runtime.dispose();
    if (saved === undefined) delete process.env.XDG_CACHE_HOME;
    else process.env.XDG_CACHE_HOME = saved;
  }
});

test('probeCacheFile: XDG_CACHE_HOME when absolute, else ~/.cache/ptc, else a per-uid directory in tmp', () => {
  assert.is(probeCacheFile({ XDG_CACHE_HOME: '/x/cache', HOME: '/home/a' }), '/x/cache/ptc/bwrap-probe.json');
  assert.is(probeCacheFile({ XDG_CACHE_HOME: 'relative', HOME: '/home/a' }), '/home/a/.cache/ptc/bwrap-probe.json');
  assert.is(probeCacheFile({ HOME: '/home/a' }), '/home/a/.cache/ptc/bwrap-probe.json');
  assert.is(probeCacheFile({ HOME: '/' }), join(tmpdir(), `ptc-cache-${process.getuid!()}`, 'bwrap-probe.json'));
});

test.run();
