// The host's reading side of a carrier's control channel: the handshake line, then frames whose
// authentication code, sequence and size are checked before anything acts on them (the format is
// in wire/frame.ts). Work is done as bytes arrive: each chunk is hashed and decoded
// when it comes, so a frame near maxMessageBytes costs no single long step at its end. Nothing
// here recurses on what the carrier sent, and an envelope of more than a few hundred values is
// refused without being built.
import { timingSafeEqual } from 'node:crypto';
import { TextDecoder } from 'node:util';
import { decodeEnvelope } from '../../wire/decode.ts';
import { createFrameMac, FRAME_ENVELOPE_BYTES, joinPayload, MAC_LENGTH, PAYLOAD_SEPARATOR, type FrameHash, type FrameMac } from '../../wire/frame.ts';
import type { Handshake } from '../../wire/messages.ts';
import { checkHandshake } from './validate.ts';

export interface ControlReaderOptions {
  maxMessageBytes: number;
  revision: number;
  onHandshake(hello: Handshake): void;
  /** A frame that passed authentication and parsed; its shape is still unchecked. */
  onMessage(message: unknown): void;
  /** The first problem; nothing is delivered after it. */
  onProblem(message: string): void;
}

export interface ControlReader {
  push(chunk: Uint8Array): void;
}

/** Values an envelope may hold: the largest, an exception report, has about thirty. */
const MAX_ENVELOPE_VALUES = 1024;
/** Envelopes up to this size hold too few values to matter, whatever they hold. */
const SMALL_ENVELOPE = 16 * 1024;
const NEWLINE = 0x0a;
const SPACE = 0x20;
const SEPARATOR = 0x1e;
const HEAD = MAC_LENGTH + 1;

/** The frame being read: its MAC so far, and its envelope and payload decoded as they arrive. */
interface Frame {
  seq: number;
  bytes: number;
  head: Uint8Array;
  headBytes: number;
  hash: FrameHash;
  envelope: string[];
  envelopeBytes: number;
  payload: string[] | undefined;
  payloadBytes: number;
}

/** JSON.parse for the common small envelope (bounded by its size); the value-counting parser for a large one. */
function parseEnvelope(text: string): unknown {
  return text.length <= SMALL_ENVELOPE ? JSON.parse(text) : decodeEnvelope(text, MAX_ENVELOPE_VALUES);
}

function sameMac(given: Uint8Array, expected: string): boolean {
  return timingSafeEqual(given, Buffer.from(expected, 'latin1'));
}

