// A program that can never finish: its run is still pending, and nothing is left that could call
// back into it. Node already answers "is anything left?" for every process: its event loop stays
// alive while a ref'd handle (timer, socket, server, child process, worker, listening MessagePort)
// or request (file operation, DNS lookup, write) remains, and emits 'beforeExit' when none does.
// The carrier's own control socket is the one handle that would keep it alive regardless, so while
// a run is active and no host call (binding, initializer, image) waits for a reply, that socket is
// unref'd: 'beforeExit' then means exactly "nothing but ptc itself is pending". The check costs a
// normal program nothing; Node makes it anyway.
//
// What counts follows Node's own rule for keeping a process alive, so an unref'd timer or handle
// does not keep a run waiting (it would not keep `node program.js` waiting either), nor does a
// FinalizationRegistry callback (garbage collection is not something to wait for). One exception
// to Node's rule is made: Atomics.waitAsync with a timeout (see holdWaitAsync), which a process
// would abandon but which does settle by itself.
import { Socket } from 'node:net';
import { apply, defineProperty, then } from '../hardening/intrinsics.ts';

export const STALL_MESSAGE =
  'ptc: the program is waiting on a promise that nothing can settle: no binding call, timer, I/O or child process is pending';

export interface StallWatch {
  /** Watches the active run: `onStall` is called when nothing but the carrier itself is pending. */
  arm(onStall: () => void): void;
  /** The run ended: the control socket keeps the carrier alive for the next request again. */
  disarm(): void;
  /** A host call started or got its reply: while one is in flight, the reply can still come. */
  update(): void;
}

const processOn = process.on;
const setTimer = setTimeout;
const clearTimer = clearTimeout;
// Captured before any program exists: a program may replace net.Socket.prototype.ref.
const { ref, unref } = Socket.prototype;
const socketRef = (socket: Socket): unknown => apply(ref, socket, []);
const socketUnref = (socket: Socket): unknown => apply(unref, socket, []);
const heldRealms: object[] = [];

/** Installs the 'beforeExit' listener once; `callsInFlight` counts host calls awaiting a reply. */
export function createStallWatch(control: Socket, callsInFlight: () => number): StallWatch {
  let onStall: (() => void) | undefined;
  let held = true;
  const update = (): void => {
    const hold = onStall === undefined || callsInFlight() > 0;
    if (hold === held) return;
    held = hold;
    if (hold) socketRef(control);
    else socketUnref(control);
  };
  apply(processOn, process, [
    'beforeExit',
    () => {
      const stalled = callsInFlight() === 0 ? onStall : undefined;
      onStall = undefined;
      // Whatever happens next, the carrier stays up for the host: it is the run that failed.
      held = true;
      socketRef(control);
      stalled?.();
    },
  ]);
  return {
    __proto__: null,
    arm(callback) {
      onStall = callback;
      update();
    },
    disarm() {
      onStall = undefined;
      update();
    },
    update,
  } as StallWatch;
}

/**
 * Node does not keep a process alive for Atomics.waitAsync, yet one with a finite timeout settles
 * by itself; a ref'd timer of the same length (cleared when it settles) makes the wait count as
 * pending. Without a timeout only another thread can wake it, and that thread (a Worker) is itself
 * a handle that keeps the run waiting. Installed on each realm the programs run in.
 */
export function holdWaitAsync(realm: object): void {
  const atomics = (realm as { Atomics?: { waitAsync?: (...args: unknown[]) => unknown } }).Atomics;
  const waitAsync = atomics?.waitAsync;
  if (atomics === undefined || typeof waitAsync !== 'function') return;
  for (let index = 0; index < heldRealms.length; index++) if (heldRealms[index] === atomics) return;
  heldRealms[heldRealms.length] = atomics;
  const wrapped = {
    waitAsync(...args: unknown[]): unknown {
      const result = apply(waitAsync, atomics, args) as { async?: unknown; value?: unknown };
      const timeout = Number(args[3]);
      if (result?.async === true && timeout >= 0 && timeout < Infinity) {
        // V8 settles the wait on its own clock, which may run a little after a timer of the same
        // length: the hold re-arms briefly until the promise has settled.
        let settled = false;
        let timer: ReturnType<typeof setTimeout>;
        const hold = (delay: number): void => {
          timer = setTimer(() => settled || hold(10), delay);
        };
        hold(timeout);
        const release = (): void => {
          settled = true;
          clearTimer(timer);
        };
        then(result.value as Promise<unknown>, release, release);
      }
      return result;
    },
  }.waitAsync;
  defineProperty(atomics, 'waitAsync', { __proto__: null, value: wrapped, writable: true, configurable: true, enumerable: false } as PropertyDescriptor);
}
