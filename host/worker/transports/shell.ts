// Quoting for the POSIX shell that runs a remote command (ssh hands its command line to the
// remote user's shell as one string).

/** `value` as one single-quoted shell word. */
export function shellQuote(value: string): string {
  return /^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`;
}

/** A command line of quoted words. */
export function shellLine(words: string[]): string {
  return words.map(shellQuote).join(' ');
}
