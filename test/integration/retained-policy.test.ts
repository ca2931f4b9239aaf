// A retained owner keeps its environment while its cwd moves, and its sandbox policy while the
// environment lives: a run that would change the mode, the workspace root, the writable roots or
// the network is refused (caller misuse, naming the change) unless it asks for the environment to
// be replaced. Relative import() follows the reference per format, relative file access the
// current cwd. Every retained format, under the real sandbox, through each launch of test/run.ts.
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunResult, Runtime } from '../../host/index.ts';
import { runtimesPerTest } from '../helpers/runtime.ts';
import { valueOf } from '../helpers/assert.ts';

// Under /tmp on purpose: bubblewrap gives the carrier a private /tmp, so a later cwd there is
// visible only because the workspace root that holds it is bound in.
const root = realpathSync(mkdtempSync(join(tmpdir(), 'ptc-retained-policy-')));
const a = join(root, 'a');
const sub = join(a, 'sub');
const b = join(root, 'b');
const extra = join(root, 'extra');
for (const [dir, where] of [[a, 'a'], [sub, 'sub'], [b, 'b'], [extra, 'extra']] as const) {
  mkdirSync(dir);
  writeFileSync(join(dir, 'where.mjs'), `export const where = ${JSON.stringify(where)};\n`);
  writeFileSync(join(dir, 'where.txt'), where);
}

const runtimeWith = runtimesPerTest(test, { timeoutMs: 20_000, policy: { mode: 'workspace-write' } });
test.after(() => rmSync(root, { recursive: true, force: true }));

const FORMATS = [
  ['scoped REPL', { executionMode: 'persistent-in-memory' }],
  ["Node's REPL", { executionMode: 'persistent-in-memory', replScoped: false }],
  ['vm-script + scriptPersistence', { executionMode: 'vm-script', scriptPersistence: true }],
] as const;

function runner(runtime: Runtime, owner: object) {
  return (program: string, request: Record<string, unknown> = {}) => runtime.run(runtime.resolve({ program, stateOwner: owner, ...request }));
}

/** The message run() rejects with, or a marker when it resolved. */
async function refusal(running: Promise<RunResult>): Promise<string> {
  return running.then((result) => `resolved: ${JSON.stringify(result)}`, (error: Error) => error.message);
}

const RELEASE = /await runtime\.release\(owner\) before this run to start a new environment under it, pass onPolicyChange: "replace" to have this run end the environment \(and its variables\) and start a new one, or run it with oneTime: true in a separate environment/;

// A write to the cwd, and one to a sibling of the workspace, which the sandbox refuses: EROFS or
// ENOENT under bubblewrap (auto picks it here; the sibling is in the host's /tmp, which is
// private), ERR_ACCESS_DENIED under Node's permission model.
const writes = `(function () {
  const fs = process.getBuiltinModule('node:fs');
  const attempt = (path) => { try { fs.writeFileSync(path, 'x'); return 'ok' } catch (error) { return error.code } };
  return [process.cwd(), attempt('written.txt'), attempt(${JSON.stringify(join(b, 'escaped.txt'))})];
})()`;

