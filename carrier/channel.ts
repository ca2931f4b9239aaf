// The carrier's end of the control channel: one socket on fd 3, birpc for requests and replies.
// Frames are encoded with intrinsics captured before the program runs (protocol/json.ts), signed
// with a key the program never sees (protocol/frame.ts), and written to the socket captured here,
// so a program that replaces `JSON` or `process.stdout.write`, or writes to fd 3 itself, cannot
// put a frame in front of the host that the host accepts.
import { Socket } from 'node:net';
import { types } from 'node:util';
import { createBirpc } from 'birpc';
import { encodeJson } from './protocol/json.ts';
import { createLineReader } from './protocol/framing.ts';
import { createFrameMac, newChannelKey, PAYLOAD_SEPARATOR, splitPayload } from './protocol/frame.ts';
import { cutToEscapedBytes, escapedBytes } from './protocol/limits.ts';
import { CONTROL_FD, PROTOCOL_REVISION } from './protocol/revision.ts';
import type { CarrierMethods, Handshake, HostMethods } from './protocol/messages.ts';

/** The host's methods, bound once at start-up: birpc's proxy looks up globals such as `Object` on
 * every property access, and a program may have replaced them by the time it prints. */
export interface HostLink {
  output: HostMethods['output'];
  initialized: HostMethods['initialized'];
  invoke: HostMethods['invoke'];
  registerImage: HostMethods['registerImage'];
}

/** Limit for one frame from the host: a backstop against a broken host, whose frames carry the
 * program and binding results; the host enforces maxMessageBytes on what the carrier sends. */
const MAX_INCOMING_FRAME = 256 * 1024 * 1024;

const byteLength = Buffer.byteLength;
const nativeParse = JSON.parse as (text: string) => unknown;
const { apply } = Reflect;
const bufferIndexOf = Buffer.prototype.indexOf;
const textDecoder = new TextDecoder();
const decode = (bytes: Uint8Array): string => textDecoder.decode(bytes);
const ErrorCtor = Error;
const keysOf = Object.keys;

export interface Channel {
  host: HostLink;
}

/** Adopts the inherited control socket, sends the handshake and starts RPC. */
export function openChannel(methods: CarrierMethods, capabilities: string[]): Channel {
  const socket = new Socket({ fd: CONTROL_FD, readable: true, writable: true });
  const write = socket.write.bind(socket);
  const isProxy = types.isProxy;
  const key = newChannelKey();
  const mac = createFrameMac(key);
  let seq = 0;
  // The run in progress says how large one control message may be; nothing big is sent before it.
  let maxMessageBytes = Infinity;

  const hello: Handshake = { t: 'hello', revision: PROTOCOL_REVISION, node: process.version, capabilities, key };
  write(`${encodeJson(hello, 'handshake')}\n`);

  let deliver: ((message: unknown) => void) | undefined;
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
  const rpc = createBirpc<HostMethods, CarrierMethods>(
    {
      run: (request) => {
        maxMessageBytes = request.maxMessageBytes;
        return methods.run(request);
      },
      revoke: methods.revoke,
    },
    {
      post: (body: string) => void write(`${mac.sign(seq++, body)} ${body}\n`),
      on: (handler) => {
        deliver = handler;
      },
      serialize: (message: Record<string, unknown>) => {
        const { envelope, payload } = splitPayload(message);
        let text = encode(envelope);
        if (byteLength(text) > maxMessageBytes) {
          // A reply must reach the host, so its reports are cut to fit; a request fails in the program.
          if (envelope.t !== 's') throw oversized(`${String(envelope.m)}: the request (${byteLength(text)} bytes)`, maxMessageBytes);
          text = encode(fitReply(envelope, byteLength(text) - maxMessageBytes));
        }
        if (payload === undefined) return text;
        if (byteLength(payload) > maxMessageBytes) throw oversized(`the JSON text (${byteLength(payload)} bytes)`, maxMessageBytes);
        return `${text}${PAYLOAD_SEPARATOR}${payload}`;
      },
      deserialize: (line: Uint8Array) => decodeHostFrame(line),
      eventNames: ['output'],
      timeout: -1,
    },
  );
  const callEvent = rpc.$callEvent as (method: string, ...args: unknown[]) => Promise<void>;
  const call = rpc.$call as (method: string, ...args: unknown[]) => Promise<unknown>;
  const host: HostLink = {
    output: (entry) => void callEvent('output', entry),
    initialized: () => call('initialized') as ReturnType<HostLink['initialized']>,
    invoke: (name, args) => call('invoke', name, args) as ReturnType<HostLink['invoke']>,
    registerImage: (path, identity, pixels) => call('registerImage', path, identity, pixels) as ReturnType<HostLink['registerImage']>,
  };
  return { host };
}

/** A host frame: the envelope, and the JSON text of a binding result after the separator. */
function decodeHostFrame(line: Uint8Array): unknown {
  const separator = apply(bufferIndexOf, line, [0x1e]) as number;
  if (separator === -1) return nativeParse(decode(line));
  const envelope = nativeParse(decode(line.subarray(0, separator))) as { r?: Record<string, unknown> };
  return { ...envelope, r: { ...envelope.r, value: decode(line.subarray(separator + 1)) } };
}

function oversized(what: string, limit: number): Error {
  return Object.assign(new ErrorCtor(`${what} is larger than one control message (maxMessageBytes ${limit})`), { code: 'PTC_MESSAGE_LIMIT' });
}

/**
 * Cuts the strings of a reply (an exception's message and stack, an invalid-output path), longest
 * first, until `excess` bytes are gone: the host trims the diagnostic to its budget anyway, and an
 * uncut one would be a frame it refuses.
 */
function fitReply(envelope: Record<string, unknown>, excess: number): Record<string, unknown> {
  if (typeof envelope.r !== 'object' || envelope.r === null) return envelope;
  const reply: Record<string, unknown> = { ...(envelope.r as Record<string, unknown>) };
  const holders = [reply];
  if (typeof reply.error === 'object' && reply.error !== null) {
    const error = { ...(reply.error as Record<string, unknown>) };
    reply.error = error;
    holders[1] = error;
  }
  let remaining = excess;
  while (remaining > 0) {
    let longest: { holder: Record<string, unknown>; key: string; bytes: number } | undefined;
    // Index loops: a program may have replaced Array.prototype[Symbol.iterator].
    for (let h = 0; h < holders.length; h++) {
      const holder = holders[h]!;
      const keys = keysOf(holder);
      for (let k = 0; k < keys.length; k++) {
        const key = keys[k]!;
        const value = holder[key];
        if (typeof value !== 'string') continue;
        const bytes = escapedBytes(value);
        if (longest === undefined || bytes > longest.bytes) longest = { holder, key, bytes };
      }
    }
    if (longest === undefined || longest.bytes <= 2) break;
    const cut = cutToEscapedBytes(longest.holder[longest.key] as string, Math.max(2, longest.bytes - remaining));
    remaining -= longest.bytes - escapedBytes(cut);
    longest.holder[longest.key] = cut;
  }
  return { ...envelope, r: reply };
}

function encodeErrorLike(value: object): string | undefined {
  if (!types.isNativeError(value)) return undefined;
  const error = value as Error & { code?: unknown };
  return encodeJson(
    { name: String(error.name), message: String(error.message), ...(typeof error.code === 'string' ? { code: error.code } : {}) },
    'error',
  );
}
