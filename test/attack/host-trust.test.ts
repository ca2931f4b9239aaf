// Issue 32, "what the host trusts lives where no run can write". The journal decides what resume()
// runs again and what revert() undoes; the attack is a program that could write the journal
// forging a call that revert() then undoes with real effects. Defended twice: a run whose writable
// roots hold the journal (or its key) is refused before it starts, through the library and the
// CLI; and every row carries a tag under a key the sandbox hides, so a row written into the
// SQLite file by anything but the host (here: node:sqlite, as a program would) is refused before
// revert, resume or a listing act on it, and nothing is undone. As root and as an unprivileged
// user, with real carriers under bubblewrap (and node-permission for the key's hiding).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { chownSync, existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { binaryFor, ownedDirectory, removeReachableBinary, runAs, stateHome, userEnv, victims, type TestUser } from '../helpers/users.ts';
import { repoRoot } from '../helpers/runtime.ts';

const NODE = join(repoRoot, 'node_modules/.bin/node');
const HOST = join(repoRoot, 'test/fixtures/host-trust/host.ts');

test.after(() => removeReachableBinary());

/** One step of the fixture host, as `user`; its JSON line. */
async function host(user: TestUser, ...args: string[]): Promise<{ value?: any; error?: string; forged?: string }> {
  const finished = await runAs(user, [NODE, HOST, ...args], { cwd: '/' });
  const line = finished.stdout.trim().split('\n').at(-1) ?? '';
  assert.ok(line.startsWith('{'), `${args[0]}: ${finished.stdout}${finished.stderr}`);
  return JSON.parse(line);
}

/** A workspace, a journal directory beside it (outside it), and a file the bindings' effects go to. */
function place(user: TestUser) {
  const top = ownedDirectory(user, 'ptc-host-trust-');
  const make = (name: string): string => {
    const path = join(top.path, name);
    mkdirSync(path, { mode: 0o700 });
    if (user.uid !== process.getuid?.()) chownSync(path, user.uid, user.gid);
    return path;
  };
  const workspace = make('workspace');
  const journals = make('journals');
  const effects = join(top.path, 'effects');
  writeFileSync(effects, '');
  if (user.uid !== process.getuid?.()) chownSync(effects, user.uid, user.gid);
  return { top: top.path, workspace, journals, journal: join(journals, 'runs.db'), effects, read: () => readFileSync(effects, 'utf8'), remove: top.remove };
}

/** The key file a journal's rows are signed with, which the test removes with the journal. */
function keyFileOf(user: TestUser, journal: string): string {
  return join(stateHome(user), 'ptc/journal-keys', `${createHash('sha256').update(journal).digest('hex')}.key`);
}

const refusal = (what: string, journal: string, root: string, field: string): string =>
  `ptc ${what}: the journal ${JSON.stringify(journal)} is inside ${JSON.stringify(root)}, which this run may write (${field}); a program there could rewrite what resume() and revert() act on. Keep the journal outside every writable root`;

