// How long Ctrl-C takes to stop `while (true) {}` in `ptc repl`, from the key to the next prompt:
// tmux types the loop into a session of the built binary, sends C-c, and polls the pane (every
// 2 ms) until "interrupted (variables kept)" and a new prompt are drawn; ten times, then checks a
// variable from before the loops survived. Not part of `npm run bench`:
//   node test/bench/repl-interrupt.ts [path to ptc, default dist/ptc]
import { execFileSync } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { repoRoot } from '../helpers/runtime.ts';

const bin = process.argv[2] ?? `${repoRoot}dist/ptc`;
const socket = `ptc-interrupt-${process.pid}`;
const tmux = (...args: string[]): string => execFileSync('tmux', ['-L', socket, '-f', '/dev/null', ...args], { encoding: 'utf8' });
const screen = (): string => tmux('capture-pane', '-p', '-S', '-', '-t', 'M');
const until = async (ready: (text: string) => boolean): Promise<void> => {
  while (!ready(screen())) await sleep(2);
};
const type = (text: string): void => {
  tmux('send-keys', '-t', 'M', '-l', text);
  tmux('send-keys', '-t', 'M', 'Enter');
};
const interrupted = (text: string): number => text.split('interrupted (variables kept)').length - 1;

tmux('new-session', '-d', '-s', 'M', '-x', '150', '-y', '50', `PTC_REPL_HISTORY= ${bin} repl`);
try {
  await until((text) => text.includes('ptc>'));
  type('let kept = 1');
  await until((text) => text.split('ptc>').length >= 3);
  const times: number[] = [];
  for (let round = 0; round < 10; round++) {
    type(`inspect("spin${round}"); while (true) {}`);
    await until((text) => text.includes(`\nspin${round}`));
    await sleep(200);
    const before = interrupted(screen());
    const start = performance.now();
    tmux('send-keys', '-t', 'M', 'C-c');
    await until((text) => interrupted(text) > before && text.trimEnd().endsWith('ptc>'));
    times.push(performance.now() - start);
  }
  type('kept');
  await until((text) => /\nptc> kept\n1\nptc>/.test(text));
  times.sort((a, b) => a - b);
  console.log(`Ctrl-C to prompt, ms: ${times.map((ms) => Math.round(ms)).join(' ')}; median ${Math.round((times[4]! + times[5]!) / 2)}; kept survived`);
} finally {
  tmux('kill-server');
}
