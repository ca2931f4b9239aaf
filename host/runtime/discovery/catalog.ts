// A tool catalog: the index behind a program's `search` and `describe`, kept on the host. The
// program asks through two ordinary bindings, so a carrier never holds the declarations of
// thousands of tools (nor does a remote one receive them), and only the asked-for text travels.
import { checkedPaths, declareSelected, type DeclarationOptions, type ToolSchema } from '../declarations.ts';
import { lineComment } from '../declaration-text.ts';
import { show } from '../../../wire/show.ts';
import type { BindingFunction } from '../../execution/bindings.ts';
import { makeEntry, Ranking, type Entry } from './rank.ts';
import { DEFAULT_SEARCH_LIMIT, DISCOVERY_DECLARATIONS, MAX_SEARCH_LIMIT } from './globals.ts';

/** Catalogs made here: a look-alike object is not one. */
const catalogs = new WeakSet<object>();
/** A summary is one line of a model's context: the first sentence, cut here. */
const SUMMARY_CHARS = 160;

export interface SearchOptions {
  /** At most this many matches, 1 to 50. @default 10 */
  limit?: number;
  /** Only entries inside this namespace path. */
  namespace?: string;
}

export interface SearchMatch {
  /** The binding path to call, or a namespace's path. */
  path: string;
  kind: 'tool' | 'namespace';
  summary: string;
  /** A namespace's number of tools. */
  tools?: number;
}

export interface SearchResult {
  matches: SearchMatch[];
  /** More entries matched than `limit`. */
  truncated: boolean;
}

/** What programs search and describe: a tool list, indexed once. */
export interface ToolCatalog {
  /** Each tool's binding path, in the order given. */
  readonly paths: ReadonlyArray<readonly string[]>;
  /** Ranked matches over tool and namespace names and descriptions. */
  search(query: string, options?: SearchOptions): SearchResult;
  /** The declarations of one tool or of a namespace's tools, by path (or by the tool's original name). */
  describe(name: string): string;
  /**
   * The declarations a model reads: every tool's, then `search`'s and `describe`'s. When that is
   * longer than `budget` characters: the namespaces with their number of tools, and how to find
   * the rest with search and describe (or, for a budget too small for even that, whichever of
   * the two is shorter).
   */
  declarations(options?: { budget?: number }): string;
  /** The `search` and `describe` bindings a run gets. */
  bindings(): { search: BindingFunction; describe: BindingFunction };
}

export function isToolCatalog(value: unknown): value is ToolCatalog {
  return typeof value === 'object' && value !== null && catalogs.has(value);
}

