// The host's reading side of a carrier's control channel: the handshake line, then frames whose
// authentication code, sequence and size are checked before anything acts on them (the format is
// in carrier/protocol/frame.ts). Work is done as bytes arrive: each chunk is hashed and decoded
// when it comes, so a frame near maxMessageBytes costs no single long step at its end. Nothing
// here recurses on what the carrier sent, and an envelope of more than a few hundred values is
// refused without being built.
import { timingSafeEqual } from 'node:crypto';
import { TextDecoder } from 'node:util';
import { decodeEnvelope } from '../../carrier/protocol/decode.ts';
import { createFrameMac, FRAME_ENVELOPE_BYTES, joinPayload, MAC_LENGTH, type FrameHash, type FrameMac } from '../../carrier/protocol/frame.ts';
import type { Handshake } from '../../carrier/protocol/messages.ts';
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
  envelopeDecoder: TextDecoder;
  payload: string[] | undefined;
  payloadBytes: number;
  payloadDecoder: TextDecoder;
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
    envelopeDecoder: new TextDecoder(),
    payload: undefined,
    payloadBytes: 0,
    payloadDecoder: new TextDecoder(),
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
      if (current.envelopeBytes <= maxMessageBytes) current.envelope.push(current.envelopeDecoder.decode(envelope, { stream: true }));
      if (separator === -1) return;
      current.payload = [];
      piece = piece.subarray(separator + 1);
    }
    current.payloadBytes += piece.length;
    if (current.payloadBytes <= maxMessageBytes) current.payload.push(current.payloadDecoder.decode(piece, { stream: true }));
  };

  const endHello = (): void => {
    const bytes = Buffer.concat(hello, helloBytes);
    hello = [];
    let parsed: unknown;
    try {
      parsed = decodeEnvelope(bytes.toString('utf8'), MAX_ENVELOPE_VALUES);
    } catch (error) {
      return fail(`unparsable handshake: ${(error as Error).message}`);
    }
    const problem = checkHandshake(parsed, options.revision);
    if (problem !== undefined) return fail(problem);
    mac = createFrameMac((parsed as Handshake).key);
    options.onHandshake(parsed as Handshake);
  };

  const endFrame = (): void => {
    const current = frame ?? newFrame();
    frame = undefined;
    const expected = Buffer.from(current.hash.end(), 'latin1');
    const signed = current.headBytes === HEAD && current.head[MAC_LENGTH] === SPACE && timingSafeEqual(current.head.subarray(0, MAC_LENGTH), expected);
    if (!signed) {
      return fail(`forged control message: frame ${current.seq} does not carry the carrier's authentication code (a program wrote to the control channel, or a frame was replayed, dropped or corrupted)`);
    }
    if (current.envelopeBytes > maxMessageBytes) {
      return fail(`a control message (${current.envelopeBytes} bytes) was longer than maxMessageBytes (${maxMessageBytes} bytes)`);
    }
    if (current.payloadBytes > maxMessageBytes) {
      return fail(`a control message carried ${current.payloadBytes} bytes of JSON text, more than maxMessageBytes (${maxMessageBytes} bytes)`);
    }
    let envelope: unknown;
    try {
      current.envelope.push(current.envelopeDecoder.decode());
      envelope = decodeEnvelope(current.envelope.join(''), MAX_ENVELOPE_VALUES);
    } catch (error) {
      return fail(`unparsable control message: ${(error as Error).message}`);
    }
    if (current.payload === undefined) return options.onMessage(envelope);
    current.payload.push(current.payloadDecoder.decode());
    const joined = joinPayload(envelope, current.payload.join(''));
    if ('problem' in joined) return fail(`invalid control message: ${joined.problem}`);
    options.onMessage(joined.message);
  };

  return {
    push(chunk) {
      let start = 0;
      while (!failed && start <= chunk.length) {
        const newline = chunk.indexOf(NEWLINE, start);
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
