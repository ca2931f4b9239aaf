// The carrier's OS environment keeps only what nested processes and temp files need; the program
// sees an empty process.env, also through `import { env } from 'node:process'`. Under a network
// allowlist the host also sets the proxy variables (protocol/network.ts): they stay, in the OS
// environment and in the program's, so that fetch and child processes such as curl (which inherit
// the program's process.env) reach the network only through the proxy.
import { syncBuiltinESMExports } from 'node:module';
import { CARRIER_SELECTOR } from '../../wire/revision.ts';
import { PROXY_VARIABLES } from '../../wire/network.ts';

/** The variables that stay in the carrier's OS environment on `platform`. */
export function keptVariables(platform: NodeJS.Platform = process.platform): Set<string> {
  const kept = ['PATH', 'TMPDIR', 'TMP', 'TEMP', ...PROXY_VARIABLES];
  // The host passes these on Windows (host/worker/launch.ts): Winsock loads its providers through
  // SystemRoot, so unsetting them here would undo that.
  if (platform === 'win32') kept.push('SystemRoot', 'SystemDrive', 'windir', 'PATHEXT', 'ComSpec');
  return new Set(kept);
}

/** Removes the carrier selector and every variable but PATH, temp paths, proxy settings (and Windows' own); gives the program only the proxy settings. */
export function scrubEnvironment(): void {
  delete process.env[CARRIER_SELECTOR];
  const kept = keptVariables();
  const visible: Record<string, string> = {};
  for (const name of Object.keys(process.env)) {
    if (!kept.has(name)) delete process.env[name];
    else if (PROXY_VARIABLES.includes(name)) visible[name] = process.env[name]!;
  }
  Object.defineProperty(process, 'env', { value: visible, writable: true, configurable: true, enumerable: true });
  syncBuiltinESMExports();
}
