// The table `npm run bench` ends with (issue 19): each row's figure, the floor it is divided by
// (measured in the same run), the ratio, the target, and PASS or MISS. A row without a target is
// a reference, such as a peer runtime measured beside ptc; a row that could not be measured
// says why in place of its figure.

/** A target on a ratio: at most `max`, or at least `min`. */
export type Target = { max: number } | { min: number };

export interface TargetRow {
  workload: string;
  /** The measured figure as printed ("38.1 ms", "4,512 /s"), or why it was not measured. */
  figure: string;
  /** The floor it is divided by, as printed, with what it is ("25.3 ms node -e 0"). */
  floor: string;
  /** figure ÷ floor; undefined when the row was not measured. */
  ratio: number | undefined;
  /** Undefined for a reference row (a peer), which is shown but not judged. */
  target: Target | string | undefined;
  /** Whether the ratio meets the target; undefined for reference rows and rows not measured. */
  pass: boolean | undefined;
}

export const meets = (ratio: number, target: Target): boolean => ('max' in target ? ratio <= target.max : ratio >= target.min);

const goal = (target: TargetRow['target']): string => {
  if (target === undefined) return 'peer';
  if (typeof target === 'string') return target;
  return 'max' in target ? `≤ ${target.max}` : `≥ ${target.min}`;
};

/** A measured row, judged against its target (a reference row when target is undefined). */
export function targetRow(workload: string, figure: string, floor: string, ratio: number, target: Target | undefined): TargetRow {
  return { workload, figure, floor, ratio, target, pass: target === undefined ? undefined : meets(ratio, target) };
}

/** A row this run could not measure, with the reason in place of its figure. */
export function skippedRow(workload: string, reason: string, target?: Target): TargetRow {
  return { workload, figure: `skipped: ${reason}`, floor: '', ratio: undefined, target, pass: undefined };
}

/** Prints the table; `notes` (the measured reason for each MISS, what it would take) follow it. */
export function printTargets(rows: TargetRow[], notes: string[] = []): void {
  console.log('\nissue 19: every row with its figure, the floor measured in this run, the ratio and the target');
  const width = Math.max(...rows.map((row) => row.workload.length), 20);
  for (const row of rows) {
    const verdict = row.pass === undefined ? (row.ratio === undefined ? '' : '(reference)') : row.pass ? 'PASS' : 'MISS';
    if (row.ratio === undefined) {
      console.log(`  ${row.workload.padEnd(width)}  ${row.figure}`);
      continue;
    }
    console.log(`  ${row.workload.padEnd(width)}  ${row.figure.padStart(11)} / ${row.floor.padEnd(22)} = ${row.ratio.toFixed(2).padStart(6)}  ${goal(row.target).padEnd(6)} ${verdict}`);
  }
  if (notes.length > 0) {
    console.log('\n  closing note:');
    for (const note of notes) console.log(`  - ${note}`);
  }
}
