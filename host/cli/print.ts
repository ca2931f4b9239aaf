// How `ptc run` prints a result: the program's output as it arrives (what it wrote to stderr on
// stderr, the rest on stdout), then the value on
// stdout, or the failure (and any hint) on stderr; with --json, one lossless JSON line instead.
// On a terminal, every piece of text a program chose is shown with its control characters visible
// (terminal-text.ts); piped or redirected, it passes exactly.
import { inspect } from 'node:util';
import { jsonText, type Failure, type OutputEntry, type RunResult } from '../index.ts';
import { TerminalText } from './terminal-text.ts';

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
  readonly #out: TerminalText;
  readonly #err: TerminalText;
  /** Whether stdout is at the start of a line: output cut short must not run into what follows. */
  #atLineStart = true;
  /** The text output so far, to tell whether a carrier's stderr tail was already shown. */
  #text = '';
  /** Whether the value is coloured (color.ts decides). */
  readonly #colors: boolean;

  constructor(stdout: Stream, stderr: Stream, colors: boolean) {
    this.#stdout = stdout;
    this.#colors = colors;
    this.#stderr = stderr;
    this.#out = new TerminalText(stdout.isTTY !== true);
    this.#err = new TerminalText(stderr.isTTY !== true);
  }

  /** One output entry, as it arrives. */
  entry = (entry: OutputEntry): void => {
    if (entry.type === 'text' && entry.stream === 'stderr') this.#writeError(entry.text);
    else if (entry.type === 'text') this.#write(entry.text, this.#out.chunk(entry.text));
    else this.#write(`${this.#out.flush()}${this.#out.whole(imageLine(entry))}\n`);
  };

  /** The value on stdout, or the failure on stderr, after the output. */
  outcome(result: RunResult): void {
    this.#write(this.#out.flush());
    const held = this.#err.flush();
    if (held !== '') this.#stderr.write(held);
    if (result.status === 'ok') {
      if (result.value !== undefined) this.#write(`${this.#lineBreak()}${this.#out.whole(inspect(result.value, { depth: Infinity, colors: this.#colors }), true)}\n`);
      if (result.hint !== undefined) this.#stderr.write(`ptc: hint: ${this.#err.whole(result.hint)}\n`);
      return;
    }
    this.#write(this.#lineBreak());
    this.#stderr.write(`${failureLines(result.failure, this.#text, (text) => this.#err.whole(text)).join('\n')}\n`);
  }

  /** Writes `shown` (what the terminal gets); `text` is the program's own, kept for the stderr-tail check. */
  #write(text: string, shown = text): void {
    if (text === '') return;
    this.#stdout.write(shown);
    this.#text += text;
    // Only the end matters for the stderr check; keep the held text bounded.
    if (this.#text.length > 1 << 16) this.#text = this.#text.slice(-(1 << 15));
    this.#atLineStart = text.endsWith('\n');
  }

  /** What the program wrote to its stderr, on ptc's stderr: kept for the stderr-tail check too. */
  #writeError(text: string): void {
    this.#stderr.write(this.#err.chunk(text));
    this.#text += text;
    if (this.#text.length > 1 << 16) this.#text = this.#text.slice(-(1 << 15));
  }

  #lineBreak(): string {
    return this.#atLineStart ? '' : '\n';
  }
}

/** How an image entry is listed: its id, size and path (a name the program chose). */
export function imageLine(entry: Extract<OutputEntry, { type: 'image' }>): string {
  return `[image ${entry.attachmentId} ${entry.width}x${entry.height} ${entry.path}]`;
}

/**
 * The lines `ptc run` prints on stderr for a failure; `shown` is the output already printed.
 * `program` shows a piece of text the program chose (its message, stack, the names in the
 * failure): on a terminal with its control characters visible, so ptc's own words stay intact.
 */
export function failureLines(failure: Failure, shown: string, program: (text: string) => string = (text) => text): string[] {
  const lines = [`ptc: program failed (${failure.kind}): ${program(failure.message)}`];
  if (failure.kind === 'exception' && failure.stack) lines.push(program(failure.stack));
  if (failure.binding) lines.push(`binding: ${program(failure.binding)}${failure.code ? ` (code ${program(failure.code)})` : ''}`);
  if (failure.path) lines.push(`path: ${program(failure.path)}`);
  // Carrier stderr written during the run is part of its output and was printed with it.
  const tail = failure.stderrTail?.trim();
  if (tail && !shown.includes(tail)) lines.push('carrier stderr (tail):', program(tail));
  return lines;
}
