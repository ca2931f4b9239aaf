// `ptc run`'s fast path: hand the run to this user's resident pool (resident-daemon.ts), whose
// carrier is already booted, and print what it sends back. It loads neither yargs nor the library:
// the whole point is a start that costs little more than Node's own. Any command line it does
// not fully understand, and any pool it cannot trust, goes the ordinary way (cli.ts), which then
// gives the same errors and output the pool would have.
import type { Socket } from 'node:net';
import { statSync } from 'node:fs';
import { resolve as resolvePath } from 'node:path';
import { nonce, proof, proofMatches, readToken, residentPlace, RESIDENT_SELECTOR } from '../resident.ts';
import { EXECUTION_MODES } from '../modes.ts';
import { colorEnabled } from './color.ts';
import { bootMark } from '../../wire/boot-mark.ts';
import { LineReader, send } from './resident-lines.ts';
import { readProgram } from './program-file.ts';
import { LIMIT_FLAGS } from './limit-flags.ts';

/** The `ptc run` flags the fast path takes: a boolean, or the config field a valued flag sets. */
const BOOLEAN_FLAGS = new Set(['json', 'discard-completion']);

/** How long a pool may take to answer a hello before the ordinary path runs the program instead. */
const HANDSHAKE_MS = 2_000;

/** A `ptc run` command line the fast path understands whole. */
export interface ResidentRun {
  file: string | undefined;
  json: boolean;
  discardCompletion: boolean;
  cwd: string | undefined;
  /** The --bindings module: loaded here, in this process, whose functions the pool calls back. */
  bindings?: string;
  /** The configuration the ordinary path would build from these flags (options.ts applyFlags). */
  config: Record<string, unknown>;
}

/**
 * `argv` (after `run`) read as the ordinary parser would read it, or undefined for anything
 * else: an unknown or repeated flag, a value that is not a number, `--help`, a second file. The
 * ordinary path then reports it in its own words.
 */
export function residentRun(argv: string[]): ResidentRun | undefined {
  const run: ResidentRun = { file: undefined, json: false, discardCompletion: false, cwd: undefined, config: { prestartCarrier: false } };
  const seen = new Set<string>();
  let files = 0;
  for (let index = 0; index < argv.length; index++) {
    const arg = argv[index]!;
    if (!arg.startsWith('--') || arg === '--') {
      if (arg.startsWith('-') && arg !== '-') return undefined;
      if (arg === '--' || files++ > 0) return undefined;
      run.file = arg;
      continue;
    }
    const equals = arg.indexOf('=');
    const flag = arg.slice(2, equals === -1 ? undefined : equals);
    if (seen.has(flag)) return undefined;
    seen.add(flag);
    if (BOOLEAN_FLAGS.has(flag)) {
      if (equals !== -1) return undefined;
      if (flag === 'json') run.json = true;
      else run.discardCompletion = true;
      continue;
    }
    let value: string;
    if (equals !== -1) value = arg.slice(equals + 1);
    else {
      const next = argv[++index];
      // As the ordinary parser: a negative number is a value, any other dash starts a flag.
      if (next === undefined || (next.startsWith('-') && !/^-\d/.test(next))) return undefined;
      value = next;
    }
    if (flag === 'cwd') run.cwd = value;
    else if (flag === 'bindings') run.bindings = value;
    else if (flag === 'mode') {
      if (!(EXECUTION_MODES as readonly string[]).includes(value)) return undefined;
      run.config.executionMode = value;
    } else if (Object.hasOwn(LIMIT_FLAGS, flag)) {
      const number = value.trim() === '' ? Number.NaN : Number(value);
      if (!Number.isFinite(number)) return undefined;
      run.config[LIMIT_FLAGS[flag as keyof typeof LIMIT_FLAGS]] = number;
    } else return undefined;
  }
  return run;
}

/** What the fast path did: the exit code of a run the pool made, or why the ordinary path runs it. */
export type ResidentOutcome = { exitCode: number } | { declined: string; startIn?: string };

/** Whether the environment asks for a pool to be started when none serves (PTC_RESIDENT=1), or forbids using one (PTC_RESIDENT=0). */
function residentSetting(env: NodeJS.ProcessEnv): 'start' | 'use' | 'off' {
  const value = env.PTC_RESIDENT;
  if (value === '1') return 'start';
  if (value === '0') return 'off';
  return 'use';
}

/**
 * Runs `ptc run <argv>` through this user's resident pool when one serves this environment;
 * declines (and says whether to start one) otherwise, before reading the program.
 */
export async function runResident(argv: string[], version: string, env: NodeJS.ProcessEnv = process.env): Promise<ResidentOutcome> {
  let ready: Awaited<ReturnType<typeof prepare>>;
  try {
    ready = await prepare(argv, version, env);
  } catch (error) {
    // Nothing was sent yet: whatever went wrong (an unreadable /proc, a refused stat), the
    // ordinary path runs the program.
    return { declined: `the pool could not be asked: ${(error as Error).message}` };
  }
  if ('declined' in ready) return ready;
  return { exitCode: await runThrough(ready.session, ready.run, ready.program, ready.cwd, ready.relayed) };
}

