// Acorn 8 does not parse source-phase imports (`import.source(x)`, and `import.defer(x)` of the
// deferred-evaluation proposal), which Node 24 and later compile natively. The await lowering,
// vm-script's diagnosis and the scoped REPL's declaration scan read programs with this parser, so
// such a program is read as V8 reads it (an ImportExpression with a `phase`), instead of failing
// to parse and losing the lowering. Whether the phase is supported is left to V8's own compile.
import { Parser } from 'acorn';

// After `import`: a dot, the phase name and the opening parenthesis, with any white space between.
const PHASE_CALL = /\.\s*(source|defer)\s*\(/y;

interface AcornInternals {
  start: number;
  input: string;
  next(): void;
  parseIdent(liberal: boolean): unknown;
  parseDynamicImport(node: Record<string, unknown>): unknown;
}

/** Acorn's Parser, reading `import.source(...)` and `import.defer(...)` as phase imports. */
export const PhaseParser: typeof Parser = Parser.extend((Base) => {
  const base = Base as unknown as { prototype: { parseImportMeta(this: AcornInternals, node: Record<string, unknown>): unknown } };
  const parseImportMeta = base.prototype.parseImportMeta;
  const Extended = class extends (Base as unknown as new (...args: unknown[]) => object) {};
  Object.defineProperty(Extended.prototype, 'parseImportMeta', {
    configurable: true,
    writable: true,
    value(this: AcornInternals, node: Record<string, unknown>): unknown {
      PHASE_CALL.lastIndex = this.start;
      const phase = PHASE_CALL.exec(this.input)?.[1];
      if (phase === undefined) return parseImportMeta.call(this, node);
      this.next(); // the dot
      this.parseIdent(true); // the phase name; the current token is now the parenthesis
      delete node.meta;
      node.phase = phase;
      return this.parseDynamicImport(node);
    },
  });
  return Extended as unknown as typeof Parser;
});
