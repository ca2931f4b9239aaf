// One per-call execution: a fresh carrier, the deadline and cancellation, binding dispatch, the
// output ledger, and termination of the carrier's process group whatever the outcome. The first
// reason to stop is kept: a timeout stays a timeout even when the kill that follows ends the process.
import { resolve as resolvePath } from 'node:path';
import { decodeJson } from '../carrier/protocol/json.ts';
import type { ImageDescriptor, InvokeResult, OutputMessage, RunOutcome } from '../carrier/protocol/messages.ts';
import { decodeArguments, encodeResult, type BindingFunction } from './bindings.ts';
import type { ResolvedConfig } from './config.ts';
import { abortFailure, exceptionFailure, protocolFailure, timeoutFailure, type Failure } from './failures.ts';
import { readImageSize } from './image-size.ts';
import { launchCommand } from './launch.ts';
import { OutputLedger, fittingPrefix, type OutputEntry } from './output-ledger.ts';
import type { JsonValue } from '../carrier/protocol/json.ts';
import { stripTypes } from './typescript.ts';
import { takeCarrier } from './spare.ts';

export interface SandboxReport {
  mode: 'full-access';
  backend: 'none';
  enforcement: 'none';
  network: boolean;
  denied: boolean;
}

export type RunResult =
  | { status: 'ok'; value?: JsonValue; output: OutputEntry[]; sandbox: SandboxReport }
  | { status: 'failed'; failure: Failure; output: OutputEntry[]; sandbox: SandboxReport };

export interface Execution {
  /** Program source in erasable TypeScript. */
  program: string;
  filename: string;
  cwd: string;
  bindings: Map<string, BindingFunction>;
  discardCompletion: boolean;
  timeoutMs: number | null;
  signal?: AbortSignal;
  onOutput?: (entry: OutputEntry) => void;
  nextAttachmentId(): string;
}

const UNCONFINED: SandboxReport = { mode: 'full-access', backend: 'none', enforcement: 'none', network: true, denied: false };

/** Runs one program in a fresh carrier and returns its result; never throws for program behaviour. */
export async function executePerCall(config: ResolvedConfig, execution: Execution): Promise<RunResult> {
  const ledger = new OutputLedger(config.maxOutputBytes);
  const sandbox = { ...UNCONFINED };
  if (execution.signal?.aborted) return failed(abortFailure(execution.signal.reason), ledger, sandbox);

  let failure: Failure | undefined;
  let settled = false;
  let codeStarted = false;
  let stopRun!: () => void;
  const stopped = new Promise<void>((resolve) => {
    stopRun = resolve;
  });
  const stop = (reason: Failure): void => {
    failure ??= reason;
    settled = true;
    stopRun();
  };

  // The caller's listener must not be able to break the run; its failure is its own.
  const emit = (entry: OutputEntry): void => {
    try {
      execution.onOutput?.(entry);
    } catch {
      // Ignored: the entry is still in the result.
    }
  };
  const addText = (text: string): void => {
    if (settled && failure?.kind === 'output-limit') return;
    const kept = ledger.addText(text);
    if (kept !== undefined) emit({ type: 'text', text: kept });
    if (ledger.overflowed) stop(outputLimit(config.maxOutputBytes));
  };

  const images = new Map<string, ImageDescriptor>();
  const registerImage = async (path: string): Promise<ImageDescriptor> => {
    const absolute = resolvePath(execution.cwd, path);
    const size = await readImageSize(absolute);
    const descriptor = { attachmentId: execution.nextAttachmentId(), path: absolute, width: size.width, height: size.height };
    images.set(descriptor.attachmentId, descriptor);
    return descriptor;
  };

  let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  const command = launchCommand(config.launch, config.maxOldGenerationSizeMb);
  const carrier = takeCarrier(command, config.maxMessageBytes, execution.cwd);
  carrier.attach({
    onProtocolError: (message) => stop(protocolFailure(message)),
    onSpawnError: (message) => stop({ kind: 'worker-exit', message, exitCode: null, signal: null }),
    onExit: (code, signal) => {
      exit = { code, signal };
      if (!settled) stop({ kind: 'worker-exit', message: '', exitCode: code, signal });
    },
    onStdio: (text) => {
      if (!settled || failure === undefined) addText(text);
    },
    onControlLost: () => {
      if (!settled) stop({ kind: 'worker-exit', message: CONTROL_LOST, exitCode: null, signal: null });
    },
  });

  const timer = execution.timeoutMs === null ? undefined : setTimeout(() => stop(timeoutFailure(execution.timeoutMs!, codeStarted)), execution.timeoutMs);
  const onAbort = (): void => stop(abortFailure(execution.signal!.reason));
  execution.signal?.addEventListener('abort', onAbort, { once: true });

  let pendingCalls = 0;
  let pendingBytes = 0;
  const invoke = async (name: string, argsText: string): Promise<InvokeResult> => {
    const binding = execution.bindings.get(name);
    if (binding === undefined) throw Object.assign(new Error(`no binding named "${name}"`), { code: 'PTC_UNKNOWN_BINDING' });
    const bytes = Buffer.byteLength(argsText);
    if (pendingCalls >= config.maxPendingCalls) {
      throw Object.assign(new Error(`${name}: too many binding calls in flight (maxPendingCalls is ${config.maxPendingCalls})`), { code: 'PTC_PENDING_LIMIT' });
    }
    if (pendingBytes + bytes > config.maxMessageBytes) {
      throw Object.assign(new Error(`${name}: arguments of calls in flight exceed maxMessageBytes (${config.maxMessageBytes})`), { code: 'PTC_MESSAGE_LIMIT' });
    }
    pendingCalls++;
    pendingBytes += bytes;
    try {
      const args = decodeArguments(argsText);
      const result = await binding(...args);
      return await encodeResult(name, result, registerImage);
    } finally {
      pendingCalls--;
      pendingBytes -= bytes;
    }
  };

  // Stripping types overlaps the carrier's start-up: the first strip in a process loads Node's
  // TypeScript parser, which takes about as long as a carrier takes to boot.
  const stripped = stripTypes(execution.program, execution.filename);
  if (!stripped.ok) stop(exceptionFailure(stripped.error));

  let outcome: RunOutcome | undefined;
  const running = (async () => {
    await carrier.handshake();
    if (settled) return;
    carrier.connect({
      invoke,
      registerImage,
      output: (entry: OutputMessage) => {
        if (settled) return;
        if (entry.type === 'text') {
          addText(entry.text);
          return;
        }
        const image = images.get(entry.attachmentId);
        if (image === undefined) {
          stop(protocolFailure(`invalid control message: unknown image attachment ${JSON.stringify(entry.attachmentId)}`));
          return;
        }
        if (ledger.addImage(image)) emit({ type: 'image', ...image });
        else stop(outputLimit(config.maxOutputBytes));
      },
    });
    codeStarted = true;
    const result = await carrier.run({
      format: 'async-function',
      program: stripped.ok ? stripped.code : '',
      filename: execution.filename,
      cwd: execution.cwd,
      bindings: [...execution.bindings.keys()],
      discardCompletion: execution.discardCompletion,
      maxPendingCalls: config.maxPendingCalls,
      maxMessageBytes: config.maxMessageBytes,
      maxOutputBytes: config.maxOutputBytes,
    });
    if (!settled) {
      outcome = result;
      settled = true;
      stopRun();
    }
  })();
  running.catch(() => {});

  await stopped;
  clearTimeout(timer);
  execution.signal?.removeEventListener('abort', onAbort);
  // Bytes already in the pipes were written during the run; they count until the group is gone.
  await carrier.terminate(config.graceMs);

  if (failure !== undefined) {
    if (failure.kind === 'worker-exit' && exit !== undefined && failure.message === '') {
      Object.assign(failure, describeExit(exit.code, exit.signal, carrier.stderrTail));
    } else if (failure.message === CONTROL_LOST && exit !== undefined) {
      // The transport diagnostic stays; the exit status is what was observed after the kill.
      Object.assign(failure, { exitCode: exit.code, signal: exit.signal, stderrTail: carrier.stderrTail });
    }
    return failed(failure, ledger, sandbox);
  }
  return complete(outcome!, ledger, sandbox, config);
}