/** Everything before the program is sent: the command line, the pool, the handshake, the program's text. */
async function prepare(argv: string[], version: string, env: NodeJS.ProcessEnv): Promise<{ declined: string; startIn?: string } | { session: Session; run: ResidentRun; program: { source: string; filename: string }; cwd: string; relayed: RelayedBindings | undefined }> {
  const setting = residentSetting(env);
  if (setting === 'off') return { declined: 'PTC_RESIDENT=0' };
  const run = residentRun(argv);
  if (run === undefined) return { declined: 'the command line is not one the pool takes' };
  if (run.file === undefined && process.stdin.isTTY) return { declined: 'no program' };
  const cwd = resolvePath(run.cwd ?? '.');
  if (run.cwd !== undefined && !isDirectory(cwd)) return { declined: '--cwd is not a directory' };
  bootMark('ptc:resident-parsed');
  const place = residentPlace(version, false, env);
  bootMark('ptc:resident-place');
  // With PTC_RESIDENT=1, a pool found missing or unusable here is started after the run.
  const noPool = (declined: string) => (setting === 'start' ? { declined, startIn: cwd } : { declined });
  if ('refused' in place) return noPool(place.refused);
  const session = await open(place.directory, place.socket);
  if ('declined' in session) return noPool(session.declined);
  if (session.identity !== place.identity) {
    session.socket.destroy();
    return noPool('the pool at this name serves another executable or environment');
  }
  bootMark('ptc:resident-open');
  let relayed: RelayedBindings | undefined;
  if (run.bindings !== undefined) {
    const loaded = await relayable(run.bindings);
    if ('declined' in loaded) {
      session.socket.destroy();
      return loaded;
    }
    relayed = loaded;
  }
  let program: { source: string; filename: string };
  try {
    program = await readProgram(run.file);
  } catch {
    session.socket.destroy();
    // The ordinary path reads it again and says why it cannot.
    return { declined: 'the program cannot be read' };
  }
  return { session, run, program, cwd, relayed };
}

export interface Session {
  socket: Socket;
  lines: LineReader;
  token: Buffer;
  daemonNonce: string;
  /** What the pool said of itself in its hello: its pid and identity. */
  pid: number;
  identity: string;
}

/**
 * Connects to the pool at `socket` and checks that it holds this user's token; declines on
 * anything less, having sent nothing but a nonce.
 */
export async function open(directory: string, socketPath: string): Promise<Session | { declined: string }> {
  const token = readToken(directory);
  if (token === undefined) return { declined: 'no token' };
  // Loaded only once there is a pool to ask: a `ptc run` with none pays nothing for it.
  const { connect } = await import('node:net');
  const socket = connect(socketPath);
  const lines = new LineReader(socket);
  const connected = await new Promise<string | undefined>((resolve) => {
    socket.once('connect', () => resolve(undefined));
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
  });
  if (connected !== undefined) {
    socket.destroy();
    return { declined: `cannot connect (${connected})` };
  }
  const mine = nonce();
  send(socket, { type: 'hello', nonce: mine });
  // A pool answers at once; one that does not (stopped, or not a pool) is passed over.
  let timer: NodeJS.Timeout | undefined;
  const answer = await Promise.race([lines.next(), new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), HANDSHAKE_MS)))]);
  clearTimeout(timer);
  if (answer?.type !== 'hello' || !proofMatches(proof(token, 'daemon', mine), answer.proof) || typeof answer.nonce !== 'string') {
    socket.destroy();
    return { declined: 'the listener did not prove it holds the token' };
  }
  return { socket, lines, token, daemonNonce: answer.nonce, pid: Number(answer.pid), identity: String(answer.identity) };
}

/** Sends one authenticated request on an open session. */
export function request(session: Session, message: Record<string, unknown>): void {
  send(session.socket, { ...message, proof: proof(session.token, 'client', session.daemonNonce) });
}

async function runThrough(session: Session, run: ResidentRun, program: { source: string; filename: string }, cwd: string, relayed: RelayedBindings | undefined): Promise<number> {
  const { socket, lines } = session;
  request(session, {
    type: 'run',
    identity: session.identity,
    config: run.config,
    program: program.source,
    filename: program.filename,
    cwd,
    json: run.json,
    discardCompletion: run.discardCompletion,
    tty: { stdout: process.stdout.isTTY === true, stderr: process.stderr.isTTY === true },
    colors: colorEnabled(process.stdout),
    ...(relayed !== undefined ? { bindings: relayed.shape } : {}),
  });
  // As the ordinary path: the first SIGINT or SIGTERM asks for the run to end, and its failure
  // is printed; a second one ends ptc at once (and the pool ends the run when the socket closes).
  const interrupt = (): void => send(socket, { type: 'interrupt' });
  process.once('SIGINT', interrupt);
  process.once('SIGTERM', interrupt);
  try {
    for (;;) {
      const message = await lines.next();
      if (message === undefined) {
        process.stderr.write(`ptc: the resident pool closed the connection before the run ended${lines.error ? ` (${lines.error})` : ''}\n`);
        return 1;
      }
      bootMark('ptc:resident-message');
      if (message.type === 'call') {
        if (relayed !== undefined) void answer(socket, relayed, message);
      } else if (message.type === 'stdout') process.stdout.write(String(message.text));
      else if (message.type === 'stderr') process.stderr.write(String(message.text));
      else if (message.type === 'exit') return typeof message.code === 'number' ? message.code : 1;
    }
  } finally {
    process.off('SIGINT', interrupt);
    process.off('SIGTERM', interrupt);
    socket.end();
  }
}

