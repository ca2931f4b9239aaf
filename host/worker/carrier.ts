// One carrier: versioned handshake, validated control traffic, and termination of everything it
// started, over whichever transport reaches it (transports/). The carrier is an untrusted peer:
// every frame is size-checked, parsed and shape-checked here before anything acts on it.
import type { Duplex } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { createBirpc, type BirpcReturn } from 'birpc';
import { createLineReader } from '../../carrier/protocol/framing.ts';
import { decodeJson, encodeJson } from '../../carrier/protocol/json.ts';
import { PROTOCOL_REVISION } from '../../carrier/protocol/revision.ts';
import type { CarrierMethods, Handshake, HostMethods, OutputMessage, RunOutcome, RunRequest } from '../../carrier/protocol/messages.ts';
import { checkFrame, checkHandshake, checkRunOutcome } from './validate.ts';
import type { CarrierConnection } from './transports/connection.ts';

/** Bytes of carrier stderr kept for worker-exit diagnostics. */
const STDERR_TAIL_BYTES = 8 * 1024;
/** How long a closed control channel waits for the carrier's exit status, the better diagnostic. */
const CONTROL_LOSS_GRACE_MS = 500;

export interface CarrierEvents {
  /** The carrier broke the protocol; the process should be torn down. */
  onProtocolError(message: string): void;
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
}

/** What happened to a carrier before anyone listened: replayed by attach(). */
type EarlyEvent =
  | { type: 'exit'; code: number | null; signal: NodeJS.Signals | null }
  | { type: 'spawn-error'; message: string }
  | { type: 'protocol'; message: string }
  | { type: 'control-lost' };

/** A running carrier and its control channel. */
export class Carrier {
  readonly connection: CarrierConnection;
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
  #closed = false;
  #exited = false;
  #stderrTail = '';
  readonly #settled: Promise<void>;

  constructor({ connection, maxMessageBytes, events, cleanup, cleanupSync }: CarrierOptions) {
    this.connection = connection;
    this.#events = events;
    this.#cleanup = cleanup;
    this.#cleanupSync = cleanupSync;
    this.#ready = new Promise((resolve, reject) => {
      this.#handshake = { resolve, reject };
    });
    this.#ready.catch(() => {});
    this.#control = connection.control;
    this.#settled = connection.settled;
    connection.onStartFailure((message) => {
      this.#exited = true;
      this.#handshake?.reject(new Error(message));
      this.#emit({ type: 'spawn-error', message });
    });
    connection.onExit((code, signal) => {
      this.#exited = true;
      this.#handshake?.reject(new Error('the carrier exited before its handshake'));
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
    const reader = createLineReader({
      maxLineBytes: maxMessageBytes,
      onLine: (line) => this.#receive(line),
      onOverflow: () => this.#fail(`a control message was longer than maxMessageBytes (${maxMessageBytes} bytes)`),
    });
    this.#control.on('data', (chunk: Buffer) => reader.push(chunk));
    this.#control.on('error', () => {});
    this.#control.on('close', () => {
      if (this.#closed || this.#exited) return;
      const timer = setTimeout(() => {
        if (!this.#closed && !this.#exited) this.#emit({ type: 'control-lost' });
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

  /** True once the process has exited or could not start. */
  get exited(): boolean {
    return this.#exited;
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
    else events.onProtocolError(event.message);
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
        if (!this.#closed && this.#control.writable) this.#control.write(`${frame}\n`);
      },
      on: (deliver) => {
        this.#deliver = deliver as (message: unknown) => void;
      },
      serialize: (message: unknown) => encodeJson(message, 'message', { replaceObject: encodeError, skipUndefinedMembers: true }),
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

  /** Asks the carrier to stop its active run cooperatively (a one-way notification). */
  revoke(): void {
    if (this.#rpc !== undefined && !this.#closed) void this.#rpc.$callEvent('revoke').catch(() => {});
  }

  /** Stops all traffic: later frames and replies are ignored, pending calls reject. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#rpc?.$close(new Error('carrier channel closed'));
    this.#control.destroy();
  }

  /** Kills the carrier's process group and waits (up to graceMs) for the process and its pipes to close. */
  async terminate(graceMs: number): Promise<void> {
    // Kill before closing the channel: a closed channel makes the carrier exit by itself, and its
    // children would be orphaned (out of reach of the tree walk) before the kill could find them.
    this.connection.kill();
    this.close();
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
      if (!this.#exited) await this.#settled;
    }
    await this.#cleanup?.().catch(() => {});
  }

  #receive(line: string): void {
    if (this.#closed) return;
    let message: unknown;
    try {
      message = decodeJson(line);
    } catch (error) {
      this.#fail(`unparsable control message: ${(error as Error).message}`);
      return;
    }
    if (this.#handshake !== undefined) {
      const pending = this.#handshake;
      this.#handshake = undefined;
      const problem = checkHandshake(message, PROTOCOL_REVISION);
      if (problem !== undefined) {
        this.#fail(problem);
        pending.reject(new Error(problem));
      } else {
        pending.resolve(message as Handshake);
      }
      return;
    }
    const problem = checkFrame(message);
    if (problem !== undefined) {
      this.#fail(`invalid control message: ${problem}`);
      return;
    }
    const frame = message as { t: string; m?: string; a?: unknown[]; i?: string };
    // Raw bytes a child process wrote before the carrier sent this frame are already in the stdio
    // pipes; take them first so they keep their place before the carrier's own output and reply.
    if (frame.t !== 'q' || frame.m !== 'invoke') this.connection.drainStdio((chunk, stream) => this.#accept[stream](chunk));
    // Output is one-way and hot: handle it synchronously so it stays ordered before the reply.
    if (frame.t === 'q' && frame.m === 'output' && frame.i === undefined) {
      this.#handlers?.output(frame.a![0] as OutputMessage);
      return;
    }
    if (frame.t === 'q' && frame.i === undefined) {
      this.#fail(`invalid control message: "${frame.m}" must be a request`);
      return;
    }
    this.#deliver?.(message);
  }

  #fail(message: string): void {
    if (this.#closed) return;
    this.#emit({ type: 'protocol', message });
    this.close();
  }
}

function encodeError(value: object): string | undefined {
  if (!(value instanceof Error)) return undefined;
  const { code } = value as { code?: unknown };
  return encodeJson({ name: value.name, message: value.message, ...(typeof code === 'string' ? { code } : {}) }, 'error');
}
