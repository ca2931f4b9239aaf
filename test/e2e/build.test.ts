// The built single executable. Assumes dist/ptc exists (`npm run build` first).
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';

const ROOT = join(import.meta.dirname, '..', '..');
const BIN = join(ROOT, 'dist', 'ptc');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  version: string;
  optionalDependencies: Record<string, string>;
};
const PINNED_NODE = pkg.optionalDependencies[`node-${process.platform}-${process.arch}`];

const escape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

function ptc(args: string[], env: NodeJS.ProcessEnv): string {
  assert.ok(existsSync(BIN), `${BIN} is missing: run \`npm run build\` first`);
  return execFileSync(BIN, args, { encoding: 'utf8', env, timeout: 30_000 });
}

test('`ptc version` prints the ptc version, the embedded (pinned) Node and the protocol', () => {
  assert.ok(PINNED_NODE, `package.json pins no Node for ${process.platform}-${process.arch}`);
  const out = ptc(['version'], process.env);
  assert.match(out, new RegExp(`^ptc ${escape(pkg.version)}$`, 'm'));
  assert.match(out, new RegExp(`^node v${escape(PINNED_NODE)}$`, 'm'));
  assert.match(out, /^protocol \d+$/m);
});

test('dist/ptc runs with no node on PATH', () => {
  const out = ptc(['version'], { PATH: '/nonexistent' });
  assert.match(out, new RegExp(`^ptc ${escape(pkg.version)}$`, 'm'));
});

test('the bundles a carrier runs are ASCII, so V8 holds their source at one byte a character', () => {
  for (const file of ['ptc.cjs', 'parts/carrier.cjs', 'parts/host.cjs', 'bootstrap.mjs']) {
    const text = readFileSync(join(ROOT, 'dist', file), 'utf8');
    const outside = /[^\x00-\x7f]/.exec(text);
    assert.is(outside, null, `dist/${file} has ${JSON.stringify(outside?.[0])} at offset ${outside?.index}: ${JSON.stringify(text.slice((outside?.index ?? 0) - 60, (outside?.index ?? 0) + 20))}`);
  }
});

test.run();
