// Every fenced code block of README.md, clients/python/README.md and docs/*.md is run here and
// checked against what its marker says, or is marked as not an example; a block with no marker,
// or a kind this suite does not know, fails the first test, so a new page follows the same rule
// (docs/development.md, "Examples in these docs"). The marker is an HTML comment on the line right
// before the opening fence:
//   <!-- run: shell -->             `$ cmd` lines, run by bash in the checkout with `ptc` meaning
//                                   dist/ptc; the lines after each are its stdout (`…` stands for
//                                   any text in a line, or on a line of its own for any lines)
//   <!-- run: setup {opts} -->      `npm ci && npm run build && <rest>`: <rest> is run in the
//                                   built checkout with empty stdin; it exits 0 and its stdout
//                                   contains `prints`
//   <!-- run: program {opts} -->    a ptc program, run through the library (host/index.ts) in a
//                                   directory holding test/fixtures/docs/, with examples/tools.mjs
//                                   as its bindings (or the module `bindings` names, whose export
//                                   `tools`, if any, is the request's tools); `// run N` lines
//                                   split it into runs of one owner; opts: `config` (runtime
//                                   configuration), `returns` (the last run's value), `prints`
//                                   (text its output contains)
//   <!-- run: module {opts} -->     a library snippet, put where `// the example` is in the file
//                                   `around` names (test/fixtures/docs/), with `ptc` meaning
//                                   host/index.ts and `ptc/ai` host/ai/index.ts (other packages
//                                   from the checkout's node_modules), and run by this Node; it exits 0 and its stdout
//                                   contains `prints`
//   <!-- run: python {opts} -->     run by python3 in the checkout with the client on PYTHONPATH;
//                                   exits 0 and its stdout contains `prints`
//   <!-- run: serve -->             a `ptc serve` exchange: each `→` line is written to dist/ptc
//                                   serve's stdin, and each `←` line must be the next line it
//                                   writes (`…` stands for any text); then stdin closes and the
//                                   server exits 0
//   <!-- run: config -->            a runtime configuration that createRuntime accepts
//   <!-- run: mcp-config -->        a `ptc mcp --config` file that ptc mcp's parser accepts, with
//                                   its "ptc" section a configuration createRuntime accepts
//   <!-- tested: <test file> -->    run by that test file, which names the page it reads it from
//   <!-- not run: <why> -->         not an example: an output sample, a type, a protocol exchange,
//                                   or a command that needs what this machine lacks
// Needs `npm run build` (dist/ptc) first.
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createRuntime, type RunResult } from '../../host/index.ts';
import { parseMcpConfig } from '../../host/mcp/config.ts';
import { repoRoot } from '../helpers/runtime.ts';

const PAGES = ['README.md', 'clients/python/README.md', ...readdirSync(join(repoRoot, 'docs')).filter((f) => f.endsWith('.md')).sort().map((f) => `docs/${f}`)];
const KINDS = new Set(['run: shell', 'run: setup', 'run: program', 'run: module', 'run: serve', 'run: python', 'run: config', 'run: mcp-config', 'tested', 'not run']);
const BIN = join(repoRoot, 'dist', 'ptc');
const work = mkdtempSync(join(tmpdir(), 'ptc-docs-'));
// `ptc` in a shell example is the built binary.
const binDir = join(work, 'bin');
mkdirSync(binDir);
symlinkSync(BIN, join(binDir, 'ptc'));

interface Block {
  page: string;
  line: number;
  lang: string;
  text: string;
  /** `run: shell`, `tested`, `not run`, … or undefined when the line before the fence is no marker. */
  kind?: string;
  /** What follows the kind in the marker. */
  rest: string;
}

function blocks(page: string): Block[] {
  const lines = readFileSync(join(repoRoot, page), 'utf8').split('\n');
  const found: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\S*)$/.exec(lines[i]!);
    if (open === null) continue;
    const end = lines.findIndex((line, j) => j > i && line === '```');
    assert.ok(end > i, `${page}:${i + 1}: a fence that is never closed`);
    const marker = /^<!-- (run: [\w-]+|tested|not run):?\s*(.*?)\s*-->$/.exec(lines[i - 1] ?? '');
    found.push({ page, line: i + 1, lang: open[1]!, text: lines.slice(i + 1, end).join('\n'), kind: marker?.[1], rest: marker?.[2] ?? '' });
    i = end;
  }
  return found;
}

const ALL = PAGES.flatMap(blocks);
const where = (block: Block): string => `${block.page}:${block.line}`;

