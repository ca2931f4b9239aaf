// Programs' imports (issue 17 §2): the host's import policy (deny, allow, map to a file or to the
// run's bindings) and the runner's ProgramImportHandler (imports.handler), enforced in the carrier
// in every format: async-function (per-call), vm-script with persistence, the scoped REPL and
// Node's REPL. Node's REPL needs module.registerHooks (Node 22.15+); a carrier on an older Node
// (the node-script and ssh launches run /usr/bin/node 20) refuses a REPL run with a policy.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cpSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RunResult, Runtime, RuntimeConfig } from '../../host/index.ts';
import { createTestRuntime, launchUnderTest, repoRoot } from '../helpers/runtime.ts';

const fixtures = join(repoRoot, 'test', 'fixtures', 'imports');
const scratch = mkdtempSync(join(tmpdir(), 'ptc-imports-'));
const show = (value: unknown): string => JSON.stringify(value, (_, v) => (typeof v === 'bigint' ? `${v}n` : v));

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

const runtimes: Runtime[] = [];
test.after.each(async () => {
  await Promise.all(runtimes.splice(0).map((runtime) => runtime.dispose()));
});
test.after(() => rmSync(scratch, { recursive: true, force: true }));

let replHooks: boolean | undefined;
/** Whether the carrier under test has module.registerHooks, which Node's REPL format needs for a policy. */
async function carrierHasHooks(): Promise<boolean> {
  if (replHooks === undefined) {
    const runtime = runtimeWith({}, {});
    const result = await runtime.run(runtime.resolve({ program: 'return typeof (await import("node:module")).registerHooks' }));
    replHooks = value(result) === 'function';
  }
  return replHooks;
}

function runtimeWith(format: RuntimeConfig, imports: RuntimeConfig['imports']): Runtime {
  const runtime = createTestRuntime({ timeoutMs: 20_000, ...format, ...(imports !== undefined ? { imports } : {}) });
  runtimes.push(runtime);
  return runtime;
}

function value(result: RunResult): unknown {
  assert.is(result.status, 'ok', show(result));
  return (result as { value?: unknown }).value;
}

function failure(result: RunResult): { kind: string; message: string; name?: string } {
  assert.is(result.status, 'failed', show(result));
  return (result as { failure: { kind: string; message: string; name?: string } }).failure;
}

const REPL_REFUSAL = /^an import policy or handler needs module\.registerHooks \(Node 22\.15 or later\) for repl programs; this carrier runs Node v\d+/;

/** Runs one test body per format; Node's REPL on a carrier without hooks must refuse instead. */
function eachFormat(name: string, formats: Format[], body: (format: Format) => Promise<void>, imports: RuntimeConfig['imports']): void {
  for (const format of formats) {
    test(`${name} (${format.name})`, async () => {
      if (format.name === 'repl' && !(await carrierHasHooks())) {
        const runtime = runtimeWith(format.config, imports);
        const refused = failure(await runtime.run(runtime.resolve({ program: '1', stateOwner: {} })));
        assert.is(refused.kind, 'exception');
        assert.match(refused.message, REPL_REFUSAL);
        return;
      }
      await body(format);
    });
  }
}

const DENY = { deny: ['node:child_process', 'node:sqlite', 'left-*'] };
eachFormat('a denied import fails the run with an exception naming the specifier and the rule; `child_process` is `node:child_process`', FORMATS, async (format) => {
  const runtime = runtimeWith(format.config, DENY);
  for (const [specifier, rule] of [['child_process', 'node:child_process'], ['node:child_process', 'node:child_process'], ['node:sqlite', 'node:sqlite'], ['left-pad', 'left-*']]) {
    const denied = failure(await runtime.run(runtime.resolve({ program: format.program(`await import(${JSON.stringify(specifier)});`, '1'), stateOwner: {} })));
    assert.equal([denied.kind, denied.message], ['exception', `import of "${specifier}" is denied by the import policy (deny "${rule}")`]);
  }
  // What no rule denies loads as before.
  assert.is(value(await runtime.run(runtime.resolve({ program: format.program('const os = await import("node:os");', 'typeof os.cpus'), stateOwner: {} }))), 'function');
}, DENY);

// Node's REPL gives programs `require`, a global per builtin module and a cwd-relative import
// referrer; none of them gets around the policy.
eachFormat('in Node\'s REPL, require(), the builtin module globals and an import whose cwd moved meet the policy too', FORMATS.filter((format) => format.name === 'repl'), async (format) => {
  const runtime = runtimeWith(format.config, DENY);
  const owner = {};
  for (const program of ['require("child_process")', 'child_process.spawnSync', 'const pending = import("node:child_process"); process.chdir("/"); await pending']) {
    const denied = failure(await runtime.run(runtime.resolve({ program, stateOwner: owner })));
    assert.match(denied.message, /^import of "(?:node:)?child_process" is denied by the import policy \(deny "node:child_process"\)$/, program);
  }
  assert.is(value(await runtime.run(runtime.resolve({ program: 'typeof require("node:os").cpus + typeof os.cpus', stateOwner: owner }))), 'functionfunction');
}, DENY);

