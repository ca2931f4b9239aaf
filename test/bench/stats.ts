// Helpers every bench section shares: quantiles, interleaved timing and the fixed-width figures.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
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

/** A row of issue 11's speed table: the figure, the floor it is divided by, and the target. */
export interface TableRow {
  row: string;
  what: string;
  figure: string;
  floor: string;
  ratio: number;
  target: { max: number } | { min: number };
}

const table: TableRow[] = [];

export const passes = (value: number, target: TableRow['target']): boolean => ('max' in target ? value <= target.max : value >= target.min);
export const goal = (target: TableRow['target']): string => ('max' in target ? `≤ ${target.max}` : `≥ ${target.min}`);

/** "ratio 2.31  target ≤ 1.5  MISS"; with a row letter the figure is also kept for the closing table. */
export function judge(value: number, target: TableRow['target'], row?: Omit<TableRow, 'ratio' | 'target'>): string {
  if (row !== undefined) table.push({ ...row, ratio: value, target });
  return `ratio ${value.toFixed(2).padStart(5)}  target ${goal(target)}  ${passes(value, target) ? 'PASS' : 'MISS'}`;
}

/** The closing summary: every table row this run measured, in the order. */
export function printTable(missing: Array<[string, string]>): void {
  console.log('\nissue 11 §2, every row: figure, floor measured in this run, ratio, target');
  const rows = [...table, ...missing.map(([row, why]) => ({ row, why }))].sort((a, b) => a.row.localeCompare(b.row));
  for (const entry of rows) {
    if ('why' in entry) console.log(`  (${entry.row}) ${entry.why}`);
    else {
      const verdict = passes(entry.ratio, entry.target) ? 'PASS' : 'MISS';
      console.log(`  (${entry.row}) ${entry.what.padEnd(44)} ${entry.figure.padStart(12)} / ${entry.floor.padStart(12)} = ${entry.ratio.toFixed(2).padStart(5)}  ${goal(entry.target).padEnd(6)} ${verdict}`);
    }
  }
}

/** Rows this run measured, by letter. */
export const measuredRows = (): Set<string> => new Set(table.map((entry) => entry.row));

/** Spawns a process, drains its stdout, and resolves with it once the process has exited with 0. */
export async function exec(file: string, args: string[], env?: NodeJS.ProcessEnv): Promise<string> {
  const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'inherit'], ...(env ? { env } : {}) });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  const [code] = await once(child, 'close');
  if (code !== 0) throw new Error(`${file} ${args.join(' ')} exited with ${code}`);
  return out;
}
