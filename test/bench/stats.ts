// Helpers every bench section shares: quantiles, interleaved timing and the fixed-width figures.
import { setTimeout as sleep } from 'node:timers/promises';

/** Idle time before each measurement, so a spare carrier that the previous run started (prestartCarrier)
 * has booted: it then neither competes with the next measurement for CPU nor is taken half-booted. */
export const SETTLE_MS = 100;

export function quantile(samples: number[], q: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (sorted.length - 1) * q;
  const low = Math.floor(at);
  return sorted[low]! + (sorted[Math.ceil(at)]! - sorted[low]!) * (at - low);
}
export const median = (samples: number[]): number => quantile(samples, 0.5);
export const p90 = (samples: number[]): number => quantile(samples, 0.9);
export const mean = (samples: number[]): number => samples.reduce((sum, x) => sum + x, 0) / samples.length;
export const ratio = (value: number, floor: number): number => value / floor;

export const ms = (value: number, digits = 1): string => `${value.toFixed(digits)} ms`.padStart(10);
export const pad = (label: string): string => `  ${label.padEnd(26)}`;

export async function timed(fn: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await fn();
  return performance.now() - start;
}

/** Runs every case once per round, rotating the order, so machine noise lands on all of them alike. */
export async function interleave(
  cases: Record<string, () => Promise<unknown>>,
  { warmups = 3, iterations = 30 } = {},
): Promise<Record<string, number[]>> {
  const names = Object.keys(cases);
  const samples: Record<string, number[]> = Object.fromEntries(names.map((name) => [name, []]));
  for (let round = 0; round < warmups + iterations; round++) {
    for (let k = 0; k < names.length; k++) {
      const name = names[(round + k) % names.length]!;
      await sleep(SETTLE_MS);
      const elapsed = await timed(cases[name]!);
      if (round >= warmups) samples[name]!.push(elapsed);
    }
  }
  return samples;
}
