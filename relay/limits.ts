// cpuTimeMs, maxMemoryMb and the task limit for a carrier behind this relay: its process tree is on this machine,
// so it is measured here, with the code the host uses for a local carrier (protocol/resources/),
// and killed here the moment it is over, without waiting for a round trip to the host. The host
// learns why from a frame (T: the CPU budget, M: the memory or task limit) or from the exit (X carries
// overLimit when the tree died of one), and builds the same failure as for a local run. The relay
// runs as whatever user ssh logs in as: cgroups where that user may make them, else the watchdog.
import { hostname } from 'node:os';
import { ResourceGuard, type CpuOverrun, type OverLimit } from '../supervision/resources/guard.ts';
import { procAvailable } from '../supervision/resources/proc.ts';

export interface RelayLimits {
  readonly memory: ResourceGuard['memory'];
  readonly tasks: ResourceGuard['tasks'];
  readonly cpu: ResourceGuard['cpu'];
  /** A run starts (W frame): CPU counts from now against `cpuTimeMs`, memory is sampled at the busy pace. */
  begin(cpuTimeMs: number | null): void;
  /** The run ended (D frame). */
  end(): void;
  /** Before a control frame of the carrier's goes to the host: a last look, so a budget spent between
   * two samples is reported ahead of the completion that follows it, as the host's own last look does.
   * True when the kernel kept a limit since the last look: the tree is being killed, and the frame
   * must not reach the host (the exit says why). */
  beforeControl(): boolean;
  /** The carrier exited: when the kernel killed it for a limit, the host hears it now (M, with
   * `idle`), so a run it sent meanwhile is run again in a fresh carrier instead of failing. */
  exited(): void;
  /** Why the tree died of its memory or task limit, if it did. */
  overLimit(): OverLimit | undefined;
  release(): void;
}

/** Why a limit cannot be measured here, or undefined when it can. */
export function limitsUnavailable(field: 'cpuTimeMs' | 'maxMemoryMb'): string | undefined {
  return procAvailable() ? undefined : `${field} needs Linux's /proc to measure the carrier's process tree, which ${hostname()} (${process.platform}) does not have`;
}

/** The limits of the carrier `pid`; `send` reports an overrun to the host, `kill` kills the tree. */
export function relayLimits(pid: number, maxMemoryMb: number | null, send: (type: 'T' | 'M', payload: Buffer) => void, kill: () => void): RelayLimits {
  // The disk is the relay's own watch (relay.ts), so this guard measures CPU and memory only.
  const guard = new ResourceGuard(pid, { maxMemoryMb, maxDiskMb: null, writable: [] }, () => {
    const over = guard.overLimit();
    const message = over?.message ?? `the carrier's process tree went over its maxMemoryMb limit of ${maxMemoryMb} MiB`;
    // `idle`: no run had begun here (the host sends W ahead of a run's request), so a request the
    // host has sent since never reached the carrier, and the host may run it in a fresh one.
    send('M', Buffer.from(JSON.stringify({ message, idle: watch === undefined, ...(over?.maxTasks === undefined ? {} : { maxTasks: over.maxTasks }) })));
    kill();
  });
  let watch: ReturnType<ResourceGuard['watch']> | undefined;
  const overrun = (over: CpuOverrun): void => {
    watch?.stop();
    watch = undefined;
    kill();
    send('T', Buffer.from(JSON.stringify(over)));
  };
  return {
    memory: guard.memory,
    tasks: guard.tasks,
    cpu: guard.cpu,
    begin(cpuTimeMs) {
      watch?.stop();
      watch = undefined;
      // The kernel may have killed the idle tree for a limit before this relay saw its exit: the
      // host hears it as idle, and runs the request it sent in a fresh carrier.
      if (guard.checkLimits()) return;
      const unavailable = cpuTimeMs === null ? undefined : limitsUnavailable('cpuTimeMs');
      if (unavailable !== undefined) {
        // Never run a budget that nothing counts: the run ends, and the host's stderr tail says why.
        process.stderr.write(`ptc relay: ${unavailable}\n`);
        return kill();
      }
      watch = guard.watch(cpuTimeMs, overrun);
      // The carrier's own `started` notice goes to the host unread, so the budget counts from the run's start here.
      watch.started?.();
    },
    end() {
      watch?.stop();
      watch = undefined;
    },
    beforeControl() {
      const over = watch?.check();
      if (over !== undefined) {
        overrun(over);
        return false;
      }
      // A limit the kernel kept since the guard's last look (v1 kills one task, which the program may outlive).
      return guard.checkLimits();
    },
    exited() {
      guard.checkLimits();
    },
    overLimit: () => guard.overLimit(),
    release: () => guard.release(),
  };
}
