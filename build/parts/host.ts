// The host part of the single executable (build/sea-entry.ts loads it when a command needs more
// than the resident pool's fast path): the CLI, the library behind it, the resident pool's daemon.
// Each is initialised when asked for, as the dynamic imports of the entry did before the split.
export const cli = () => import('../../host/cli/cli.ts');
export const headStart = () => import('../../host/cli/head-start.ts');
export const prestart = () => import('../../host/prestart.ts');
export const residentDaemon = () => import('../../host/cli/resident-daemon.ts');