function complete(outcome: RunOutcome, ledger: OutputLedger, sandbox: SandboxReport, config: ResolvedConfig): RunResult {
  const limit = config.maxOutputBytes;
  switch (outcome.status) {
    case 'ok': {
      if (outcome.value === undefined) return { status: 'ok', output: ledger.entries, sandbox };
      if (!ledger.charge(Buffer.byteLength(outcome.value))) return failed(outputLimit(limit, 'the completion value'), ledger, sandbox);
      let value: JsonValue;
      try {
        value = decodeJson(outcome.value);
      } catch (error) {
        return failed(protocolFailure(`the carrier sent an unparsable completion: ${(error as Error).message}`), ledger, sandbox);
      }
      return { status: 'ok', value, output: ledger.entries, sandbox };
    }
    case 'oversized':
      ledger.charge(Number.MAX_SAFE_INTEGER);
      return failed({
        kind: 'output-limit',
        message: `the completion value (${outcome.bytes} bytes) does not fit maxOutputBytes (${limit}) or one control message (maxMessageBytes ${config.maxMessageBytes}); the output that fit is kept`,
      }, ledger, sandbox);
    case 'invalid-output':
      return failed({ kind: 'invalid-output', message: outcome.message, path: outcome.path }, ledger, sandbox);
    case 'exception': {
      const failure = exceptionFailure(outcome.error);
      fitDiagnostic(failure, ledger);
      return failed(failure, ledger, sandbox);
    }
  }
}

// The diagnostic shares the output budget; trim the stack, then the message, rather than lose the
// exception behind an output-limit failure.
function fitDiagnostic(failure: Failure, ledger: OutputLedger): void {
  let budget = ledger.remaining;
  failure.message = fittingPrefix(failure.message, budget);
  budget -= Buffer.byteLength(failure.message);
  if (failure.stack !== undefined) failure.stack = fittingPrefix(failure.stack, budget);
  ledger.charge(Buffer.byteLength(failure.message) + Buffer.byteLength(failure.stack ?? ''));
}

function outputLimit(limit: number, what = 'captured output'): Failure {
  return { kind: 'output-limit', message: `${what} exceeded maxOutputBytes (${limit} bytes); the output that fit is kept` };
}

const CONTROL_LOST = 'the carrier closed its control channel before the program finished';

function describeExit(code: number | null, signal: NodeJS.Signals | null, stderrTail: string): Partial<Failure> {
  const how = signal !== null ? `was killed by ${signal}` : `exited with code ${code}`;
  const heap = /heap out of memory|Reached heap limit/.test(stderrTail) ? ' after reaching its heap limit (maxOldGenerationSizeMb)' : '';
  return { message: `the carrier ${how}${heap} before the program finished`, exitCode: code, signal, stderrTail };
}

function failed(failure: Failure, ledger: OutputLedger, sandbox: SandboxReport): RunResult {
  return { status: 'failed', failure, output: ledger.entries, sandbox };
}
