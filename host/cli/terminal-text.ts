// Text a program chose, made safe to show on a terminal. A terminal obeys the control characters
// in what it is given: ESC and the C1 controls start sequences that set the clipboard (OSC 52) or
// the window title, move the cursor and erase lines, and CR or backspace move back over what is
// on the line. A program that can send them can erase ptc's own failure line and print a success
// line in its place. So, as `cat -v` and `less` (without -R) do, every control character is shown
// as printable text instead: C0 controls in caret notation (ESC as ^[), DEL as ^?, the C1 controls
// U+0080..U+009F (which some terminals obey as ESC + a letter) as M-^X, the spelling `cat -v` uses
// for the byte. Newline and tab are kept, and CR only right before a newline (a CRLF line end
// overwrites nothing). Each character is judged alone, so a sequence split between two chunks of
// output is as visible as a whole one; only a CR at a chunk's end waits for the next chunk, to
// see whether a newline follows. This is for terminals only: with --json, a pipe or a file the
// program's bytes are data and pass exactly.
import { inspect } from 'node:util';

/** What showControls returns: the text to write, and a CR held back until the next chunk (or ''). */
export interface Shown {
  text: string;
  held: string;
}

export interface ShowOptions {
  /** The last chunk: a CR at its end is shown now rather than held. @default true */
  final?: boolean;
  /** Keep the colour sequences Node's inspect() writes (ESC [ n m for the n its default styles use), and reset the colour after them. @default false */
  keepColors?: boolean;
}

/** The SGR parameters of inspect()'s default styles, opening and closing: colours, bold, underline. No others (conceal, reverse, background) pass. */
const INSPECT_SGR: ReadonlySet<string> = new Set(
  Object.values(inspect.styles).flatMap((style) => (inspect.colors[style as keyof typeof inspect.colors] ?? []).map(String)),
);
const SGR = /^\x1b\[(\d{1,3})m/;
const RESET = '\x1b[0m';

/** `text` with every control character a terminal would obey shown visibly (see the file's comment). */
export function showControls(text: string, options: ShowOptions = {}): Shown {
  const final = options.final ?? true;
  let shown = '';
  let coloured = false;
  let start = 0;
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (!isControl(code)) continue;
    if (code === 0x0a || code === 0x09) continue;
    if (code === 0x0d) {
      if (text.charCodeAt(index + 1) === 0x0a) continue;
      if (index === text.length - 1 && !final) {
        return { text: shown + text.slice(start, index) + (coloured ? RESET : ''), held: '\r' };
      }
    }
    if (code === 0x1b && options.keepColors === true) {
      const sgr = SGR.exec(text.slice(index, index + 7));
      if (sgr !== null && INSPECT_SGR.has(sgr[1]!)) {
        coloured = true;
        index += sgr[0].length - 1;
        continue;
      }
    }
    shown += text.slice(start, index) + visible(code);
    start = index + 1;
  }
  return { text: shown + text.slice(start) + (coloured ? RESET : ''), held: '' };
}

function isControl(code: number): boolean {
  return code < 0x20 || code === 0x7f || (code >= 0x80 && code <= 0x9f);
}

function visible(code: number): string {
  if (code === 0x7f) return '^?';
  if (code >= 0x80) return `M-^${String.fromCharCode(code - 0x80 + 0x40)}`;
  return `^${String.fromCharCode(code + 0x40)}`;
}

/** Streams chunks of program text to a terminal through showControls, holding a trailing CR between chunks; with `exact`, passes them as they are. */
export class TerminalText {
  readonly #exact: boolean;
  #held = '';

  constructor(exact: boolean) {
    this.#exact = exact;
  }

  /** One chunk, as it should be written now. */
  chunk(text: string): string {
    if (this.#exact) return text;
    const shown = showControls(this.#held + text, { final: false });
    this.#held = shown.held;
    return shown.text;
  }

  /** What is still held (a CR with nothing after it), shown: call before writing anything else. */
  flush(): string {
    const held = this.#held;
    this.#held = '';
    return held === '' ? '' : showControls(held).text;
  }

  /** A whole piece of text (a value, a failure line), not part of the stream. */
  whole(text: string, keepColors = false): string {
    return this.#exact ? text : showControls(text, { keepColors }).text;
  }
}
