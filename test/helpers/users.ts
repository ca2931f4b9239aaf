// Users for the attack suites (test/attack/). Each attack is tried with ptc running as root (the
// usual case in containers and CI) and as an unprivileged user, the *victim*; files that another
// local user leaves behind come from a second unprivileged user, the *intruder*. Making and
// switching users needs root: a suite run by an ordinary user tries only that user, and the
// intruder's cases are skipped with a line saying so.
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, copyFileSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from './runtime.ts';

export interface TestUser {
  name: string;
  uid: number;
  gid: number;
  home: string;
}

export const VICTIM = 'ptc-victim';
export const INTRUDER = 'ptc-intruder';

const isRoot = process.getuid?.() === 0;

/** The user with this name, made (with a home directory of its own) when it does not exist yet. */
export function ensureUser(name: string): TestUser {
  const found = lookUp(name);
  if (found !== undefined) return found;
  if (!isRoot) throw new Error(`test user ${name} does not exist and only root can make it`);
  // Two suites (or two checkouts) may make the same user at once: useradd then fails on its lock,
  // and the user exists once the other one is done.
  for (let attempt = 0; attempt < 20; attempt++) {
    const made = spawnSync('useradd', ['--create-home', '--user-group', '--shell', '/bin/sh', name], { encoding: 'utf8' });
    const user = lookUp(name);
    if (user !== undefined) return user;
    if (made.status !== 0 && !/lock/i.test(made.stderr)) throw new Error(`useradd ${name} failed: ${made.stderr.trim()}`);
    spawnSync('sleep', ['0.2']);
  }
  throw new Error(`useradd ${name}: /etc/passwd stayed locked`);
}

function lookUp(name: string): TestUser | undefined {
  const entry = spawnSync('getent', ['passwd', name], { encoding: 'utf8' });
  if (entry.status !== 0) return undefined;
  const [, , uid, gid, , home] = entry.stdout.trim().split(':');
  return { name, uid: Number(uid), gid: Number(gid), home: home! };
}

/** The user this suite runs as. */
export function currentUser(): TestUser {
  const uid = process.getuid?.() ?? 0;
  const name = spawnSync('id', ['-un'], { encoding: 'utf8' }).stdout.trim();
  return { name, uid, gid: process.getgid?.() ?? 0, home: process.env.HOME ?? '/' };
}

/** Who ptc runs as in an attack: root and the victim when the suite is root, else the suite's own user. */
export function victims(): TestUser[] {
  return isRoot ? [currentUser(), ensureUser(VICTIM)] : [currentUser()];
}

/** The other local user, or undefined (the case is skipped) when the suite cannot switch users. */
export function intruder(): TestUser | undefined {
  return isRoot ? ensureUser(INTRUDER) : undefined;
}

/** argv that runs `command` as `user` (setpriv, util-linux), or unchanged for the suite's own user. */
export function asUser(user: TestUser, command: string[]): string[] {
  if (user.uid === process.getuid?.()) return command;
  return ['setpriv', `--reuid=${user.uid}`, `--regid=${user.gid}`, '--init-groups', '--', ...command];
}

/** Live processes whose command line holds `marker`: what an attack suite's programs left running. */
export function processesNaming(marker: string): number[] {
  return readdirSync('/proc').filter((entry) => /^\d+$/.test(entry)).map(Number).filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(marker);
    } catch {
      return false;
    }
  });
}

/** Where `user`'s ptc keeps its state (journal keys): the run's own directory for the suite's user (test/run.ts), else ~/.local/state. */
export function stateHome(user: TestUser): string {
  return user.uid === process.getuid?.() && process.env.XDG_STATE_HOME !== undefined ? process.env.XDG_STATE_HOME : join(user.home, '.local/state');
}

/** A plain environment for `user`: PATH, HOME and USER, nothing of the suite's own. */
export function userEnv(user: TestUser, extra: Record<string, string> = {}): Record<string, string> {
  // The suite's own user keeps the run's state directory (test/run.ts), where its journals' keys go.
  const state: Record<string, string> = user.uid === process.getuid?.() && process.env.XDG_STATE_HOME !== undefined ? { XDG_STATE_HOME: process.env.XDG_STATE_HOME } : {};
  return { PATH: '/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin', HOME: user.home, USER: user.name, LOGNAME: user.name, ...state, ...extra };
}

export interface Finished {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs `command` as `user` and collects what it printed; kills it after `timeoutMs`. */
export function runAs(user: TestUser, command: string[], options: { cwd?: string; input?: string; env?: Record<string, string>; timeoutMs?: number } = {}): Promise<Finished> {
  const argv = asUser(user, command);
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), { cwd: options.cwd, env: options.env ?? userEnv(user), stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 60_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
    // A command that exits without reading its input (a refusal, a kill) is judged by its exit
    // and output; the EPIPE of the input it never read is not the test's failure.
    child.stdin.on('error', () => {});
    child.stdin.end(options.input ?? '');
  });
}

/** A directory under `base` (/tmp) that `user` owns (mode 0700), removed by the returned function. */
export function ownedDirectory(user: TestUser, prefix = 'ptc-attack-', base = '/tmp'): { path: string; remove(): void } {
  const path = mkdtempSync(join(realpathSync(base), prefix));
  if (user.uid !== process.getuid?.()) chownSync(path, user.uid, user.gid);
  chmodSync(path, 0o700);
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}

let reachable: { binary: string; directory: string } | undefined;

/**
 * dist/ptc where every test user can run it: the checkout may sit under a directory only root can
 * enter (a CI clone in /root), so the binary is copied once per suite into a world-readable
 * directory. Call removeReachableBinary() in test.after.
 */
export function binaryFor(user: TestUser): string {
  const built = `${repoRoot}dist/ptc`;
  if (user.uid === process.getuid?.() || spawnSync(asUser(user, ['test', '-x', built])[0]!, asUser(user, ['test', '-x', built]).slice(1)).status === 0) return built;
  if (reachable === undefined) {
    const directory = mkdtempSync(join(realpathSync('/tmp'), 'ptc-attack-bin-'));
    chmodSync(directory, 0o755);
    const binary = join(directory, 'ptc');
    copyFileSync(built, binary);
    chmodSync(binary, 0o755);
    reachable = { binary, directory };
  }
  return reachable.binary;
}

export function removeReachableBinary(): void {
  if (reachable !== undefined) rmSync(reachable.directory, { recursive: true, force: true });
  reachable = undefined;
}
