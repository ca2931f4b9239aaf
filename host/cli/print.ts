// How `ptc run` prints a result: the program's output on stdout as it arrives, then the value on
// stdout, or the failure (and any hint) on stderr; with --json, one lossless JSON line instead.
import { inspect } from 'node:util';
import { jsonText, type Failure, type OutputEntry, type RunResult } from '../index.ts';

type Stream = NodeJS.WritableStream & { isTTY?: boolean };

/** The result as one line of lossless JSON: big integers as digits, -0 with its sign. */
export function resultJson(result: RunResult): string {
  // JSON.stringify writes -0 as 0; the carrier and the host keep the sign.
  return jsonText(result, { negativeZero: true }) ?? '';
}

/** Prints a run's output and outcome for a person. */
export class HumanPrinter {
  readonly #stdout: Stream;
  readonly #stderr: Stream;
  /** Whether stdout is at the start of a line: output cut short must not run into what follows. */
  #atLineStart = true;
  /** The text output so far, to tell whether a carrier's stderr tail was already shown. */
  #text = '';

  constructor(stdout: Stream, stderr: Stream) {
    this.#stdout = stdout;
    this.#stderr = stderr;
  }

  /** One output entry, as it arrives. */
  entry = (entry: OutputEntry): void => {
    this.#write(entry.type === 'text' ? entry.text : `[image ${entry.attachmentId} ${entry.width}x${entry.height} ${entry.path}]\n`);
  };

  /** The value on stdout, or the failure on stderr, after the output. */
  outcome(result: RunResult): void {
    if (result.status === 'ok') {
      if (result.value !== undefined) this.#write(`${this.#lineBreak()}${inspect(result.value, { depth: Infinity, colors: this.#stdout.isTTY === true })}\n`);
      if (result.hint !== undefined) this.#stderr.write(`ptc: hint: ${result.hint}\n`);
      return;
    }
    this.#write(this.#lineBreak());
    this.#stderr.write(`${failureLines(result.failure, this.#text).join('\n')}\n`);
  }

  #write(text: string): void {
    if (text === '') return;
    this.#stdout.write(text);
    this.#text += text;
    // Only the end matters for the stderr check; keep the held text bounded.
    if (this.#text.length > 1 << 16) this.#text = this.#text.slice(-(1 << 15));
    this.#atLineStart = text.endsWith('\n');
  }

  #lineBreak(): string {
    return this.#atLineStart ? '' : '\n';
  }
}

/** The lines `ptc run` prints on stderr for a failure; `shown` is the output already printed. */
export function failureLines(failure: Failure, shown: string): string[] {
  const lines = [`ptc: program failed (${failure.kind}): ${failure.message}`];
  if (failure.kind === 'exception' && failure.stack) lines.push(failure.stack);
  if (failure.binding) lines.push(`binding: ${failure.binding}${failure.code ? ` (code ${failure.code})` : ''}`);
  if (failure.path) lines.push(`path: ${failure.path}`);
  // Carrier stderr written during the run is part of its output and was printed with it.
  const tail = failure.stderrTail?.trim();
  if (tail && !shown.includes(tail)) lines.push('carrier stderr (tail):', tail);
  return lines;
}
