// Byte streams as channels of the relay's multiplex (mux.ts): each connection a sandboxed program
// makes to the allowlist proxy's socket on the far side travels to the host's proxy as stream `id`.
// Both ends run this code: the relay for the connections it accepts, the host for the ones it opens
// to its proxy. A stream is a TCP-like pipe with half-close (the proxy answers a client that has
// shut its sending side) and a window of its own, as an SSH channel has: a side sends at most
// STREAM_WINDOW bytes that the other has not yet handed to its socket, so a program that does not
// read a download makes neither end buffer more than that, and one slow stream does not hold up
// the control channel behind it.
//
// | type | payload                                   |
// | ---- | ----------------------------------------- |
// | N    | id (relay -> host): a new connection      |
// | B    | id, bytes                                 |
// | A    | id, count: that many bytes were delivered |
// | Z    | id, 0 (end: no more bytes) or 1 (reset)   |
import type { Socket } from 'node:net';
import { MUX_MAX_PAYLOAD, type MuxType } from './mux.ts';

/** Bytes in flight per stream and direction; 256 KiB carries a fast download over a slow link. */
export const STREAM_WINDOW = 256 * 1024;
const ID_BYTES = 4;
const DATA_BYTES = MUX_MAX_PAYLOAD - ID_BYTES;

export interface MuxStreams {
  /** Carries `socket` as stream `id`; false when the id is taken. */
  add(id: number, socket: Socket): boolean;
  /** Takes a B, A or Z frame; returns what is wrong with it, or undefined. Frames for a stream
   * already closed here are dropped: they crossed its reset on the way. */
  receive(type: 'B' | 'A' | 'Z', payload: Buffer): string | undefined;
  /** Open streams. */
  readonly size: number;
  /** Destroys every stream (the carrier is gone). */
  closeAll(): void;
}

interface Stream {
  socket: Socket;
  /** Bytes sent and not yet acknowledged. */
  unacked: number;
  paused: boolean;
  /** Closed by the other side's reset: nothing more is sent for it. */
  reset: boolean;
}

/** The streams of one multiplex; `send` writes a frame to the other side. */
export function createMuxStreams(send: (type: MuxType, payload: Buffer) => void): MuxStreams {
  const streams = new Map<number, Stream>();
  const header = (id: number, extra: number): Buffer => {
    const buffer = Buffer.allocUnsafe(ID_BYTES + extra);
    buffer.writeUInt32BE(id, 0);
    return buffer;
  };
  return {
    add(id, socket) {
      if (streams.has(id)) return false;
      const stream: Stream = { socket, unacked: 0, paused: false, reset: false };
      streams.set(id, stream);
      socket.setNoDelay?.(true);
      socket.on('data', (chunk: Buffer) => {
        for (let offset = 0; offset < chunk.length; offset += DATA_BYTES) {
          const piece = chunk.subarray(offset, offset + DATA_BYTES);
          const frame = header(id, piece.length);
          frame.set(piece, ID_BYTES);
          send('B', frame);
        }
        stream.unacked += chunk.length;
        if (stream.unacked >= STREAM_WINDOW && !stream.paused) {
          stream.paused = true;
          socket.pause();
        }
      });
      socket.once('end', () => {
        if (!stream.reset) send('Z', Buffer.concat([header(id, 0), Buffer.from([0])]));
      });
      socket.on('error', () => {});
      socket.once('close', () => {
        streams.delete(id);
        // Closed here before both ends finished: the other side drops its socket too.
        if (!stream.reset && !(socket.readableEnded && socket.writableFinished)) send('Z', Buffer.concat([header(id, 0), Buffer.from([1])]));
      });
      return true;
    },
    receive(type, payload) {
      if (payload.length < ID_BYTES) return `a "${type}" frame of ${payload.length} bytes has no stream id`;
      const id = payload.readUInt32BE(0);
      const stream = streams.get(id);
      if (type === 'B') {
        if (stream === undefined) return undefined;
        const bytes = payload.length - ID_BYTES;
        // Copied: the reader's buffer is reused for the next frames.
        stream.socket.write(Buffer.from(payload.subarray(ID_BYTES)), (error) => {
          if (error == null && !stream.reset && streams.has(id)) {
            const ack = header(id, 4);
            ack.writeUInt32BE(bytes, ID_BYTES);
            send('A', ack);
          }
        });
        return undefined;
      }
      if (type === 'A') {
        if (payload.length !== ID_BYTES + 4) return `an "A" frame must be 8 bytes, got ${payload.length}`;
        if (stream === undefined) return undefined;
        stream.unacked = Math.max(0, stream.unacked - payload.readUInt32BE(ID_BYTES));
        if (stream.paused && stream.unacked < STREAM_WINDOW) {
          stream.paused = false;
          stream.socket.resume();
        }
        return undefined;
      }
      if (payload.length !== ID_BYTES + 1 || payload[ID_BYTES]! > 1) return `a "Z" frame must be 5 bytes ending in 0 or 1, got ${payload.length} bytes`;
      if (stream === undefined) return undefined;
      if (payload[ID_BYTES] === 0) stream.socket.end();
      else {
        stream.reset = true;
        stream.socket.destroy();
      }
      return undefined;
    },
    get size() {
      return streams.size;
    },
    closeAll() {
      for (const stream of streams.values()) {
        stream.reset = true;
        stream.socket.destroy();
      }
      streams.clear();
    },
  };
}
