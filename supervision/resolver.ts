// Where name resolution reads its configuration when /etc/resolv.conf points into /run
// (systemd-resolved's stub-resolv.conf, resolvconf): the sandbox replaces /run with an empty tmpfs,
// so with the network allowed this one directory is bound back, read-only, or DNS would fail.
// The directory rather than the file: the resolver replaces its file by rename, which a bind of
// the old file would never see.
import { realpathSync } from 'node:fs';
import { dirname } from 'node:path';
import { within, type BwrapLayout, type ConfinedPolicy } from './bwrap.ts';

/** The layout's `resolver` for `policy`: looked up only when the network is shared. */
export function resolverLayout(policy: ConfinedPolicy): Pick<BwrapLayout, 'resolver'> {
  const resolver = policy.network === true ? resolverDirectory() : undefined;
  return resolver === undefined ? {} : { resolver };
}

/** The real directory of /etc/resolv.conf's target when it lies under /run, else undefined. */
export function resolverDirectory(resolvConf = '/etc/resolv.conf'): string | undefined {
  let real: string;
  try {
    real = realpathSync(resolvConf);
  } catch {
    return undefined;
  }
  return within(real, '/run') && real !== '/run' ? dirname(real) : undefined;
}
