// The resident pool: a per-user daemon that runs `ptc run`'s programs for the CLI's fast path
// (resident-client.ts), with a carrier already booted for each directory it has served. Each run
// is the ordinary path's run — the same runtime configuration, a fresh carrier of its own, the same
// printer — only its process is already started. Who may connect and which pool serves whom:
// host/resident.ts. It exits when no client has connected for its idle time, when its socket is
// taken from it, or when its executable is replaced.
import { createServer, type Server, type Socket } from 'node:net';
import { lstatSync, unlinkSync, type Stats } from 'node:fs';
import { createRuntime, type Bindings, type Runtime, type RuntimeConfig } from '../index.ts';
import { decodeJson } from '../../wire/decode.ts';
import { encodeJson } from '../../wire/json.ts';
import { bootPauser, holdWarmPool } from '../prestart.ts';
import { DEFAULT_IDLE_MS, ensureToken, nonce, proof, proofMatches, residentIdentity, residentPlace, type ResidentPlace } from '../resident.ts';
import { HumanPrinter, resultJson } from './print.ts';
import { usageLine } from './options.ts';
import { LineReader, send } from './resident-lines.ts';
import { open } from './resident-client.ts';

/** Directories (per configuration) whose carriers the pool keeps booted; the least recently used past this are let go. */
const MAX_WARM_DIRECTORIES = 4;
/** A program, with its message around it, may be this long. */
const MAX_REQUEST_CHARS = 256 << 20;
/** A client that has not finished its handshake by then is dropped. */
const HANDSHAKE_MS = 5_000;
/** How often an idle pool checks that its socket and executable are still its own. */
const CHECK_MS = 10_000;

/** How long a pool waits with no client before it exits: PTC_RESIDENT_IDLE_MS, else DEFAULT_IDLE_MS. */
export function residentIdleMs(env: NodeJS.ProcessEnv): number {
  const value = Number(env.PTC_RESIDENT_IDLE_MS);
  return env.PTC_RESIDENT_IDLE_MS !== undefined && Number.isInteger(value) && value > 0 ? value : DEFAULT_IDLE_MS;
}

type Output = NodeJS.WritableStream & { isTTY: boolean };

interface Warm {
  key: string;
  release: Promise<(() => Promise<void>) | undefined>;
}

