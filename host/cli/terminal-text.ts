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
const RESET = '\x1b[0m';
/** A CR not before a newline, or any other control but newline and tab. */
const CONTROLS = /\r(?!\n)|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]/g;
/** The same, or a colour sequence, to keep inspect()'s. */
const CONTROLS_OR_COLOUR = /\x1b\[(\d{1,3})m|\r(?!\n)|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]/g;
/** How each control shows, by code (0x00..0x9f), built once: a program's output may be all controls. */
const SHOWN: readonly string[] = Array.from({ length: 0xa0 }, (_, code) => visible(code));
const show = (match: string): string => SHOWN[match.charCodeAt(0)]!;

/** `text` with every control character a terminal would obey shown visibly (see the file's comment). */
export function showControls(text: string, options: ShowOptions = {}): Shown {
  // A CR at the end of a chunk may be the first half of a CRLF: it waits for the next chunk.
  const held = options.final === false && text.endsWith('\r') ? '\r' : '';
  const body = held === '' ? text : text.slice(0, -1);
  if (options.keepColors !== true) return { text: body.replace(CONTROLS, show), held };
  let coloured = false;
  const shown = body.replace(CONTROLS_OR_COLOUR, (match: string, sgr: string | undefined) => {
    if (sgr === undefined) return show(match);
    if (!INSPECT_SGR.has(sgr)) return `^[${match.slice(1)}`;
    coloured = true;
    return match;
  });
  return { text: coloured ? shown + RESET : shown, held };
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
