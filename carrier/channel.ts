// The carrier's end of the control channel: one socket on fd 3, newline-delimited lossless JSON,
// birpc for requests and replies. Frames are encoded with intrinsics captured before the program
// runs (protocol/json.ts), and writes go to the socket captured here, so a program that replaces
// `JSON` or `process.stdout.write` cannot reach or corrupt the frames the host reads.
import { Socket } from 'node:net';
import { types } from 'node:util';
import { createBirpc } from 'birpc';
import { decodeJson, encodeJson } from './protocol/json.ts';
import { createLineReader } from './protocol/framing.ts';
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

export interface Channel {
  host: HostLink;
}

/** Adopts the inherited control socket, sends the handshake and starts RPC. */
export function openChannel(methods: CarrierMethods, capabilities: string[]): Channel {
  const socket = new Socket({ fd: CONTROL_FD, readable: true, writable: true });
  const write = socket.write.bind(socket);
  const isProxy = types.isProxy;

  const hello: Handshake = { t: 'hello', revision: PROTOCOL_REVISION, node: process.version, capabilities };
  write(`${encodeJson(hello, 'handshake')}\n`);

  let deliver: ((line: string) => void) | undefined;
  const reader = createLineReader({
    maxLineBytes: MAX_INCOMING_FRAME,
    onLine: (line) => deliver?.(line),
    onOverflow: () => process.exit(70),
  });
  socket.on('data', (chunk: Buffer) => reader.push(chunk));
  // The host closing the channel means this carrier is done, whatever the program left running.
  socket.on('end', () => process.exit(0));
  socket.on('error', () => process.exit(71));

  const rpc = createBirpc<HostMethods, CarrierMethods>(methods, {
    post: (frame: string) => void write(`${frame}\n`),
    on: (handler) => {
      deliver = handler;
    },
    serialize: (message: unknown) => encodeJson(message, 'message', { replaceObject: encodeErrorLike, isProxy, skipUndefinedMembers: true }),
    deserialize: (line: string) => decodeJson(line),
    eventNames: ['output'],
    timeout: -1,
  });
  const callEvent = rpc.$callEvent as (method: string, ...args: unknown[]) => Promise<void>;
  const call = rpc.$call as (method: string, ...args: unknown[]) => Promise<unknown>;
  const host: HostLink = {
    output: (entry) => void callEvent('output', entry),
    initialized: () => call('initialized') as ReturnType<HostLink['initialized']>,
    invoke: (name, args) => call('invoke', name, args) as ReturnType<HostLink['invoke']>,
    registerImage: (path, identity) => call('registerImage', path, identity) as ReturnType<HostLink['registerImage']>,
  };
  return { host };
}

function encodeErrorLike(value: object): string | undefined {
  if (!types.isNativeError(value)) return undefined;
  const error = value as Error & { code?: unknown };
  return encodeJson(
    { name: String(error.name), message: String(error.message), ...(typeof error.code === 'string' ? { code: error.code } : {}) },
    'error',
  );
}
