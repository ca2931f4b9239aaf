// The host's reading side of a carrier's control channel: lines of bounded size, the handshake,
// then frames whose authentication code, sequence and size are checked before they are parsed
// (carrier/protocol/frame.ts describes the format). Nothing here recurses on what the carrier
// sent: envelopes go through V8's iterative JSON.parse, payloads stay JSON text.
import { timingSafeEqual } from 'node:crypto';
import { createLineReader } from '../../carrier/protocol/framing.ts';
import { createFrameMac, FRAME_ENVELOPE_BYTES, joinPayload, MAC_LENGTH } from '../../carrier/protocol/frame.ts';
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

const decoder = new TextDecoder('utf-8', { fatal: false });
const SPACE = 0x20;
const SEPARATOR = 0x1e;

/** Turns the carrier's control bytes into authenticated messages. */
export function createControlReader(options: ControlReaderOptions): ControlReader {
  const { maxMessageBytes } = options;
  let mac: ((seq: number, pieces: Uint8Array[]) => string) | undefined;
  let seq = 0;
  let failed = false;
  const fail = (message: string): void => {
    if (failed) return;
    failed = true;
    options.onProblem(message);
  };

  const handshake = (line: Uint8Array): void => {
    let hello: unknown;
    try {
      hello = JSON.parse(decoder.decode(line));
    } catch (error) {
      return fail(`unparsable handshake: ${(error as Error).message}`);
    }
    const problem = checkHandshake(hello, options.revision);
    if (problem !== undefined) return fail(problem);
    mac = createFrameMac((hello as Handshake).key);
    options.onHandshake(hello as Handshake);
  };

  const frame = (line: Uint8Array): void => {
    const number = seq++;
    const body = line.subarray(MAC_LENGTH + 1);
    const signed = line.length > MAC_LENGTH && line[MAC_LENGTH] === SPACE
      && timingSafeEqual(line.subarray(0, MAC_LENGTH), Buffer.from(mac!(number, [body]), 'latin1'));
    if (!signed) {
      return fail(`forged control message: frame ${number} does not carry the carrier's authentication code (a program wrote to the control channel, or a frame was replayed, dropped or corrupted)`);
    }
    const separator = body.indexOf(SEPARATOR);
    const envelopeBytes = separator === -1 ? body : body.subarray(0, separator);
    if (envelopeBytes.length > maxMessageBytes) {
      return fail(`a control message (${envelopeBytes.length} bytes) was longer than maxMessageBytes (${maxMessageBytes} bytes)`);
    }
    let envelope: unknown;
    try {
      envelope = JSON.parse(decoder.decode(envelopeBytes));
    } catch (error) {
      return fail(`unparsable control message: ${(error as Error).message}`);
    }
    if (separator === -1) return options.onMessage(envelope);
    const payload = body.subarray(separator + 1);
    if (payload.length > maxMessageBytes) {
      return fail(`a control message carried ${payload.length} bytes of JSON text, more than maxMessageBytes (${maxMessageBytes} bytes)`);
    }
    const joined = joinPayload(envelope, decoder.decode(payload));
    if ('problem' in joined) return fail(`invalid control message: ${joined.problem}`);
    options.onMessage(joined.message);
  };

  const maxLineBytes = maxMessageBytes + FRAME_ENVELOPE_BYTES;
  const lines = createLineReader({
    maxLineBytes,
    onLine: (line) => {
      if (failed) return;
      if (mac === undefined) handshake(line);
      else frame(line);
    },
    onOverflow: (bytes) => fail(`a control message (${bytes} bytes and more) was longer than maxMessageBytes (${maxMessageBytes} bytes) and its ${FRAME_ENVELOPE_BYTES}-byte envelope`),
  });
  return {
    push(chunk) {
      if (!failed) lines.push(chunk);
    },
  };
}
