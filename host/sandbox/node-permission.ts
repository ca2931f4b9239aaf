// Node's permission flags live in supervision/node-permission.ts, shared with the relay that
// confines carriers on the far side of SSH.
export { appendNodeOptions, permissionArgs, readableRoots } from '../../supervision/node-permission.ts';
