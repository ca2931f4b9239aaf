// Programs' imports (issue 17 §2): the host's import policy (deny, allow, map to a file or to the
// run's bindings) and the runner's ProgramImportHandler (imports.handler), enforced in the carrier
// in every format: async-function (per-call), vm-script with persistence, the scoped REPL and
// Node's REPL. Node's REPL is intercepted with module.registerHooks on Node 22.15+ and with
// module.register's loader thread on an older Node (the node-script and ssh launches run
// /usr/bin/node 20), so every case runs on each launch.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RuntimeConfig } from '../../host/index.ts';
import { createTestRuntime, launchUnderTest, repoRoot, runtimesPerTest } from '../helpers/runtime.ts';
import { failureOf, show, valueOf } from '../helpers/assert.ts';

const fixtures = join(repoRoot, 'test', 'fixtures', 'imports');
const scratch = mkdtempSync(join(tmpdir(), 'ptc-imports-'));

interface Format {
  name: 'async-function' | 'vm-script' | 'scoped-repl' | 'repl';
  config: RuntimeConfig;
  /** A program whose value is `expression`, after `statements`. */
  program(statements: string, expression: string): string;
}

const completion = (statements: string, expression: string) => `${statements}\n${expression}`;
const FORMATS: Format[] = [
  { name: 'async-function', config: {}, program: (statements, expression) => `${statements}\nreturn ${expression};` },
  { name: 'vm-script', config: { executionMode: 'vm-script', scriptPersistence: true }, program: completion },
  { name: 'scoped-repl', config: { executionMode: 'persistent-in-memory' }, program: completion },
  { name: 'repl', config: { executionMode: 'persistent-in-memory', replScoped: false }, program: completion },
];
const RETAINED = FORMATS.filter((format) => format.name !== 'async-function');

const runtimeWith = runtimesPerTest(test, { timeoutMs: 20_000 });
test.after(() => rmSync(scratch, { recursive: true, force: true }));

let replHooks: boolean | undefined;
/** Whether the carrier under test has module.registerHooks (Node 22.15+), which intercepts Node's REPL on its own thread. */
async function carrierHasHooks(): Promise<boolean> {
  if (replHooks === undefined) {
    const runtime = runtimeWith({ imports: {} });
    replHooks = valueOf(await runtime.run(runtime.resolve({ program: 'return typeof (await import("node:module")).registerHooks' }))) === 'function';
  }
  return replHooks;
}

let carrierMajor: number | undefined;
/** The major version of the carrier's Node: source-phase imports parse from Node 24 on. */
async function carrierNode(): Promise<number> {
  if (carrierMajor === undefined) {
    const runtime = runtimeWith({ imports: {} });
    carrierMajor = valueOf(await runtime.run(runtime.resolve({ program: 'return Number(process.versions.node.split(".")[0])' }))) as number;
  }
  return carrierMajor;
}

/** Runs one test body per format. */
function eachFormat(name: string, formats: Format[], body: (format: Format) => Promise<void>, _imports: RuntimeConfig['imports']): void {
  for (const format of formats) test(`${name} (${format.name})`, () => body(format));
}

const DENY = { deny: ['node:child_process', 'node:sqlite', 'left-*'] };
eachFormat('a denied import fails the run with an exception naming the specifier and the rule; `child_process` is `node:child_process`', FORMATS, async (format) => {
  const runtime = runtimeWith({ ...format.config, imports: DENY });
  for (const [specifier, rule] of [['child_process', 'node:child_process'], ['node:child_process', 'node:child_process'], ['node:sqlite', 'node:sqlite'], ['left-pad', 'left-*']]) {
    const denied = failureOf(await runtime.run(runtime.resolve({ program: format.program(`await import(${JSON.stringify(specifier)});`, '1'), stateOwner: {} })));
    assert.equal([denied.kind, denied.message], ['exception', `import of "${specifier}" is denied by the import policy (deny "${rule}")`]);
  }
  // What no rule denies loads as before.
  assert.is(valueOf(await runtime.run(runtime.resolve({ program: format.program('const os = await import("node:os");', 'typeof os.cpus'), stateOwner: {} }))), 'function');
}, DENY);