/** Runs the pool until it is idle; `bootCwd` is the directory of the run that started it. */
export async function serveResident(version: string, bootCwd: string, idleMs: number): Promise<void> {
  process.chdir('/');
  const found = residentPlace(version, true);
  if ('refused' in found) throw new Error(`ptc resident: ${found.refused}`);
  const place: ResidentPlace = found;
  const token = ensureToken(place.directory);
  if (token === undefined) throw new Error(`ptc resident: cannot keep a token in ${place.directory}`);
  const server = await listen(place);
  if (server === undefined) return; // another pool serves this identity
  const socketStats = lstatSync(place.socket);
  const pauseBoots = await bootPauser();
  const warm: Warm[] = [];
  const connections = new Set<Socket>();
  let runs = 0;
  let running = 0;
  let lastActive = Date.now();
  let closing = false;

  const keepWarm = (config: Record<string, unknown>, cwd: string): void => {
    const key = `${canonical(config)}\0${cwd}`;
    const index = warm.findIndex((entry) => entry.key === key);
    if (index !== -1) {
      warm.push(...warm.splice(index, 1));
      return;
    }
    warm.push({ key, release: holdWarmPool(config, cwd).catch(() => undefined) });
    while (warm.length > MAX_WARM_DIRECTORIES) void warm.shift()!.release.then((release) => release?.());
  };

  const shutdown = async (): Promise<void> => {
    if (closing) return;
    closing = true;
    clearInterval(checker);
    server.close();
    if (stillOurs(place.socket, socketStats)) unlinkSync(place.socket);
    for (const socket of connections) socket.destroy();
    await Promise.all(warm.map((entry) => entry.release.then((release) => release?.())));
  };
  const checker = setInterval(() => {
    const idle = connections.size === 0 && Date.now() - lastActive >= idleMs;
    if (idle || !stillOurs(place.socket, socketStats) || residentIdentity(version) !== place.identity) void shutdown();
  }, Math.min(CHECK_MS, idleMs));
  process.once('SIGTERM', () => void shutdown());
  process.once('SIGINT', () => void shutdown());

  server.on('connection', (socket) => {
    connections.add(socket);
    lastActive = Date.now();
    socket.on('close', () => {
      connections.delete(socket);
      lastActive = Date.now();
    });
    void serveConnection(socket).catch(() => socket.destroy());
  });

  async function serveConnection(socket: Socket): Promise<void> {
    const lines = new LineReader(socket);
    const timer = setTimeout(() => socket.destroy(), HANDSHAKE_MS);
    const hello = await lines.next();
    if (hello?.type !== 'hello' || typeof hello.nonce !== 'string' || hello.nonce.length > 128) return void socket.destroy();
    const mine = nonce();
    send(socket, { type: 'hello', proof: proof(token!, 'daemon', hello.nonce), nonce: mine, pid: process.pid, identity: place.identity });
    const message = await lines.next();
    clearTimeout(timer);
    if (message === undefined || !proofMatches(proof(token!, 'client', mine), message.proof)) return void socket.destroy();
    lines.maxChars = MAX_REQUEST_CHARS;
    if (message.type === 'status') {
      send(socket, { type: 'status', pid: process.pid, socket: place.socket, runs, running, warmDirectories: warm.length, idleMs, version });
      return void socket.end();
    }
    if (message.type === 'stop') {
      send(socket, { type: 'stopping', pid: process.pid });
      socket.end();
      return shutdown();
    }
    if (message.type !== 'run') return void socket.destroy();
    // A run is this pool's only when the client would have run it the same way in-process.
    if (message.identity !== place.identity) {
      send(socket, { type: 'stderr', text: 'ptc: this resident pool serves another ptc executable or environment\n' });
      send(socket, { type: 'exit', code: 2 });
      return void socket.end();
    }
    runs++;
    running++;
    const code = await runOne(message, socket, lines).finally(() => running--);
    send(socket, { type: 'exit', code });
    socket.end();
  }

  async function runOne(message: Record<string, unknown>, socket: Socket, lines: LineReader): Promise<number> {
    const stream = (type: 'stdout' | 'stderr', isTTY: boolean): Output => ({
      isTTY,
      write(text: string | Uint8Array): boolean {
        send(socket, { type, text: typeof text === 'string' ? text : Buffer.from(text).toString('utf8') });
        return true;
      },
    }) as unknown as Output;
    const tty = (message.tty ?? {}) as { stdout?: unknown; stderr?: unknown };
    const stdout = stream('stdout', tty.stdout === true);
    const stderr = stream('stderr', tty.stderr === true);
    const config = (typeof message.config === 'object' && message.config !== null ? message.config : {}) as Record<string, unknown>;
    // A runtime of its own for each run, as `ptc run` makes in its own process: its dispose() below
    // ends the carrier's whole process tree before the client hears the exit code, as the ordinary
    // path's does before that process exits. Its carrier comes from the pool keepWarm() holds.
    let runtime: Runtime;
    try {
      runtime = createRuntime(config as RuntimeConfig);
    } catch (error) {
      stderr.write(usageLine(error));
      return 2;
    }
    try {
      return await runIn(runtime, message, config, stdout, stderr, socket, lines);
    } finally {
      // The refill this run's end scheduled (for a turn after this one) would hold the event loop
      // while the carrier is ended; it boots once the client has been told.
      const resume = pauseBoots();
      await runtime.dispose();
      setImmediate(resume);
    }
  }

  async function runIn(runtime: Runtime, message: Record<string, unknown>, config: Record<string, unknown>, stdout: Output, stderr: Output, socket: Socket, lines: LineReader): Promise<number> {
    const cwd = String(message.cwd);
    const relay = relayTo(socket, message.bindings);
    let spec;
    try {
      spec = runtime.resolve({
        ...(relay.bindings !== undefined ? { bindings: relay.bindings } : {}),
        program: String(message.program),
        cwd,
        filename: String(message.filename),
        discardCompletion: message.discardCompletion === true,
      });
    } catch (error) {
      // As cli.ts: a configuration the library refuses is a usage error, on one line.
      stderr.write(usageLine(error));
      return 2;
    }
    keepWarm(config, cwd);
    const controller = new AbortController();
    // The client's Ctrl-C, and a client gone (killed, or its terminal closed), end the run; the
    // client's answers to binding calls settle them.
    void (async () => {
      for (;;) {
        const next = await lines.next();
        if (next === undefined) {
          relay.close();
          return controller.abort(new Error('interrupted'));
        }
        if (next.type === 'interrupt') controller.abort(new Error('interrupted'));
        else relay.settle(next);
      }
    })();
    const printer = new HumanPrinter(stdout, stderr, message.colors === true);
    const result = await runtime.run(spec, {
      signal: controller.signal,
      ...(message.json === true ? {} : { onOutput: printer.entry }),
    });
    if (message.json === true) stdout.write(`${resultJson(result)}\n`);
    else printer.outcome(result);
    return result.status === 'ok' ? 0 : 1;
  }

  process.stdout.write(`listening ${place.socket}\n`);
  lastActive = Date.now();
  // Boot a carrier for the directory of the run that started the pool, and for its default
  // configuration (what a plain `ptc run` there asks for).
  keepWarm({ prestartCarrier: false }, bootCwd);
  await new Promise<void>((resolve) => server.once('close', () => resolve()));
}

