// Loaded with `--require` (through NODE_OPTIONS) into a ptc process by test/bench/boot.ts: at exit
// it writes one line to fd 2 with the process's clock origin, Node's own start-up timings, ptc's
// boot marks (ptc:*) and the child processes it started, for the bench to split a start into
// phases. CommonJS, because --require loads it before any of ptc's code.
'use strict';
const childProcess = require('node:child_process');
const { writeSync } = require('node:fs');

const children = [];
const record = (file, start) => {
  const entry = { file: String(file).split('/').pop(), start, end: undefined };
  children.push(entry);
  return entry;
};
const { spawn, spawnSync, execFileSync } = childProcess;
childProcess.spawn = function (file, ...rest) {
  const entry = record(file, performance.now());
  const child = spawn.call(this, file, ...rest);
  child.once('exit', () => (entry.end = performance.now()));
  return child;
};
for (const [name, original] of [['spawnSync', spawnSync], ['execFileSync', execFileSync]]) {
  childProcess[name] = function (file, ...rest) {
    const entry = record(file, performance.now());
    try {
      return original.call(this, file, ...rest);
    } finally {
      entry.end = performance.now();
    }
  };
}

// ptc's boot marks come here (wire/boot-mark.ts), on the clock of performance.now().
const marks = {};
globalThis[Symbol.for('ptc.boot-mark')] = (name) => {
  if (name.startsWith('ptc:')) marks[name.slice(4)] ??= performance.now();
};

process.once('exit', () => {
  const timing = performance.nodeTiming;
  const report = { origin: performance.timeOrigin, bootstrap: timing.bootstrapComplete, marks, children, exit: performance.now() };
  writeSync(2, `\n@ptc-boot ${JSON.stringify(report)}\n`);
});
