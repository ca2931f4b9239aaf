// Where `ptc repl` keeps what was typed between sessions, as Node's REPL keeps ~/.node_repl_history:
// PTC_REPL_HISTORY names the file (empty: keep none), else $XDG_STATE_HOME/ptc/repl_history when
// XDG_STATE_HOME is set, else ~/.ptc_repl_history. The file is private (mode 0600) and holds the
// newest 1000 lines, one a line. A line the file cannot hold as it was typed (a control character,
// which would end or garble its line on reading back) or one longer than MAX_LINE is not kept.
import { chmodSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';

/** As many lines as Node's REPL keeps (NODE_REPL_HISTORY_SIZE's default). */
export const HISTORY_SIZE = 1000;
const MAX_LINE = 10_000;

/** The history file for this environment, or undefined when history is off. */
export function historyPath(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const named = env.PTC_REPL_HISTORY;
  if (named !== undefined) return named.trim() === '' ? undefined : named;
  const state = env.XDG_STATE_HOME;
  if (state !== undefined && state !== '') return join(state, 'ptc', 'repl_history');
  return join(homedir(), '.ptc_repl_history');
}

/** Whether `line` is kept: no control character but tab, and not longer than MAX_LINE. */
export function keepable(line: string): boolean {
  // eslint-disable-next-line no-control-regex
  return line.trim() !== '' && line.length <= MAX_LINE && !/[\u0000-\u0008\u000a-\u001f\u007f-\u009f\u2028\u2029]/.test(line);
}

/** The lines of the file, newest first (readline's order); none when it cannot be read. */
export function loadHistory(path: string): string[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
    // A file made before ptc kept it private becomes private now.
    chmodSync(path, 0o600);
  } catch {
    return [];
  }
  return text.split('\n').filter(keepable).reverse().slice(0, HISTORY_SIZE);
}

/** Writes `history` (newest first) to the file, oldest line first; a problem is returned, not thrown. */
export function saveHistory(path: string, history: readonly string[]): string | undefined {
  const lines = history.filter(keepable).slice(0, HISTORY_SIZE).reverse();
  const staged = `${path}.${process.pid}.tmp`;
  try {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    rmSync(staged, { force: true });
    // A new file of its own, private from its creation, replaces the old one whole.
    writeFileSync(staged, lines.length === 0 ? '' : `${lines.join('\n')}\n`, { mode: 0o600, flag: 'wx' });
    renameSync(staged, path);
    return undefined;
  } catch (error) {
    rmSync(staged, { force: true });
    return `cannot keep the REPL history in ${path}: ${(error as Error).message}`;
  }
}
