// Recognises a sandbox denial in an error code or in the text a program or shell printed, so a
// result can report that confinement was observed, not just configured.
const DENIAL_CODES = ['EACCES', 'EROFS', 'EPERM', 'ERR_ACCESS_DENIED', 'ECONNREFUSED', 'ENETUNREACH'];
const DENIAL_CODE = new RegExp(`\\b(?:${DENIAL_CODES.join('|')})\\b`);
const DENIAL_TEXT = /read-only file system|permission denied|operation not permitted|access to this api has been restricted|connection refused|network is unreachable/i;

/** True when an error code, or text such as a message or a stderr line, shows a denied operation. */
export function isDenial(codeOrText: unknown): boolean {
  if (typeof codeOrText !== 'string' || codeOrText === '') return false;
  return DENIAL_CODE.test(codeOrText) || DENIAL_TEXT.test(codeOrText);
}
