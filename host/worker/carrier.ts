// Over 400 lines: the handshake, the RPC framing and termination share the private state of one untrusted peer, which a split would expose.
// One carrier: versioned handshake, validated control traffic, and termination of everything it
// started, over whichever transport reaches it (transports/). The carrier is an untrusted peer:
// every frame is size-checked, parsed and shape-checked here before anything acts on it.
import { constants } from 'node:os';
import type { Duplex } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { createBirpc, type BirpcReturn } from 'birpc';
import { encodeJson } from '../../wire/json.ts';
import { PAYLOAD_SEPARATOR, quickFrame, splitPayload } from '../../wire/frame.ts';
import { PROTOCOL_REVISION } from '../../wire/revision.ts';
import type { CarrierMethods, Handshake, HostMethods, OutputMessage, RunOutcome, RunRequest } from '../../wire/messages.ts';
import { createControlReader } from './control.ts';
import { Lifecycle, type Moves } from './lifecycle.ts';
import { checkFrame, checkRunOutcome } from './validate.ts';
import type { CarrierConnection } from './transports/connection.ts';
import type { NetworkSession } from '../sandbox/index.ts';

/** Bytes of carrier stderr kept for worker-exit diagnostics. */
const STDERR_TAIL_BYTES = 8 * 1024;
/** How long a closed control channel waits for the carrier's exit status, the better diagnostic. */
const CONTROL_LOSS_GRACE_MS = 500;
/** Carrier requests the host serves at once; past that it stops reading until replies go out, so
 * a flood cannot pile up work. Binding calls past maxPendingCalls fail the run before this. */
const MAX_REQUESTS_IN_FLIGHT = 1024;

export interface CarrierEvents {
  /** The carrier broke the protocol; the process should be torn down. `betweenRuns`: after the
   * reply to the last run, which stands. */
  onProtocolError(message: string, betweenRuns: boolean): void;
  /** The carrier exited (before or after a result). */
  onExit(code: number | null, signal: NodeJS.Signals | null): void;
  /** The carrier process could not be started at all. */
  onSpawnError(message: string): void;
  /** Raw bytes the carrier (or a process it started) wrote to stdout or stderr. */
  onStdio(text: string, stream: 'stdout' | 'stderr'): void;
  /** The carrier closed its end of the control channel but did not exit: it can never answer. */
  onControlLost(): void;
}

export type HostHandlers = Omit<HostMethods, 'output'> & { output(entry: OutputMessage): void };

export interface CarrierOptions {
  connection: CarrierConnection;
  maxMessageBytes: number;
  /** Listeners; a spare carrier gets them later through attach(). */
  events?: CarrierEvents;
  /** Removes what the launch created (the sandbox's private temp directory) once the process is gone. */
  cleanup?: () => Promise<void>;
  /** The same, synchronously, for a host that is exiting. */
  cleanupSync?: () => void;
  /** The launch runs the carrier under a parent that reports its death by signal n as exit code 128 + n (bubblewrap). */
  signalAsExitCode?: boolean;
  /** The carrier's network allowlist proxy, whose counts each run reports. */
  network?: NetworkSession;
  /** The directories the program may write on this machine (the workspace, writable roots, its private temp directory). */
  writable?: readonly string[];
}

/** Carriers being terminated. A per-call result does not wait for the end of its carrier, so a
 * host that exits meanwhile kills them and removes what their launches created itself. */
const ending = new Set<Carrier>();
process.once('exit', () => {
  for (const carrier of ending) carrier.killNow();
});

/**
 * A carrier's lifecycle. Its process and its control channel end separately (a process that
 * exits has often sent frames not read yet; a channel closed for a breach leaves the process to
 * be killed), so each order of the two has a state:
 * - booting: started; its handshake has not been accepted yet
 * - ready: the handshake was accepted; runs go over the channel
 * - closed: the host closed the channel (a protocol breach, or termination): no frame is read or
 *   sent, and pending calls have rejected; the process may still run
 * - exited: the process is gone, or never started; what it sent before exiting is still read
 * - ended: the channel closed and the process gone
 */
export type CarrierState = 'booting' | 'ready' | 'closed' | 'exited' | 'ended';

