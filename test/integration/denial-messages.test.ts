// What a program reads when the sandbox refuses it, through real carriers under bubblewrap and
// Node's permission model: the path or host refused and the ptc option that allows it, word for
// word; `sandbox.denied` true exactly where the sandbox is why (a path outside its view, whether
// or not the host has it, as node-permission refuses one; a lookup with no network; a
// permission-model refusal) and false for a missing file inside a bound directory; and the hint,
// followed, allows the access.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunResult } from '../../host/index.ts';
import { launchUnderTest, runtimesPerTest } from '../helpers/runtime.ts';

const root = realpathSync(mkdtempSync(join(tmpdir(), 'ptc-denial-messages-')));
const workspace = join(root, 'workspace');
const outside = join(root, 'outside');
mkdirSync(workspace);
mkdirSync(outside);
const secret = join(outside, 'secret.txt');
writeFileSync(secret, 'from the host');
const missingOutside = join(outside, 'missing.txt');
const missingInside = join(workspace, 'missing.txt');

// Node's permission model governs the network from Node 25 on (supervision/node-permission.ts);
// the node-script launch runs the carrier on the machine's Node, which may be older.
const launch = launchUnderTest();
const carrierNode = launch?.kind === 'node-script' ? execFileSync(launch.executable, ['-p', 'process.versions.node'], { encoding: 'utf8' }).trim() : process.versions.node;
const permissionGovernsNetwork = Number(carrierNode.split('.')[0]) >= 25;

const runtime = runtimesPerTest(test, { timeoutMs: 20_000 });

async function run(backend: 'bwrap' | 'node-permission', program: string, policy: Record<string, unknown> = {}): Promise<RunResult> {
  const made = runtime({ sandbox: { backend, require: 'partial' }, policy: { mode: 'workspace-write', ...policy } });
  return made.run(made.resolve({ program, cwd: workspace }));
}

/** A program that reads `path` and returns the error's code and message (or the text). */
const readBack = (path: string) => `
  const fs = await import('node:fs');
  try { return fs.readFileSync(${JSON.stringify(path)}, 'utf8') } catch (error) { return [error.code, error.message] }`;

const OPTIONS = 'its directory as a writable root (--writable-root, policy.writableRoots) or as the workspace (--cwd, policy.workspaceRoot)';
const NETWORK = '--allow-network (policy.network: true) turns it on, or --allow-host <name> (policy.network.allow) lets through one destination under bubblewrap';
const hidden = (path: string) => `ENOENT: no such file or directory, open '${path}' (ptc sandbox: ${JSON.stringify(path)} is outside what the bubblewrap sandbox shows of the host; if it exists there, ${OPTIONS} brings it in)`;

test('bwrap: a host file outside every bound directory reads as ENOENT naming the path and the options; denied, uncaught and caught', async () => {
  const uncaught = await run('bwrap', `(await import('node:fs')).readFileSync(${JSON.stringify(secret)})`);
  assert.is(uncaught.status, 'failed');
  if (uncaught.status !== 'failed') return;
  assert.is(uncaught.failure.kind, 'exception');
  assert.is(uncaught.failure.message, hidden(secret));
  assert.is(uncaught.failure.code, 'ENOENT');
  assert.is(uncaught.sandbox.denied, true);
  const caught = await run('bwrap', readBack(secret));
  assert.equal(caught.status === 'ok' && caught.value, ['ENOENT', hidden(secret)]);
  assert.is(caught.sandbox.denied, true);
});

test('bwrap: a path outside the view is a denial whether or not the host has it (no oracle of host paths); a missing file in the workspace is a plain ENOENT and no denial', async () => {
  const outsideMissing = await run('bwrap', readBack(missingOutside));
  assert.equal(outsideMissing.status === 'ok' && outsideMissing.value, ['ENOENT', hidden(missingOutside)]);
  assert.is(outsideMissing.sandbox.denied, true);
  const insideMissing = await run('bwrap', readBack(missingInside));
  assert.equal(insideMissing.status === 'ok' && insideMissing.value, ['ENOENT', `ENOENT: no such file or directory, open '${missingInside}'`]);
  assert.is(insideMissing.sandbox.denied, false);
  const inUsr = await run('bwrap', readBack('/usr/ptc-no-such-file'));
  assert.equal(inUsr.status === 'ok' && inUsr.value, ['ENOENT', "ENOENT: no such file or directory, open '/usr/ptc-no-such-file'"]);
  assert.is(inUsr.sandbox.denied, false);
});

test('bwrap: following the hint (a writable root) reads the file, with no denial', async () => {
  const allowed = await run('bwrap', readBack(secret), { writableRoots: [outside] });
  assert.equal(allowed.status === 'ok' && allowed.value, 'from the host');
  assert.is(allowed.sandbox.denied, false);
});

test('bwrap: a read-only directory names the path and the options that make it writable', async () => {
  const result = await run('bwrap', `const fs = await import('node:fs'); try { fs.writeFileSync('/usr/ptc-denial-test', 'x') } catch (error) { return [error.code, error.message] }`);
  assert.equal(result.status === 'ok' && result.value, ['EROFS', `EROFS: read-only file system, open '/usr/ptc-denial-test' (ptc sandbox: "/usr/ptc-denial-test" is read-only in the bubblewrap sandbox; ${OPTIONS}, with --sandbox workspace-write (policy.mode), makes it writable)`]);
  assert.is(result.sandbox.denied, true);
});

