// What the reference states and issue 33 found ptc not doing, through real carriers in every mode
// each rule concerns: saved tool methods call the current evaluation's bindings, a frozen value
// thrown by a callback of an ended evaluation ends the process, a syntax error at the end of the
// input keeps its location, a top-level await beside `import.source` in vm-script, and how
// `inspect` shows the same image twice. (Imports with a callable `then` export and source-phase
// imports in per-call mode are in imports.test.ts, beside the other import rules.)
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { join } from 'node:path';
import { image, type Bindings, type Failure, type RunResult, type Runtime, type RuntimeConfig } from '../../host/index.ts';
import { createTestRuntime, repoRoot } from '../helpers/runtime.ts';

const show = (value: unknown): string => JSON.stringify(value, (_, v) => (typeof v === 'bigint' ? `${v}n` : v));

const runtimes: Runtime[] = [];
test.after.each(async () => {
  await Promise.all(runtimes.splice(0).map((runtime) => runtime.dispose()));
});

function runtimeWith(config: RuntimeConfig): Runtime {
  const runtime = createTestRuntime({ timeoutMs: 20_000, ...config });
  runtimes.push(runtime);
  return runtime;
}

function value(result: RunResult): unknown {
  assert.is(result.status, 'ok', show(result));
  return (result as Extract<RunResult, { status: 'ok' }>).value;
}

function failure(result: RunResult): Failure {
  assert.is(result.status, 'failed', show(result));
  return (result as Extract<RunResult, { status: 'failed' }>).failure;
}

const RETAINED: Array<[string, RuntimeConfig]> = [
  ['scoped REPL', { executionMode: 'persistent-in-memory' }],
  ["Node's REPL", { executionMode: 'persistent-in-memory', replScoped: false }],
  ['persistent vm-script', { executionMode: 'vm-script', scriptPersistence: true }],
];

// ---------------------------------------------------------------- §1 saved tool methods

/** Bindings that say which run's host function answered. */
function bindingsOf(run: string, names: { tool?: boolean; search?: boolean } = { tool: true, search: true }): Bindings {
  return {
    ...(names.tool ? { tool: async () => `${run}: tool` } : {}),
    tools: { ...(names.search ? { search: async (query: string) => `${run}: search ${query}` } : {}), other: async () => `${run}: other` },
  };
}

for (const [name, config] of RETAINED) {
  test(`§1 a saved tool, namespace and method call the current run's bindings; one the run lacks is a BindingError naming it (${name})`, async () => {
    const runtime = runtimeWith(config);
    const owner = {};
    const run = (program: string, bindings: Bindings) => runtime.run(runtime.resolve({ program, bindings, stateOwner: owner }));
    // The saved functions, and a promise reaction made by run 1 that a later run sets off.
    const saved = 'var search = tools.search; var t = tool; var ns = tools; var client = { find: tools.search };\n' +
      'var fire; var late = new Promise((resolve) => { fire = resolve; }).then(() => search("late")).then((v) => v, (e) => [e.name, e.code]);\n' +
      'await search("a")';
    assert.is(value(await run(saved, bindingsOf('run 1'))), 'run 1: search a');
    assert.equal(value(await run('[await search("b"), await t(), await ns.search("c"), await client.find("d"), await ns.other()]', bindingsOf('run 2'))), [
      'run 2: search b', 'run 2: tool', 'run 2: search c', 'run 2: search d', 'run 2: other',
    ]);
    // Code of run 1 that runs during run 3 still belongs to run 1, which has ended.
    assert.equal(value(await run('fire(); await late', bindingsOf('run 3'))), ['BindingError', 'PTC_EVALUATION_ENDED']);
    const caught = '(e) => [e.name, e.code, e.binding, e.message, e instanceof BindingError]';
    assert.equal(value(await run(`[await search("e").catch(${caught}), await t().catch(${caught}), await ns.other()]`, bindingsOf('run 4', {}))), [
      ['BindingError', 'PTC_UNKNOWN_BINDING', 'tools.search', 'tools.search: this evaluation has no binding tools.search; the function calling it was kept from an earlier evaluation that had one', true],
      ['BindingError', 'PTC_UNKNOWN_BINDING', 'tool', 'tool: this evaluation has no binding tool; the function calling it was kept from an earlier evaluation that had one', true],
      'run 4: other',
    ]);
  });
}

// ---------------------------------------------------------------- §6 syntax errors at the end

const FORMATS: Array<[string, RuntimeConfig, string]> = [
  ['per-call', {}, 'const a = 1;\nreturn (1 +'],
  ['vm-script', { executionMode: 'vm-script' }, 'const a = 1;\n(1 +'],
  ['scoped REPL', { executionMode: 'persistent-in-memory' }, 'const a = 1;\n(1 +'],
  ["Node's REPL", { executionMode: 'persistent-in-memory', replScoped: false }, 'const a = 1;\n(1 +'],
];

for (const [name, config, program] of FORMATS) {
  test(`§6 a syntax error at the end of the input keeps its location, excerpt and caret (${name})`, async () => {
    const runtime = runtimeWith(config);
    const filename = join(repoRoot, 'unfinished.ts');
    const found = failure(await runtime.run(runtime.resolve({ program, filename, stateOwner: {} })));
    const lastLine = program.split('\n')[1]!;
    const excerpt = `${lastLine}\n${' '.repeat(lastLine.length)}^`;
    assert.equal(found, {
      kind: 'exception',
      name: 'SyntaxError',
      message: 'Expression expected',
      location: { line: 2, column: lastLine.length + 1 },
      excerpt,
      stack: `${filename}:2\n${excerpt}\n\nSyntaxError: Expression expected`,
    });
  });
}

