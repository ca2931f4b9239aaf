// The one path by which text from a tool's author (an MCP upstream, a `ptc serve` client) enters
// the declarations a model reads: inside a JSDoc block, an inline or a line comment, or a string
// literal. Whatever the text holds, it stays inside what it was put in: it cannot close the
// comment, end the line, or hide behind characters a reader does not see.

// Characters a reader would not see, or that reorder what is shown (Trojan Source's bidi
// controls, CVE-2021-42574): C0 and C1 controls except tab, zero-widths, and the bidi overrides.
// Line terminators are handled by each context before this.
const HIDDEN = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb]/g;
/** Everything ECMAScript ends a line at (ECMA-262 12.3), which also ends a `//` comment. */
const LINE_BREAK = /\r\n|[\n\r\u2028\u2029]/;
const LINE_BREAKS = /\r\n|[\n\r\u2028\u2029]/g;

function visible(text: string): string {
  return text.replace(HIDDEN, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** Text for inside `/* … *\/` or a JSDoc line: one line, hidden characters shown as escapes, and no `*\/`. */
function commentLine(text: string): string {
  return visible(text).replaceAll('*/', '*\\/');
}

/** The body of an inline `/* … *\/` comment: on one line, since a line break inside a type can change how it parses (`[T /*…\n*\/?]`). */
export function inlineComment(text: string): string {
  return commentLine(String(text).replace(LINE_BREAKS, ' '));
}

/** A `// …` comment of one line, whatever the text holds. */
export function lineComment(text: string, pad = ''): string {
  return `${pad}// ${visible(String(text).replace(LINE_BREAKS, ' '))}`;
}

/** A JSDoc block of `lines` (each may hold line breaks of its own), or '' when there is nothing to say. */
export function docBlock(lines: readonly string[], pad: string): string {
  const text = lines.flatMap((line) => String(line).split(LINE_BREAK)).map((line) => commentLine(line.trimEnd()));
  while (text.length > 0 && text.at(-1) === '') text.pop();
  if (text.length === 0) return '';
  if (text.length === 1) return `${pad}/** ${text[0]} */\n`;
  return `${pad}/**\n${text.map((line) => `${pad} *${line === '' ? '' : ` ${line}`}`).join('\n')}\n${pad} */\n`;
}

/**
 * A string literal (a property key, a `const`): JSON's escapes, plus the line and paragraph
 * separators that JSON leaves raw and the hidden characters above.
 */
export function stringLiteral(text: string): string {
  return literalType(String(text))!;
}

/** A JSON value as TypeScript literal-type text (strings, numbers, booleans, null, object and tuple types), or undefined when JSON has none. */
export function literalType(value: unknown): string | undefined {
  const text = JSON.stringify(value);
  if (text === undefined) return undefined;
  // JSON leaves U+2028/2029 and hidden characters raw inside strings; outside strings JSON text has none.
  return visible(text.replace(/[\u2028\u2029]/g, (char) => `\\u${char.charCodeAt(0).toString(16)}`));
}

/**
 * A Markdown code fence that `text` cannot close: one backtick longer than the longest run of
 * backticks in it, and at least three (CommonMark 4.5).
 */
export function codeFence(text: string): string {
  let longest = 0;
  for (const run of text.matchAll(/`+/g)) longest = Math.max(longest, run[0].length);
  return '`'.repeat(Math.max(3, longest + 1));
}
