// Which Node the library runs on. Imports nothing, so that it evaluates, and says why it cannot go
// on, before any module that needs a newer Node: an older one would otherwise fail at link time
// with "does not provide an export named ..." and no word of the version it needs.

/** The oldest Node the host runs on: 22.13 is the first 22.x with module.stripTypeScriptTypes, which strips every program's types. */
export const MINIMUM_NODE = '22.13.0';

/** Why ptc cannot run on Node `found` (as in process.versions.node), or undefined when it can. */
export function unsupportedNode(found: string): string | undefined {
  const [major = 0, minor = 0, patch = 0] = found.split('.').map((part) => Number.parseInt(part, 10));
  const [needMajor, needMinor, needPatch] = MINIMUM_NODE.split('.').map(Number) as [number, number, number];
  const older = major !== needMajor ? major < needMajor : minor !== needMinor ? minor < needMinor : patch < needPatch;
  if (!older) return undefined;
  return `ptc needs Node.js ${MINIMUM_NODE} or later (for module.stripTypeScriptTypes); this is Node.js ${found}`;
}