/**
 * The bindings of a run whose `ptc run` loaded a --bindings module: each calls the client, which
 * runs the function and answers with its value or what it threw (host/cli/resident-client.ts
 * answer()), so the program reads what the ordinary path would give it.
 */
function relayTo(socket: Socket, shape: unknown): { bindings?: Bindings; settle(message: Record<string, unknown>): void; close(): void } {
  const pending = new Map<number, { resolve(value: unknown): void; reject(error: Error): void; name: string }>();
  let nextId = 0;
  const call = (name: string) => (...args: unknown[]): Promise<unknown> => new Promise((resolve, reject) => {
    const id = ++nextId;
    pending.set(id, { resolve, reject, name });
    send(socket, { type: 'call', id, name, args: encodeJson(args, 'args') });
  });
  const build = (node: Record<string, unknown>, prefix: string): Bindings => Object.fromEntries(Object.entries(node).map(([key, value]) => {
    const name = prefix === '' ? key : `${prefix}.${key}`;
    return [key, value === 'f' ? call(name) : build(value as Record<string, unknown>, name)];
  })) as Bindings;
  return {
    ...(typeof shape === 'object' && shape !== null ? { bindings: build(shape as Record<string, unknown>, '') } : {}),
    settle(message) {
      const waiting = pending.get(Number(message.id));
      if (waiting === undefined) return;
      pending.delete(Number(message.id));
      if (message.type === 'return') waiting.resolve(typeof message.value === 'string' ? decodeJson(message.value) : undefined);
      else if (message.type === 'lossy') waiting.reject(Object.assign(new TypeError(`binding ${waiting.name} returned a value that is not lossless JSON: ${String(message.message)}`), { code: 'PTC_INVALID_RESULT' }));
      else waiting.reject(Object.assign(new Error(String(message.message)), typeof message.code === 'string' ? { code: message.code } : {}));
    },
    close() {
      for (const waiting of pending.values()) waiting.reject(new Error('the ptc run process that holds the bindings went away'));
      pending.clear();
    },
  };
}

/** Listens at the place's socket; undefined when a live pool already does. A socket nobody listens on is stale: it is replaced. */
async function listen(place: ResidentPlace): Promise<Server | undefined> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const server = createServer();
    // The socket is this user's alone whatever the caller's umask, which the runs keep (it is
    // part of the identity: files a program makes get the modes they would in-process).
    const umask = process.umask(0o077);
    const error = await new Promise<NodeJS.ErrnoException | undefined>((resolve) => {
      server.once('error', resolve);
      server.listen(place.socket, () => resolve(undefined));
    }).finally(() => process.umask(umask));
    if (error === undefined) return server;
    if (error.code !== 'EADDRINUSE') throw error;
    if (await servesIdentity(place)) return undefined;
    // A socket nobody listens on (a pool that was killed), a listener that cannot prove it holds
    // the token, or a pool of another identity at this name: replaced. (A pool that finds its
    // socket replaced exits.) Only a socket is removed: the directory is private, so anything
    // there is this user's, and lstat (not stat) never follows a link out of it.
    try {
      if (lstatSync(place.socket).isSocket()) unlinkSync(place.socket);
      else throw new Error(`ptc resident: ${place.socket} exists and is not a socket`);
    } catch (cause) {
      if ((cause as NodeJS.ErrnoException).code !== 'ENOENT') throw cause;
    }
  }
  return undefined;
}

/** Whether a pool that proves it holds the token, and serves this identity, listens at the place's socket. */
async function servesIdentity(place: ResidentPlace): Promise<boolean> {
  const session = await open(place.directory, place.socket);
  if ('declined' in session) return false;
  session.socket.destroy();
  return session.identity === place.identity;
}

/** Whether the socket file at `path` is still the one this pool made. */
function stillOurs(path: string, made: Stats): boolean {
  try {
    const now = lstatSync(path);
    return now.ino === made.ino && now.dev === made.dev;
  } catch {
    return false;
  }
}

/** A configuration's text with its keys in order: equal configurations share a runtime. */
function canonical(value: unknown): string {
  if (typeof value !== 'object' || value === null) return JSON.stringify(value) ?? 'undefined';
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  return `{${Object.keys(value).sort().map((key) => `${JSON.stringify(key)}:${canonical((value as Record<string, unknown>)[key])}`).join(',')}}`;
}
