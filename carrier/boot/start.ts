// The carrier's boot: called once, before any program code exists in this process. It closes the
// descriptors it did not hand out, scrubs the environment, installs the guards and the output
// capture, adopts the control channel (whose hello is the handshake), and hands each `run`
// request to the evaluation loop (run/carrier.ts).
import { closeSync } from 'node:fs';
import { openChannel, type HostLink } from '../channel/channel.ts';
import { scrubEnvironment } from './environment.ts';
import { closeInheritedDescriptors } from './descriptors.ts';
import { NETWORK_SOCKET_ENV } from '../../wire/network.ts';
import { CONTROL_FD, INTERRUPT_ENV, INTERRUPT_FD } from '../../wire/revision.ts';
import { markDenied, watchDenials } from '../hardening/denials.ts';
import { closePermissionGaps } from '../hardening/permission-gaps.ts';
import { guardProcesses } from '../hardening/process-guard.ts';
import { captureStandardStreams } from '../globals/output.ts';
import { setImageRegistrar } from '../globals/image.ts';
import { apply, defineProperty, rejected, resolved, stringIncludes, then, unthenable } from '../hardening/intrinsics.ts';
import { holdWaitAsync } from '../channel/stall.ts';
import { PROGRAM_FORMATS, type RunOutcome, type RunRequest } from '../../wire/messages.ts';
import { bootMark } from '../../wire/boot-mark.ts';
import { complete, currentRun, evaluate, failCurrentRun, interrupted, revoke, saveCompileCache, useInterrupts, useStallWatch } from '../run/carrier.ts';
import { runRequested, watchInterrupts } from '../run/interrupt.ts';

/** Starts the carrier: called once, before any program code exists in this process. */
export function runCarrier(): void {
  bootMark('ptc:carrier');
  // stdin, stdout, stderr, the control channel and (where the host says it handed one) the
  // interrupt pipe are ptc's; anything else open is inherited.
  const interrupts = process.env[INTERRUPT_ENV] === String(INTERRUPT_FD);
  delete process.env[INTERRUPT_ENV];
  closeInheritedDescriptors(interrupts ? [0, 1, 2, CONTROL_FD, INTERRUPT_FD] : [0, 1, 2, CONTROL_FD]);
  // The permission model refuses the worker and the inspector the watch needs (to programs too):
  // there a stop that the run does not acknowledge ends the carrier, as without the pipe. So does
  // a Node before 26: on Node 20 the watch's worker never started inside the carrier (measured;
  // the cause is not known), and Nodes between are untried.
  if (interrupts && process.permission === undefined && Number(process.versions.node.split('.')[0]) >= 26) useInterrupts(() => watchInterrupts(INTERRUPT_FD, interrupted));
  else if (interrupts) closeSync(INTERRUPT_FD);
  const forwarding = startNetwork();
  forwarding.catch(() => {});
  scrubEnvironment();
  guardProcesses();
  watchDenials();
  closePermissionGaps(markDenied);
  silenceLoaderWarning();
  process.on('uncaughtException', (error) => failCurrentRun(error, true));
  process.on('unhandledRejection', (reason) => failCurrentRun(reason, false));
  captureStandardStreams();

  const channel = openChannel(
    {
      // Each request the host sent is counted, as the host counts them, before it runs: an
      // interrupt names its run by that count (the rehearsal below is not one of them).
      run: ownApply((request: RunRequest) => {
        runRequested();
        return evaluate(request, channel.host, forwarding);
      }),
      revoke: ownApply(revoke),
      complete: ownApply(complete),
    },
    [...PROGRAM_FORMATS, 'images', 'revoke', 'complete'],
  );
  useStallWatch(channel.stalls);
  bootMark('ptc:hello');
  setImmediate(() => rehearse(channel));
  holdWaitAsync(globalThis);
  saveCompileCache();
  setImageRegistrar((path, identity, pixels) => {
    if (currentRun() === undefined) return rejected(new Error('Image.fromFile: the evaluation that made this call has ended'));
    return then(channel.host.registerImage(path, identity, pixels), (descriptor) => descriptor, (error: unknown) => {
      // The host's reason arrives as plain data; the program should catch a real Error.
      const { name, message } = (typeof error === 'object' && error !== null ? error : {}) as { name?: unknown; message?: unknown };
      const text = typeof message === 'string' ? message : `Image.fromFile failed for ${path}`;
      throw name === 'TypeError' ? new TypeError(text) : new Error(text);
    });
  });
}