eachFormat('a denied import never touches the file system: no module file is read, a missing one is not even looked for', FORMATS, async (format) => {
  const directory = mkdtempSync(join(scratch, 'marker-'));
  cpSync(join(fixtures, 'marker.mjs'), join(directory, 'marker.mjs'));
  const runtime = runtimeWith(format.config, { deny: ['*marker.mjs', './missing.mjs'] });
  const marker = failure(await runtime.run(runtime.resolve({ program: format.program('await import("./marker.mjs");', '1'), cwd: directory, stateOwner: {} })));
  assert.is(marker.message, 'import of "./marker.mjs" is denied by the import policy (deny "*marker.mjs")');
  assert.not.ok(existsSync(join(directory, 'loaded.marker')), 'the denied module ran');
  const missing = failure(await runtime.run(runtime.resolve({ program: format.program('await import("./missing.mjs");', '1'), cwd: directory, stateOwner: {} })));
  assert.is(missing.message, 'import of "./missing.mjs" is denied by the import policy (deny "./missing.mjs")');
}, { deny: ['x'] });

const ALLOW = { allow: ['node:path', 'node:url'] };
eachFormat('with allow rules, only what they match is imported', FORMATS, async (format) => {
  const runtime = runtimeWith(format.config, ALLOW);
  assert.is(value(await runtime.run(runtime.resolve({ program: format.program('const path = await import("path");', 'path.basename("/a/b")'), stateOwner: {} }))), 'b');
  const denied = failure(await runtime.run(runtime.resolve({ program: format.program('await import("node:os");', '1'), stateOwner: {} })));
  assert.is(denied.message, 'import of "node:os" is denied by the import policy (no allow rule matches)');
}, ALLOW);

const MAPPED = { map: { 'left-pad': join(fixtures, 'vendored.mjs'), tools: 'bindings:', github: 'bindings:github' }, allow: ['node:path'] };
eachFormat('a specifier maps to a vendored file, and to the run\'s bindings as a module', FORMATS, async (format) => {
  const runtime = runtimeWith(format.config, MAPPED);
  const bindings = {
    add: async (a: number, b: number) => a + b,
    github: { issue: async (id: number) => ({ id, title: `issue ${id}` }) },
  };
  const padded = await runtime.run(runtime.resolve({ program: format.program('const { pad } = await import("left-pad");', 'pad(7, 3)'), stateOwner: {} }));
  assert.is(value(padded), '007');
  const tools = await runtime.run(runtime.resolve({
    program: format.program('const tools = await import("tools"); const { issue } = await import("github");', '[await tools.add(2, 3), (await issue(4)).title, Object.keys(tools).sort().join()]'),
    stateOwner: {},
    bindings,
  }));
  assert.equal(value(tools), [5, 'issue 4', 'add,github']);
}, MAPPED);

const HANDLER = { handler: join(fixtures, 'handler.mjs'), deny: ['runner:denied'] };
eachFormat('the runner\'s handler: module exports keep private fields and identity, a redirect loads its target, a throw rejects the import', FORMATS, async (format) => {
  const runtime = runtimeWith(format.config, HANDLER);
  const owner = {};
  const counted = await runtime.run(runtime.resolve({
    program: format.program('const first = await import("runner:counter"); const again = await import("runner:counter");', '[first.counter.next(), again.counter.next(), first === again, first.default]'),
    stateOwner: owner,
  }));
  assert.equal(value(counted), [1, 2, true, 'the default export']);
  const redirected = await runtime.run(runtime.resolve({ program: format.program('const path = await import("runner:path");', 'path.join("a", "b")'), stateOwner: owner }));
  assert.is(value(redirected), join('a', 'b'));
  const refused = failure(await runtime.run(runtime.resolve({ program: format.program('await import("runner:refuse");', '1'), stateOwner: owner })));
  assert.equal([refused.kind, refused.message], ['exception', 'the runner refuses runner:refuse']);
  // A deny rule is decided before the runner's handler is asked.
  const denied = failure(await runtime.run(runtime.resolve({ program: format.program('await import("runner:denied");', '1'), stateOwner: owner })));
  assert.is(denied.message, 'import of "runner:denied" is denied by the import policy (deny "runner:denied")');
  const echoed = await runtime.run(runtime.resolve({ program: format.program('const { request } = await import("runner:echo");', 'JSON.parse(request)'), stateOwner: owner, cwd: scratch }));
  const request = value(echoed) as { specifier: string; attributes: object; referrer: string };
  assert.is(request.specifier, 'runner:echo');
  assert.equal(request.attributes, {});
  assert.ok(request.referrer.startsWith('/'), show(request));
}, HANDLER);