/** The moves between carrier states, the only ones made. */
export const CARRIER_MOVES: Moves<CarrierState> = {
  booting: ['ready', 'closed', 'exited'],
  ready: ['closed', 'exited'],
  closed: ['ended'],
  exited: ['ended'],
  ended: [],
};

/** What happened to a carrier before anyone listened: replayed by attach(). */
type EarlyEvent =
  | { type: 'exit'; code: number | null; signal: NodeJS.Signals | null }
  | { type: 'spawn-error'; message: string }
  | { type: 'protocol'; message: string; betweenRuns: boolean }
  | { type: 'control-lost' };

/** A running carrier and its control channel. */
export class Carrier {
  readonly connection: CarrierConnection;
  readonly network: NetworkSession | undefined;
  readonly writable: readonly string[];
  #events: CarrierEvents | undefined;
  readonly #early: EarlyEvent[] = [];
  readonly #control: Duplex;
  readonly #ready: Promise<Handshake>;
  readonly #accept: Record<'stdout' | 'stderr', (chunk: Buffer) => void>;
  readonly #cleanup: (() => Promise<void>) | undefined;
  readonly #cleanupSync: (() => void) | undefined;
  #handlers: HostHandlers | undefined;
  #rpc: BirpcReturn<CarrierMethods, HostHandlers> | undefined;
  #deliver: ((message: unknown) => void) | undefined;
  #handshake: { resolve(hello: Handshake): void; reject(error: Error): void } | undefined;
  /** Ids of the host's calls still waiting for the carrier's reply; a reply to any other id is forged. */
  readonly #awaiting = new Set<string>();
  /** Ids of the carrier's requests the host is serving. */
  readonly #serving = new Set<string>();
  /** Bytes of replies the host may queue for a carrier that does not read them. */
  readonly #maxQueued: number;
  #paused = false;
  /** The id of the host's `run` call while a program runs; the carrier may send only then. */
  #runCall: string | undefined;
  readonly #lifecycle = new Lifecycle<CarrierState>('carrier', 'booting', CARRIER_MOVES);
  /** Ids of the host's `complete` calls between runs, whose replies may arrive then. */
  readonly #completeCalls = new Set<string>();
  #capabilities: readonly string[] = [];
  /** Run requests sent, counted as the carrier counts them: an interrupt names its run by this count. */
  #runsSent = 0;
  #stderrTail = '';
  readonly #settled: Promise<void>;