/** Indexes `tools` for discovery; throws as declarations() does for a list it cannot declare. */
export function toolCatalog(tools: readonly ToolSchema[], options: Omit<DeclarationOptions, 'discovery'> = {}): ToolCatalog {
  const declarationOptions: DeclarationOptions = { ...options, discovery: true };
  const { names, paths } = checkedPaths(tools, declarationOptions);
  const parts = names.map((name) => (typeof name === 'string' ? name.split('.') : [...name]));
  const byName = new Map<string, Set<number>>();
  const add = (key: string, index: number): void => {
    const set = byName.get(key) ?? new Set<number>();
    set.add(index);
    byName.set(key, set);
  };
  // Namespaces by path: their tools (at any depth), original name, and unmapped top-level name (for namespaceDocs).
  const spaces = new Map<string, { tools: number[]; original: string; order: number }>();
  paths.forEach((path, index) => {
    add(path.join('.'), index);
    add(parts[index]!.join('.'), index);
    for (let depth = 1; depth < path.length; depth++) {
      const key = path.slice(0, depth).join('.');
      const space = spaces.get(key) ?? { tools: [], original: parts[index]!.slice(0, depth).join('.'), order: spaces.size };
      space.tools.push(index);
      spaces.set(key, space);
    }
  });
  const entries: Entry[] = [];
  for (const [path, space] of spaces) {
    const segments = path.split('.');
    const doc = segments.length === 1 ? options.namespaceDocs?.get(space.original.split('.')[0]!) ?? '' : '';
    entries.push(makeEntry(path, 'namespace', `${segments.at(-1)}\n${space.original.split('.').at(-1)}`, segments.slice(0, -1).join(' '), doc, summaryOf(doc), space.tools.length));
  }
  tools.forEach((tool, index) => {
    const path = paths[index]!;
    const original = parts[index]!;
    const description = tool.description ?? '';
    entries.push(makeEntry(path.join('.'), 'tool', `${path.at(-1)}\n${original.at(-1)}`, [...path.slice(0, -1), ...original.slice(0, -1)].join(' '), description, summaryOf(description)));
  });
  const ranking = new Ranking(entries);
  const inside = (entry: Entry, namespace: string | undefined): boolean => namespace === undefined || entry.path.startsWith(`${namespace}.`);

  const search = (query: string, searchOptions: SearchOptions = {}): SearchResult => {
    if (typeof query !== 'string') throw badArguments(`search: query must be a string of words, got ${show(query)}`);
    const { limit, namespace } = searchArguments(searchOptions, spaces);
    let found: Entry[];
    if (query.trim() === '') {
      // Browsing: what is directly inside the namespace (or at the top level), namespaces first.
      const depth = namespace === undefined ? 1 : namespace.split('.').length + 1;
      found = entries.filter((entry) => inside(entry, namespace) && entry.path.split('.').length === depth);
    } else {
      found = ranking.rank(query, (entry) => inside(entry, namespace));
    }
    return {
      matches: found.slice(0, limit).map((entry) => ({ path: entry.path, kind: entry.kind, summary: entry.summary, ...(entry.tools !== undefined ? { tools: entry.tools } : {}) })),
      truncated: found.length > limit,
    };
  };

  const declare = (selected: ReadonlySet<number> | undefined): string => declareSelected(tools, names, paths, selected, declarationOptions);

  const catalog: ToolCatalog = {
    paths: Object.freeze(paths.map((path) => Object.freeze([...path]))),
    search,
    describe(name) {
      if (typeof name !== 'string' || name === '') throw badArguments(`describe: name must be the path of a tool or namespace, such as search() gives, got ${show(name)}`);
      const tool = byName.get(name);
      if (tool !== undefined) return declare(tool);
      const space = spaces.get(name) ?? [...spaces.values()].find((candidate) => candidate.original === name);
      if (space !== undefined) return declare(new Set(space.tools));
      const near = search(name, { limit: 3 }).matches.map((match) => match.path);
      throw Object.assign(new Error(`describe: no tool or namespace is named ${JSON.stringify(name)}${near.length > 0 ? `; the closest are ${near.join(', ')}` : '; search() finds tools by words'}`), { code: 'PTC_UNKNOWN_TOOL' });
    },
    declarations(declarationsOptions = {}) {
      const budget = budgetOption(declarationsOptions);
      const full = `${declare(undefined)}\n${DISCOVERY_DECLARATIONS}`;
      if (budget === undefined || full.length <= budget) return full;
      // A budget below what the short form takes itself is missed either way: then the shorter text.
      const short = overview(tools.length, spaces, paths, full.length, budget, options.namespaceDocs);
      return short.length < full.length ? short : full;
    },
    bindings() {
      return {
        search: async (...args: unknown[]) => {
          if (args.length > 2) throw badArguments(`search takes (query, options?), got ${args.length} arguments`);
          return search(args[0] as string, (args[1] ?? {}) as SearchOptions);
        },
        describe: async (...args: unknown[]) => {
          if (args.length !== 1) throw badArguments(`describe takes one name, got ${args.length} arguments`);
          return catalog.describe(args[0] as string);
        },
      };
    },
  };
  catalogs.add(Object.freeze(catalog));
  return catalog;
}