// ---------------------------------------------------------------- §4 frozen values from ended callbacks

// Run 1 leaves a promise reaction that sets a timer; run 2 sets it off, so the timer's callback
// runs during run 2 but belongs to run 1, which has ended. It throws while run 2 waits on a longer
// timer, made before it.
const LEFT_BEHIND = (thrown: string) => `var kept = 1; var fire; new Promise((resolve) => { fire = resolve; }).then(() => setTimeout(() => { throw ${thrown}; }));\n0`;
const SET_OFF = 'fire(); await new Promise((resolve) => setTimeout(resolve, 100));\n"survived"';

for (const [name, config] of RETAINED) {
  test(`§4 a frozen or non-extensible value thrown by a callback of an ended evaluation ends the process; another value is dropped (${name})`, async () => {
    for (const thrown of ['Object.freeze({ x: 1 })', 'Object.preventExtensions({ x: 1 })', 'Object.seal(new RangeError("sealed"))']) {
      const runtime = runtimeWith(config);
      const owner = {};
      const run = (program: string) => runtime.run(runtime.resolve({ program, stateOwner: owner }));
      assert.is(value(await run(LEFT_BEHIND(thrown))), 0);
      const ended = failure(await run(SET_OFF));
      const described = thrown.includes('RangeError') ? 'Uncaught RangeError: sealed' : 'Uncaught { x: 1 }';
      assert.equal(ended, {
        kind: 'worker-exit',
        message: 'the carrier exited with code 7 before the program finished',
        exitCode: 7,
        signal: null,
        state: 'cleared',
        stderrTail: `ptc: ${described}, thrown by a callback of an evaluation that had ended: a frozen or non-extensible value ends the process, as in Node's REPL\n`,
      });
      const next = await run('typeof kept');
      assert.equal([value(next), next.environment?.fresh], ['undefined', true]);
    }
    const runtime = runtimeWith(config);
    const owner = {};
    const run = (program: string) => runtime.run(runtime.resolve({ program, stateOwner: owner }));
    await run(LEFT_BEHIND('{ x: 1 }'));
    assert.is(value(await run(SET_OFF)), 'survived');
    assert.equal([value(await run('typeof kept')), (await run('1')).environment], ['number', { fresh: false }]);
  });
}

// ---------------------------------------------------------------- top-level await beside import.source

let carrierMajor: number | undefined;
/** The major version of the carrier's Node: source-phase imports parse from Node 24 on. */
async function carrierNode(): Promise<number> {
  if (carrierMajor === undefined) {
    const runtime = runtimeWith({});
    carrierMajor = value(await runtime.run(runtime.resolve({ program: 'return Number(process.versions.node.split(".")[0])' }))) as number;
  }
  return carrierMajor;
}

const SCRIPTS: Array<[string, RuntimeConfig]> = [
  ['vm-script', { executionMode: 'vm-script' }],
  ['persistent vm-script', { executionMode: 'vm-script', scriptPersistence: true }],
  ['scoped REPL', { executionMode: 'persistent-in-memory' }],
];

for (const [name, config] of SCRIPTS) {
  test(`a program with top-level await and import.source runs, its declarations kept where the mode keeps them (${name})`, async () => {
    if ((await carrierNode()) < 24) return; // older Nodes do not parse `import.source`
    const runtime = runtimeWith(config);
    const owner = {};
    const wasm = JSON.stringify(join(repoRoot, 'test/fixtures/imports/empty.wasm'));
    const program = `var compiled = await import.source(${wasm});\nconst javascript = await import.source("node:path").catch((e) => e.code);\n[Object.prototype.toString.call(compiled), javascript]`;
    assert.equal(value(await runtime.run(runtime.resolve({ program, stateOwner: owner }))), ['[object WebAssembly.Module]', 'ERR_SOURCE_PHASE_NOT_DEFINED']);
    const kept = value(await runtime.run(runtime.resolve({ program: 'typeof compiled', stateOwner: owner })));
    assert.is(kept, name === 'vm-script' ? 'undefined' : 'object');
  });
}

// ---------------------------------------------------------------- the same image shown twice

const FOUR: Array<[string, RuntimeConfig, (expression: string) => string]> = [
  ['per-call', {}, (expression) => `${expression};`],
  ['vm-script', { executionMode: 'vm-script' }, (expression) => `${expression};\nundefined`],
  ['scoped REPL', { executionMode: 'persistent-in-memory' }, (expression) => `${expression};\nundefined`],
  ["Node's REPL", { executionMode: 'persistent-in-memory', replScoped: false }, (expression) => `${expression};\nundefined`],
];

for (const [name, config, statement] of FOUR) {
  test(`inspect emits an image each time it shows one: inspect([img, img]) as inspect(img, img) (${name})`, async () => {
    const png = join(repoRoot, 'test/fixtures/images/rgb-300x7.png');
    const runtime = runtimeWith(config);
    const bindings: Bindings = { shot: async () => image(png) };
    const program = ['var img = await shot()', 'inspect(img, img)', 'inspect([img, img])', 'inspect({ a: img, b: new Map([["k", img]]) })', 'var o = { img }; o.self = o; inspect(o)']
      .map(statement).join('\n');
    const result = await runtime.run(runtime.resolve({ program, bindings, stateOwner: {} }));
    assert.is(result.status, 'ok', show(result));
    const kinds = result.output.map((entry) => entry.type).join(' ');
    // Each group: the images of one argument follow its text; a circular reference is one showing.
    assert.is(kinds, 'image image text image image text image image text image', show(result.output));
  });
}

test.run();
