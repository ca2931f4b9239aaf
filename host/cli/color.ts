// Whether ptc colours what it prints, decided as Node decides for console.log, in one place for
// `ptc run` and `ptc repl`: FORCE_COLOR first (empty, 1, 2, 3 or true force colour even into a
// pipe; any other value, 0 among them, turns it off), then no colour off a terminal, nor with
// NO_COLOR set to anything but the empty string (no-color.org), NODE_DISABLE_COLORS, or TERM=dumb.

/** Whether text written to `stream` gets ANSI colours, given the environment `env`. */
export function colorEnabled(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv = process.env): boolean {
  const force = env.FORCE_COLOR;
  if (force !== undefined) return ['', '1', '2', '3', 'true'].includes(force);
  if (stream.isTTY !== true) return false;
  if ((env.NO_COLOR ?? '') !== '' || env.NODE_DISABLE_COLORS !== undefined) return false;
  return env.TERM !== 'dumb';
}