/** Marker options: JSON whose integers past 2^53 stay exact (as bigints, which is how the library returns them). */
function options(block: Block): { config?: Record<string, unknown>; returns?: unknown; prints?: string; bindings?: string; around?: string } {
  if (block.rest === '') return {};
  const reviver = (_key: string, value: unknown, context?: { source?: string }) =>
    typeof value === 'number' && !Number.isSafeInteger(value) && /^-?\d+$/.test(context?.source ?? '') ? BigInt(context!.source!) : value;
  return JSON.parse(block.rest, reviver as (key: string, value: unknown) => unknown);
}

test('every block of README.md, clients/python/README.md and docs/*.md is run here or marked as not an example', () => {
  assert.ok(ALL.length > 20, `only ${ALL.length} blocks found`);
  const unmarked = ALL.filter((block) => block.kind === undefined || !KINDS.has(block.kind)).map(where);
  assert.equal(unmarked, [], 'blocks with no marker (see docs/development.md, "Examples in these docs")');
  const unexplained = ALL.filter((block) => block.kind === 'not run' && block.rest.length < 10).map(where);
  assert.equal(unexplained, [], '`not run` markers that do not say why');
});

/** The expected text of a shell example as a pattern: `…` is any text in a line, a line of just `…` any lines. */
function outputPattern(lines: string[]): RegExp {
  const body = lines.map((line) => (line === '…' ? '(?:[^\\n]*\\n)*?' : `${line.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/…/g, '[^\\n]*?')}\\n`)).join('');
  return new RegExp(`^${body}$`);
}

