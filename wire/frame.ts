// Carrier frames after the handshake, one per line:
//
//   <mac> <envelope JSON>[\x1e<payload JSON>]\n
//
// The program runs in the carrier process and can write to the control fd, so the host accepts
// only frames the carrier's own code signed. The carrier draws a key at start-up, before any
// program exists, and announces it in its handshake (the first line, written before a program can
// run). Each frame carries SHA-256(key, "<seq> ", rest) cut to 128 bits, where seq counts the
// frames since the handshake: bytes a program writes, replays of frames it intercepted, and frames
// it suppressed all break the chain. The key is exactly one SHA-256 block (64 hex digits), and the
// cut hides the other 128 bits of state, which is what keeps length extension out (as it does for
// SHA-512/256); one hash per frame costs a fifth of HMAC's two. The key reaches crypto's
// JavaScript layer only once, to prime a hash state that is copied per frame; small frames are
// hashed in one native call, so a program that patches crypto's classes never sees the key.
//
// The JSON text of a value (a binding call's arguments, a binding result, a completion value)
// travels unescaped after the separator, rather than as an escaped string inside the envelope:
// its bytes on the wire are its JSON text, which is what maxMessageBytes counts.
import { createHash, hash as hashOnce, randomBytes, type Hash } from 'node:crypto';

/** Bytes a frame may carry beyond maxMessageBytes: its MAC, method, call id and envelope fields. */
export const FRAME_ENVELOPE_BYTES = 64 * 1024;
/** Hex characters of a frame's MAC. */
export const MAC_LENGTH = 32;
/** Frames up to this many characters are hashed in one call rather than through a copied state. */
const ONE_CALL_CHARACTERS = 64 * 1024;
/** Separates the envelope from the payload; JSON text never contains a raw U+001E. */
export const PAYLOAD_SEPARATOR = '\u001e';

// Captured at load: the carrier signs with these after the program has had the chance to patch them.
const uncurry = <T extends (...args: any[]) => any>(method: T) =>
  Function.prototype.call.bind(method) as unknown as (self: unknown, ...args: Parameters<T>) => ReturnType<T>;
const hash = createHash;
const digestOnce = hashOnce;
const hashPrototype = Object.getPrototypeOf(createHash('sha256')) as Hash;
const hashCopy = uncurry(hashPrototype.copy) as (self: Hash) => Hash;
const hashUpdate = uncurry(hashPrototype.update) as (self: Hash, data: string | Uint8Array) => Hash;
const hashDigest = uncurry(hashPrototype.digest) as { (self: Hash): Buffer; (self: Hash, encoding: 'hex'): string };
const bufferToString = uncurry(Buffer.prototype.toString) as (self: Buffer, encoding: 'hex') => string;
const stringSlice = uncurry(String.prototype.slice);
const random = randomBytes;
const quote = JSON.stringify as (text: string) => string;
const { isArray } = Array;
const { hasOwn, keys: objectKeys } = Object;

/** A fresh 256-bit channel key, as hex. */
export function newChannelKey(): string {
  return bufferToString(random(32), 'hex');
}

/** One frame's MAC, computed piece by piece as its bytes arrive. */
export interface FrameHash {
  update(piece: Uint8Array): void;
  /** The MAC's hex digits. */
  end(): string;
}

export interface FrameMac {
  /** The MAC of frame `seq`, whose text after the MAC is `text`. */
  sign(seq: number, text: string): string;
  /** Starts the MAC of frame `seq`, for bytes that arrive in pieces. */
  begin(seq: number): FrameHash;
}

