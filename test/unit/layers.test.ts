// The dependency rule of DESIGN.md, checked on the source: carrier/ never imports host/, host/
// imports from carrier/ only carrier/protocol/, and each host/ layer imports only from the layers
// below it (the front ends only through the library's public surface, host/index.ts).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..', '..');
// Lowest first: a layer may import itself and anything to its left.
const HOST_LAYERS = ['sandbox', 'worker', 'execution', 'runtime', 'index', 'serve', 'mcp', 'ai', 'cli'];
// Front ends use only the public surface (and their own folder); the CLI, which starts them all, may also start the others.
const FRONT_ENDS = ['serve', 'mcp', 'ai', 'cli'];

function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => relative(ROOT, join(entry.parentPath, entry.name)));
}

function imports(file: string): string[] {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const found: string[] = [];
  for (const match of text.matchAll(/(?:from\s+|import\s*\(\s*)['"](\.{1,2}\/[^'"]+)['"]/g)) {
    found.push(relative(ROOT, resolve(ROOT, dirname(file), match[1]!)));
  }
  return found;
}

function hostLayer(path: string): string | undefined {
  if (path === 'host/index.ts') return 'index';
  const match = /^host\/([^/]+)\//.exec(path);
  return match?.[1];
}

test('carrier/ never imports host/', () => {
  const bad = sources('carrier').flatMap((file) => imports(file).filter((target) => target.startsWith('host/')).map((target) => `${file} -> ${target}`));
  assert.equal(bad, []);
});

test('host/ imports from carrier/ only carrier/protocol/', () => {
  const bad = sources('host').flatMap((file) =>
    imports(file).filter((target) => target.startsWith('carrier/') && !target.startsWith('carrier/protocol/')).map((target) => `${file} -> ${target}`),
  );
  assert.equal(bad, []);
});

test('each host/ folder imports only from the layers below it', () => {
  const bad: string[] = [];
  for (const file of sources('host')) {
    const from = hostLayer(file);
    assert.ok(from !== undefined && HOST_LAYERS.includes(from), `${file} is in no known layer`);
    for (const target of imports(file)) {
      const to = hostLayer(target);
      if (to === undefined) continue;
      // The front ends use the public surface; bin.ts, the process entry, may also start the CLI's head-start carrier,
      // and the CLI hands a command to another front end.
      const allowed = FRONT_ENDS.includes(from)
        ? to === from || to === 'index' || (from === 'cli' && FRONT_ENDS.includes(to)) || (file === 'host/cli/bin.ts' && target === 'host/runtime/prestart.ts')
        : HOST_LAYERS.indexOf(to) <= HOST_LAYERS.indexOf(from);
      if (!allowed) bad.push(`${file} -> ${target}`);
    }
  }
  assert.equal(bad, []);
});

test('no import circles between host/ modules', () => {
  const graph = new Map(sources('host').map((file) => [file, imports(file).filter((target) => target.startsWith('host/'))]));
  const state = new Map<string, 'visiting' | 'done'>();
  const cycles: string[] = [];
  const visit = (file: string, path: string[]): void => {
    if (state.get(file) === 'done') return;
    if (state.get(file) === 'visiting') {
      cycles.push([...path.slice(path.indexOf(file)), file].join(' -> '));
      return;
    }
    state.set(file, 'visiting');
    for (const next of graph.get(file) ?? []) visit(next, [...path, file]);
    state.set(file, 'done');
  };
  for (const file of graph.keys()) visit(file, []);
  assert.equal(cycles, []);
});

test.run();
