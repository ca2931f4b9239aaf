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

test.run();
