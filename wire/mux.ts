// The relay's framing: several byte streams over one stdio pair (SSH, `docker exec -i`, any
// command prefix), as length-prefixed frames. A frame is one type byte, a 4-byte big-endian
// payload length and the payload. Payloads are opaque bytes, so the control channel passes through
// whatever its frames contain, and a program's stdout can never be mistaken for a header: it only
// ever travels as a payload whose length was written by the relay.
//
// | type | direction      | payload                                                        |
// | ---- | -------------- | -------------------------------------------------------------- |
// | S    | host -> relay  | JSON RelayStart: how to start the carrier (first frame only)   |
// | C    | both           | control channel bytes; empty from the relay: the carrier closed it |
// | K    | host -> relay  | empty: kill the carrier's whole tree                           |
// | P    | host -> relay  | empty: keepalive, resets the relay's watchdog                   |
// | W    | host -> relay  | JSON { cpuTimeMs }: a run starts; its CPU counts from here (null: no budget) |
// | D    | host -> relay  | empty: the run ended                                           |
// | H    | relay -> host  | JSON RelayHello: the relay's revision and Node, once the carrier runs |
// | O, E | relay -> host  | the carrier's stdout, stderr bytes                             |
// | T    | relay -> host  | JSON { usedMs, budgetMs }: the run spent its CPU budget; the tree is killed |
// | M    | relay -> host  | JSON { message, idle, maxTasks? }: the tree went over maxMemoryMb (or the task limit, maxTasks) and is killed, and why |
// | X    | relay -> host  | JSON { code, signal, overLimit?, maxTasks?, overDisk? }: the carrier exited (last frame); overLimit names the memory or task limit (maxTasks) it died of, overDisk the disk limit |
// | F    | relay -> host  | UTF-8 text: the carrier could not be started, and why (last)   |
// | N    | relay -> host  | a connection to the allowlist proxy's socket there (mux-streams.ts) |
// | B, A, Z | both        | its bytes, their acknowledgement, its end or reset (mux-streams.ts) |

import type { ConfinedMode } from './sandbox-modes.ts';

/** Largest payload of one frame; writers split longer data, readers refuse more (a broken peer). */
export const MUX_MAX_PAYLOAD = 64 * 1024;
const HEADER_BYTES = 5;

export type MuxType = 'S' | 'C' | 'K' | 'P' | 'W' | 'D' | 'H' | 'O' | 'E' | 'T' | 'M' | 'X' | 'F' | 'N' | 'B' | 'A' | 'Z';
const TYPES = new Set<string>(['S', 'C', 'K', 'P', 'W', 'D', 'H', 'O', 'E', 'T', 'M', 'X', 'F', 'N', 'B', 'A', 'Z']);

/** What the host asks the relay to start. Paths name directories on the relay's machine. */
export interface RelayStart {
  /** V8 heap limit of the carrier, MiB. */
  heapMb: number;
  /** Working directory of the carrier (resolved there). */
  cwd: string;
  sandbox: RelaySandbox;
  /** The relay kills the carrier when the host sends nothing (not even a keepalive) for this long. */
  watchdogMs: number;
  /** What the carrier's tree may write to disk, MiB (disk-usage.ts); null or absent for no limit. */
  maxDiskMb?: number | null;
  /** The memory limit of the carrier's tree, MiB, enforced by the relay there; null or absent: none. */
  maxMemoryMb?: number | null;
}

export type RelaySandbox =
  | { backend: 'none' }
  | {
    backend: 'bwrap'; bwrapPath: string; mode: ConfinedMode; network: boolean; workspaceRoot: string; writableRoots: string[];
    /** A network allowlist: the relay gives the sandbox a proxy socket whose connections go to the host's proxy. */
    allowlist?: boolean;
  }
  | { backend: 'node-permission'; permissionFlag: '--permission' | '--experimental-permission'; /** Grant the network (a Node whose model governs it). */ allowNet?: boolean; mode: ConfinedMode; workspaceRoot: string; writableRoots: string[] };

export interface RelayHello {
  revision: number;
  node: string;
  pid: number;
  /** What bounds the tree's memory there (maxMemoryMb): a cgroup, the relay's watchdog, or nothing. */
  memory?: 'cgroup' | 'watchdog' | 'none';
  /** What bounds the tree's tasks there: a cgroup's pids.max, the relay's watchdog, or nothing. */
  tasks?: 'cgroup' | 'watchdog' | 'none';
  /** What counts the tree's CPU time there for cpuTimeMs: the cgroup's total, or the relay's watchdog. */
  cpu?: 'cgroup' | 'watchdog' | 'none';
}

/** Encodes one frame (the payload must fit MUX_MAX_PAYLOAD; see muxChunks). */
export function muxFrame(type: MuxType, payload: Uint8Array = new Uint8Array(0)): Buffer {
  const frame = Buffer.allocUnsafe(HEADER_BYTES + payload.length);
  frame.write(type, 0, 'latin1');
  frame.writeUInt32BE(payload.length, 1);
  frame.set(payload, HEADER_BYTES);
  return frame;
}

/** Frames of `type` carrying `data`, split at MUX_MAX_PAYLOAD. */
export function muxChunks(type: MuxType, data: Uint8Array): Buffer[] {
  const frames: Buffer[] = [];
  for (let offset = 0; offset < data.length; offset += MUX_MAX_PAYLOAD) frames.push(muxFrame(type, data.subarray(offset, offset + MUX_MAX_PAYLOAD)));
  return frames;
}

export interface MuxReader {
  push(chunk: Uint8Array): void;
}

/** Splits a byte stream into frames; an unknown type or an oversized frame is reported once and ends reading. */
export function createMuxReader(onFrame: (type: MuxType, payload: Buffer) => void, onError: (message: string) => void): MuxReader {
  let buffered = Buffer.alloc(0);
  let failed = false;
  return {
    push(chunk) {
      if (failed) return;
      buffered = buffered.length === 0 ? Buffer.from(chunk) : Buffer.concat([buffered, chunk]);
      let offset = 0;
      while (buffered.length - offset >= HEADER_BYTES) {
        const type = String.fromCharCode(buffered[offset]!);
        const length = buffered.readUInt32BE(offset + 1);
        if (!TYPES.has(type) || length > MUX_MAX_PAYLOAD) {
          failed = true;
          const shown = TYPES.has(type) ? `a ${length}-byte "${type}" frame (the limit is ${MUX_MAX_PAYLOAD})` : `frame type byte 0x${buffered[offset]!.toString(16).padStart(2, '0')}`;
          onError(`unreadable relay stream: ${shown}`);
          return;
        }
        if (buffered.length - offset < HEADER_BYTES + length) break;
        const payload = buffered.subarray(offset + HEADER_BYTES, offset + HEADER_BYTES + length);
        offset += HEADER_BYTES + length;
        onFrame(type as MuxType, payload);
        if (failed) return;
      }
      buffered = buffered.subarray(offset);
    },
  };
}
