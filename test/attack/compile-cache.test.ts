// Another local user must not be able to put code in the victim's carriers through Node's compile
// cache (issue 16, item 4). From source, carriers run with NODE_COMPILE_CACHE, and Node runs what it
// finds there; it used to be /tmp/ptc-compile-cache-<uid>, a path anyone could make first. Now it
// is <cache>/ptc/compile-cache, used only when that directory is private to the victim. The
// intruder plants directories and symlinks at the old path and at the new fallback path
// (<tmpdir>/ptc-cache-<uid>, used without a home) before each of the victim's runs.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { chmodSync, chownSync, existsSync, lchownSync, mkdirSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { intruder, ownedDirectory, runAs, userEnv, victims, type TestUser } from '../helpers/users.ts';
import { repoRoot } from '../helpers/runtime.ts';

/** What the carrier started with: Node reads NODE_COMPILE_CACHE at start, and /proc/self/environ keeps it. */
const READ_CACHE_VARIABLE = `
  const text = (await import('node:fs')).readFileSync('/proc/self/environ', 'latin1');
  return text.split('\\0').find((entry) => entry.startsWith('NODE_COMPILE_CACHE=')) ?? null;`;

async function runFromSource(user: TestUser, cwd: string, backend: string, env: Record<string, string>): Promise<unknown> {
  const program = join(cwd, 'program.ts');
  writeFileSync(program, READ_CACHE_VARIABLE);
  chownSync(program, user.uid, user.gid);
  const mode = backend === 'none' ? 'full-access' : 'workspace-write';
  const finished = await runAs(user, [join(repoRoot, 'node_modules/.bin/node'), join(repoRoot, 'host/cli/bin.ts'), 'run', '--json', '--sandbox', mode, '--sandbox-backend', backend, program], { cwd, env: userEnv(user, env) });
  const result = JSON.parse(finished.stdout) as { status: string; value?: unknown };
  assert.is(result.status, 'ok', finished.stdout + finished.stderr);
  return result.value;
}

/** A directory of the intruder's that anyone can write, as a planted cache would be. */
function planted(owner: TestUser, path: string): string {
  mkdirSync(path);
  chownSync(path, owner.uid, owner.gid);
  chmodSync(path, 0o777);
  return path;
}

const other = intruder();
if (other === undefined) {
  test('compile-cache attacks skipped: planting files as another user needs root', () => {});
} else {
  for (const victim of victims()) {
    for (const backend of ['none', 'bwrap']) {
      test(`${victim.name}, ${backend}: a cache planted at the old and the fallback /tmp paths is not used; the private one is`, async () => {
        const home = ownedDirectory(victim, 'ptc-cache-victim-');
        const lure = ownedDirectory(other, 'ptc-cache-lure-');
        const oldPath = `/tmp/ptc-compile-cache-${victim.uid}`;
        const fallback = `/tmp/ptc-cache-${victim.uid}`;
        // A cache left at these paths by earlier ptc versions goes: the intruder got there first.
        for (const path of [oldPath, fallback]) rmSync(path, { recursive: true, force: true });
        chmodSync(lure.path, 0o777);
        try {
          // With a home: the old path is planted; the carrier gets its private cache directory.
          planted(other, oldPath);
          const xdg = join(home.path, 'xdg');
          const withHome = await runFromSource(victim, home.path, backend, { XDG_CACHE_HOME: xdg });
          assert.is(withHome, `NODE_COMPILE_CACHE=${xdg}/ptc/compile-cache`);
          if (backend === 'none') assert.ok(readdirSync(`${xdg}/ptc/compile-cache`).length > 0, 'the private cache was not used');

          // Without a home: the fallback path is planted as a directory, then as a symlink.
          planted(other, fallback);
          assert.is(await runFromSource(victim, home.path, backend, { HOME: '/' }), null);
          assert.equal(readdirSync(fallback), [], 'the victim wrote into the planted fallback');
          rmSync(fallback, { recursive: true, force: true });
          symlinkSync(lure.path, fallback);
          // lchown: the symlink is the intruder's, as it would be had they made it.
          lchownSync(fallback, other.uid, other.gid);
          assert.is(await runFromSource(victim, home.path, backend, { HOME: '/' }), null);
          assert.equal(readdirSync(lure.path), [], 'the victim wrote through the planted symlink');
          assert.ok(existsSync(oldPath));
        } finally {
          for (const path of [oldPath, fallback]) rmSync(path, { recursive: true, force: true });
          home.remove();
          lure.remove();
        }
      });
    }
  }
}

test.run();
