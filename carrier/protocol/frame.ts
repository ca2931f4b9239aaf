// Carrier frames after the handshake, one per line:
//
//   <mac> <envelope JSON>[\x1e<payload JSON>]\n
//
// The program runs in the carrier process and can write to the control fd, so the host accepts
// only frames the carrier's own code signed. The carrier draws a key at start-up, before any
// program exists, and announces it in its handshake (the first line, written before a program can
// run). Each frame carries HMAC-SHA256(key, "<seq> " + rest), cut to 128 bits, where seq counts the
// frames since the handshake: bytes a program writes, replays of frames it intercepted, and frames
// it suppressed all break the chain. The key reaches crypto only once, to prime two hash states
// that are copied per frame, so a program that patches crypto's classes never sees it.
//
// The JSON text of a value (a binding call's arguments, a binding result, a completion value)
// travels unescaped after the separator, rather than as an escaped string inside the envelope:
// its bytes on the wire are its JSON text, which is what maxMessageBytes counts.
import { createHash, randomBytes, type Hash } from 'node:crypto';

/** Bytes a frame may carry beyond maxMessageBytes: its MAC, method, call id and envelope fields. */
export const FRAME_ENVELOPE_BYTES = 64 * 1024;
/** Hex characters of a frame's MAC. */
export const MAC_LENGTH = 32;
/** Separates the envelope from the payload; JSON text never contains a raw U+001E. */
export const PAYLOAD_SEPARATOR = '\u001e';

// Captured at load: the carrier signs with these after the program has had the chance to patch them.
const hash = createHash;
const { copy: hashCopy, update: hashUpdate, digest: hashDigest } = Object.getPrototypeOf(createHash('sha256')) as Hash;
const { apply } = Reflect;
const bufferFrom = Buffer.from;
const bufferToString = Buffer.prototype.toString;
const stringSlice = String.prototype.slice;
const random = randomBytes;

/** A fresh 256-bit channel key, as hex. */
export function newChannelKey(): string {
  return apply(bufferToString, random(32), ['hex']) as string;
}

/** One frame's MAC, computed piece by piece as its bytes arrive. */
export interface FrameHash {
  update(piece: string | Uint8Array): void;
  /** The MAC's hex digits. */
  end(): string;
}

export interface FrameMac {
  /** The MAC of a whole frame: "<seq> " followed by the pieces. */
  sign(seq: number, pieces: Array<string | Uint8Array>): string;
  /** Starts the MAC of frame `seq`, for bytes that arrive in pieces. */
  begin(seq: number): FrameHash;
}

/** Computes frame MACs for one key (64 hex digits). */
export function createFrameMac(keyHex: string): FrameMac {
  const key = bufferFrom(keyHex, 'hex');
  const pad = (byte: number): Uint8Array => {
    const block = new Uint8Array(64);
    for (let index = 0; index < 64; index++) block[index] = (key[index] ?? 0) ^ byte;
    return block;
  };
  // HMAC (RFC 2104) with the padded keys hashed once: the per-frame work copies these states.
  const inner = apply(hashUpdate, hash('sha256'), [pad(0x36)]) as Hash;
  const outer = apply(hashUpdate, hash('sha256'), [pad(0x5c)]) as Hash;
  const begin = (seq: number): FrameHash => {
    const state = apply(hashCopy, inner, []) as Hash;
    apply(hashUpdate, state, [`${seq} `]);
    return {
      update: (piece) => void apply(hashUpdate, state, [piece]),
      end: () => {
        const final = apply(hashCopy, outer, []) as Hash;
        apply(hashUpdate, final, [apply(hashDigest, state, [])]);
        return apply(stringSlice, apply(hashDigest, final, ['hex']), [0, MAC_LENGTH]) as string;
      },
    };
  };
  return {
    begin,
    sign: (seq, pieces) => {
      const frame = begin(seq);
      for (let index = 0; index < pieces.length; index++) frame.update(pieces[index]!);
      return frame.end();
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
