// The run's elapsed deadline, which stops counting while the run waits for a person: an approval
// can take hours, and the deadline bounds the program, not the approver (the approval timeout
// bounds the approver). CPU time is not paused: the carrier's cpuTimeMs budget keeps counting
// whatever the program computes while a call waits, so pausing the clock frees no computation.

export interface Deadline {
  /** Stops the clock until the returned release is called; holds nest (several calls may wait at once). */
  hold(): () => void;
  /** Ends the deadline for good. */
  clear(): void;
}

/** Calls `expire` once `ms` of unheld time have passed; null ms never expires. */
export function startDeadline(ms: number | null, expire: () => void): Deadline {
  if (ms === null) return { hold: () => () => {}, clear: () => {} };
  let remaining = ms;
  let startedAt = performance.now();
  let timer: NodeJS.Timeout | undefined = setTimeout(expire, remaining);
  let holds = 0;
  let cleared = false;
  return {
    hold() {
      if (holds++ === 0 && timer !== undefined) {
        clearTimeout(timer);
        timer = undefined;
        remaining -= performance.now() - startedAt;
      }
      let released = false;
      return () => {
        if (released) return;
        released = true;
        if (--holds === 0 && !cleared) {
          startedAt = performance.now();
          timer = setTimeout(expire, Math.max(0, remaining));
        }
      };
    },
    clear() {
      cleared = true;
      clearTimeout(timer);
      timer = undefined;
    },
  };
}
