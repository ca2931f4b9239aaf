// The carrier's end of the control channel: one socket on fd 3, rpc.ts for requests and replies.
// Frames are encoded with intrinsics captured before the program runs (protocol/json.ts), signed
// with a key the program never sees (protocol/frame.ts), and written to the socket captured here,
// so a program that replaces `JSON` or `process.stdout.write`, or writes to fd 3 itself, cannot
// put a frame in front of the host that the host accepts.
import { Socket } from 'node:net';
import { types } from 'node:util';
import { encodeJson } from '../../wire/json.ts';
import { createBlockingWriter } from './blocking-write.ts';
import { createLineReader } from '../../wire/framing.ts';
import { createFrameMac, newChannelKey, PAYLOAD_SEPARATOR, quickFrame, splitPayload } from '../../wire/frame.ts';
import { cutToEscapedBytes, escapedBytes } from '../../wire/limits.ts';
import { CONTROL_FD, PROTOCOL_REVISION } from '../../wire/revision.ts';
import type { CarrierMethods, Handshake, HostMethods, RunRequest } from '../../wire/messages.ts';
import { createRpc } from './rpc.ts';
import { createStallWatch, type StallWatch } from './stall.ts';
import { append, apply, byteLength, defineProperty, ErrorCtor, ownKeys, StringCtor } from '../hardening/intrinsics.ts';

/** The host's methods the carrier calls. */
export interface HostLink {
  output: HostMethods['output'];
  initialized: HostMethods['initialized'];
  invoke: HostMethods['invoke'];
  registerImage: HostMethods['registerImage'];
  started: HostMethods['started'];
  yieldControl: HostMethods['yieldControl'];
}

/** Limit for one frame from the host: a backstop against a broken host, whose frames carry the
 * program and binding results; the host enforces maxMessageBytes on what the carrier sends. */
const MAX_INCOMING_FRAME = 256 * 1024 * 1024;

const nativeParse = JSON.parse as (text: string) => unknown;
const bufferIndexOf = Buffer.prototype.indexOf;
const subarray = Uint8Array.prototype.subarray as (this: Uint8Array, start?: number, end?: number) => Uint8Array;
const textDecoder = new TextDecoder();
const textDecode = TextDecoder.prototype.decode;
const decode = (bytes: Uint8Array): string => apply(textDecode, textDecoder, [bytes]) as string;
const mathMax = Math.max;
const isNativeError = types.isNativeError;
// Captured at load: a program may replace Atomics.wait or process.reallyExit in its realm.
const atomicsWait = Atomics.wait;
const exitNow: (code: number) => never = (process as unknown as { reallyExit: (code: number) => never }).reallyExit;
/**
 * How long a per-call carrier that has sent its result waits for the host's kill before it exits
 * by itself: past this the host is gone or stuck, and the carrier must not outlive it.
 */
const HALT_MS = 60_000;

/**
 * Stops this thread for good once a per-call run's reply is written: no timer, I/O callback or
 * microtask of the program runs after the result it sent, and the host's kill finds the carrier's
 * tree intact (every child still linked to it, so the walk of /proc reaches them). The host kills
 * the process after it has delivered the result (host/worker/carrier.ts); a host that never does
 * is gone, and the carrier then exits rather than wait on.
 */
function halt(): never {
  atomicsWait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, HALT_MS);
  exitNow(0);
}

export interface Channel {
  host: HostLink;
  /** Notices a run that nothing can settle any more (stall.ts). */
  stalls: StallWatch;
  /** Whether any frame from the host has arrived. */
  requested(): boolean;
  /** Encodes and signs the reply a run with this outcome would send, and sends nothing (carrier.ts' rehearsal). */
  rehearse(outcome: unknown): void;
}

