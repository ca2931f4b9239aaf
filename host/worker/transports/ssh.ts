// A far machine over OpenSSH. One master connection per target (ControlMaster, its socket in a
// private temp directory removed when it ends) carries every command and relay, so a run pays for a
// channel, not a handshake. A new master is started only when there is none (the first use, or the
// last one ended): never beside or over a live one, whose channels are carriers in use. Preparing checks the remote Node and delivers the bootstrap: it is
// content-addressed in the remote cache, uploaded through the same connection when missing,
// written atomically (temp file, then rename), and run only from bytes read once and hashed.
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, rmdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RelayStart } from '../../../wire/mux.ts';
import { PROTOCOL_REVISION } from '../../../wire/revision.ts';
import { readBootstrap } from '../bootstrap-asset.ts';
import { nodeTooOld, type RemoteFacts, type RemoteTarget } from './remote.ts';
import { shellLine, shellQuote } from './shell.ts';

export interface SshLaunch {
  kind: 'ssh';
  /** `user@host`, a Host alias from the ssh configuration, or `ssh://user@host:port`. */
  destination: string;
  /** @default ssh's own (22, or the configuration's) */
  port?: number;
  /** Extra arguments for every ssh command, before the destination: `['-F', './ssh_config']`. @default [] */
  sshArgs?: string[];
  /** The Node to run on the far side. @default 'node' (found on the remote PATH) */
  node?: string;
  /** A bootstrap already installed on the far side; otherwise it is delivered to the remote cache. */
  bootstrapPath?: string;
}

/** How long one preparation command may take: a hung connection must not hang a run. */
const COMMAND_TIMEOUT_MS = 30_000;
const TAIL_BYTES = 4 * 1024;
const SOCKET_DIR_PREFIX = 'ptc-ssh-';
/** Older than ConnectTimeout plus authentication: an empty socket directory this old has no master. */
const STALE_SOCKET_DIR_MS = 5 * 60_000;
/** Marks the lines our remote commands print, so a chatty login shell cannot be mistaken for them. */
const MARK = 'ptc-remote:';

/** closeNow of every target not yet closed: a host that exits takes its masters with it. */
const open = new Set<() => void>();
process.once('exit', () => {
  for (const close of open) close();
});

/** One master connection. */
interface Master {
  readonly child: ChildProcess;
  /** Its control socket, in a private directory of its own. */
  readonly socket: string;
  readonly dir: string;
  /** Resolves once it is connected; rejects with what ssh said when it could not connect. */
  readonly ready: Promise<void>;
}

interface Prepared {
  /** The master it was prepared over, which carries its relays. */
  master: Master;
  facts: RemoteFacts;
  /** The bootstrap's absolute path over there. */
  bootstrap: string;
  /** Its expected hash, when ptc delivered it (a preinstalled bootstrapPath has none). */
  sha256?: string;
}

/**
 * Run by the remote Node as `node -e VERIFY_AND_RUN <file> <sha256 or -> <role> [args]`: reads the
 * file once, and only when its hash matches (or there is none to hold it to: "-") evaluates exactly
 * those bytes, from a data: URL, as `node <file> <role> [args]` would. Importing the file by its path
 * would read it a second time, and a file swapped in between would run unverified and unconfined.
 * The relay hands the same bytes on to its carrier (supervision/launch.ts).
 */
const VERIFY_AND_RUN = [
  'const fs=require("fs"),crypto=require("crypto");',
  'const [file,want,...rest]=process.argv.slice(1);',
  'const bytes=fs.readFileSync(file);',
  'const got=crypto.createHash("sha256").update(bytes).digest("hex");',
  'if(want!=="-"&&got!==want){process.stderr.write(`the bootstrap ${file} has sha256 ${got}, expected ${want}\\n`);process.exit(65)}',
  'process.argv.splice(1,Infinity,file,...rest);',
  'import("data:text/javascript;base64,"+bytes.toString("base64"));',
].join('');

let bootstrapText: Promise<{ text: string; sha256: string }> | undefined;