/** A --bindings module's functions, and its shape for the pool: a function is 'f', a namespace an object of the same. */
interface RelayedBindings {
  shape: Record<string, unknown>;
  functions: Map<string, (...args: unknown[]) => unknown>;
}

/**
 * Loads the --bindings module as the ordinary path does; declines (the ordinary path then runs,
 * with the module already loaded) when it cannot be loaded, or holds what the relay cannot carry
 * the same way: a value that is neither a function nor a plain object of them, or a function that
 * binding() marked (its approval, revert and reconcile live in this process).
 */
async function relayable(path: string): Promise<RelayedBindings | { declined: string }> {
  const { loadBindings } = await import('./bindings-module.ts');
  let bindings: Record<string, unknown>;
  try {
    bindings = await loadBindings(path) as Record<string, unknown>;
  } catch {
    return { declined: 'the --bindings module cannot be loaded' };
  }
  const functions = new Map<string, (...args: unknown[]) => unknown>();
  const walk = (node: Record<string, unknown>, prefix: string): Record<string, unknown> | undefined => {
    const shape: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(node)) {
      const name = prefix === '' ? key : `${prefix}.${key}`;
      if (typeof value === 'function') {
        if (Object.getOwnPropertySymbols(value).length > 0) return undefined;
        functions.set(name, value as (...args: unknown[]) => unknown);
        shape[key] = 'f';
        continue;
      }
      const proto = typeof value === 'object' && value !== null ? Object.getPrototypeOf(value) : undefined;
      if (proto !== null && proto !== Object.prototype) return undefined;
      const inner = walk(value as Record<string, unknown>, name);
      if (inner === undefined) return undefined;
      shape[key] = inner;
    }
    return shape;
  };
  const shape = walk(bindings, '');
  return shape === undefined ? { declined: 'the --bindings module holds what the pool cannot call the same way' } : { shape, functions };
}

/** Calls one binding for the pool and sends what it returned or threw, as the dispatch would encode it. */
async function answer(socket: Socket, relayed: RelayedBindings, message: Record<string, unknown>): Promise<void> {
  const [{ decodeJson }, { encodeJson, LossyValueError }, { describeThrown }, { types }] = await Promise.all([
    import('../../wire/decode.ts'), import('../../wire/json.ts'), import('../../wire/thrown.ts'), import('node:util'),
  ]);
  const id = message.id;
  const fn = relayed.functions.get(String(message.name));
  let value: unknown;
  try {
    if (fn === undefined) throw new Error(`no binding ${String(message.name)}`);
    value = await fn(...(decodeJson(String(message.args)) as unknown[]));
  } catch (thrown) {
    return send(socket, { type: 'throw', id, ...describeThrown(thrown) });
  }
  if (value === undefined) return send(socket, { type: 'return', id });
  let text: string;
  try {
    text = encodeJson(value, 'result', { isProxy: types.isProxy });
  } catch (error) {
    return send(socket, error instanceof LossyValueError ? { type: 'lossy', id, message: error.message } : { type: 'throw', id, ...describeThrown(error) });
  }
  send(socket, { type: 'return', id, value: text });
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/**
 * Starts this user's pool for this environment in the background (detached, its own session),
 * booting a carrier for `cwd`; resolves with its pid once it listens, or undefined when it did not.
 */
export async function startPool(cwd: string, env: NodeJS.ProcessEnv = process.env, wait = false): Promise<number | undefined> {
  const { spawn } = await import('node:child_process');
  const child = spawn(process.execPath, [], {
    cwd: '/',
    detached: true,
    stdio: ['ignore', wait ? 'pipe' : 'ignore', 'ignore'],
    env: { ...env, [RESIDENT_SELECTOR]: cwd },
  });
  if (!wait) {
    child.on('error', () => {});
    child.unref();
    return child.pid;
  }
  return new Promise((resolve) => {
    let text = '';
    child.on('error', () => resolve(undefined));
    child.stdout!.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      if (!text.includes('\n')) return;
      child.stdout!.destroy();
      child.unref();
      resolve(text.startsWith('listening') ? child.pid : undefined);
    });
    child.stdout!.on('end', () => resolve(undefined));
  });
}