/** Turns the carrier's control bytes into authenticated messages. */
export function createControlReader(options: ControlReaderOptions): ControlReader {
  const { maxMessageBytes } = options;
  const maxLineBytes = maxMessageBytes + FRAME_ENVELOPE_BYTES;
  let mac: FrameMac | undefined;
  let seq = 0;
  let failed = false;
  let hello: Uint8Array[] = [];
  let helloBytes = 0;
  let frame: Frame | undefined;
  // Streaming decoders, flushed at each line's end, so a character split across chunks survives.
  const envelopeDecoder = new TextDecoder();
  const payloadDecoder = new TextDecoder();
  const decodeWhole = new TextDecoder();

  const fail = (message: string): void => {
    if (failed) return;
    failed = true;
    frame = undefined;
    hello = [];
    options.onProblem(message);
  };
  const overflow = (bytes: number): void =>
    fail(`a control message (${bytes} bytes and more) was longer than maxMessageBytes (${maxMessageBytes} bytes) and its ${FRAME_ENVELOPE_BYTES}-byte envelope`);

  const newFrame = (number = seq++): Frame => ({
    seq: number,
    bytes: 0,
    head: new Uint8Array(HEAD),
    headBytes: 0,
    hash: mac!.begin(number),
    envelope: [],
    envelopeBytes: 0,
    payload: undefined,
    payloadBytes: 0,
  });

  // A piece of the current line, without its newline.
  const feed = (piece: Uint8Array): void => {
    if (mac === undefined) {
      helloBytes += piece.length;
      if (helloBytes > maxLineBytes) return overflow(helloBytes);
      hello.push(piece);
      return;
    }
    const current = (frame ??= newFrame());
    current.bytes += piece.length;
    if (current.bytes > maxLineBytes) return overflow(current.bytes);
    if (current.headBytes < HEAD) {
      const taken = piece.subarray(0, HEAD - current.headBytes);
      current.head.set(taken, current.headBytes);
      current.headBytes += taken.length;
      piece = piece.subarray(taken.length);
      if (piece.length === 0) return;
    }
    current.hash.update(piece);
    if (current.payload === undefined) {
      const separator = piece.indexOf(SEPARATOR);
      const envelope = separator === -1 ? piece : piece.subarray(0, separator);
      current.envelopeBytes += envelope.length;
      // Past the limit the text is no longer kept, only hashed: the line end says which problem it is.
      if (current.envelopeBytes <= maxMessageBytes) current.envelope.push(envelopeDecoder.decode(envelope, { stream: true }));
      if (separator === -1) return;
      current.payload = [];
      piece = piece.subarray(separator + 1);
    }
    current.payloadBytes += piece.length;
    if (current.payloadBytes <= maxMessageBytes) current.payload.push(payloadDecoder.decode(piece, { stream: true }));
  };

  const endHello = (): void => {
    const bytes = Buffer.concat(hello, helloBytes);
    hello = [];
    let parsed: unknown;
    try {
      parsed = parseEnvelope(bytes.toString('utf8'));
    } catch (error) {
      return fail(`unparsable handshake: ${(error as Error).message}`);
    }
    const problem = checkHandshake(parsed, options.revision);
    if (problem !== undefined) return fail(problem);
    mac = createFrameMac((parsed as Handshake).key);
    options.onHandshake(parsed as Handshake);
  };

  // The frame's text is only looked at once its MAC checks out; the sizes are known before.
  const accept = (number: number, signed: boolean, envelopeBytes: number, payloadBytes: number, envelope: () => string, payload: () => string | undefined): void => {
    if (!signed) {
      return fail(`forged control message: frame ${number} does not carry the carrier's authentication code (a program wrote to the control channel, or a frame was replayed, dropped or corrupted)`);
    }
    if (envelopeBytes > maxMessageBytes) {
      return fail(`a control message (${envelopeBytes} bytes) was longer than maxMessageBytes (${maxMessageBytes} bytes)`);
    }
    if (payloadBytes > maxMessageBytes) {
      return fail(`a control message carried ${payloadBytes} bytes of JSON text, more than maxMessageBytes (${maxMessageBytes} bytes)`);
    }
    let message: unknown;
    try {
      message = parseEnvelope(envelope());
    } catch (error) {
      return fail(`unparsable control message: ${(error as Error).message}`);
    }
    const text = payload();
    if (text === undefined) return options.onMessage(message);
    const joined = joinPayload(message, text);
    if ('problem' in joined) return fail(`invalid control message: ${joined.problem}`);
    options.onMessage(joined.message);
  };

  // A frame that arrived in pieces: hashed and decoded as they came.
  const endFrame = (): void => {
    const current = frame ?? newFrame();
    frame = undefined;
    const envelopeTail = envelopeDecoder.decode();
    const payloadTail = payloadDecoder.decode();
    const signed = current.headBytes === HEAD && current.head[MAC_LENGTH] === SPACE && sameMac(current.head.subarray(0, MAC_LENGTH), current.hash.end());
    accept(current.seq, signed, current.envelopeBytes, current.payloadBytes,
      () => current.envelope.join('') + envelopeTail,
      () => (current.payload === undefined ? undefined : current.payload.join('') + payloadTail));
  };

  // The common case, a whole frame in one chunk: decoded once and hashed in one call.
  const wholeFrame = (line: Uint8Array): void => {
    const number = seq++;
    if (line.length > maxLineBytes) return overflow(line.length);
    const text = decodeWhole.decode(line);
    const body = text.slice(HEAD);
    const signed = line.length > HEAD && line[MAC_LENGTH] === SPACE && sameMac(line.subarray(0, MAC_LENGTH), mac!.sign(number, body));
    const separator = line.indexOf(SEPARATOR, HEAD);
    const envelopeBytes = (separator === -1 ? line.length : separator) - HEAD;
    const payloadBytes = separator === -1 ? 0 : line.length - separator - 1;
    const split = body.indexOf(PAYLOAD_SEPARATOR);
    accept(number, signed, envelopeBytes, payloadBytes,
      () => (split === -1 ? body : body.slice(0, split)),
      () => (split === -1 ? undefined : body.slice(split + 1)));
  };

  return {
    push(chunk) {
      let start = 0;
      while (!failed && start <= chunk.length) {
        const newline = chunk.indexOf(NEWLINE, start);
        if (newline !== -1 && frame === undefined && mac !== undefined) {
          wholeFrame(chunk.subarray(start, newline));
          start = newline + 1;
          continue;
        }
        const end = newline === -1 ? chunk.length : newline;
        if (end > start) feed(chunk.subarray(start, end));
        if (newline === -1 || failed) return;
        if (mac === undefined) endHello();
        else endFrame();
        start = newline + 1;
      }
    },
  };
}