for (const [label, config] of FORMATS) {
  for (const backend of ['auto', 'node-permission'] as const) test(`${label} (sandbox ${backend}): a run in a subdirectory of the workspace keeps the environment, confined to the workspace`, async () => {
    const runtime = runtimeWith({ ...config, sandbox: { backend } });
    const run = runner(runtime, {});
    assert.equal((await run('var x = 41', { cwd: a })).environment, { fresh: true });
    const moved = await run('x + 1', { cwd: sub });
    assert.is(valueOf(moved), 42);
    assert.equal(moved.environment, { fresh: false });
    assert.is(moved.sandbox.backend, backend === 'auto' ? 'bwrap' : 'node-permission');
    const [cwd, inside, escaped] = valueOf(await run(writes, { cwd: sub })) as string[];
    assert.equal([cwd, inside], [sub, 'ok']);
    assert.ok((backend === 'auto' ? ['EROFS', 'ENOENT'] : ['ERR_ACCESS_DENIED']).includes(escaped!), escaped);
    assert.is(readFileSync(join(sub, 'written.txt'), 'utf8'), 'x');
    rmSync(join(sub, 'written.txt'));
    assert.is(valueOf(await run('x', { cwd: a })), 41);
  });

  test(`${label}: a cwd outside the first run's workspace is refused, naming both, and the environment survives`, async () => {
    const runtime = runtimeWith(config);
    const owner = {};
    const run = runner(runtime, owner);
    await run('var x = 41', { cwd: a });
    const message = await refusal(run('x + 1', { cwd: b }));
    assert.ok(message.startsWith(`ptc run(): cwd '${b}' is outside this stateOwner's workspace root '${a}' (the one its environment started with, which a policy without a workspaceRoot keeps), and a retained owner cannot change its workspace root until it is released: `), message);
    assert.match(message, RELEASE);
    assert.match(message, /give the owner's runs a policy\.workspaceRoot that holds all of them$/);
    const kept = await run('x + 1', { cwd: a });
    assert.is(valueOf(kept), 42);
    assert.equal(kept.environment, { fresh: false });
    // Released, the owner starts again wherever its next run is.
    await runtime.release(owner);
    const after = await run('typeof x', { cwd: b });
    assert.is(valueOf(after), 'undefined');
    assert.equal(after.environment, { fresh: true });
  });

  test(`${label}: onPolicyChange "replace" is the explicit way to move out, and says what it replaced`, async () => {
    const run = runner(runtimeWith(config), {});
    await run('var x = 41', { cwd: a });
    // Inside the workspace nothing changes, so nothing is replaced.
    assert.equal((await run('x', { cwd: sub, onPolicyChange: 'replace' })).environment, { fresh: false });
    const replaced = await run('typeof x', { cwd: b, onPolicyChange: 'replace' });
    assert.is(valueOf(replaced), 'undefined');
    assert.equal(replaced.environment, { fresh: true, replaced: `the sandbox policy changed (workspaceRoot '${a}' → '${b}'), so the previous environment was ended (onPolicyChange: "replace")` });
    // The new environment's workspace is b.
    assert.equal((valueOf(await run(writes.replace(join(b, 'escaped.txt'), join(a, 'escaped.txt')), { cwd: b })) as string[]).slice(0, 2), [b, 'ok']);
    rmSync(join(b, 'written.txt'));
  });

  test(`${label}: a changed mode, workspace root, writable roots or network is refused, naming the change`, async () => {
    const runtime = runtimeWith(config);
    const run = runner(runtime, {});
    await run('var x = 41', { cwd: a, policy: { mode: 'workspace-write', workspaceRoot: a } });
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ mode: 'read-only' }, `mode 'workspace-write' → 'read-only'`],
      [{ mode: 'workspace-write', workspaceRoot: root }, `workspaceRoot '${a}' → '${root}'`],
      [{ mode: 'workspace-write', writableRoots: [extra] }, `writableRoots [] → [ '${extra}' ]`],
      [{ mode: 'workspace-write', network: true }, 'network false → true'],
      [{ mode: 'full-access' }, `mode 'workspace-write' → 'full-access'; network false → true`],
    ];
    for (const [policy, change] of cases) {
      const message = await refusal(run('x', { cwd: a, policy }));
      assert.ok(message.startsWith(`ptc run(): this run's sandbox policy differs from the one this stateOwner's environment started with (${change}), and a retained owner keeps its mode, workspace root, writable roots and network until it is released: `), message);
      assert.match(message, RELEASE);
    }
    // The same policy, spelled with no workspaceRoot from a subdirectory, is no change.
    const same = await run('x + 1', { cwd: sub });
    assert.is(valueOf(same), 42);
    assert.equal(same.environment, { fresh: false });
    assert.match(await refusal(run('x', { cwd: b })), new RegExp(`^ptc run\\(\\): cwd '${b}' is outside this stateOwner's workspace root '${a}' \\(the one its environment started with`));
    // A one-time run takes its own policy in an environment of its own.
    const once = await run('typeof x', { cwd: a, policy: { mode: 'read-only' }, oneTime: true });
    assert.is(valueOf(once), 'undefined');
    assert.is(once.sandbox.mode, 'read-only');
    const replaced = await run('typeof x', { cwd: a, policy: { mode: 'read-only' }, onPolicyChange: 'replace' });
    assert.is(valueOf(replaced), 'undefined');
    assert.is(replaced.sandbox.mode, 'read-only');
    assert.equal(replaced.environment, { fresh: true, replaced: `the sandbox policy changed (mode 'workspace-write' → 'read-only'), so the previous environment was ended (onPolicyChange: "replace")` });
  });

  test(`${label}: relative import() and relative file access across a cwd change`, async () => {
    const run = runner(runtimeWith(config), {});
    const probe = '(await import("./where.mjs")).where + " " + process.getBuiltinModule("node:fs").readFileSync("where.txt", "utf8")';
    assert.is(valueOf(await run(`var first = ${probe}; first`, { cwd: a })), 'a a');
    // The reference: the scoped REPL resolves relative specifiers from the environment's first
    // working directory; Script and Node's REPL from the current one. Files follow the current one.
    const moved = await run(probe, { cwd: sub });
    assert.is(valueOf(moved), label === 'scoped REPL' ? 'a sub' : 'sub sub');
    assert.equal(moved.environment, { fresh: false });
  });
}

test('full-access has no workspace to keep: a retained owner may run in any cwd', async () => {
  const run = runner(runtimeWith({ executionMode: 'persistent-in-memory', policy: { mode: 'full-access' } }), {});
  await run('var x = 41', { cwd: a });
  const moved = await run('[x + 1, process.cwd()]', { cwd: b });
  assert.equal(valueOf(moved), [42, b]);
  assert.equal(moved.environment, { fresh: false });
});

test('onPolicyChange is checked where a request is resolved and where a spec is run', async () => {
  const runtime = runtimeWith({ executionMode: 'persistent-in-memory' });
  assert.throws(() => runtime.resolve({ program: '1', onPolicyChange: 'ignore' as never }), (error: Error) => error instanceof TypeError && error.message === 'ptc request: onPolicyChange must be "refuse" or "replace", got \'ignore\'');
  const spec = { ...runtime.resolve({ program: '1', cwd: a }), onPolicyChange: true };
  const message = await refusal(runtime.run(spec as never));
  assert.is(message, 'ptc run(): spec.onPolicyChange must be "refuse" or "replace", got true');
  // A spec without the field (one built by hand) refuses, as resolve()'s default does.
  const { onPolicyChange: _omitted, ...bare } = runtime.resolve({ program: 'var y = 1', cwd: a, stateOwner: runtime });
  valueOf(await runtime.run(bare as never));
  assert.match(await refusal(runtime.run({ ...bare, cwd: b } as never)), /is outside this stateOwner's workspace root/);
});

test.run();