// The interfaces are read when the first failed lookup asks (carrier/hardening/sandbox-view.ts),
// after the program started: names it added to Object.prototype are not taken for interfaces.
test('bwrap without the network: the explanation holds after the program put an interface on Object.prototype', async () => {
  const result = await run('bwrap', `Object.prototype.eth9 = [{ address: '192.0.2.9', internal: false }]; try { await (await import('node:dns/promises')).lookup('example.com') } catch (error) { return [error.code, error.message] } finally { delete Object.prototype.eth9 }`);
  assert.equal(result.status === 'ok' && result.value, ['EAI_AGAIN', `getaddrinfo EAI_AGAIN example.com (ptc sandbox: the network is off for this run, so "example.com" is not reached; ${NETWORK})`]);
  assert.is(result.sandbox.denied, true);
});

test('bwrap without the network: a lookup fails EAI_AGAIN naming the host and --allow-network; denied', async () => {
  const result = await run('bwrap', `try { await (await import('node:dns/promises')).lookup('example.com') } catch (error) { return [error.code, error.message] }`);
  assert.equal(result.status === 'ok' && result.value, ['EAI_AGAIN', `getaddrinfo EAI_AGAIN example.com (ptc sandbox: the network is off for this run, so "example.com" is not reached; ${NETWORK})`]);
  assert.is(result.sandbox.denied, true);
  const fetched = await run('bwrap', `try { await fetch('http://example.com/') } catch (error) { return [error.message, error.cause?.code, error.cause?.message] }`);
  assert.equal(fetched.status === 'ok' && fetched.value, ['fetch failed', 'EAI_AGAIN', `getaddrinfo EAI_AGAIN example.com (ptc sandbox: the network is off for this run, so "example.com" is not reached; ${NETWORK})`]);
  assert.is(fetched.sandbox.denied, true);
});

/** A program that runs `attempt` and returns the error's code, message, permission and resource. */
const refused = (attempt: string) => `
  try { ${attempt}; return 'allowed' } catch (error) { return [error.code, error.message, error.permission ?? null, error.resource ?? null] }`;

test('node-permission: a refused read names the path and the options, keeps Node\'s permission and resource; denied', async () => {
  const result = await run('node-permission', refused(`(await import('node:fs')).readFileSync(${JSON.stringify(secret)})`));
  assert.equal(result.status === 'ok' && result.value, ['ERR_ACCESS_DENIED', `ptc sandbox refused reading ${JSON.stringify(secret)} (node-permission: outside what this run may read); ${OPTIONS} allows it`, 'FileSystemRead', secret]);
  assert.is(result.sandbox.denied, true);
  const uncaught = await run('node-permission', `(await import('node:fs')).readFileSync(${JSON.stringify(secret)})`);
  assert.equal(uncaught.status === 'failed' && [uncaught.failure.kind, uncaught.failure.message, uncaught.failure.code], ['exception', `ptc sandbox refused reading ${JSON.stringify(secret)} (node-permission: outside what this run may read); ${OPTIONS} allows it`, 'ERR_ACCESS_DENIED']);
  assert.is(uncaught.sandbox.denied, true);
});

test('node-permission: a refused write, a process, a lookup and a connection (Node 25 and later) each name what was refused and the option', async () => {
  const write = await run('node-permission', refused(`(await import('node:fs')).writeFileSync('/usr/ptc-denial-test', 'x')`));
  assert.equal(write.status === 'ok' && write.value, ['ERR_ACCESS_DENIED', `ptc sandbox refused writing "/usr/ptc-denial-test" (node-permission: outside the directories this run may write); ${OPTIONS}, with --sandbox workspace-write (policy.mode), allows it`, 'FileSystemWrite', '/usr/ptc-denial-test']);
  assert.is(write.sandbox.denied, true);
  const spawn = await run('node-permission', refused(`(await import('node:child_process')).execFileSync('true')`));
  const [code, message, permission] = spawn.status === 'ok' ? (spawn.value as string[]) : [];
  // Node 20 names no resource for a refused process; the carrier's own Node says which it is (an
  // ssh launch runs the far side's).
  const versionRun = await run('node-permission', 'return process.versions.node');
  const farNode = versionRun.status === 'ok' ? String(versionRun.value) : carrierNode;
  assert.equal([code, message, permission], ['ERR_ACCESS_DENIED', `ptc sandbox refused starting a process${farNode.startsWith('20.') ? '' : ' ("true")'}: the node-permission backend allows none; the bwrap backend does (--sandbox-backend bwrap, sandbox.backend)`, 'ChildProcess']);
  if (!permissionGovernsNetwork || Number(farNode.split('.')[0]) < 25) return;
  const lookup = await run('node-permission', refused(`await (await import('node:dns/promises')).lookup('example.com')`));
  assert.equal(lookup.status === 'ok' && lookup.value, ['ERR_ACCESS_DENIED', `ptc sandbox refused looking up "example.com": the network is off for this run; ${NETWORK}`, null, null]);
  assert.is(lookup.sandbox.denied, true);
  const connect = await run('node-permission', `try { await fetch('http://192.0.2.1/') } catch (error) { return [error.message, error.cause?.code, error.cause?.message] }`);
  assert.equal(connect.status === 'ok' && connect.value, ['fetch failed', 'ERR_ACCESS_DENIED', `ptc sandbox refused connecting to "192.0.2.1": the network is off for this run; ${NETWORK}`]);
});

test('node-permission: a missing file in the workspace is a plain ENOENT and no denial; the hint, followed, reads the file', async () => {
  const missing = await run('node-permission', readBack(missingInside));
  assert.equal(missing.status === 'ok' && missing.value, ['ENOENT', `ENOENT: no such file or directory, open '${missingInside}'`]);
  assert.is(missing.sandbox.denied, false);
  const allowed = await run('node-permission', readBack(secret), { writableRoots: [outside] });
  assert.equal(allowed.status === 'ok' && allowed.value, 'from the host');
  assert.is(allowed.sandbox.denied, false);
});

test.after(() => rmSync(root, { recursive: true, force: true }));

test.run();