// Node's REPL gives programs `require`, a global per builtin module and a cwd-relative import
// referrer; none of them gets around the policy.
eachFormat('in Node\'s REPL, require(), the builtin module globals and an import whose cwd moved meet the policy too', FORMATS.filter((format) => format.name === 'repl'), async (format) => {
  const runtime = runtimeWith({ ...format.config, imports: DENY });
  const owner = {};
  for (const program of ['require("child_process")', 'child_process.spawnSync', 'const pending = import("node:child_process"); process.chdir("/"); await pending']) {
    const denied = failureOf(await runtime.run(runtime.resolve({ program, stateOwner: owner })));
    assert.match(denied.message, /^import of "(?:node:)?child_process" is denied by the import policy \(deny "node:child_process"\)$/, program);
  }
  assert.is(valueOf(await runtime.run(runtime.resolve({ program: 'typeof require("node:os").cpus + typeof os.cpus', stateOwner: owner }))), 'functionfunction');
}, DENY);

eachFormat('a denied import never touches the file system: no module file is read, a missing one is not even looked for', FORMATS, async (format) => {
  const directory = mkdtempSync(join(scratch, 'marker-'));
  cpSync(join(fixtures, 'marker.mjs'), join(directory, 'marker.mjs'));
  const runtime = runtimeWith({ ...format.config, imports: { deny: ['*marker.mjs', './missing.mjs'] } });
  const marker = failureOf(await runtime.run(runtime.resolve({ program: format.program('await import("./marker.mjs");', '1'), cwd: directory, stateOwner: {} })));
  assert.is(marker.message, 'import of "./marker.mjs" is denied by the import policy (deny "*marker.mjs")');
  assert.not.ok(existsSync(join(directory, 'loaded.marker')), 'the denied module ran');
  const missing = failureOf(await runtime.run(runtime.resolve({ program: format.program('await import("./missing.mjs");', '1'), cwd: directory, stateOwner: {} })));
  assert.is(missing.message, 'import of "./missing.mjs" is denied by the import policy (deny "./missing.mjs")');
}, { deny: ['x'] });

const ALLOW = { allow: ['node:path', 'node:url'] };
eachFormat('with allow rules, only what they match is imported', FORMATS, async (format) => {
  const runtime = runtimeWith({ ...format.config, imports: ALLOW });
  assert.is(valueOf(await runtime.run(runtime.resolve({ program: format.program('const path = await import("path");', 'path.basename("/a/b")'), stateOwner: {} }))), 'b');
  const denied = failureOf(await runtime.run(runtime.resolve({ program: format.program('await import("node:os");', '1'), stateOwner: {} })));
  assert.is(denied.message, 'import of "node:os" is denied by the import policy (no allow rule matches)');
}, ALLOW);

const MAPPED = { map: { 'left-pad': join(fixtures, 'vendored.mjs'), tools: 'bindings:', github: 'bindings:github' }, allow: ['node:path'] };
eachFormat('a specifier maps to a vendored file, and to the run\'s bindings as a module', FORMATS, async (format) => {
  const runtime = runtimeWith({ ...format.config, imports: MAPPED });
  const bindings = {
    add: async (a: number, b: number) => a + b,
    github: { issue: async (id: number) => ({ id, title: `issue ${id}` }) },
  };
  const padded = await runtime.run(runtime.resolve({ program: format.program('const { pad } = await import("left-pad");', 'pad(7, 3)'), stateOwner: {} }));
  assert.is(valueOf(padded), '007');
  const tools = await runtime.run(runtime.resolve({
    program: format.program('const tools = await import("tools"); const { issue } = await import("github");', '[await tools.add(2, 3), (await issue(4)).title, Object.keys(tools).sort().join()]'),
    stateOwner: {},
    bindings,
  }));
  assert.equal(valueOf(tools), [5, 'issue 4', 'add,github']);
}, MAPPED);

