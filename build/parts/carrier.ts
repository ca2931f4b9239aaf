// The carrier part of the single executable (build/sea-entry.ts loads it when the executable
// runs as a carrier): only what a carrier runs, so that an idle carrier holds no host code.
export { runCarrier } from '../../carrier/boot/start.ts';
