// The discovery globals a program has when the runtime's `discovery` is on: their names, which a
// top-level tool cannot take, and the declarations a model reads for them.

export const DISCOVERY_GLOBALS: ReadonlySet<string> = new Set(['search', 'describe']);

/** Matches search() returns at most, whatever the program asks: each is a line of a model's context. */
export const MAX_SEARCH_LIMIT = 50;
export const DEFAULT_SEARCH_LIMIT = 10;

/** The `.d.ts` text of `search` and `describe`, as the declarations end with it. */
export const DISCOVERY_DECLARATIONS = `/**
 * Finds tools by the words of their names, namespaces and descriptions, best match first.
 * Names are split into words (listIssues, list_issues and github.list are each two words), and a
 * word matches its plural and other forms. With an empty query it lists what is directly inside
 * \`namespace\` (or at the top level): namespaces first, then tools.
 */
declare function search(query: string, options?: {
  /** At most this many matches, 1 to ${MAX_SEARCH_LIMIT}. @default ${DEFAULT_SEARCH_LIMIT} */
  limit?: number;
  /** Only tools inside this namespace, by its path (\`github\`). */
  namespace?: string;
}): Promise<{
  matches: Array<{
    /** The path to call (\`github.list_issues\`), or the namespace's, to pass to describe(). */
    path: string;
    kind: 'tool' | 'namespace';
    /** The first sentence of its description. */
    summary: string;
    /** A namespace's number of tools. */
    tools?: number;
  }>;
  /** True when more than \`limit\` matched. */
  truncated: boolean;
}>;
/** The TypeScript declarations of one tool, or of every tool in a namespace, by the path search() gives. */
declare function describe(name: string): Promise<string>;
`;