function bash(command: string, input = '') {
  const result = spawnSync('bash', ['-c', command], {
    cwd: repoRoot,
    input,
    encoding: 'utf8',
    timeout: 120_000,
    env: { ...process.env, PATH: `${binDir}:${process.env.PATH}`, PYTHONPATH: join(repoRoot, 'clients/python/src') },
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

const runners: Record<string, (block: Block) => Promise<void> | void> = {
  'run: shell'(block) {
    const sessions: Array<{ command: string; output: string[] }> = [];
    for (const line of block.text.split('\n')) {
      if (line.startsWith('$ ')) sessions.push({ command: line.slice(2), output: [] });
      else {
        assert.ok(sessions.length > 0, `${where(block)}: output before the first $ line`);
        sessions.at(-1)!.output.push(line);
      }
    }
    for (const { command, output } of sessions) {
      assert.match(command, /^(dist\/ptc|ptc)\b|\| (dist\/ptc|ptc)\b/, `${where(block)}: a shell example runs ptc`);
      const run = bash(command);
      // 1 is a program that failed, which a sample may show; 2 (a usage error) never is an example.
      assert.ok(run.code === 0 || run.code === 1, `${command} exited ${run.code}\n${run.stderr}`);
      assert.match(run.stdout, outputPattern(output), `${where(block)}: ${command}`);
    }
  },
  'run: setup'(block) {
    const prefix = 'npm ci && npm run build && ';
    assert.ok(block.text.startsWith(prefix) && !block.text.includes('\n'), `${where(block)}: a set-up line starts with ${prefix}`);
    const run = bash(block.text.slice(prefix.length));
    assert.is(run.code, 0, run.stderr);
    const { prints } = options(block);
    if (prints !== undefined) assert.ok(run.stdout.includes(prints), `${where(block)}: no ${JSON.stringify(prints)} in\n${run.stdout}`);
  },
  async 'run: program'(block) {
    const { config = {}, returns, prints, bindings: module = 'examples/tools.mjs' } = options(block);
    const cwd = mkdtempSync(join(work, 'program-'));
    cpSync(join(repoRoot, 'test/fixtures/docs'), cwd, { recursive: true });
    const { tools, ...bindings } = await import(join(repoRoot, module));
    const runtime = createRuntime(config as Parameters<typeof createRuntime>[0]);
    const owner = {};
    const results: RunResult[] = [];
    try {
      for (const program of block.text.split(/^\/\/ run \d+.*$/m).filter((part) => part.trim() !== '')) {
        const spec = runtime.resolve({ program, bindings, tools, cwd, stateOwner: runtime.retainsState ? owner : undefined });
        const result = await runtime.run(spec);
        assert.is(result.status, 'ok', `${where(block)}: ${JSON.stringify(result.status === 'failed' ? result.failure : undefined)}`);
        results.push(result);
      }
    } finally {
      await runtime.dispose();
    }
    const last = results.at(-1)!;
    if (returns !== undefined) assert.equal(last.status === 'ok' ? last.value : undefined, returns);
    const text = results.flatMap((result) => result.output).map((entry) => (entry.type === 'text' ? entry.text : `[image ${entry.path}]`)).join('');
    if (prints !== undefined) assert.ok(text.includes(prints), `${where(block)}: no ${JSON.stringify(prints)} in\n${text}`);
  },
  'run: module'(block) {
    const { around, prints } = options(block);
    assert.ok(around, `${where(block)}: a module example names the file around it`);
    const frame = readFileSync(join(repoRoot, 'test/fixtures/docs', around), 'utf8');
    assert.ok(frame.includes('\n// the example\n'), `${around} has no \`// the example\` line`);
    const source = frame.replace('\n// the example\n', `\n${block.text}\n`)
      .replaceAll("from 'ptc/ai'", `from ${JSON.stringify(join(repoRoot, 'host/ai/index.ts'))}`)
      .replaceAll("from 'ptc'", `from ${JSON.stringify(join(repoRoot, 'host/index.ts'))}`);
    const dir = mkdtempSync(join(work, 'module-'));
    // Other packages an example imports (`ai`, `zod`) resolve from the checkout's.
    symlinkSync(join(repoRoot, 'node_modules'), join(dir, 'node_modules'));
    const file = join(dir, 'example.mts');
    writeFileSync(file, source);
    const run = spawnSync(process.execPath, [file], { cwd: repoRoot, encoding: 'utf8', timeout: 120_000 });
    assert.is(run.stderr, '');
    assert.is(run.status, 0);
    if (prints !== undefined) assert.ok(run.stdout.includes(prints), `${where(block)}: no ${JSON.stringify(prints)} in\n${run.stdout}`);
  },
  'run: python'(block) {
    const run = spawnSync('python3', ['-'], { cwd: repoRoot, input: block.text, encoding: 'utf8', timeout: 120_000, env: { ...process.env, PYTHONPATH: join(repoRoot, 'clients/python/src') } });
    assert.is(run.status, 0, run.stderr);
    const { prints } = options(block);
    if (prints !== undefined) assert.ok(run.stdout.includes(prints), `${where(block)}: no ${JSON.stringify(prints)} in\n${run.stdout}`);
  },
  async 'run: serve'(block) {
    const server = spawn(BIN, ['serve'], { cwd: repoRoot, stdio: ['pipe', 'pipe', 'ignore'] });
    const exited = once(server, 'close');
    const lines = createInterface({ input: server.stdout! })[Symbol.asyncIterator]();
    try {
      for (const line of block.text.split('\n')) {
        if (line.startsWith('→ ')) server.stdin!.write(`${line.slice(2)}\n`);
        else {
          assert.ok(line.startsWith('← '), `${where(block)}: a line that is neither → nor ←: ${line}`);
          const next = await lines.next();
          assert.ok(!next.done, `${where(block)}: the server wrote nothing for ${line}`);
          assert.match(`${next.value}\n`, outputPattern([line.slice(2)]));
        }
      }
    } finally {
      server.stdin!.end();
    }
    assert.equal(await exited, [0, null]);
  },
  async 'run: config'(block) {
    const runtime = createRuntime(JSON.parse(block.text));
    await runtime.dispose();
  },
  async 'run: mcp-config'(block) {
    const config = parseMcpConfig(JSON.parse(block.text), where(block));
    assert.ok(config.upstreams.size > 0, `${where(block)}: names no upstream`);
    await createRuntime(config.ptc).dispose();
  },
  tested(block) {
    const file = join(repoRoot, block.rest);
    assert.ok(existsSync(file), `${where(block)}: no ${block.rest}`);
    assert.ok(readFileSync(file, 'utf8').includes(block.page), `${where(block)}: ${block.rest} does not name ${block.page}, so it cannot be the test that runs this block`);
  },
};

for (const block of ALL) {
  if (block.kind === undefined || block.kind === 'not run' || !KINDS.has(block.kind)) continue;
  test(`${where(block)} (${block.kind}${block.rest.startsWith('{') || block.rest === '' ? '' : ` ${block.rest}`})`, async () => {
    if (block.kind !== 'tested' && block.kind !== 'run: config' && block.kind !== 'run: mcp-config') assert.ok(existsSync(BIN), `${BIN} is missing: run "npm run build" first`);
    await runners[block.kind!]!(block);
  });
}

test.after(() => {
  rmSync(work, { recursive: true, force: true });
});

test.run();