function summaryOf(description: string): string {
  const line = description.trim().split(/\r?\n\s*\r?\n|[\n\r\u2028\u2029]/)[0]!.trim();
  const sentence = /^.*?[.!?](?=\s|$)/u.exec(line)?.[0] ?? line;
  return sentence.length <= SUMMARY_CHARS ? sentence : `${sentence.slice(0, SUMMARY_CHARS - 1).trimEnd()}…`;
}

function searchArguments(options: unknown, spaces: ReadonlyMap<string, unknown>): { limit: number; namespace: string | undefined } {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) throw badArguments(`search: options must be an object {limit?, namespace?}, got ${show(options)}`);
  const { limit = DEFAULT_SEARCH_LIMIT, namespace, ...rest } = options as Record<string, unknown>;
  const unknown = Object.keys(rest)[0];
  if (unknown !== undefined) throw badArguments(`search: unknown option "${unknown}" (it takes limit and namespace)`);
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1) throw badArguments(`search: limit must be a positive integer (at most ${MAX_SEARCH_LIMIT}), got ${show(limit)}`);
  if (namespace !== undefined && (typeof namespace !== 'string' || !spaces.has(namespace))) {
    throw badArguments(`search: namespace ${show(namespace)} is not a namespace here${spaces.size > 0 ? ` (there are ${[...spaces.keys()].filter((key) => !key.includes('.')).slice(0, 10).join(', ')})` : '; there are none'}`);
  }
  return { limit: Math.min(limit, MAX_SEARCH_LIMIT), namespace: namespace as string | undefined };
}

function budgetOption(options: unknown): number | undefined {
  const budget = (options as { budget?: unknown } | null)?.budget;
  if (budget === undefined) return undefined;
  if (typeof budget !== 'number' || !Number.isSafeInteger(budget) || budget <= 0) throw new RangeError(`declarations: budget must be a positive integer of characters, got ${show(budget)}`);
  return budget;
}

function badArguments(message: string): TypeError {
  return Object.assign(new TypeError(message), { code: 'PTC_BAD_ARGUMENTS' });
}

/** The declarations past the budget: namespaces and their counts, as comments, then search's and describe's declarations. */
function overview(count: number, spaces: ReadonlyMap<string, { tools: number[]; original: string }>, paths: readonly string[][], fullLength: number, budget: number, docs: ReadonlyMap<string, string> | undefined): string {
  const topLevel = [...spaces].filter(([path]) => !path.includes('.'));
  const loose = paths.filter((path) => path.length === 1).length;
  const head = [
    `// ${count} tools are too many to declare here (their declarations are ${fullLength} characters; the budget is ${budget}).`,
    '// Find them inside the program: search("words") ranks tools by name and description, and',
    '// describe(path) gives a tool\'s (or a namespace\'s) declarations; read them before calling a tool.',
    topLevel.length > 0 ? '// Namespaces, with their number of tools:' : undefined,
  ].filter((line) => line !== undefined);
  const tail = [...(loose > 0 ? [`// and ${loose} tool${loose === 1 ? '' : 's'} outside any namespace.`] : []), '', DISCOVERY_DECLARATIONS];
  const fixed = [...head, ...tail].join('\n').length + 1;
  const lines: string[] = [];
  let length = fixed;
  for (let index = 0; index < topLevel.length; index++) {
    const [path, space] = topLevel[index]!;
    const doc = docs?.get(space.original);
    const line = lineComment(`  ${path}: ${space.tools.length} tool${space.tools.length === 1 ? '' : 's'}${doc !== undefined ? `. ${doc}` : ''}`);
    const more = lineComment(`  … and ${topLevel.length - index} more namespaces: search("") lists them.`);
    if (length + line.length + 1 + more.length + 1 > budget && index < topLevel.length - 1) {
      lines.push(more);
      break;
    }
    lines.push(line);
    length += line.length + 1;
  }
  return [...head, ...lines, ...tail].join('\n');
}