const HANDLER = { handler: join(fixtures, 'handler.mjs'), deny: ['runner:denied'] };
eachFormat('the runner\'s handler: module exports keep private fields and identity, a redirect loads its target, a throw rejects the import', FORMATS, async (format) => {
  const runtime = runtimeWith({ ...format.config, imports: HANDLER });
  const owner = {};
  const counted = await runtime.run(runtime.resolve({
    program: format.program('const first = await import("runner:counter"); const again = await import("runner:counter");', '[first.counter.next(), again.counter.next(), first === again, first.default]'),
    stateOwner: owner,
  }));
  assert.equal(valueOf(counted), [1, 2, true, 'the default export']);
  const redirected = await runtime.run(runtime.resolve({ program: format.program('const path = await import("runner:path");', 'path.join("a", "b")'), stateOwner: owner }));
  assert.is(valueOf(redirected), join('a', 'b'));
  const refused = failureOf(await runtime.run(runtime.resolve({ program: format.program('await import("runner:refuse");', '1'), stateOwner: owner })));
  assert.equal([refused.kind, refused.message], ['exception', 'the runner refuses runner:refuse']);
  // A deny rule is decided before the runner's handler is asked.
  const denied = failureOf(await runtime.run(runtime.resolve({ program: format.program('await import("runner:denied");', '1'), stateOwner: owner })));
  assert.is(denied.message, 'import of "runner:denied" is denied by the import policy (deny "runner:denied")');
  const echoed = await runtime.run(runtime.resolve({ program: format.program('const { request } = await import("runner:echo");', 'JSON.parse(request)'), stateOwner: owner, cwd: scratch }));
  const request = valueOf(echoed) as { specifier: string; attributes: object; referrer: string };
  assert.is(request.specifier, 'runner:echo');
  assert.equal(request.attributes, {});
  assert.ok(request.referrer.startsWith('/'), show(request));
}, HANDLER);

eachFormat('an asynchronous decision is taken by vm-script and the scoped REPL, refused by async-function and Node\'s REPL', FORMATS, async (format) => {
  const runtime = runtimeWith({ ...format.config, imports: HANDLER });
  const result = await runtime.run(runtime.resolve({ program: format.program('const { later } = await import("runner:later");', 'later'), stateOwner: {} }));
  if (format.name === 'vm-script' || format.name === 'scoped-repl') {
    assert.is(valueOf(result), 'decided asynchronously');
  } else {
    assert.is(failureOf(result).message, `the import handler returned a Promise for "runner:later"; ${format.name} programs need a synchronous decision`);
  }
}, HANDLER);

eachFormat('a retained function keeps the policy when a later run calls it', RETAINED, async (format) => {
  const runtime = runtimeWith({ ...format.config, imports: DENY });
  const owner = {};
  valueOf(await runtime.run(runtime.resolve({ program: 'var spawn = () => import("node:child_process"); 1', stateOwner: owner })));
  const later = failureOf(await runtime.run(runtime.resolve({ program: 'await spawn()', stateOwner: owner })));
  assert.is(later.message, 'import of "node:child_process" is denied by the import policy (deny "node:child_process")');
}, DENY);

// The reference: imports started or resolved after a retained evaluation ends reject. The first run
// leaves a timer that imports once no run is active (it writes the outcome to a file, which the
// test waits for), a promise reaction that imports when the second run triggers it (the reaction
// belongs to the first run, which has ended), and an import whose decision comes after a timer
// (vm-script and the scoped REPL take asynchronous decisions), so after the run ended.
eachFormat('imports started or resolved after a retained evaluation ended reject; a saved function that a later evaluation calls imports normally', RETAINED, async (format) => {
  const runtime = runtimeWith({ ...format.config, imports: HANDLER });
  const owner = {};
  const asynchronous = format.name !== 'repl';
  const marker = join(mkdtempSync(join(scratch, 'late-')), 'outcome.json');
  const ended = (specifier: string) => ['PTC_EVALUATION_ENDED', `import of "${specifier}" after the evaluation that started it ended`];
  valueOf(await runtime.run(runtime.resolve({
    program: [
      'var fs = await import("node:fs");',
      'var saved = () => import("node:path").then((m) => typeof m.join);',
      'var trigger; var triggered = new Promise((resolve) => { trigger = resolve; }).then(() => import("node:path")).then(() => "loaded", (e) => [e.code, e.message]);',
      `setTimeout(() => import("node:path").then(() => "loaded", (e) => [e.code, e.message]).then((outcome) => fs.writeFileSync(${JSON.stringify(marker)}, JSON.stringify(outcome))), 0);`,
      // In Node's REPL, a file's import finishes after the run: Node reads the file asynchronously.
      asynchronous ? 'var slow = import("runner:slow").then((m) => m.slow, (e) => [e.code, e.message]);' : `var finishing = import(${JSON.stringify(join(fixtures, 'vendored.mjs'))}).then((m) => typeof m.pad, (e) => [e.code, e.message]);`,
      '1',
    ].join('\n'),
    stateOwner: owner,
  })));
  while (!existsSync(marker)) await new Promise((resolve) => setTimeout(resolve, 10));
  assert.equal(JSON.parse(readFileSync(marker, 'utf8')), ended('node:path'));
  const settled = await runtime.run(runtime.resolve({ program: `trigger(); [await saved(), await triggered, await ${asynchronous ? 'slow' : 'finishing'}]`, stateOwner: owner }));
  // Node 20's REPL is decided on the loader thread's request, outside the importing code's context:
  // an import that an ended run's code starts while a later run is active counts as that run's
  // (README, Differences from the reference). With registerHooks, an import that Node's REPL finishes
  // after its run loads; on Node 20 the loader thread asks after the run ended, so it is late.
  const attributed = format.name !== 'repl' || (await carrierHasHooks());
  const finished = attributed ? 'function' : ended(join(fixtures, 'vendored.mjs'));
  assert.equal(valueOf(settled), ['function', attributed ? ended('node:path') : 'loaded', asynchronous ? ended('runner:slow') : finished]);
  // Imported while its evaluation is active, the same module loads.
  assert.is(valueOf(await runtime.run(runtime.resolve({ program: asynchronous ? '(await import("runner:slow")).slow' : 'typeof (await import("node:path")).join', stateOwner: owner }))), asynchronous ? 'decided after a timer' : 'function');
}, HANDLER);

