// The program both inherited-descriptor suites run (test/attack/ and test/integration/).

/** Tries the inherited descriptor every way a program can: write, fstat, the fd listing, a child's shell. */
export const PROBE_FD = `
  const fs = await import('node:fs');
  const code = (error) => error.code ?? String(error.message).trim();
  const out = {};
  try { fs.writeSync(200, 'written through the inherited descriptor\\n'); out.write = 'wrote'; } catch (error) { out.write = code(error); }
  try { fs.fstatSync(200); out.fstat = 'open'; } catch (error) { out.fstat = code(error); }
  try { out.listed = fs.readdirSync('/proc/self/fd').includes('200'); } catch (error) { out.listed = code(error); }
  try {
    const { spawnSync } = await import('node:child_process');
    const child = spawnSync('sh', ['-c', 'echo child >&200'], { encoding: 'utf8' });
    out.child = child.error ? code(child.error) : child.status === 0 ? 'wrote' : 'refused';
  } catch (error) { out.child = code(error); }
  return out;`;
