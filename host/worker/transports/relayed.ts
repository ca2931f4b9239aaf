// A carrier behind a relay (carrier/relay/) at the far end of a transport that carries only stdio:
// `ssh … node bootstrap.mjs --relay`, or any command prefix such as `docker exec -i box node …`.
// The transport process's stdin and stdout carry mux frames (wire/mux.ts); this side
// turns them back into the control, stdout and stderr streams a local carrier has, so the worker
// above cannot tell the difference. The transport's own stderr (ssh's diagnostics) is kept apart
// as a bounded tail for failures.
import { spawn, type ChildProcess } from 'node:child_process';
import type { Socket } from 'node:net';
import { Duplex, PassThrough } from 'node:stream';
import { createMuxReader, muxChunks, muxFrame, type RelayHello, type RelayStart } from '../../../wire/mux.ts';
import { PROTOCOL_REVISION } from '../../../wire/revision.ts';
import { createMuxStreams } from '../../../wire/mux-streams.ts';
import type { CpuOverrun, ResourceLimits } from '../../../supervision/resources/guard.ts';
import { exitedUnreaped } from '../../../supervision/process-tree.ts';
import type { CarrierConnection } from './connection.ts';

/** Bytes of the transport's own stderr kept for diagnostics. */
const TRANSPORT_TAIL_BYTES = 4 * 1024;
/** The relay kills its carrier after this long without a frame from the host (see mux.ts "P"). */
export const RELAY_WATCHDOG_MS = 30_000;
/** Keepalives go out often enough that two can be lost before the watchdog fires. */
const KEEPALIVE_MS = RELAY_WATCHDOG_MS / 3;

export interface RelayedLaunch {
  /** The transport command; its last arguments start `node bootstrap.mjs --relay` on the far side. */
  executable: string;
  args: string[];
  env: Record<string, string>;
  /** Names the far side in messages: "ssh deploy@build-7". */
  describe: string;
  start: RelayStart;
}

export interface RelayedOptions {
  /** With a network allowlist: opens a connection to this host's proxy for each one the sandbox
   * makes over there (the relay's N frames). Without it, an N frame is a protocol failure. */
  connectProxy?: () => Socket;
}