  constructor({ connection, maxMessageBytes, events, cleanup, cleanupSync, signalAsExitCode = false, network, writable = [] }: CarrierOptions) {
    this.connection = connection;
    this.network = network;
    this.writable = writable;
    this.#events = events;
    this.#maxQueued = maxMessageBytes;
    this.#cleanup = cleanup;
    this.#cleanupSync = cleanupSync;
    this.#ready = new Promise((resolve, reject) => {
      this.#handshake = { resolve, reject };
    });
    this.#ready.catch(() => {});
    this.#control = connection.control;
    this.#settled = connection.settled;
    connection.onStartFailure((message) => {
      this.#processGone();
      this.#handshake?.reject(new Error(message));
      this.#emit({ type: 'spawn-error', message });
    });
    connection.onExit((exitCode, exitSignal) => {
      this.#processGone();
      this.#handshake?.reject(new Error('the carrier exited before its handshake'));
      const { code, signal } = signalAsExitCode ? decodeSignal(exitCode, exitSignal) : { code: exitCode, signal: exitSignal };
      this.#emit({ type: 'exit', code, signal });
    });
    const accepts = {} as Record<'stdout' | 'stderr', (chunk: Buffer) => void>;
    for (const stream of ['stdout', 'stderr'] as const) {
      const decoder = new StringDecoder('utf8');
      accepts[stream] = (chunk: Buffer): void => {
        const text = decoder.write(chunk);
        if (stream === 'stderr') this.#stderrTail = (this.#stderrTail + text).slice(-STDERR_TAIL_BYTES);
        // Without a listener the carrier is idle: its stdout is discarded, stderr kept as the tail.
        if (text !== '') this.#events?.onStdio(text, stream);
      };
      connection[stream].on('data', accepts[stream]);
    }
    this.#accept = accepts;
    const reader = createControlReader({
      maxMessageBytes,
      revision: PROTOCOL_REVISION,
      onHandshake: (hello) => {
        const pending = this.#handshake;
        this.#handshake = undefined;
        // A carrier that exited has had its handshake rejected already; a late hello changes nothing.
        if (this.state !== 'booting') return;
        this.#capabilities = hello.capabilities;
        this.#lifecycle.to('ready');
        pending?.resolve(hello);
      },
      onMessage: (message) => this.#receive(message),
      onProblem: (message) => {
        const pending = this.#handshake;
        this.#handshake = undefined;
        this.#fail(message);
        pending?.reject(new Error(message));
      },
    });
    this.#control.on('data', (chunk: Buffer) => {
      if (!this.#channelClosed) reader.push(chunk);
    });
    this.#control.on('drain', () => this.#flow());
    this.#control.on('error', () => {});
    this.#control.on('close', () => {
      if (this.state !== 'booting' && this.state !== 'ready') return;
      const timer = setTimeout(() => {
        if (this.state === 'booting' || this.state === 'ready') this.#emit({ type: 'control-lost' });
      }, CONTROL_LOSS_GRACE_MS);
      timer.unref();
      connection.onExit(() => clearTimeout(timer));
    });
  }

  get pid(): number | undefined {
    return this.connection.pid;
  }

  /** The carrier's stderr tail, then what the transport said (ssh's own diagnostics), if anything. */
  get stderrTail(): string {
    const transport = this.connection.transportTail.trim();
    return transport === '' ? this.#stderrTail : `${this.#stderrTail}${this.#stderrTail === '' || this.#stderrTail.endsWith('\n') ? '' : '\n'}${transport}`;
  }

  /** Resolves with the carrier's handshake once it has been checked against this host's revision. */
  handshake(): Promise<Handshake> {
    return this.#ready;
  }

  /** Where the carrier is in its lifecycle (CarrierState). */
  get state(): CarrierState {
    return this.#lifecycle.state;
  }

  /** True once the process has exited or could not start. */
  get exited(): boolean {
    return this.state === 'exited' || this.state === 'ended';
  }

  /** Whether the host closed the channel: nothing more is read from it or sent on it. */
  get #channelClosed(): boolean {
    return this.state === 'closed' || this.state === 'ended';
  }

  #processGone(): void {
    this.#lifecycle.to(this.state === 'closed' ? 'ended' : 'exited');
  }

  /** Starts listening; anything that happened before (exit, protocol error) is delivered now. */
  attach(events: CarrierEvents): void {
    this.#events = events;
    for (const event of this.#early.splice(0)) this.#deliverEvent(event);
  }

  #emit(event: EarlyEvent): void {
    if (this.#events === undefined) this.#early.push(event);
    else this.#deliverEvent(event);
  }

  #deliverEvent(event: EarlyEvent): void {
    const events = this.#events!;
    if (event.type === 'exit') events.onExit(event.code, event.signal);
    else if (event.type === 'spawn-error') events.onSpawnError(event.message);
    else if (event.type === 'control-lost') events.onControlLost();
    else events.onProtocolError(event.message, event.betweenRuns);
  }

  /** Lets the host exit while this carrier idles; a spare must not keep the process alive. */
  unref(): void {
    this.connection.unref();
  }

  /** Undoes unref() once the carrier has work. */
  ref(): void {
    this.connection.ref();
  }

  /** Starts RPC with the given host handlers; call after the handshake. */
  connect(handlers: HostHandlers): void {
    this.#handlers = handlers;
    this.#rpc = createBirpc<CarrierMethods, HostHandlers>(handlers, {
      post: (frame: string) => {
        if (!this.#channelClosed && this.#control.writable) this.#control.write(`${frame}\n`);
        this.#flow();
      },
      on: (deliver) => {
        this.#deliver = deliver as (message: unknown) => void;
      },
      serialize: (message: Record<string, unknown>) => {
        if (message.t === 'q' && typeof message.i === 'string') {
          this.#awaiting.add(message.i);
          if (message.m === 'run') {
            this.#runCall = message.i;
            this.#runsSent++;
          }
          if (message.m === 'complete') this.#completeCalls.add(message.i);
        }
        if (message.t === 's') this.#serving.delete(message.i as string);
        const quick = quickFrame(message);
        if (quick !== undefined) return quick;
        const { envelope, payload } = splitPayload(message);
        const text = encodeJson(envelope, 'message', { replaceObject: encodeError, skipUndefinedMembers: true });
        return payload === undefined ? text : `${text}${PAYLOAD_SEPARATOR}${payload}`;
      },
      deserialize: (message: unknown) => message,
      eventNames: [],
      timeout: -1,
      // A handler's failure goes back to the carrier as an error reply; nothing to log here.
      onFunctionError: () => false,
      onGeneralError: () => true,
    });
  }

  /** Sends the program and resolves with the carrier's checked outcome. */
  async run(request: RunRequest): Promise<RunOutcome> {
    if (this.#rpc === undefined) throw new Error('carrier is not connected');
    const outcome: unknown = await this.#rpc.run(request);
    const problem = checkRunOutcome(outcome);
    if (problem !== undefined) {
      this.#fail(`invalid run result from the carrier: ${problem}`);
      throw new Error(problem);
    }
    return outcome as RunOutcome;
  }

  /** Kills the process tree and removes what the launch created, synchronously: for a host that is exiting. */
  killNow(): void {
    this.connection.kill();
    try {
      this.#cleanupSync?.();
    } catch {
      // Best effort: the host is going away.
    }
  }

  /** Between runs of a retained carrier: the names that can follow `path` (carrier/run/complete.ts); none from a carrier without the capability. */
  async complete(path: string[]): Promise<string[]> {
    if (this.#rpc === undefined || this.#channelClosed || !this.#capabilities.includes('complete')) return [];
    const names: unknown = await this.#rpc.complete(path).catch(() => []);
    // The carrier caps its answer (5000 names of up to 200 characters); anything else is not one.
    if (!Array.isArray(names) || names.length > 5000 || !names.every((name) => typeof name === 'string' && name.length <= 200)) return [];
    return names as string[];
  }

  /** Asks the carrier to stop its active run cooperatively (a one-way notification). */
  revoke(): void {
    if (this.#rpc !== undefined && !this.#channelClosed) void this.#rpc.$callEvent('revoke').catch(() => {});
    // A run stuck in a synchronous loop cannot read the revoke; the interrupt pipe reaches it.
    if (!this.#channelClosed) this.connection.interrupt?.(this.#runsSent);
  }

  /** Stops all traffic: later frames and replies are ignored, pending calls reject. */
  close(): void {
    if (this.#channelClosed) return;
    this.#lifecycle.to(this.exited ? 'ended' : 'closed');
    this.#rpc?.$close(new Error('carrier channel closed'));
    this.#control.destroy();
  }

  /**
   * Kills the carrier's process group and waits (up to graceMs) for the process and its pipes to
   * close. `after`: the kill goes out once it resolves, for a per-call carrier whose caller has its
   * result (see retirement() in pool.ts). That carrier halted when it sent its reply
   * (carrier/channel/channel.ts), so it runs nothing meanwhile; the kill's walk of /proc and the
   * dying process's teardown are then off the path of the caller's next run. A host that exits
   * first kills it on its way out, as it does any carrier being terminated.
   */
  async terminate(graceMs: number, after?: Promise<void>): Promise<void> {
    ending.add(this);
    try {
      if (after !== undefined) await after;
      // Kill before closing the channel: a closed channel makes the carrier exit by itself, and its
      // children would be orphaned (out of reach of the tree walk) before the kill could find them.
      this.connection.kill();
      this.close();
      await this.#awaitEnd(graceMs);
    } finally {
      ending.delete(this);
    }
  }

  /** The process and its pipes closing (after graceMs, a second kill and the pipes abandoned), then the launch's cleanup. */
  async #awaitEnd(graceMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const drained = await Promise.race([
      this.#settled.then(() => true),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), graceMs);
      }),
    ]);
    clearTimeout(timer);
    if (!drained) {
      // A descendant that left the group can hold the pipes open; stop reading them.
      this.connection.abandonStdio();
      this.connection.kill();
      if (!this.exited) await this.#settled;
    }
    await this.#cleanup?.().catch(() => {});
  }

  #receive(message: unknown): void {
    if (this.#channelClosed) return;
    const problem = checkFrame(message);
    if (problem !== undefined) {
      this.#fail(`invalid control message: ${problem}`);
      return;
    }
    const frame = message as { t: string; m?: string; a?: unknown[]; i?: string };
    // The carrier's code sends nothing between runs. A frame then ends the carrier, but not the
    // run whose reply came before it: that result stays what it was, however the frames after the
    // reply were cut into chunks.
    if (this.#runCall === undefined && !(frame.t === 's' && this.#completeCalls.delete(frame.i!))) {
      const what = frame.t === 's' ? 'a reply' : `a "${frame.m}" ${frame.i === undefined ? 'message' : 'request'}`;
      this.#fail(`invalid control message: ${what} while no program runs`, true);
      return;
    }
    // Raw bytes a child process wrote before the carrier sent this frame are already in the stdio
    // pipes; take them first so they keep their place before the carrier's own output and reply.
    // Not for a binding call or the started notice, which show nothing: the next frame takes them.
    if (frame.t !== 'q' || (frame.m !== 'invoke' && frame.m !== 'started')) this.connection.drainStdio((chunk, stream) => this.#accept[stream](chunk));
    // Output is one-way and hot: handle it synchronously so it stays ordered before the reply.
    if (frame.t === 'q' && frame.m === 'output' && frame.i === undefined) {
      this.#handlers?.output(frame.a![0] as OutputMessage);
      return;
    }
    if (frame.t === 'q' && frame.m === 'started') {
      this.#handlers?.started();
      return;
    }
    if (frame.t === 'q' && frame.m === 'yieldControl') {
      this.#handlers?.yieldControl();
      return;
    }
    if (frame.t === 'q' && frame.i === undefined) {
      this.#fail(`invalid control message: "${frame.m}" must be a request`);
      return;
    }
    if (frame.t === 's') {
      if (!this.#awaiting.delete(frame.i!)) {
        this.#fail(`invalid control message: a reply to ${JSON.stringify(frame.i)}, which is no call of the host's`);
        return;
      }
      if (frame.i === this.#runCall) this.#runCall = undefined;
    } else if (frame.i !== undefined) {
      if (this.#serving.has(frame.i)) {
        this.#fail(`invalid control message: a second request with id ${JSON.stringify(frame.i)} while the first is served`);
        return;
      }
      this.#serving.add(frame.i);
      this.#flow();
    }
    this.#deliver?.(message);
  }

  /** Stops reading while the host serves too many requests or the carrier leaves replies unread;
   * what the carrier writes meanwhile waits in its own process. */
  #flow(): void {
    const stop = this.#serving.size >= MAX_REQUESTS_IN_FLIGHT || this.#control.writableLength > this.#maxQueued;
    if (stop === this.#paused || this.#channelClosed) return;
    this.#paused = stop;
    if (stop) this.#control.pause();
    else this.#control.resume();
  }

  #fail(message: string, betweenRuns = false): void {
    if (this.#channelClosed) return;
    this.#emit({ type: 'protocol', message, betweenRuns });
    this.close();
  }
}

/**
 * bubblewrap exits with 128 + n when the sandboxed process died of signal n (as a shell reports
 * it). Decoded so a result says SIGKILL, as it does under the other backends; a program that
 * itself exits with such a code is reported the same way, which is the convention's known cost.
 */
function decodeSignal(code: number | null, signal: NodeJS.Signals | null): { code: number | null; signal: NodeJS.Signals | null } {
  if (signal !== null || code === null || code <= 128) return { code, signal };
  const name = Object.entries(constants.signals).find(([, number]) => number === code - 128)?.[0] as NodeJS.Signals | undefined;
  return name === undefined ? { code, signal } : { code: null, signal: name };
}

function encodeError(value: object): string | undefined {
  if (!(value instanceof Error)) return undefined;
  const { code } = value as { code?: unknown };
  return encodeJson({ name: value.name, message: value.message, ...(typeof code === 'string' ? { code } : {}) }, 'error');
}