eachFormat('an asynchronous decision is taken by vm-script and the scoped REPL, refused by async-function and Node\'s REPL', FORMATS, async (format) => {
  const runtime = runtimeWith(format.config, HANDLER);
  const result = await runtime.run(runtime.resolve({ program: format.program('const { later } = await import("runner:later");', 'later'), stateOwner: {} }));
  if (format.name === 'vm-script' || format.name === 'scoped-repl') {
    assert.is(value(result), 'decided asynchronously');
  } else {
    assert.is(failure(result).message, `the import handler returned a Promise for "runner:later"; ${format.name} programs need a synchronous decision`);
  }
}, HANDLER);

eachFormat('a retained function keeps the policy when a later run calls it', RETAINED, async (format) => {
  const runtime = runtimeWith(format.config, DENY);
  const owner = {};
  value(await runtime.run(runtime.resolve({ program: 'var spawn = () => import("node:child_process"); 1', stateOwner: owner })));
  const later = failure(await runtime.run(runtime.resolve({ program: 'await spawn()', stateOwner: owner })));
  assert.is(later.message, 'import of "node:child_process" is denied by the import policy (deny "node:child_process")');
}, DENY);

// A difference from the reference, pinned (README, Differences from the reference): a late import
// is decided by the policy in force, not rejected for starting after its evaluation.
eachFormat('an import started after its evaluation ended is decided by the policy in force', RETAINED, async (format) => {
  const runtime = runtimeWith(format.config, DENY);
  const owner = {};
  value(await runtime.run(runtime.resolve({
    program: 'var late = []; setTimeout(() => { for (const name of ["node:path", "node:child_process"]) late.push(import(name).then((m) => typeof m.join, (e) => e.message)); }, 0); 1',
    stateOwner: owner,
  })));
  const settled = await runtime.run(runtime.resolve({ program: 'await new Promise((resolve) => setTimeout(resolve, 50)); await Promise.all(late)', stateOwner: owner }));
  assert.equal(value(settled), ['function', 'import of "node:child_process" is denied by the import policy (deny "node:child_process")']);
}, DENY);

const SCRIPT_MODULES = { map: { helper: join(fixtures, 'script-module.mjs'), cp: join(fixtures, 'static-child-process.mjs') }, deny: ['node:child_process'] };
eachFormat('an ES module file loads into the Script\'s context: it sees the Script\'s globals, keeps import.meta, its static imports meet the policy, and it keeps its identity across runs', RETAINED.filter((format) => format.name !== 'repl'), async (format) => {
  const runtime = runtimeWith(format.config, SCRIPT_MODULES);
  const owner = {};
  const loaded = await runtime.run(runtime.resolve({
    program: 'globalThis.fromScript = "the Script\'s global"; var helper = await import("helper"); [helper.seen, helper.name, helper.url, helper.main]',
    stateOwner: owner,
  }));
  assert.equal(value(loaded), ["the Script's global", 'script-module.mjs', `file://${join(fixtures, 'script-module.mjs')}`, false]);
  const again = await runtime.run(runtime.resolve({ program: 'var second = await import("helper"); [second === helper, (await second.later()).pad(1, 2)]', stateOwner: owner }));
  assert.equal(value(again), [true, '01']);
  const statically = failure(await runtime.run(runtime.resolve({ program: 'await import("cp")', stateOwner: owner })));
  assert.is(statically.message, 'import of "node:child_process" is denied by the import policy (deny "node:child_process")');
}, SCRIPT_MODULES);

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
    const runtime = createTestRuntime({ timeoutMs: 20_000, policy: { mode: 'workspace-write' }, sandbox: { backend, require: 'partial' }, imports: { map: { 'left-pad': file } } });
    runtimes.push(runtime);
    const result = await runtime.run(runtime.resolve({
      program: `const { pad } = await import("left-pad"); let written = "written"; try { (await import("node:fs")).writeFileSync(${JSON.stringify(file)}, "x"); } catch (error) { written = error.code; } return [pad(5, 3), written];`,
      cwd: workspace,
    }));
    const [padded, written] = value(result) as [string, string];
    assert.is(padded, '005');
    assert.ok(written === 'EROFS' || written === 'ERR_ACCESS_DENIED' || written === 'EACCES', written);
    assert.is(result.sandbox.backend, backend);
  });
}

test.run();
