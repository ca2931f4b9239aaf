// A require for Node's own modules, whose CommonJS objects are the ones a program's require() and
// (after syncBuiltinESMExports) import() see. Its base is only a formality: on the far side the
// carrier runs from a data: URL (the bytes the relay verified, relay/launch.ts), which
// createRequire refuses, and a builtin resolves the same from any base.
import { createRequire } from 'node:module';

export const requireBuiltin = createRequire(import.meta.url.startsWith('file:') ? import.meta.url : '/');
