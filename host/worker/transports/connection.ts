// The seam between a carrier and how it is reached. The worker reads and writes control frames,
// collects stdout and stderr, and learns the exit status through this shape alone, so it is the
// same for a local child with a pipe on fd 3, a relay at the far end of SSH, or any command prefix
// that carries only stdio (the MCP SDK's Transport has the same role for its protocol layer).
import type { Duplex, Readable } from 'node:stream';
import type { ResourceLimits, TreeLimits } from '../../../supervision/resources/guard.ts';

export type StdioStream = 'stdout' | 'stderr';

/** One started carrier, however it is reached. */
export interface CarrierConnection {
  /** Control frames both ways: newline-delimited text, opaque to the transport. */
  readonly control: Duplex;
  /** The program's raw standard output and error. */
  readonly stdout: Readable;
  readonly stderr: Readable;
  /** The local process id behind the connection (the carrier, or the ssh client), when there is one. */
  readonly pid: number | undefined;
  /** The transport's own diagnostics (ssh's stderr), bounded; empty for a local pipe. */
  readonly transportTail: string;
  /** Why the far side killed the carrier for a limit it enforces there (maxDiskMb), once it has exited. */
  overLimit?(): string | undefined;
  /** Why the carrier is out of reach when the transport ended under it (an SSH connection that
   * dropped), rather than the carrier exiting; undefined for a local pipe and an orderly end. */
  readonly lost: string | undefined;
  /** Called once when the carrier has exited. */
  onExit(listener: (code: number | null, signal: NodeJS.Signals | null) => void): void;
  /** Called once, instead of onExit, when the carrier could not be started at all. */
  onStartFailure(listener: (message: string) => void): void;
  /** Resolves once the carrier has exited (or never started) and its stdio has closed. */
  readonly settled: Promise<void>;
  /** The transport's own process (ssh, a command prefix; a local carrier itself) has exited, seen
   * even before this host reaps it, while its end may still be unread: `settled` soon says how it
   * ended. */
  readonly ending?: boolean;
  /** The CPU budget and memory limit of the carrier's tree, measured where the tree is; call once,
   * before its first run. Over the memory limit the tree is killed and `kill` is called; `beforeRun`
   * says a relay found it so before the run the host had just sent reached the carrier. */
  limits(limits: TreeLimits, kill: (beforeRun?: boolean) => void): ResourceLimits;
  /** Counts, while the carrier is idle and has run no program, what limits() would count at its
   * start (the tree's storage writes), so a run that takes a pooled carrier does not. Where the
   * tree is measured elsewhere (a relay) it is absent. */
  countIdle?(): void;
  /** Asks the carrier to terminate the JavaScript its run is busy in (carrier/run/interrupt.ts),
   * keeping the process; absent where no interrupt pipe reaches the carrier (a relay). `run` is the
   * count of run requests sent, which names the run to stop: the carrier ignores it once that run has gone. */
  interrupt?(run: number): void;
  /** Kills the carrier and everything it started; idempotent, synchronous, safe after exit. */
  kill(): void;
  /** Hands over, synchronously, bytes already written to stdout/stderr but not yet read. Where
   * the transport delivers stdio and control in one ordered stream this does nothing. */
  drainStdio(accept: (chunk: Buffer, stream: StdioStream) => void): void;
  /** Stops reading stdout and stderr: a descendant that holds them open must not delay the end. */
  abandonStdio(): void;
  /** Whether this connection keeps the host's event loop alive (an idle spare must not). */
  ref(): void;
  unref(): void;
}
