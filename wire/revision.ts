/** Bumped whenever a message shape changes; host and carrier must agree before any code is sent. */
export const PROTOCOL_REVISION = 7;

/** Environment variable that selects carrier mode in the embedded binary; removed before user code runs. */
export const CARRIER_SELECTOR = 'PTC_CARRIER';
/** Set by `ptc run` when it starts this user's resident pool (host/cli/resident-daemon.ts): the executable then runs as the pool, booting a carrier for the directory this variable names. */
export const RESIDENT_SELECTOR = 'PTC_RESIDENT_DAEMON';

/** The control channel's file descriptor in the carrier (a socket pair end inherited from the host). */
export const CONTROL_FD = 3;

/**
 * A local carrier's interrupt pipe (carrier/run/interrupt.ts): a byte on it asks the carrier to
 * terminate the JavaScript its run is busy in. Handed only where INTERRUPT_ENV names it.
 */
export const INTERRUPT_FD = 6;
export const INTERRUPT_ENV = 'PTC_INTERRUPT_FD';