/** Computes frame MACs for one key (64 hex digits). */
export function createFrameMac(key: string): FrameMac {
  const keyed = hashUpdate(hash('sha256'), key);
  const cut = (digest: string): string => stringSlice(digest, 0, MAC_LENGTH);
  return {
    sign: (seq, text) => {
      if (text.length <= ONE_CALL_CHARACTERS) return cut(digestOnce('sha256', `${key}${seq} ${text}`, 'hex'));
      return cut(hashDigest(hashUpdate(hashUpdate(hashCopy(keyed), `${seq} `), text), 'hex'));
    },
    begin: (seq) => {
      const state = hashUpdate(hashCopy(keyed), `${seq} `);
      return { update: (piece) => void hashUpdate(state, piece), end: () => cut(hashDigest(state, 'hex')) };
    },
  };
}

type Message = Record<string, unknown>;

/**
 * Takes the JSON text a message carries out of it: a request's second argument for `invoke`, a
 * reply's `value`. Returns the message to encode as the envelope, and the payload.
 */
export function splitPayload(message: Message): { envelope: Message; payload?: string } {
  if (message.t === 'q' && message.m === 'invoke') {
    const args = message.a as unknown[];
    if (typeof args[1] === 'string') return { envelope: { ...message, a: [args[0]] }, payload: args[1] };
  }
  if (message.t === 's' && typeof message.r === 'object' && message.r !== null) {
    const { value, ...rest } = message.r as Message;
    if (typeof value === 'string') return { envelope: { ...message, r: rest }, payload: value };
  }
  return { envelope: message };
}

/**
 * The frame text (envelope, and payload after the separator) of the two frames every awaited
 * binding call makes: the carrier's `invoke` request and the host's reply to it without images.
 * Their envelopes have a fixed shape, so they are written from quoted strings rather than by the
 * general encoder; the text is the same as splitPayload and encodeJson make of them. Undefined for
 * any other message. Reads own data only, so a program's Object.prototype getters go unseen.
 */
export function quickFrame(message: Message): string | undefined {
  const id = hasOwn(message, 'i') ? message.i : undefined;
  if (typeof id !== 'string') return undefined;
  if (message.t === 'q') {
    if (message.m !== 'invoke' || !isArray(message.a)) return undefined;
    const args = message.a as unknown[];
    const name = args[0];
    const payload = args[1];
    if (args.length !== 2 || typeof name !== 'string' || typeof payload !== 'string' || objectKeys(message).length !== 4) return undefined;
    return `{"t":"q","i":${quote(id)},"m":"invoke","a":[${quote(name)}]}${PAYLOAD_SEPARATOR}${payload}`;
  }
  if (message.t !== 's' || objectKeys(message).length !== 3 || !hasOwn(message, 'r')) return undefined;
  const result = message.r as Message;
  if (typeof result !== 'object' || result === null || !hasOwn(result, 'images')) return undefined;
  const images = result.images;
  if (!isArray(images) || images.length !== 0) return undefined;
  const head = `{"t":"s","i":${quote(id)},"r":{"images":[]}}`;
  const members = objectKeys(result).length;
  if (members === 1) return head;
  const value = hasOwn(result, 'value') ? result.value : undefined;
  return members === 2 && typeof value === 'string' ? `${head}${PAYLOAD_SEPARATOR}${value}` : undefined;
}

/** Puts a payload back where splitPayload took it from; returns a problem when it has no place there. */
export function joinPayload(envelope: unknown, payload: string): { message: Message } | { problem: string } {
  if (typeof envelope !== 'object' || envelope === null || Array.isArray(envelope)) return { problem: 'a payload follows an envelope that is not an object' };
  const message = envelope as Message;
  if (message.t === 'q' && message.m === 'invoke' && Array.isArray(message.a) && message.a.length === 1) {
    return { message: { ...message, a: [message.a[0], payload] } };
  }
  if (message.t === 's' && typeof message.r === 'object' && message.r !== null && !Array.isArray(message.r) && !('value' in message.r)) {
    return { message: { ...message, r: { ...(message.r as Message), value: payload } } };
  }
  return { problem: `a payload follows a message that carries none (${describe(message)})` };
}

function describe(message: Message): string {
  return message.t === 'q' ? `request ${JSON.stringify(message.m)}` : `frame type ${JSON.stringify(message.t)}`;
}