const fixture = (name: string): string => JSON.stringify(join(fixtures, name));
const VM_FORMATS = RETAINED.filter((format) => format.name !== 'repl');

eachFormat('a module whose linking or evaluation failed because its evaluation ended loads again in a later one; an evaluated module keeps its identity', VM_FORMATS, async (format) => {
  const runtime = runtimeWith({ ...format.config, imports: HANDLER });
  const owner = {};
  valueOf(await runtime.run(runtime.resolve({
    program: [
      `var kept = await import(${fixture('vendored.mjs')});`,
      `var evaluated = import(${fixture('late-evaluation.mjs')}).then(() => "loaded", (e) => e.code);`,
      `var linked = import(${fixture('late-link.mjs')}).then(() => "loaded", (e) => e.code);`,
      '1',
    ].join('\n'),
    stateOwner: owner,
  })));
  assert.equal(valueOf(await runtime.run(runtime.resolve({ program: '[await evaluated, await linked]', stateOwner: owner }))), ['PTC_EVALUATION_ENDED', 'PTC_EVALUATION_ENDED']);
  const again = await runtime.run(runtime.resolve({
    program: `var evaluatedAgain = await import(${fixture('late-evaluation.mjs')}); var linkedAgain = await import(${fixture('late-link.mjs')});\n[evaluatedAgain.evaluation, evaluatedAgain.sep, linkedAgain.joined, (await import(${fixture('vendored.mjs')})) === kept]`,
    stateOwner: owner,
  }));
  assert.equal(valueOf(again), [2, '/', join('a', 'b'), true]);
}, HANDLER);

eachFormat('source-phase imports are refused before the handler is asked, and import attributes on an ES module loaded into the context', VM_FORMATS, async (format) => {
  const runtime = runtimeWith({ ...format.config, imports: HANDLER });
  const owner = {};
  const run = async (program: string) => failureOf(await runtime.run(runtime.resolve({ program, stateOwner: owner })));
  // runner:refuse makes the handler throw: a source-phase import of it never gets that far.
  const dynamic = await run('await import.source("runner:refuse")');
  const statically = await run(`await import(${fixture('source-phase.mjs')})`);
  if ((await carrierNode()) < 24) {
    // Older Nodes do not parse them at all.
    assert.equal([dynamic.name, statically.name], ['SyntaxError', 'SyntaxError']);
  } else {
    assert.equal([dynamic.name, dynamic.message], ['TypeError', `source-phase imports are not supported in ${format.name} programs: import source "runner:refuse"`]);
    assert.equal([statically.name, statically.message], ['TypeError', `source-phase imports are not supported in file://${join(fixtures, 'source-phase.mjs')}, an ES module loaded into the ${format.name} context: import source "runner:refuse"`]);
  }
  const refusal = `import attributes are not supported on file://${join(fixtures, 'vendored.mjs')}, an ES module loaded into the ${format.name} context`;
  const attributed = await run(`await import(${fixture('vendored.mjs')}, { with: { type: "javascript" } })`);
  assert.equal([attributed.name, attributed.message], ['TypeError', refusal]);
  const staticAttributes = await run(`await import(${fixture('attributes.mjs')})`);
  assert.equal([staticAttributes.name, staticAttributes.message], ['TypeError', refusal]);
}, HANDLER);

