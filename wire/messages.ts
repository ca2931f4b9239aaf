// The methods each side exposes over the control channel. The host imports these types; the
// carrier implements CarrierMethods and calls HostMethods. Values travel as lossless JSON text
// (see json.ts) so that encoding and its errors stay in one place.

import type { ImportPolicy } from './import-policy.ts';

/** The carrier's first line on the control channel, before any RPC traffic and before any program exists. */
export interface Handshake {
  t: 'hello';
  revision: number;
  node: string;
  capabilities: string[];
  /** 64 hex digits: the key that signs every later carrier frame (see frame.ts). */
  key: string;
}

/** How the carrier evaluates source: an async function body, a vm Script, the scoped REPL or Node's REPL. */
export const PROGRAM_FORMATS = ['async-function', 'vm-script', 'scoped-repl', 'repl'] as const;
export type ProgramFormat = (typeof PROGRAM_FORMATS)[number];

export interface RunRequest {
  format: ProgramFormat;
  /** Keep the evaluator (its context and declarations) for the next run in this process. */
  retain: boolean;
  /** Program source with types already stripped on the host. */
  program: string;
  /** Source evaluated once, before the program, in a new retained environment; its completion is discarded. */
  initializer?: string;
  /** File name used in stacks and for resolving relative dynamic imports. */
  filename: string;
  cwd: string;
  /** Binding names; a dotted name `a.b` becomes method `b` of the global namespace object `a`. */
  bindings: string[];
  discardCompletion: boolean;
  /** Send the completion as util.inspect text for a person (`display`) instead of lossless JSON. */
  display?: { colors: boolean; /** Keep `_` and `_error` as Node's interactive REPL does (retained runs). */ underscore?: true };
  maxPendingCalls: number;
  maxMessageBytes: number;
  maxOutputBytes: number;
  /**
   * False: the host counts no CPU budget from the carrier's `started` notice (none is set, or the
   * relay counts it on the far side), so the carrier sends none and the run costs one frame less.
   * Absent: the notice is sent.
   */
  announceStart?: boolean;
  /** The host's import policy and the runner's import handler; absent, programs import through Node's loader unchecked. */
  imports?: ImportPolicy;
}

export interface SourceLocation {
  line: number;
  column: number;
}

export interface ErrorInfo {
  name: string;
  message: string;
  stack?: string;
  location?: SourceLocation;
  /** The source line and a caret under the column, for syntax errors. */
  excerpt?: string;
  binding?: string;
  code?: string;
}

export type RunOutcome = (
  | { status: 'ok'; value?: string; /** The completion as text, for a run with `display`. */ display?: string }
  | {
    status: 'exception';
    error: ErrorInfo;
    /** The environment initializer threw, not the program. */
    initializer?: boolean;
    /** The error's strings were cut to fit one control message (maxMessageBytes). */
    truncated?: boolean;
  }
  /** The run stopped after a revoke or a refused initialization; nothing of it is reported. */
  | { status: 'stopped' }
  | { status: 'invalid-output'; path: string; message: string; /** The path or message was cut to fit one control message. */ truncated?: boolean }
  /** The completion value's JSON text was larger than the output budget or one control message. */
  | { status: 'oversized'; bytes: number }
) & {
  /** The run met a denial (EACCES, EROFS, EPERM, ERR_ACCESS_DENIED, a refused connection), caught or not. */
  denied?: boolean;
  /** Absolute paths the run met ENOENT for that lie outside every directory bubblewrap shows of the host (at most 8): the host tells whether they exist there, which would make the sandbox why. */
  hidden?: string[];
  /**
   * The CPU time in ms the carrier's own process spent from its `started` notice to this reply, for
   * a run that announced its start: the host's last look at a CPU budget counts at least this much,
   * however late it read the notice. A carrier can only raise its own charge with it.
   */
  cpuMs?: number;
};

/** A file as the carrier opened it (decimal strings: inode numbers can exceed 2^53). */
export interface FileIdentity {
  dev: string;
  ino: string;
}

/** An image's pixel size as the carrier read it from the file's header. */
export interface ImagePixels {
  width: number;
  height: number;
}

export interface ImageDescriptor {
  attachmentId: string;
  path: string;
  width: number;
  height: number;
}

/** Where a binding result holds an image: the JSON path as keys and indexes, and the image. */
export interface ImagePlacement {
  at: Array<string | number>;
  image: ImageDescriptor;
}

export interface InvokeResult {
  /** Lossless JSON text of the result; absent when the binding returned undefined. */
  value?: string;
  images: ImagePlacement[];
}

export type OutputMessage =
  /** `stream: 'stderr'` for what the program wrote to process.stderr (console.error, console.warn); absent for stdout and inspect(). */
  | { type: 'text'; text: string; stream?: 'stderr' }
  | { type: 'image'; attachmentId: string };

export interface CarrierMethods {
  run(request: RunRequest): Promise<RunOutcome>;
  /** One-way: stop the active run cooperatively (pending binding calls reject, later output is dropped); run() still answers once it settles. */
  revoke(): void;
  /** Between a retained carrier's runs: the names that can follow `path` (`[]`: top-level names), for a front end's Tab; never runs program code. Capability `complete`. */
  complete(path: string[]): string[];
}

export interface HostMethods {
  /** Calls a binding; `args` is the lossless JSON text of the argument array. */
  invoke(name: string, args: string): Promise<InvokeResult>;
  /** The environment initializer finished; resolves true when the host still wants the program to run. */
  initialized(): Promise<boolean>;
  /**
   * Registers a file the carrier opened (absolute path, as its sandbox sees it) as an image the
   * program may display, with the size the carrier read. A local host reads that same inode
   * itself; a host whose carrier is on another machine takes the carrier's size.
   */
  registerImage(path: string, identity: FileIdentity, pixels: ImagePixels): Promise<ImageDescriptor>;
  /** One-way: captured output, in order. */
  output(entry: OutputMessage): void;
  /**
   * One-way: the run's own code (its initializer, else the program) starts now; what the carrier
   * did for the run before it (a new evaluator, imports, bindings) is not charged to its CPU budget.
   */
  started(): void;
  /** One-way: the program called yieldControl(); a caller waiting on the run (a handle's look) gets the output so far now. */
  yieldControl(): void;
}