/** A RemoteTarget over ssh for one runtime. */
export function sshTarget(launch: SshLaunch): RemoteTarget {
  const describe = `ssh ${launch.destination}${launch.port !== undefined ? ` (port ${launch.port})` : ''}`;
  const node = launch.node ?? 'node';
  /** The master connecting or connected; undefined once it has ended. */
  let master: Master | undefined;
  /** The current preparation and the master it runs over: when that master ends, it is stale. */
  let prepared: { over: Master; attempt: Promise<Prepared> } | undefined;

  const baseArgs = (): string[] => [
    ...(launch.sshArgs ?? []),
    ...(launch.port !== undefined ? ['-p', String(launch.port)] : []),
    // ssh takes the first value it sees for an option, so the caller's arguments above win.
    '-o', 'BatchMode=yes',
    '-o', 'ConnectTimeout=15',
    '-o', 'ServerAliveInterval=5',
    '-o', 'ServerAliveCountMax=3',
    '-T',
  ];
  const channelArgs = (over: Master): string[] => [...baseArgs(), '-S', over.socket, '-o', 'ControlMaster=no'];

  /** Starts a master; only when there is none (see ensure()). */
  const connect = (): Master => {
    sweepStaleSocketDirs();
    const dir = mkdtempSync(join(tmpdir(), SOCKET_DIR_PREFIX));
    const socket = join(dir, 'control');
    // The master's own session prints a mark and then waits on its stdin, which is ours: when
    // this process goes, the session ends, and the master with it once its channels have closed.
    const child = spawn('ssh', [...baseArgs(), '-M', '-S', socket, '-o', 'ControlPersist=no', launch.destination, `echo ${MARK}ready; exec cat >/dev/null`], {
      stdio: ['pipe', 'pipe', 'pipe'],
      windowsHide: true,
    });
    let connected!: () => void;
    let failed!: (error: Error) => void;
    const ready = new Promise<void>((resolve, reject) => {
      connected = resolve;
      failed = reject;
    });
    const started: Master = { child, socket, dir, ready };
    let stdout = '';
    let stderr = '';
    let isReady = false;
    child.stdin.on('error', () => {});
    child.stderr.setEncoding('utf8').on('data', (text: string) => {
      stderr = (stderr + text).slice(-TAIL_BYTES);
    });
    child.stdout.setEncoding('utf8').on('data', (text: string) => {
      if (isReady) return;
      stdout += text;
      if (stdout.includes(`${MARK}ready`)) {
        isReady = true;
        unref(child);
        connected();
      }
    });
    child.once('error', (error) => failed(new Error(`${describe}: could not start ssh: ${error.message}`, { cause: error })));
    child.once('close', (code, signal) => {
      rmSync(dir, { recursive: true, force: true });
      if (master === started) master = undefined;
      // What was prepared over it is stale (the network went, or it never connected): the next
      // carrier connects again. A preparation over a newer master is that one's, and is kept.
      if (prepared?.over === started) prepared = undefined;
      if (!isReady) failed(new Error(`${describe}: could not connect (ssh ${code !== null ? `exit code ${code}` : `signal ${signal}`}): ${stderr.trim() || 'no message from ssh'}`));
    });
    return started;
  };

  const run = (over: Master, command: string, input?: Buffer): Promise<{ code: number | null; stdout: string; stderr: string }> => new Promise((resolve, reject) => {
    const child = spawn('ssh', [...channelArgs(over), launch.destination, command], { stdio: ['pipe', 'pipe', 'pipe'], windowsHide: true });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (text: string) => void (stdout += text));
    child.stderr.setEncoding('utf8').on('data', (text: string) => void (stderr = (stderr + text).slice(-TAIL_BYTES)));
    child.stdin.on('error', () => {});
    child.stdin.end(input);
    const timer = setTimeout(() => child.kill('SIGKILL'), COMMAND_TIMEOUT_MS);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(new Error(`${describe}: could not start ssh: ${error.message}`, { cause: error }));
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      if (signal === 'SIGKILL') reject(new Error(`${describe}: a command did not finish within ${COMMAND_TIMEOUT_MS} ms: ${command}`));
      else resolve({ code, stdout, stderr: stderr.trim() });
    });
  });

  const check = async (over: Master, bootstrap: string, sha256: string | undefined) => {
    // One round trip: the remote Node's version and the bootstrap's hash, then (when both are
    // right) what the far side offers a carrier, from the bootstrap itself.
    const script = [
      'const fs=require("fs"),crypto=require("crypto");',
      'const [file,want]=process.argv.slice(1);',
      'let hash;try{hash=crypto.createHash("sha256").update(fs.readFileSync(file)).digest("hex")}catch(e){hash=e.code||String(e)}',
      `console.log(${JSON.stringify(MARK)}+JSON.stringify({node:process.version,file,hash}));`,
      'process.exitCode=(want==="-"?/^[0-9a-f]{64}$/.test(hash):hash===want)?0:3;',
    ].join('');
    const command = `command -v ${shellQuote(node)} >/dev/null 2>&1 || { echo ${MARK}no-node; exit 0; }; ${shellLine([node, '-e', script])} ${bootstrap} ${sha256 ?? '-'} && exec ${shellLine([node, '-e', VERIFY_AND_RUN])} ${bootstrap} ${sha256 ?? '-'} --probe`;
    const result = await run(over, command);
    const lines = result.stdout.split('\n');
    if (lines.includes(`${MARK}no-node`)) throw new Error(`${describe}: there is no Node at ${JSON.stringify(node)} on the remote PATH (install Node >= 20.12 there, or set launch.node / --remote-node)`);
    const status = lines.find((line) => line.startsWith(`${MARK}{`));
    if (status === undefined) throw new Error(`${describe}: could not run ${node} there (exit code ${result.code}): ${result.stderr || result.stdout.trim() || 'no output'}`);
    const found = JSON.parse(status.slice(MARK.length)) as { node: string; file: string; hash: string };
    if (nodeTooOld(found.node)) throw new Error(`${describe}: the remote Node ${found.node} at ${JSON.stringify(node)} is too old: the bootstrap needs Node >= 20.12`);
    if (result.code === 3) return { found, facts: undefined };
    const probe = lines.find((line) => line.startsWith('{'));
    if (result.code !== 0 || probe === undefined) throw new Error(`${describe}: the bootstrap ${found.file} did not run (exit code ${result.code}): ${result.stderr || 'no output'}`);
    const report = JSON.parse(probe) as { revision?: unknown; node: string; bwrapPath: string; bwrapUnavailable?: string };
    if (report.revision !== PROTOCOL_REVISION) {
      throw new Error(`${describe}: the bootstrap ${found.file} speaks protocol revision ${String(report.revision)}, this ptc speaks revision ${PROTOCOL_REVISION}; install the matching bootstrap.mjs or leave bootstrapPath unset`);
    }
    const facts: RemoteFacts = { node: report.node, bwrapPath: report.bwrapPath, bwrapUnavailable: report.bwrapUnavailable };
    return { found, facts };
  };

  const upload = async (over: Master, file: string, text: string): Promise<void> => {
    const path = shellQuote(file);
    const command = `set -e; d=$(dirname ${path}); mkdir -p "$d"; t=$(mktemp "$d/.bootstrap-XXXXXX"); trap 'rm -f "$t"' EXIT; cat > "$t"; chmod 0644 "$t"; mv -f "$t" ${path}; trap - EXIT`;
    const result = await run(over, command, Buffer.from(text));
    if (result.code !== 0) throw new Error(`${describe}: could not write the bootstrap to ${file} (exit code ${result.code}): ${result.stderr || 'no message'}`);
  };

  const prepare = async (over: Master): Promise<Prepared> => {
    await over.ready;
    if (launch.bootstrapPath !== undefined) {
      const { facts, found } = await check(over, shellQuote(launch.bootstrapPath), undefined);
      if (facts === undefined) throw new Error(`${describe}: cannot read the bootstrap at ${launch.bootstrapPath}: ${found.hash}`);
      return { master: over, facts, bootstrap: found.file };
    }
    bootstrapText ??= readBootstrap().then((text) => ({ text, sha256: createHash('sha256').update(text).digest('hex') }));
    const { text, sha256 } = await bootstrapText;
    const cached = `"\${XDG_CACHE_HOME:-$HOME/.cache}"/ptc/bootstrap-${sha256}.mjs`;
    const first = await check(over, cached, sha256);
    if (first.facts !== undefined) return { master: over, facts: first.facts, bootstrap: first.found.file, sha256 };
    await upload(over, first.found.file, text);
    const second = await check(over, shellQuote(first.found.file), sha256);
    if (second.facts === undefined) throw new Error(`${describe}: the uploaded bootstrap ${first.found.file} does not match its hash (got ${second.found.hash}, want ${sha256})`);
    return { master: over, facts: second.facts, bootstrap: second.found.file, sha256 };
  };

  const closeNow = (): void => {
    prepared = undefined;
    if (master === undefined) return;
    master.child.kill('SIGKILL');
    rmSync(master.dir, { recursive: true, force: true });
    master = undefined;
  };
  const ensure = (): Promise<Prepared> => {
    if (prepared === undefined) {
      // Preparing again (forget(): a relay did not start) checks over the master there is: it
      // carries the channels of carriers in use, and a second master beside it would be a
      // handshake for nothing. A master that could not connect has ended, and so is not reused.
      master ??= connect();
      const over = master;
      const attempt = prepare(over);
      prepared = { over, attempt };
      // A failed preparation is not kept: the next run tries again (the host may be back). The
      // master is not ended for it: one that failed to connect has ended already, and a connected
      // one carries other carriers.
      attempt.catch(() => {
        if (prepared?.attempt === attempt) prepared = undefined;
      });
    }
    return prepared.attempt;
  };
  open.add(closeNow);

  return {
    describe,
    async prepare(bwrapPath?: string) {
      const { master: over, facts, bootstrap, sha256 } = await ensure();
      if (bwrapPath === undefined || bwrapPath === facts.bwrapPath) return facts;
      const result = await run(over, `exec ${shellLine([node, '-e', VERIFY_AND_RUN, bootstrap, sha256 ?? '-', '--probe', bwrapPath])}`);
      const line = result.stdout.split('\n').find((text) => text.startsWith('{'));
      if (result.code !== 0 || line === undefined) throw new Error(`${describe}: the bootstrap's probe failed (exit code ${result.code}): ${result.stderr || 'no output'}`);
      const report = JSON.parse(line) as { bwrapPath: string; bwrapUnavailable?: string };
      return { node: facts.node, bwrapPath: report.bwrapPath, bwrapUnavailable: report.bwrapUnavailable };
    },
    async relay(start: RelayStart) {
      const { master: over, bootstrap, sha256 } = await ensure();
      // The file is hashed again by the Node that is about to run it, so a bootstrap changed since
      // preparing never runs; a preinstalled one has no hash to hold it to, but is still read once.
      const command = shellLine([node, '-e', VERIFY_AND_RUN, bootstrap, sha256 ?? '-', '--relay']);
      return {
        executable: 'ssh',
        args: [...channelArgs(over), launch.destination, `exec ${command}`],
        env: { ...process.env } as Record<string, string>,
        describe,
        start,
      };
    },
    async close() {
      open.delete(closeNow);
      prepared = undefined;
      const child = master?.child;
      if (child !== undefined) {
        const closed = new Promise((resolve) => child.once('close', resolve));
        child.stdin?.end();
        const timer = setTimeout(() => child.kill('SIGKILL'), 2_000);
        await closed;
        clearTimeout(timer);
      }
      closeNow();
    },
    closeNow,
    forget() {
      prepared = undefined;
    },
  };
}

/**
 * Removes the empty socket directories of masters whose host was killed (SIGKILL, or a signal
 * that skips 'exit' handlers): ssh removes its socket when the master ends, but not the directory.
 * Only empty ones older than any connection attempt, so a master still connecting is left alone.
 */
function sweepStaleSocketDirs(): void {
  const base = tmpdir();
  let entries: string[];
  try {
    entries = readdirSync(base).filter((name) => name.startsWith(SOCKET_DIR_PREFIX));
  } catch {
    return;
  }
  for (const name of entries) {
    const path = join(base, name);
    try {
      const stats = statSync(path);
      if (!stats.isDirectory() || stats.uid !== process.getuid?.() || Date.now() - stats.mtimeMs < STALE_SOCKET_DIR_MS) continue;
      rmdirSync(path); // fails, and so keeps it, unless it is empty
    } catch {
      // In use, not ours, or gone already.
    }
  }
}

function unref(child: ChildProcess): void {
  for (const handle of [child, child.stdin, child.stdout, child.stderr]) (handle as { unref?: () => void } | null)?.unref?.();
}