/** Opens a carrier through a relay once `prepared` resolves to the launch; its rejection is a start failure. */
export function openRelayedConnection(prepared: Promise<RelayedLaunch>, options: RelayedOptions = {}): CarrierConnection {
  const control = new Duplex({
    // The carrier closing its end (an empty C frame) closes this one, as a socket would.
    allowHalfOpen: false,
    read() {},
    write(chunk: Buffer, _encoding, callback) {
      for (const frame of muxChunks('C', chunk)) send(frame);
      callback();
    },
  });
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const exitListeners: Array<(code: number | null, signal: NodeJS.Signals | null) => void> = [];
  const failureListeners: Array<(message: string) => void> = [];
  let resolveSettled!: () => void;
  const settled = new Promise<void>((resolve) => {
    resolveSettled = resolve;
  });
  let transport: ChildProcess | undefined;
  let describe = 'the transport';
  let hello: RelayHello | undefined;
  let ended = false;
  let killed = 0;
  let referenced = true;
  let tail = '';
  let limitReason: string | undefined;
  let lost: string | undefined;
  const queued: Buffer[] = [];
  // The limits are measured by the relay (relay/limits.ts); these hear what it found.
  let overMemory: string | undefined;
  /** The task limit the relay says the tree died of (its overMemory is then that message). */
  let overTasks: number | undefined;
  let onMemoryOver: ((beforeRun: boolean) => void) | undefined;
  let transportExited = false;
  let onCpuOverrun: ((overrun: CpuOverrun) => void) | undefined;
  const streams = createMuxStreams((type, payload) => send(muxFrame(type, payload)));

  const send = (frame: Buffer): void => {
    if (ended) return;
    if (transport === undefined) queued.push(frame);
    else if (transport.stdin?.writable) transport.stdin.write(frame);
  };
  const end = (outcome: { exit: [number | null, NodeJS.Signals | null] } | { failure: string }): void => {
    if (ended) return;
    ended = true;
    streams.closeAll();
    if ('exit' in outcome) for (const listener of exitListeners) listener(...outcome.exit);
    else for (const listener of failureListeners) listener(outcome.failure);
    stdout.end();
    stderr.end();
    control.push(null);
  };
  const withTail = (message: string): string => (tail.trim() === '' ? message : `${message}: ${tail.trim()}`);

  prepared.then(
    (launch) => {
      describe = launch.describe;
      if (killed > 0 || ended) {
        end({ exit: [null, 'SIGKILL'] });
        return resolveSettled();
      }
      const child = spawn(launch.executable, launch.args, { env: launch.env, stdio: ['pipe', 'pipe', 'pipe'], windowsHide: true });
      transport = child;
      if (!referenced) unrefChild(child);
      child.stdin.on('error', () => {});
      child.stderr.setEncoding('utf8').on('data', (text: string) => {
        tail = (tail + text).slice(-TRANSPORT_TAIL_BYTES);
      });
      const broken = (message: string): void => {
        end({ failure: `${launch.describe}: ${message}` });
        child.kill('SIGKILL');
      };
      const reader = createMuxReader(
        (type, payload) => {
          if (type === 'C') control.push(payload.length === 0 ? null : Buffer.from(payload));
          else if (type === 'O') stdout.write(Buffer.from(payload));
          else if (type === 'E') stderr.write(Buffer.from(payload));
          else if (type === 'H') {
            hello = parseHello(payload, launch.describe, (message) => {
              end({ failure: message });
              child.kill('SIGKILL');
            });
          }
          else if (type === 'T') {
            const overrun = parseJson(payload) as CpuOverrun;
            const listener = onCpuOverrun;
            onCpuOverrun = undefined;
            if (Number.isSafeInteger(overrun.usedMs) && Number.isSafeInteger(overrun.budgetMs)) listener?.({ usedMs: overrun.usedMs, budgetMs: overrun.budgetMs });
          } else if (type === 'M') {
            // The message, and whether the relay had been told of no run yet (a run request the host
            // sent may still be on its way, and never reached the carrier).
            const { message, idle, maxTasks } = parseJson(payload) as { message?: unknown; idle?: unknown; maxTasks?: unknown };
            if (typeof message !== 'string') return broken('the relay sent an "M" frame without a message');
            overMemory ??= message.slice(0, TRANSPORT_TAIL_BYTES);
            if (Number.isSafeInteger(maxTasks)) overTasks ??= maxTasks as number;
            onMemoryOver?.(idle === true);
          } else if (type === 'N' && options.connectProxy !== undefined && payload.length === 4) {
            if (!streams.add(payload.readUInt32BE(0), options.connectProxy())) broken(`the relay opened network stream ${payload.readUInt32BE(0)} twice`);
          } else if ((type === 'B' || type === 'A' || type === 'Z') && options.connectProxy !== undefined) {
            const problem = streams.receive(type, payload);
            if (problem !== undefined) broken(problem);
          } else if (type === 'X') {
            const { code = null, signal = null, overLimit, overDisk, maxTasks } = parseJson(payload) as { code?: number | null; signal?: NodeJS.Signals | null; overLimit?: unknown; overDisk?: unknown; maxTasks?: unknown };
            if (typeof overLimit === 'string') overMemory ??= overLimit;
            if (typeof overLimit === 'string' && Number.isSafeInteger(maxTasks)) overTasks ??= maxTasks as number;
            if (typeof overDisk === 'string') limitReason = overDisk.slice(0, TRANSPORT_TAIL_BYTES);
            end({ exit: [code, signal] });
          } else if (type === 'F') end(hello === undefined ? { failure: `${launch.describe}: ${payload.toString('utf8')}` } : { exit: [null, null] });
          else broken(`the relay sent a "${type}" frame, which ${'NBAZ'.includes(type) ? 'only a carrier with a network allowlist sends' : 'only the host sends'}`);
        },
        (message) => {
          end(hello === undefined ? { failure: `${launch.describe}: ${message}` } : { exit: [null, null] });
          child.kill('SIGKILL');
        },
      );
      child.stdout.on('data', (chunk: Buffer) => reader.push(chunk));
      child.once('error', (error) => {
        if (child.pid === undefined) {
          end({ failure: `could not start ${launch.describe} (${launch.executable}): ${error.message}` });
          resolveSettled();
        }
      });
      child.once('exit', () => {
        transportExited = true;
      });
      child.once('close', (code, signal) => {
        clearInterval(keepalive);
        if (hello === undefined) {
          end({ failure: withTail(`${launch.describe} ended (${code !== null ? `exit code ${code}` : `signal ${signal}`}) before the relay started`) });
        } else {
          // The transport ended before the relay said the carrier exited, and not because this
          // side cut it: the connection went (a dropped network, the server's end killed). The relay
          // over there kills the carrier when it sees its stdin end, or on its watchdog.
          if (!ended && killed < 2) lost = withTail(`${launch.describe}: the connection to the far side was lost (${code !== null ? `${launch.executable} exited with code ${code}` : `${launch.executable} was killed by ${signal}`})`);
          end({ exit: [code, signal] });
        }
        resolveSettled();
      });
      const keepalive = setInterval(() => send(muxFrame('P')), KEEPALIVE_MS);
      keepalive.unref();
      for (const frame of [muxFrame('S', Buffer.from(JSON.stringify(launch.start))), ...queued.splice(0)]) child.stdin.write(frame);
    },
    (error: Error) => {
      end({ failure: error.message });
      resolveSettled();
    },
  );

  return {
    control,
    stdout,
    stderr,
    get pid() {
      return transport?.pid;
    },
    get transportTail() {
      return tail;
    },
    overLimit: () => limitReason,
    get lost() {
      return lost;
    },
    get ending() {
      return transportExited || (transport?.pid !== undefined && exitedUnreaped(transport.pid));
    },
    onExit: (listener) => void exitListeners.push(listener),
    onStartFailure: (listener) => void failureListeners.push(listener),
    settled,
    kill() {
      killed += 1;
      // First ask the relay, which kills the carrier's tree over there; if asked again, cut the
      // transport: the relay sees its stdin end and kills the tree all the same.
      if (killed === 1 && transport?.stdin?.writable && !ended) transport.stdin.write(muxFrame('K'));
      else transport?.kill('SIGKILL');
    },
    limits({ maxMemoryMb }, kill): ResourceLimits {
      onMemoryOver = kill;
      const idle = { stop() {}, check: () => undefined };
      return {
        get memory() {
          return hello?.memory ?? 'none';
        },
        // A relay from before the task limit and the kernel's CPU count says nothing of them: it has neither.
        get tasks() {
          return hello?.tasks ?? 'none';
        },
        get cpu() {
          return hello?.cpu ?? 'watchdog';
        },
        // The relay watches the disk and reports it through the exit (overLimit() of the connection).
        disk: 'none',
        watch(cpuTimeMs, onOverrun) {
          // Nothing to measure: no frames, so an unlimited run pays no extra round of writes.
          if (cpuTimeMs === null && maxMemoryMb === null) return idle;
          onCpuOverrun = onOverrun;
          send(muxFrame('W', Buffer.from(JSON.stringify({ cpuTimeMs }))));
          // No started(): the relay counts from its W frame, so the carrier need not send its notice.
          return {
            stop() {
              onCpuOverrun = undefined;
              send(muxFrame('D'));
            },
            // The relay takes the last look itself, before it passes on the carrier's completion.
            check: () => undefined,
          };
        },
        overLimit: () => {
          if (overMemory === undefined) return undefined;
          if (overTasks !== undefined) return { message: overMemory, maxTasks: overTasks };
          return maxMemoryMb === null ? undefined : { message: overMemory, maxMemoryMb };
        },
        // The relay takes its last look at the kernel's events before it passes on the completion.
        checkLimits: () => false,
        release() {},
      };
    },
    drainStdio() {
      // One ordered stream: stdio frames written before a control frame have already arrived.
    },
    abandonStdio() {
      transport?.kill('SIGKILL');
    },
    ref() {
      referenced = true;
      if (transport !== undefined) for (const handle of [transport, transport.stdin, transport.stdout, transport.stderr]) (handle as { ref?: () => void } | null)?.ref?.();
    },
    unref() {
      referenced = false;
      if (transport !== undefined) unrefChild(transport);
    },
  };
}

function unrefChild(child: ChildProcess): void {
  for (const handle of [child, child.stdin, child.stdout, child.stderr]) (handle as { unref?: () => void } | null)?.unref?.();
}

function parseJson(payload: Buffer): unknown {
  try {
    return JSON.parse(payload.toString('utf8'));
  } catch {
    return {};
  }
}

function parseHello(payload: Buffer, describe: string, fail: (message: string) => void): RelayHello | undefined {
  const hello = parseJson(payload) as Partial<RelayHello>;
  if (hello.revision !== PROTOCOL_REVISION) {
    fail(`${describe}: the bootstrap there speaks protocol revision ${String(hello.revision)}, this ptc speaks revision ${PROTOCOL_REVISION}`);
    return undefined;
  }
  return hello as RelayHello;
}
