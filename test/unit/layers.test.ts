// The dependency rule of docs/architecture.md, checked on the source. Top-level folders are layers:
// wire/ (what crosses the control channel) imports nothing of the tree; the in-sandbox carrier/
// imports only wire/; supervision/ (confining and watching a carrier from outside) imports wire/;
// relay/ imports both; bootstrap/, the far-side entry, picks the carrier or the relay; host/ imports
// wire/ and supervision/, never the carrier or the relay. Inside host/, each folder imports only
// from the layers below it, and the front ends only through the library's public surfaces (the
// files directly in host/). No circle between files, nor between folders.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..', '..');

/** What each top-level source folder may import besides itself. */
const TOP_LAYERS: Record<string, string[]> = {
  wire: [],
  supervision: ['wire'],
  carrier: ['wire'],
  relay: ['wire', 'supervision'],
  bootstrap: ['wire', 'carrier', 'relay'],
  host: ['wire', 'supervision'],
};
// Inside host/, lowest first: a folder may import itself and anything to its left. 'surface' is the
// files directly in host/ (index.ts, the library; prestart.ts, the CLI's head start).
const HOST_LAYERS = ['sandbox', 'worker', 'execution', 'runtime', 'surface', 'serve', 'mcp', 'ai', 'cli'];
/** Front ends use only the public surfaces and their own folder; the CLI, which starts them all, may also start the others. */
const FRONT_ENDS = ['serve', 'mcp', 'ai', 'cli'];

function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && /\.(ts|mts)$/.test(entry.name))
    .map((entry) => relative(ROOT, join(entry.parentPath, entry.name)));
}

/** Every relative module specifier of a file, static or dynamic, type-only included. */
function imports(file: string): string[] {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const found: string[] = [];
  for (const match of text.matchAll(/(?:\bfrom\s+|\bimport\s*\(\s*|^import\s+)['"](\.{1,2}\/[^'"]+)['"]/gm)) {
    found.push(relative(ROOT, resolve(ROOT, dirname(file), match[1]!)));
  }
  return found;
}

const top = (path: string): string => path.split('/')[0]!;
const ALL = Object.keys(TOP_LAYERS).flatMap(sources);
const KNOWN = new Set(ALL);

function hostLayer(path: string): string {
  const match = /^host\/([^/]+)\//.exec(path);
  return match === null ? 'surface' : match[1]!;
}

/** The unit of the folder-level circle check: a top-level folder's own files, or one of its folders with everything below it (wire, carrier/run, host/worker, supervision/resources). */
const folder = (path: string): string => path.split('/').slice(0, path.split('/').length > 2 ? 2 : 1).join('/');

function circles(graph: Map<string, string[]>): string[] {
  const state = new Map<string, 'visiting' | 'done'>();
  const found: string[] = [];
  const visit = (node: string, path: string[]): void => {
    if (state.get(node) === 'done') return;
    if (state.get(node) === 'visiting') {
      found.push([...path.slice(path.indexOf(node)), node].join(' -> '));
      return;
    }
    state.set(node, 'visiting');
    for (const next of graph.get(node) ?? []) visit(next, [...path, node]);
    state.set(node, 'done');
  };
  for (const node of graph.keys()) visit(node, []);
  return found;
}

test('every source file sits in a known layer and imports only files that exist there', () => {
  const bad = ALL.flatMap((file) => imports(file).filter((target) => /\.(ts|mts)$/.test(target) && !KNOWN.has(target)).map((target) => `${file} -> ${target}`));
  assert.equal(bad, []);
});

test('each top-level folder imports only the layers it may', () => {
  const bad = ALL.flatMap((file) =>
    imports(file)
      .filter((target) => top(target) in TOP_LAYERS && top(target) !== top(file) && !TOP_LAYERS[top(file)]!.includes(top(target)))
      .map((target) => `${file} -> ${target}`),
  );
  assert.equal(bad, []);
});

test('the carrier reaches nothing of the tree but the wire: what it bundles is carrier/ and wire/', () => {
  const seen = new Set<string>();
  const walk = (file: string): void => {
    if (seen.has(file)) return;
    seen.add(file);
    for (const target of imports(file)) if (KNOWN.has(target)) walk(target);
  };
  for (const file of sources('carrier')) walk(file);
  assert.equal([...seen].filter((file) => top(file) !== 'carrier' && top(file) !== 'wire'), []);
});

test('each host/ folder imports only from the layers below it; front ends only through the public surfaces', () => {
  const bad: string[] = [];
  for (const file of sources('host')) {
    const from = hostLayer(file);
    assert.ok(HOST_LAYERS.includes(from), `${file} is in no known layer`);
    for (const target of imports(file)) {
      if (top(target) !== 'host') continue;
      const to = hostLayer(target);
      const allowed = FRONT_ENDS.includes(from)
        ? to === from || to === 'surface' || (from === 'cli' && FRONT_ENDS.includes(to))
        : HOST_LAYERS.indexOf(to) <= HOST_LAYERS.indexOf(from);
      if (!allowed) bad.push(`${file} -> ${target}`);
    }
  }
  assert.equal(bad, []);
});

test('no import circle between files', () => {
  const graph = new Map(ALL.map((file) => [file, imports(file).filter((target) => KNOWN.has(target))]));
  assert.equal(circles(graph), []);
});

test('no import circle between folders', () => {
  const graph = new Map<string, string[]>();
  for (const file of ALL) {
    const edges = graph.get(folder(file)) ?? [];
    for (const target of imports(file)) if (KNOWN.has(target) && folder(target) !== folder(file)) edges.push(folder(target));
    graph.set(folder(file), edges);
  }
  assert.equal(circles(graph), []);
});

test.run();
