// bubblewrap's argv lives in supervision/bwrap.ts, shared with the relay that confines carriers
// on the far side of SSH.
export { bwrapArgs, within, type BwrapLayout } from '../../supervision/bwrap.ts';
