// Which command lines may have their carrier booted before the CLI's own modules load
// (host/prestart.ts): only `ptc run` with nothing that changes the carrier's shape.

/** Flags that change the carrier's shape: with one of them the early carrier would be a wasted process. */
const RESHAPING = ['--node', '--config', '--max-old-generation-size-mb', '--max-message-bytes', '--help', '--sandbox', '--allow-network', '--allow-host', '--deny-host', '--writable-root', '--sandbox-backend', '--require-enforcement', '--cwd', '--remote', '--map-import', '--import-handler'];

/** Whether `ptc run` with these arguments runs in the default carrier. */
export function runsInDefaultCarrier(argv: string[]): boolean {
  return argv[0] === 'run' && !argv.some((arg) => RESHAPING.some((flag) => arg === flag || arg.startsWith(`${flag}=`)));
}