/**
 * Starts the network forwarder when the host set up an allowlist. Only then are its modules loaded:
 * node:tls and node:worker_threads are ~3 MB of every idle carrier's RSS. Runs wait for this
 * promise, so the forwarder (and its fetch guard) is in place before any program.
 */
function startNetwork(): Promise<void> {
  const socketPath = process.env[NETWORK_SOCKET_ENV];
  delete process.env[NETWORK_SOCKET_ENV];
  if (socketPath === undefined || socketPath === '') return resolved(undefined);
  return then(import('../network/forward.ts'), ({ startForwarding }) => startForwarding(socketPath));
}

/** What a rehearsal's host link does with the run's notices and calls: nothing reaches the host. */
const UNHEARD: HostLink = unthenable({
  output: () => {},
  started: () => {},
  yieldControl: () => {},
  initialized: () => resolved(false),
  invoke: () => rejected(new Error('a rehearsal calls no binding')),
  registerImage: () => rejected(new Error('a rehearsal registers no image')),
}) as HostLink;

/**
 * While the carrier waits for its first request, runs a program of its own through the per-call
 * path: frame decoding, the evaluator, the completion's encoding, the reply's frame and MAC. The
 * first run of that code in a process is most of a fresh carrier's run (about 2 ms, against
 * 0.2 ms the second time: V8 compiles each function on its first call), which a pooled carrier
 * otherwise pays while the host waits for its reply. Nothing of it reaches the host, and it leaves
 * nothing a program can see: no binding, no output, no retained environment, the same cwd. It
 * runs only in the first turn after the handshake, and entirely in that turn's microtasks, so a
 * request that arrived first is not held, and none can arrive while it runs.
 */
function rehearse(channel: ReturnType<typeof openChannel>): void {
  if (channel.requested()) return;
  let cwd: string;
  try {
    cwd = process.cwd();
  } catch {
    return; // a cwd removed under the carrier: the first run says so, not this
  }
  const request: RunRequest = {
    format: 'async-function',
    retain: false,
    program: 'return { rehearsal: [1 + 1] }',
    filename: '[rehearsal]',
    cwd,
    bindings: [],
    discardCompletion: false,
    maxPendingCalls: 1,
    maxMessageBytes: 64 * 1024,
    maxOutputBytes: 64 * 1024,
    announceStart: false,
  };
  then(evaluate(request, UNHEARD, resolved(undefined)), (outcome: RunOutcome) => channel.rehearse(outcome), () => {});
}

/**
 * The RPC layer calls a method with `method.apply(rpc, args)`; an own `apply` keeps the next run
 * request working after a program replaced Function.prototype.apply in this realm.
 */
function ownApply<F extends (...args: never[]) => unknown>(method: F): F {
  defineProperty(method, 'apply', {
    __proto__: null,
    value: (thisArg: unknown, args: unknown[]) => apply(method, thisArg, args),
  } as PropertyDescriptor);
  return method;
}

// The program's first dynamic import makes Node warn that vm.USE_MAIN_CONTEXT_DEFAULT_LOADER (the
// evaluators' import hook) is experimental, and the first module an import handler's decision
// makes that VM Modules are; that is the runtime's choice, not program output.
function silenceLoaderWarning(): void {
  const emitWarning = process.emitWarning;
  process.emitWarning = function (this: unknown, warning: string | Error, ...rest: unknown[]) {
    const text = typeof warning === 'string' ? warning : warning?.message;
    if (typeof text === 'string' && (stringIncludes(text, 'vm.USE_MAIN_CONTEXT_DEFAULT_LOADER') || stringIncludes(text, 'VM Modules is an experimental feature'))) return;
    const args: unknown[] = [warning];
    for (let index = 0; index < rest.length; index++) args[index + 1] = rest[index];
    return apply(emitWarning, process, args);
  } as typeof process.emitWarning;
}