for (const user of victims()) {
  test(`as ${user.name}, library: a run whose workspace root holds the journal is refused before it starts`, async () => {
    const at = place(user);
    const journal = join(at.workspace, 'runs.db');
    try {
      const result = await host(user, 'run', journal, at.workspace, at.effects, 'r1', 'a');
      assert.is(result.error, refusal('run()', journal, at.workspace, 'workspaceRoot'));
      assert.is(at.read(), '', 'the binding never ran');
    } finally {
      rmSync(keyFileOf(user, journal), { force: true });
      at.remove();
    }
  });

  test(`as ${user.name}, library: a writable root that is a symlink to the journal's directory is refused, named by its real path`, async () => {
    const at = place(user);
    const link = join(at.workspace, 'elsewhere');
    try {
      symlinkSync(at.journals, link);
      const policy = JSON.stringify({ mode: 'workspace-write', workspaceRoot: at.workspace, writableRoots: [link] });
      const result = await host(user, 'run', at.journal, at.workspace, at.effects, 'r1', 'a', policy);
      assert.is(result.error, refusal('run()', at.journal, at.journals, 'writableRoots[0]'));
      assert.is(at.read(), '');
    } finally {
      rmSync(keyFileOf(user, at.journal), { force: true });
      at.remove();
    }
  });

  test(`as ${user.name}, library: a writable root that holds the journal's key directory is refused`, async () => {
    const at = place(user);
    const state = stateHome(user);
    try {
      const policy = JSON.stringify({ mode: 'workspace-write', workspaceRoot: at.workspace, writableRoots: [state] });
      const result = await host(user, 'run', at.journal, at.workspace, at.effects, 'r1', 'a', policy);
      const keys = join(state, 'ptc/journal-keys');
      assert.is(result.error, `ptc run(): the journal key directory ${JSON.stringify(keys)} is inside ${JSON.stringify(state)}, which this run may write (writableRoots[0]); a program there could rewrite what resume() and revert() act on. Keep the journal outside every writable root`);
      assert.is(at.read(), '');
    } finally {
      rmSync(keyFileOf(user, at.journal), { force: true });
      at.remove();
    }
  });

  test(`as ${user.name}, CLI: ptc run with a journal in its cwd (the default workspace) exits 2 with the refusal, and the program never runs`, async () => {
    const at = place(user);
    const journal = join(at.workspace, 'runs.db');
    try {
      const config = join(at.workspace, 'config.json');
      writeFileSync(config, JSON.stringify({ journal }));
      const program = join(at.workspace, 'program.ts');
      writeFileSync(program, `(await import('node:fs')).writeFileSync('ran', 'yes'); return 1`);
      if (user.uid !== process.getuid?.()) for (const file of [config, program]) chownSync(file, user.uid, user.gid);
      const finished = await runAs(user, [binaryFor(user), 'run', '--config', config, program], { cwd: at.workspace, env: userEnv(user) });
      assert.is(finished.code, 2, finished.stdout + finished.stderr);
      // The CLI prints an error after its own "ptc: ", without the library's.
      assert.is(finished.stderr, `ptc: ${refusal('run()', journal, at.workspace, 'the workspace root (its cwd)').replace(/^ptc /, '')}\n`);
      assert.not.ok(existsSync(join(at.workspace, 'ran')), 'the program did not run');
    } finally {
      rmSync(keyFileOf(user, journal), { force: true });
      at.remove();
    }
  });

  for (const how of ['new-call', 'copied-tag', 'changed-args']) {
    test(`as ${user.name}: a call forged into the SQLite file between runs (${how}) is found before revert() acts, and nothing is undone`, async () => {
      const at = place(user);
      try {
        assert.equal((await host(user, 'run', at.journal, at.workspace, at.effects, 'real', 'a')).value, { status: 'ok', value: 'stored a', runs: ['real'] });
        assert.equal((await host(user, 'run', at.journal, at.workspace, at.effects, 'kept', 'b')).value, { status: 'ok', value: 'stored b', runs: ['real', 'kept'] });
        assert.equal(await host(user, 'forge', at.journal, how), { forged: how });
        const sequence = how === 'changed-args' ? 1 : 2;
        const result = await host(user, 'revert', at.journal, at.workspace, at.effects, 'real');
        assert.is(result.error, `ptc journal: ${JSON.stringify(at.journal)}: the row of call ${sequence} of run "real" does not carry the tag this host signs its rows with, so ptc did not write it (a forged row, or one from a ptc before row tags); nothing acts on it`);
        assert.is(at.read(), 'put a\nput b\n', 'no revert ran');
        // Control: the run the forger left alone reverts, through the same binding.
        assert.equal((await host(user, 'revert', at.journal, at.workspace, at.effects, 'kept')).value, [{ sequence: 1, binding: 'put', reverted: true }]);
        assert.is(at.read(), 'put a\nput b\nundo b\n');
        // ptc runs lists nothing from a journal with a forged row rather than show it as ptc's.
        const listed = await runAs(user, [binaryFor(user), 'runs', '--journal', at.journal, 'real'], { cwd: at.top, env: userEnv(user) });
        assert.is(listed.code, 2);
        assert.match(listed.stderr, `does not carry the tag this host signs its rows with`);
      } finally {
        rmSync(keyFileOf(user, at.journal), { force: true });
        at.remove();
      }
    });
  }

  test(`as ${user.name}: a run forged into the file (full-access, a tag copied from a genuine row) is refused by resume() before anything runs`, async () => {
    const at = place(user);
    try {
      assert.is((await host(user, 'run', at.journal, at.workspace, at.effects, 'real', 'a')).value.status, 'ok');
      await host(user, 'forge', at.journal, 'new-run');
      const result = await host(user, 'resume', at.journal, at.workspace, at.effects, 'forged');
      assert.is(result.error, `ptc journal: ${JSON.stringify(at.journal)}: the row of run "forged" does not carry the tag this host signs its rows with, so ptc did not write it (a forged row, or one from a ptc before row tags); nothing acts on it`);
      assert.is(at.read(), 'put a\n', 'the forged program never called put');
    } finally {
      rmSync(keyFileOf(user, at.journal), { force: true });
      at.remove();
    }
  });

  for (const backend of ['bwrap', 'node-permission']) {
    test(`as ${user.name}, ${backend}: a program cannot read the journals' keys, so it cannot sign a row`, async () => {
      const at = place(user);
      try {
        // A journal made first, so the key directory holds a key.
        assert.is((await host(user, 'run', at.journal, at.workspace, at.effects, 'real', 'a')).value.status, 'ok');
        const keys = join(stateHome(user), 'ptc/journal-keys');
        assert.ok(existsSync(keyFileOf(user, at.journal)));
        const result = await host(user, 'read', at.workspace, backend, keys);
        // bwrap: the fresh root binds no home or state directory, so the keys are not there at all
        // (ENOENT), or the directory is an empty tmpfs where it would lie under a bound path (0 keys).
        const seen = (result.value as { value: unknown[] }).value[0];
        assert.ok(backend === 'bwrap' ? seen === 0 || seen === 'ENOENT' : seen === 'ERR_ACCESS_DENIED', JSON.stringify(result.value));
        assert.equal(result.value, { status: 'ok', value: [seen], backend });
      } finally {
        rmSync(keyFileOf(user, at.journal), { force: true });
        at.remove();
      }
    });
  }
}

test.run();
