// `ptc version` of the built binary and from source: the Node inside, the protocol, the platform,
// the SHA-256 of the bootstrap (equal to `sha256sum dist/bootstrap.mjs`), and the sandbox answer,
// which needs no PATH and comes from the per-user probe cache after the first process.
// Assumes dist/ptc exists (`npm run build` first).
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { withoutWarm, reportLimits } from '../helpers/runtime.ts';
import { PROTOCOL_REVISION } from '../../wire/revision.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const BIN = join(ROOT, 'dist', 'ptc');
const BOOTSTRAP = join(ROOT, 'dist', 'bootstrap.mjs');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string; optionalDependencies: Record<string, string> };
const PINNED_NODE = `v${pkg.optionalDependencies[`node-${process.platform}-${process.arch}`]}`;

let cache = '';
test.before(() => {
  assert.ok(existsSync(BIN), `${BIN} is missing: run \`npm run build\` first`);
  cache = mkdtempSync(join(tmpdir(), 'ptc-version-cache-'));
});
test.after(() => rmSync(cache, { recursive: true, force: true }));

/** dist/ptc with exactly `env` (as `env -i` gives it), from an empty directory. */
function ptc(args: string[], env: Record<string, string>, input?: string): { code: number | null; stdout: string; stderr: string } {
  const result = spawnSync(BIN, args, { encoding: 'utf8', env, cwd: cache, timeout: 30_000, ...(input !== undefined ? { input } : {}) });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

const bootstrapSha = (): string => createHash('sha256').update(readFileSync(BOOTSTRAP)).digest('hex');
const sha256sum = (): string => execFileSync('sha256sum', [BOOTSTRAP], { encoding: 'utf8' }).split(' ')[0]!;

test('`ptc version --json`: the Node inside, protocol, platform, the embedded bootstrap\'s SHA-256 and the sandbox, probed without PATH, then cached', () => {
  const env = { PATH: '/nonexistent', XDG_CACHE_HOME: join(cache, 'xdg') };
  const first = ptc(['version', '--json'], env);
  assert.is(first.stderr, '');
  assert.is(first.code, 0);
  assert.equal(JSON.parse(first.stdout), {
    ptc: pkg.version,
    node: PINNED_NODE,
    protocol: PROTOCOL_REVISION,
    platform: `${process.platform}-${process.arch}`,
    bootstrap: { sha256: sha256sum(), source: 'embedded' },
    sandbox: { bwrap: { path: '/usr/bin/bwrap', works: true, answer: 'probe' }, 'node-permission': { works: true } },
  });
  assert.is(statSync(join(cache, 'xdg', 'ptc', 'bwrap-probe.json')).mode & 0o777, 0o600);
  const second = JSON.parse(ptc(['version', '--json'], env).stdout);
  assert.equal(second.sandbox.bwrap, { path: '/usr/bin/bwrap', works: true, answer: 'cache' });
});

test('`ptc version` as text, one fact a line, with `env -i` (no PATH, no HOME)', () => {
  const home = join(cache, 'home');
  const out = ptc(['version'], { HOME: home });
  assert.is(out.code, 0);
  assert.is(out.stdout, [
    `ptc ${pkg.version}`,
    `node ${PINNED_NODE}`,
    `protocol ${PROTOCOL_REVISION}`,
    `platform ${process.platform}-${process.arch}`,
    `bootstrap sha256 ${bootstrapSha()} (embedded)`,
    'sandbox bwrap: works (/usr/bin/bwrap, probed now)',
    'sandbox node-permission: works (partial: files and, on Node 25 or later, the network as a whole; no process isolation)',
    '',
  ].join('\n'));
  assert.match(ptc(['version'], { HOME: home }).stdout, /^sandbox bwrap: works \(\/usr\/bin\/bwrap, cached probe\)$/m);
});

test('with PATH=/nonexistent, `auto` confines a run with bwrap (it used to fall to node-permission in silence)', () => {
  const out = ptc(['run', '--json', '-'], { PATH: '/nonexistent', XDG_CACHE_HOME: join(cache, 'run') }, "const fs = await import('node:fs'); try { fs.writeFileSync('/etc/ptc-escape', 'x'); return 'wrote' } catch (error) { return error.code }");
  assert.is(out.stderr, '');
  assert.equal(withoutWarm(JSON.parse(out.stdout)), {
    status: 'ok',
    value: 'EROFS',
    output: [],
    sandbox: { mode: 'workspace-write', backend: 'bwrap', enforcement: 'full', network: false, denied: true, memory: 'none', disk: 'watchdog', ...reportLimits() },
  });
});

test('the bootstrap\'s --probe (how a remote launch learns the far side) finds and runs bwrap without PATH too', () => {
  const node = existsSync('/usr/bin/node') ? '/usr/bin/node' : process.execPath;
  const out = execFileSync(node, [BOOTSTRAP, '--probe'], { encoding: 'utf8', env: { PATH: '/nonexistent' }, cwd: cache });
  const version = execFileSync(node, ['--version'], { encoding: 'utf8' }).trim();
  assert.equal(JSON.parse(out), { revision: PROTOCOL_REVISION, node: version, bwrapPath: '/usr/bin/bwrap' });
});

test('from source, the bootstrap line names dist/bootstrap.mjs, the file a build embeds, with its SHA-256', () => {
  const out = execFileSync(process.execPath, [join(ROOT, 'host', 'cli', 'bin.ts'), 'version', '--json'], { encoding: 'utf8', env: { PATH: '/nonexistent', XDG_CACHE_HOME: join(cache, 'source') } });
  const report = JSON.parse(out);
  assert.equal(report.bootstrap, { sha256: sha256sum(), source: 'built', path: BOOTSTRAP });
  assert.is(report.node, process.version);
});

test.run();
