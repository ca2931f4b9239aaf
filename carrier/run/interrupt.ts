// Interrupting a run that does not yield (`while (true) {}`, before or after an `await`) without
// ending the carrier, so a retained environment keeps every variable. The event loop that would
// read the host's revoke is the one the loop blocks, so the request comes on a pipe of its own
// (INTERRUPT_FD, handed only to local carriers), read by a worker thread. That worker opens an
// inspector session on this (main) thread and asks V8 to terminate the JavaScript running there;
// V8 dispatches inspector messages through an isolate interrupt, which a busy loop honours, and
// cancels the termination once the outermost call has unwound. The worker then tells this thread,
// which settles the run as stopped.
//
// The program gains nothing: the worker and its session live in closures of this module and the
// worker's own realm; node:inspector on its own process is already the program's (bwrap; the
// permission model refuses the inspector and workers to carrier and program alike, so there this
// never starts and a stop falls back to the kill). What V8 cannot interrupt (a blocking system call,
// a read of a FIFO nobody writes) does not end, and the host's stopGraceMs kill is the fallback.
//
// The host sends the byte together with its revoke. A run that is not stuck handles the revoke
// itself (its pending calls reject, its `catch` and `finally` run); so the worker waits REVOKE_MS
// for the revoke to arrive before it terminates, and a revoked run that still has not settled after
// SETTLE_MS (a loop in a `finally`, or an interval that keeps a never-settling run alive) is
// terminated then. Each byte names the run it stops (the host's count of run requests, low byte),
// and the worker acts only while that run is the current one: a run that ended on its revoke may be
// followed at once by the next, which a byte meant for the first must not end.
import type { MessagePort } from 'node:worker_threads';
import { requireBuiltin } from '../hardening/builtins.ts';

/** States of the shared cell: no run, a run, a revoked run, a termination on its way. */
const IDLE = 0;
const RUNNING = 1;
const REVOKED = 2;
const TERMINATING = 3;

/** How long a revoke has to reach a run that is not stuck before the worker terminates it. */
const REVOKE_MS = 50;
/** How long a revoked run has to settle by itself before the worker terminates it. */
const SETTLE_MS = 500;

// The worker's source: CommonJS in a realm of its own, which no program code reaches.
const WATCHER = `
const { workerData, parentPort } = require('node:worker_threads');
const { Socket } = require('node:net');
const { Session } = require('node:inspector');
const { fd, cell, port } = workerData;
const state = new Int32Array(cell);
let pending = false;
let target = -1;
const current = () => Atomics.load(state, 1) === target;
function terminate(expected) {
  if (Atomics.compareExchange(state, 0, expected, ${TERMINATING}) !== expected) return false;
  // Connected only for this: with a session open, a carrier that exits waits for it to disconnect.
  const session = new Session();
  session.connectToMainThread();
  session.post('Runtime.terminateExecution', () => {
    session.disconnect();
    port.postMessage('terminated');
  });
  return true;
}
function attempt() {
  pending = false;
  if (!current()) return;
  if (terminate(${RUNNING})) return;
  if (Atomics.load(state, 0) !== ${REVOKED}) return;
  pending = true;
  setTimeout(() => { pending = false; if (current()) terminate(${REVOKED}); }, ${SETTLE_MS});
}
const pipe = new Socket({ fd, readable: true, writable: false });
pipe.on('data', (bytes) => {
  const run = Atomics.load(state, 1);
  if (!bytes.includes(run & 0xff)) return;
  target = run;
  if (!pending) { pending = true; setTimeout(attempt, ${REVOKE_MS}); }
});
pipe.on('error', () => {});
parentPort.postMessage('ready');
`;

let cell: Int32Array | undefined;
let onTerminated: (() => void) | undefined;
/** Run requests this carrier received, counted as the host counts those it sent. */
let requested = 0;

/** A run request arrived (every one, retained or not, in the order the host sent them). */
export function runRequested(): void {
  requested++;
  if (cell !== undefined) Atomics.store(cell, 1, requested);
}

/**
 * Starts the worker that reads interrupts from `fd`; `terminated` is called on this thread after V8
 * has stopped whatever the active run was doing. Call once, before the first retained run.
 */
export function watchInterrupts(fd: number, terminated: () => void): void {
  if (cell !== undefined) return;
  const shared = new SharedArrayBuffer(8);
  cell = new Int32Array(shared);
  Atomics.store(cell, 1, requested);
  onTerminated = terminated;
  // Loaded here, not at boot: node:worker_threads is ~1.5 ms of a carrier's start, and only a
  // retained run, before any of its program runs, gets here (a per-call carrier never does).
  const { Worker, MessageChannel } = requireBuiltin('node:worker_threads') as typeof import('node:worker_threads');
  const { port1, port2 } = new MessageChannel();
  port1.on('message', () => {
    if (Atomics.compareExchange(cell!, 0, TERMINATING, IDLE) === TERMINATING) onTerminated?.();
  });
  // Neither keeps an idle carrier's loop alive: its channel does.
  port1.unref();
  const worker = new Worker(WATCHER, { eval: true, workerData: { fd, cell: shared, port: port2 }, transferList: [port2 as unknown as MessagePort] });
  worker.on('error', () => {});
  worker.unref();
}

/** A run's program starts: from now on an interrupt terminates it. */
export function runStarted(): void {
  if (cell !== undefined) Atomics.store(cell, 0, RUNNING);
}

/** The host revoked the run: the worker gives it SETTLE_MS to finish by itself. */
export function runRevoked(): void {
  if (cell !== undefined) Atomics.compareExchange(cell, 0, RUNNING, REVOKED);
}

/**
 * The run is settling: true when it may, false when a termination is on its way, in which case
 * the run is settled as stopped once V8 has ended it (the `terminated` callback).
 */
export function runSettling(): boolean {
  if (cell === undefined) return true;
  const seen = Atomics.load(cell, 0);
  if (seen === TERMINATING) return false;
  // Only the worker changes a RUNNING or REVOKED cell behind this thread's back, to TERMINATING.
  return Atomics.compareExchange(cell, 0, seen, IDLE) === seen;
}
