// What `ptc` says about an argument it does not know: one line naming it once, and the nearest
// known command or option when one is close (git's "did you mean", by edit distance).

/** The edit distance between two names: insertions, deletions, substitutions, and swaps of neighbours (Damerau's). */
export function editDistance(a: string, b: string): number {
  const rows: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) rows[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, rows[i - 2]![j - 2]! + 1);
      rows[i]![j] = best;
    }
  }
  return rows[a.length]![b.length]!;
}

/**
 * The candidate nearest to `name`, if it is near enough to be what was meant: at most two edits,
 * and fewer than the name has letters (so `ab` does not suggest every two-letter name).
 */
export function nearest(name: string, candidates: readonly string[]): string | undefined {
  let best: { candidate: string; distance: number } | undefined;
  for (const candidate of candidates) {
    const distance = editDistance(name.toLowerCase(), candidate.toLowerCase());
    if (best === undefined || distance < best.distance) best = { candidate, distance };
  }
  if (best === undefined || best.distance > 2 || best.distance >= name.length) return undefined;
  return best.candidate;
}

/** The options in `argv` (names as yargs reports them, without dashes) that none of `options` is. */
export function unknownOptions(argv: readonly string[], options: readonly string[]): string[] {
  const known = new Set(options.map(kebab));
  const unknown: string[] = [];
  for (const token of argv) {
    if (token === '--') break;
    const match = /^--?([A-Za-z][\w-]*)(=|$)/.exec(token);
    if (match === null) continue;
    const name = kebab(match[1]!);
    if (!known.has(name) && !(name.startsWith('no-') && known.has(name.slice(3)))) unknown.push(name.startsWith('no-') ? name.slice(3) : name);
  }
  return unknown;
}

const kebab = (name: string): string => name.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`);

/**
 * The line for yargs' failure "Unknown argument(s): a, b", whose names are `unknown`. `argv` is
 * what was typed, `options` the options the command being parsed declares (aliases included),
 * `commands` the command names when no command was recognised (a word is then an unknown
 * command), else undefined, and `command` the words that name the command (`ptc run`).
 */
export function unknownArgumentLine(unknown: readonly string[], argv: readonly string[], options: readonly string[], commands: readonly string[] | undefined, command: string): string {
  const unknownNames = new Set(unknown.map(kebab));
  const longOptions = options.filter((option) => option.length > 1).map(kebab);
  for (const token of argv) {
    if (token === '--') break;
    const match = /^(--?)([A-Za-z][\w-]*)(=|$)/.exec(token);
    if (match === null) continue;
    const name = kebab(match[2]!);
    // --no-x negates a boolean --x (yargs reports it as x): suggest the negation of the option meant.
    const negated = name.startsWith('no-') && !unknownNames.has(name) ? 'no-' : '';
    if (!unknownNames.has(name.slice(negated.length))) continue;
    const typed = `${match[1]}${match[2]}`;
    const suggestion = nearest(name.slice(negated.length), longOptions);
    if (suggestion !== undefined) return `unknown option ${typed} (did you mean --${negated}${suggestion}?)`;
    return `unknown option ${typed} (${command} --help lists the options)`;
  }
  const word = unknown.find((name) => argv.includes(name)) ?? unknown[0] ?? '';
  if (commands !== undefined) {
    const suggestion = nearest(word, commands);
    if (suggestion !== undefined) return `unknown command ${JSON.stringify(word)} (did you mean ${JSON.stringify(suggestion)}?)`;
    return `unknown command ${JSON.stringify(word)} (commands: ${commands.join(', ')})`;
  }
  return `unexpected argument ${JSON.stringify(word)} (${command} --help says what it takes)`;
}