/** Adopts the inherited control socket, sends the handshake and starts RPC. */
export function openChannel(methods: CarrierMethods, capabilities: string[]): Channel {
  // The socket only reads: frames go out through a writer that finishes each one (blocking-write.ts).
  const socket = new Socket({ fd: CONTROL_FD, readable: true, writable: false });
  const write = createBlockingWriter(CONTROL_FD, () => process.exit(71));
  const isProxy = types.isProxy;
  const key = newChannelKey();
  const mac = createFrameMac(key);
  let seq = 0;
  // The run in progress says how large one control message may be; nothing big is sent before it.
  let maxMessageBytes = Infinity;
  // Whether the run in progress is a per-call one: its reply is the last thing this carrier does.
  let lastRun = false;

  const hello: Handshake = { t: 'hello', revision: PROTOCOL_REVISION, node: process.version, capabilities, key };
  write(`${encodeJson(hello, 'handshake')}\n`);

  let deliver: ((line: Uint8Array) => void) | undefined;
  const reader = createLineReader({
    maxLineBytes: MAX_INCOMING_FRAME,
    onLine: (line) => deliver?.(line),
    onOverflow: () => process.exit(70),
  });
  socket.on('data', (chunk: Buffer) => reader.push(chunk));
  // The host closing the channel means this carrier is done, whatever the program left running.
  socket.on('end', () => process.exit(0));
  socket.on('error', () => process.exit(71));

  const encode = (message: unknown): string => encodeJson(message, 'message', { replaceObject: encodeErrorLike, isProxy, skipUndefinedMembers: true });
  const serialize = (message: Record<string, unknown>): string => {
    // Within the limit as a whole, both parts are; otherwise the general path says which is not.
    const quick = quickFrame(message);
    if (quick !== undefined && byteLength(quick) <= maxMessageBytes) return quick;
    const { envelope, payload } = splitPayload(message);
    let text = encode(envelope);
    if (byteLength(text) > maxMessageBytes) {
      // A reply must reach the host, so its reports are cut to fit; a request fails in the program.
      if (envelope.t !== 's') throw oversized(`${StringCtor(envelope.m)}: the request (${byteLength(text)} bytes)`, maxMessageBytes);
      text = encode(fitReply(envelope, byteLength(text) - maxMessageBytes));
    }
    if (payload === undefined) return text;
    if (byteLength(payload) > maxMessageBytes) throw oversized(`the JSON text (${byteLength(payload)} bytes)`, maxMessageBytes);
    return `${text}${PAYLOAD_SEPARATOR}${payload}`;
  };
  const rpc = createRpc(
    {
      __proto__: null,
      run: (request: RunRequest) => {
        maxMessageBytes = request.maxMessageBytes;
        lastRun = request.retain !== true;
        return methods.run(request);
      },
      revoke: methods.revoke,
      complete: methods.complete,
    } as unknown as Record<string, (...args: never[]) => unknown>,
    (message) => {
      const body = serialize(message);
      write(`${mac.sign(seq++, body)} ${body}\n`);
      // The carrier replies to `run` and, between a retained carrier's runs, `complete` (`revoke` is
      // one-way), so a per-call carrier's reply is its run's.
      if (message.t === 's' && lastRun) halt();
    },
  );
  const stalls = createStallWatch(socket, () => rpc.inFlight());
  let requested = false;
  deliver = (line) => {
    requested = true;
    rpc.receive(decodeHostFrame(line));
    stalls.update();
  };
  const call = (method: string, args: unknown[]): Promise<unknown> => {
    const reply = rpc.call(method, args);
    stalls.update();
    return reply;
  };
  const host: HostLink = {
    __proto__: null,
    output: (entry) => rpc.notify('output', [entry]),
    started: () => rpc.notify('started', []),
    yieldControl: () => rpc.notify('yieldControl', []),
    initialized: () => call('initialized', []) as ReturnType<HostLink['initialized']>,
    invoke: (name, args) => call('invoke', [name, args]) as ReturnType<HostLink['invoke']>,
    registerImage: (path, identity, pixels) => call('registerImage', [path, identity, pixels]) as ReturnType<HostLink['registerImage']>,
  } as HostLink;
  const rehearse = (outcome: unknown): void => {
    decodeHostFrame(new TextEncoder().encode(REHEARSED_REQUEST));
    const body = serialize({ __proto__: null, t: 's', i: '0', r: outcome } as Record<string, unknown>);
    mac.sign(seq, body);
  };
  return { host, stalls, requested: () => requested, rehearse };
}

/** A run request's frame as the host writes one, for the rehearsal's decoding. */
const REHEARSED_REQUEST = '{"t":"q","i":"0","m":"run","a":[{"format":"async-function","retain":false,"program":"return 1","filename":"[rehearsal]"}]}';

/** A host frame: the envelope, and the JSON text of a binding result after the separator. */
function decodeHostFrame(line: Uint8Array): unknown {
  const separator = apply(bufferIndexOf, line, [0x1e]) as number;
  if (separator === -1) return nativeParse(decode(line));
  const envelope = nativeParse(decode(apply(subarray, line, [0, separator]) as Uint8Array)) as { r?: Record<string, unknown> };
  return { ...envelope, r: { ...envelope.r, value: decode(apply(subarray, line, [separator + 1]) as Uint8Array) } };
}

function oversized(what: string, limit: number): Error {
  const error = new ErrorCtor(`${what} is larger than one control message (maxMessageBytes ${limit})`);
  defineProperty(error, 'code', { __proto__: null, value: 'PTC_MESSAGE_LIMIT', writable: true, enumerable: true, configurable: true } as PropertyDescriptor);
  return error;
}

/**
 * Cuts the strings of a reply (an exception's message and stack, an invalid-output path), longest
 * first, until `excess` bytes are gone: the host trims the diagnostic to its budget anyway, and an
 * uncut one would be a frame it refuses.
 */
function fitReply(envelope: Record<string, unknown>, excess: number): Record<string, unknown> {
  if (typeof envelope.r !== 'object' || envelope.r === null) return envelope;
  const reply: Record<string, unknown> = { ...(envelope.r as Record<string, unknown>) };
  const holders: Array<Record<string, unknown>> = [reply];
  if (typeof reply.error === 'object' && reply.error !== null) {
    const error = { ...(reply.error as Record<string, unknown>) };
    reply.error = error;
    append(holders, error);
  }
  let remaining = excess;
  while (remaining > 0) {
    let longest: { holder: Record<string, unknown>; key: string; bytes: number } | undefined;
    // Index loops: a program may have replaced Array.prototype[Symbol.iterator].
    for (let h = 0; h < holders.length; h++) {
      const holder = holders[h]!;
      const keys = ownKeys(holder);
      for (let k = 0; k < keys.length; k++) {
        const key = keys[k]!;
        if (typeof key !== 'string') continue;
        const value = holder[key];
        if (typeof value !== 'string') continue;
        const bytes = escapedBytes(value);
        if (longest === undefined || bytes > longest.bytes) longest = { holder, key, bytes };
      }
    }
    if (longest === undefined || longest.bytes <= 2) break;
    const cut = cutToEscapedBytes(longest.holder[longest.key] as string, mathMax(2, longest.bytes - remaining));
    remaining -= longest.bytes - escapedBytes(cut);
    longest.holder[longest.key] = cut;
  }
  return { ...envelope, r: reply };
}

function encodeErrorLike(value: object): string | undefined {
  if (!isNativeError(value)) return undefined;
  const error = value as Error & { code?: unknown };
  return encodeJson(
    { name: StringCtor(error.name), message: StringCtor(error.message), ...(typeof error.code === 'string' ? { code: error.code } : {}) },
    'error',
  );
}
