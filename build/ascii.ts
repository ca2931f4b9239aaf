// The bundles are written in ASCII. V8 holds a script's source for as long as any of its functions
// lives (a lazily compiled function is compiled from it at its first call), as one byte a character
// when every character is Latin-1 and as two otherwise; a single "—" in a comment of a bundled
// dependency made every carrier hold its whole bundle at two bytes a character (dist/ptc's 2.1 MB
// script as 4.4 MB in each embedded carrier, measured). esbuild's charset 'ascii' escapes strings,
// template literals, regular expressions and identifiers; the comments it keeps are left as they
// are, so what is still outside ASCII after it is in a comment, where an escape's text is harmless.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type * as esbuild from 'esbuild';

/** The options that make esbuild return, not write, its output in ASCII (write it with writeAscii). */
export const ASCII_OUTPUT = { charset: 'ascii', write: false } as const satisfies esbuild.BuildOptions;

/** `text` with every character outside ASCII written as its \u escape (each UTF-16 unit). */
export function asciiText(text: string): string {
  return text.replace(/[^\x00-\x7f]/g, (unit) => `\\u${unit.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** Writes esbuild's output files, built with ASCII_OUTPUT, in ASCII. */
export function writeAscii(files: readonly esbuild.OutputFile[]): void {
  for (const file of files) {
    mkdirSync(dirname(file.path), { recursive: true });
    writeFileSync(file.path, asciiText(file.text));
  }
}