// Issue 33 §3: a dynamic import settles with the module's namespace, which a callable `then`
// export makes a thenable, so the import settles with what `then` gives (the reference: "follows
// JavaScript's dynamic-import Promise assimilation in AsyncFunction and VM Script"), whatever the
// policy: none, deny-only, or one with a runner's handler (which can make such a module itself).
for (const [policy, imports] of [['no policy', undefined], ['a deny-only policy', DENY], ['a handler', HANDLER]] as const) {
  eachFormat(`a module with a callable \`then\` export imports as JavaScript assimilates it, under ${policy}`, FORMATS.filter((format) => format.name !== 'repl'), async (format) => {
    const runtime = runtimeWith({ ...format.config, ...(imports !== undefined ? { imports: imports } : {}) });
    const fromHandler = policy === 'a handler' ? ', await import("runner:thenable")' : '';
    const program = format.program('', `[await import(${fixture('thenable.mjs')})${fromHandler}, (await import("node:path")).sep]`);
    const expected = [{ assimilated: true, from: 'thenable.mjs' }, ...(fromHandler ? [{ assimilated: true, from: 'the handler' }] : []), '/'];
    assert.equal(valueOf(await runtime.run(runtime.resolve({ program, stateOwner: {} }))), expected);
  }, imports);
}

