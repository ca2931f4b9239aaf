// Stands in for the `string-width` package in the bundled CLI. yargs only measures its --help
// columns with it, and the real package compiles large Unicode-property regexes and an
// Intl.Segmenter when it loads, which cost ~50 ms on every `ptc` start, --help or not.
// This counts terminal columns well enough for help text: ANSI codes and combining marks take
// none, East Asian wide characters and emoji two, everything else one.

const ANSI = /\x1b\[[0-9;]*[A-Za-z]/g;

const WIDE: Array<[number, number]> = [
  [0x1100, 0x115f], [0x2e80, 0x303e], [0x3041, 0x33ff], [0x3400, 0x4dbf], [0x4e00, 0x9fff],
  [0xa000, 0xa4cf], [0xac00, 0xd7a3], [0xf900, 0xfaff], [0xfe30, 0xfe4f], [0xff00, 0xff60],
  [0xffe0, 0xffe6], [0x1f300, 0x1f64f], [0x1f900, 0x1f9ff], [0x20000, 0x3fffd],
];

export default function stringWidth(text: string): number {
  if (typeof text !== 'string' || text === '') return 0;
  let width = 0;
  for (const character of text.replace(ANSI, '')) {
    const code = character.codePointAt(0)!;
    if (code < 0x20 || (code >= 0x7f && code < 0xa0) || (code >= 0x300 && code < 0x370) || code === 0x200b) continue;
    width += WIDE.some(([low, high]) => code >= low && code <= high) ? 2 : 1;
  }
  return width;
}
