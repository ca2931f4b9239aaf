// A far side reached through any command that carries stdio: `docker exec -i box`, `kubectl exec
// -i pod --`, a wrapper script. The prefix is run with `<node> <bootstrapPath> --probe` once per
// runtime, then with `--relay` per carrier. The bootstrap must already be there.
import { execFile } from 'node:child_process';
import type { RelayStart } from '../../../wire/mux.ts';
import { PROTOCOL_REVISION } from '../../../wire/revision.ts';
import { nodeTooOld, type RemoteFacts, type RemoteTarget } from './remote.ts';

export interface CommandLaunch {
  kind: 'command';
  /** The prefix; ptc appends `<node> <bootstrapPath> --relay`. */
  command: string[];
  /** The Node on the far side. @default 'node' */
  node?: string;
  /** Where the bootstrap file is on the far side. */
  bootstrapPath: string;
}

const PROBE_TIMEOUT_MS = 30_000;

/** A RemoteTarget through a command prefix. */
export function commandTarget(launch: CommandLaunch): RemoteTarget {
  const [executable, ...prefix] = launch.command as [string, ...string[]];
  const node = launch.node ?? 'node';
  const describe = `command ${launch.command.join(' ')}`;
  let probed: Promise<RemoteFacts> | undefined;
  const probe = (bwrapPath?: string): Promise<RemoteFacts> => new Promise((resolve, reject) => {
    execFile(executable, [...prefix, node, launch.bootstrapPath, '--probe', ...(bwrapPath !== undefined ? [bwrapPath] : [])], { timeout: PROBE_TIMEOUT_MS, encoding: 'utf8', maxBuffer: 1024 * 1024 }, (error, stdout, stderr) => {
      const line = stdout.split('\n').find((text) => text.startsWith('{'));
      if (error !== null || line === undefined) {
        return reject(new Error(`${describe}: could not run ${node} ${launch.bootstrapPath} --probe there (${error?.message.split('\n')[0] ?? 'no report'}): ${stderr.trim() || stdout.trim() || 'no output'}`, { cause: error }));
      }
      const report = JSON.parse(line) as { revision?: unknown; node: string; bwrapPath: string; bwrapUnavailable?: string };
      if (report.revision !== PROTOCOL_REVISION) return reject(new Error(`${describe}: the bootstrap ${launch.bootstrapPath} speaks protocol revision ${String(report.revision)}, this ptc speaks revision ${PROTOCOL_REVISION}`));
      if (nodeTooOld(report.node)) return reject(new Error(`${describe}: the Node there (${report.node}) is too old: the bootstrap needs Node >= 20.12`));
      resolve({ node: report.node, bwrapPath: report.bwrapPath, bwrapUnavailable: report.bwrapUnavailable });
    });
  });
  const ensure = (): Promise<RemoteFacts> => {
    if (probed === undefined) {
      const attempt = probe();
      probed = attempt;
      attempt.catch(() => {
        if (probed === attempt) probed = undefined;
      });
    }
    return probed;
  };
  return {
    describe,
    prepare: (bwrapPath?: string) => (bwrapPath === undefined ? ensure() : ensure().then(() => probe(bwrapPath))),
    async relay(start: RelayStart) {
      await ensure();
      return { executable, args: [...prefix, node, launch.bootstrapPath, '--relay'], env: { ...process.env } as Record<string, string>, describe, start };
    },
    async close() {},
    closeNow() {},
    forget() {
      probed = undefined;
    },
  };
}