// Issue 33 §7: the reference's AsyncFunction keeps Node's source-phase rules. A per-call program
// under a policy imports through node:vm's callback, which ptc makes follow them: the policy and
// the handler decide first, then Node's own error for a module without a source object. The one
// thing the callback cannot pass back is a source object Node does make (a WebAssembly.Module).
test('a source-phase import in a per-call program follows Node\'s rules under a policy, except a WebAssembly source', async () => {
  if ((await carrierNode()) < 24) return; // older Nodes do not parse `import.source`
  const attempt = (specifier: string) => `await import.source(${specifier}).then((m) => [m.constructor.name], (e) => [e.name, e.code ?? null, e.message])`;
  const program = `return [${[fixture('vendored.mjs'), '"runner:counter"', '"runner:denied"', fixture('empty.wasm')].map(attempt).join(', ')}];`;
  const plain = runtimeWith({});
  const native = valueOf(await plain.run(plain.resolve({ program }))) as unknown[][];
  const notDefined = `Source phase import object is not defined for module '${new URL(`file://${join(fixtures, 'vendored.mjs')}`).href}'`;
  assert.equal(native[0], ['SyntaxError', 'ERR_SOURCE_PHASE_NOT_DEFINED', notDefined]);
  assert.equal(native[3], ['Module']);
  const runtime = runtimeWith({ imports: HANDLER });
  const [file, made, denied, wasm] = valueOf(await runtime.run(runtime.resolve({ program }))) as unknown[][];
  assert.equal(file, native[0]);
  assert.equal(made!.slice(0, 2), ['SyntaxError', 'ERR_SOURCE_PHASE_NOT_DEFINED']);
  assert.match(made![2] as string, /^Source phase import object is not defined for module '/);
  assert.equal(denied, ['Error', 'PTC_IMPORT_DENIED', 'import of "runner:denied" is denied by the import policy (deny "runner:denied")']);
  assert.equal(wasm!.slice(0, 2), ['TypeError', null]);
  assert.match(wasm![2] as string, /^source-phase import of ".*empty\.wasm": its source object \(a Module\) cannot be handed to an async-function program that runs under an import policy/);
});

const SCRIPT_MODULES = { map: { helper: join(fixtures, 'script-module.mjs'), cp: join(fixtures, 'static-child-process.mjs') }, deny: ['node:child_process'] };
eachFormat('an ES module file loads into the Script\'s context: it sees the Script\'s globals, keeps import.meta, its static imports meet the policy, and it keeps its identity across runs', RETAINED.filter((format) => format.name !== 'repl'), async (format) => {
  const runtime = runtimeWith({ ...format.config, imports: SCRIPT_MODULES });
  const owner = {};
  const loaded = await runtime.run(runtime.resolve({
    program: 'globalThis.fromScript = "the Script\'s global"; var helper = await import("helper"); [helper.seen, helper.name, helper.url, helper.main]',
    stateOwner: owner,
  }));
  assert.equal(valueOf(loaded), ["the Script's global", 'script-module.mjs', `file://${join(fixtures, 'script-module.mjs')}`, false]);
  const again = await runtime.run(runtime.resolve({ program: 'var second = await import("helper"); [second === helper, (await second.later()).pad(1, 2)]', stateOwner: owner }));
  assert.equal(valueOf(again), [true, '01']);
  const statically = failureOf(await runtime.run(runtime.resolve({ program: 'await import("cp")', stateOwner: owner })));
  assert.is(statically.message, 'import of "node:child_process" is denied by the import policy (deny "node:child_process")');
}, SCRIPT_MODULES);

// On Node 20 Node's REPL is intercepted by module.register, whose hooks run on a loader thread;
// Node's permission model (the node-permission sandbox) forbids that thread, so the run is refused
// rather than run unchecked. Newer Nodes intercept on this thread, under any sandbox.
test('Node\'s REPL with an import policy under node-permission: enforced with module.registerHooks, refused on Node 20', async () => {
  if (launchUnderTest()?.kind === 'ssh') return;
  const workspace = mkdtempSync(join(scratch, 'workspace-'));
  const runtime = runtimeWith({ timeoutMs: 20_000, executionMode: 'persistent-in-memory', replScoped: false, policy: { mode: 'workspace-write' }, sandbox: { backend: 'node-permission', require: 'partial' }, imports: DENY });
  const owner = {};
  const result = await runtime.run(runtime.resolve({ program: 'await import("node:child_process")', cwd: workspace, stateOwner: owner }));
  assert.is(result.sandbox.backend, 'node-permission');
  const refused = failureOf(result);
  if (await carrierHasHooks()) {
    assert.equal([refused.kind, refused.message], ['exception', 'import of "node:child_process" is denied by the import policy (deny "node:child_process")']);
  } else {
    assert.equal(refused.kind, 'exception');
    assert.match(refused.message, /^an import policy or handler for repl programs on Node v\d+\.\d+\.\d+ needs module\.register's loader thread, which could not start: Access to this API has been restricted; use the scoped REPL/);
    // Every later run meets the same refusal: none runs unchecked.
    assert.match(failureOf(await runtime.run(runtime.resolve({ program: 'await import("node:child_process")', cwd: workspace, stateOwner: owner }))).message, /needs module\.register's loader thread/);
  }
});

test('the import policy is checked when the runtime is created: bad fields throw, naming them', () => {
  assert.throws(() => createTestRuntime({ imports: { deny: 'node:fs' } as never }), /ptc config: imports\.deny must be an array of non-empty specifiers or patterns, got 'node:fs'/);
  assert.throws(() => createTestRuntime({ imports: { map: { x: 'relative.mjs' } } }), /ptc config: imports\.map\['x'\] must be an absolute file path or "bindings:\[namespace\]", got 'relative\.mjs'/);
  assert.throws(() => createTestRuntime({ imports: { handler: 'handler.mjs' } }), /ptc config: imports\.handler must be an absolute path, got 'handler\.mjs'/);
  assert.throws(() => createTestRuntime({ imports: { block: [] } as never }), /ptc config: unknown field "imports\.block"/);
});

// The sandbox's /tmp is private under bubblewrap: a vendored module outside the workspace (here,
// in another directory of the host's /tmp) is bound into it, read-only. The ssh launch's carriers
// are confined on the far side, by its relay, which this does not cover.
for (const backend of ['bwrap', 'node-permission'] as const) {
  test(`a vendored module outside the workspace imports under ${backend}, and cannot be written there`, async () => {
    if (launchUnderTest()?.kind === 'ssh') return;
    const workspace = mkdtempSync(join(scratch, 'workspace-'));
    const vendor = mkdtempSync(join(scratch, 'vendor-'));
    const file = join(vendor, 'pad.mjs');
    writeFileSync(file, 'export const pad = (text, width) => String(text).padStart(width, "0");\n');
    const runtime = runtimeWith({ timeoutMs: 20_000, policy: { mode: 'workspace-write' }, sandbox: { backend, require: 'partial' }, imports: { map: { 'left-pad': file } } });
    const result = await runtime.run(runtime.resolve({
      program: `const { pad } = await import("left-pad"); let written = "written"; try { (await import("node:fs")).writeFileSync(${JSON.stringify(file)}, "x"); } catch (error) { written = error.code; } return [pad(5, 3), written];`,
      cwd: workspace,
    }));
    const [padded, written] = valueOf(result) as [string, string];
    assert.is(padded, '005');
    assert.ok(written === 'EROFS' || written === 'ERR_ACCESS_DENIED' || written === 'EACCES', written);
    assert.is(result.sandbox.backend, backend);
  });
}

test.run();
