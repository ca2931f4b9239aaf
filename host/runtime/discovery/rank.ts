// Ranking tools and namespaces for a query: each query term is weighted by how rare it is among
// the entries (BM25's idf), counts most in a tool's own name, less in its namespace and least in
// its description, and less again when only a synonym or a prefix of it matches. Entries that
// match more of the query's terms come first whatever the rest scores.
import { splitWords, stem, synonyms, terms } from './words.ts';

export interface Entry {
  /** Dotted binding path. */
  path: string;
  kind: 'tool' | 'namespace';
  summary: string;
  /** A namespace's number of tools. */
  tools?: number;
  /** Terms of the last path segment (and of the original name, when it was mapped). */
  name: ReadonlySet<string>;
  /** Terms of the enclosing namespaces. */
  space: ReadonlySet<string>;
  description: ReadonlySet<string>;
  /** The name's words joined, for an exact match of the whole query. */
  phrase: string;
}

// Points per field for an exact term, a synonym and a prefix. A name is what an author chose to
// call the tool, so it says most; a namespace is shared by all its tools, so it says less.
const NAME = { exact: 3, synonym: 1.8, prefix: 1.5 };
const SPACE = { exact: 1.5, synonym: 0, prefix: 0.75 };
const DESCRIPTION = { exact: 1, synonym: 0.5, prefix: 0.4 };
/** A query that is the tool's whole name (`list issues` for list_issues) ranks it over partial ones. */
const PHRASE_BONUS = 2;

export function makeEntry(path: string, kind: Entry['kind'], nameText: string, spaceText: string, description: string, summary: string, tools?: number): Entry {
  return {
    path,
    kind,
    summary,
    ...(tools !== undefined ? { tools } : {}),
    name: new Set(terms(nameText)),
    space: new Set(terms(spaceText)),
    description: new Set(terms(description)),
    phrase: splitWords(nameText.split('\n')[0]!).map(stem).join(' '),
  };
}

/** An index over entries; `rank` returns the matching ones, best first. */
export class Ranking {
  readonly #entries: readonly Entry[];
  /** Entries holding each term in any field, for its idf; its keys are every term there is. */
  readonly #frequency = new Map<string, number>();

  constructor(entries: readonly Entry[]) {
    this.#entries = entries;
    for (const entry of entries) {
      for (const term of new Set([...entry.name, ...entry.space, ...entry.description])) this.#frequency.set(term, (this.#frequency.get(term) ?? 0) + 1);
    }
  }

  rank(query: string, within: (entry: Entry) => boolean): Entry[] {
    const wanted = terms(query, true);
    if (wanted.length === 0) return [];
    const phrase = splitWords(query).map(stem).join(' ');
    const count = this.#entries.length;
    // What each query term matches, looked up once in the vocabulary rather than per entry.
    const related = wanted.map((term) => ({
      term,
      synonyms: [...synonyms(term)].filter((word) => this.#frequency.has(word)),
      prefixes: [...this.#frequency.keys()].filter((word) => word !== term && isPrefix(term, word)),
    }));
    const idf = wanted.map((term) => {
      const frequency = this.#frequency.get(term) ?? 0;
      return Math.log(1 + (count - frequency + 0.5) / (frequency + 0.5));
    });
    const scored: Array<{ entry: Entry; score: number; order: number }> = [];
    this.#entries.forEach((entry, order) => {
      if (!within(entry)) return;
      let score = 0;
      let matched = 0;
      related.forEach((term, index) => {
        const points = field(entry.name, term, NAME) + field(entry.space, term, SPACE) + field(entry.description, term, DESCRIPTION);
        if (points === 0) return;
        matched++;
        score += points * idf[index]!;
      });
      if (matched === 0) return;
      const coverage = matched / wanted.length;
      score *= coverage * coverage;
      if (entry.phrase === phrase) score *= PHRASE_BONUS;
      scored.push({ entry, score, order });
    });
    // Ties: the shorter path (fewer words beyond the query), then the order the tools were listed in.
    scored.sort((a, b) => b.score - a.score || a.entry.path.length - b.entry.path.length || a.order - b.order);
    return scored.map(({ entry }) => entry);
  }
}

interface Related {
  term: string;
  /** Its synonyms that some entry holds. */
  synonyms: string[];
  /** The words some entry holds that it is a prefix of, or that are a prefix of it. */
  prefixes: string[];
}

// `repo` finds repository, and `repositories` finds repo: a prefix of three letters or more.
function isPrefix(term: string, word: string): boolean {
  return (term.length >= 3 && word.startsWith(term)) || (word.length >= 3 && term.startsWith(word));
}

function field(words: ReadonlySet<string>, related: Related, points: { exact: number; synonym: number; prefix: number }): number {
  if (words.has(related.term)) return points.exact;
  // A synonym says more than a prefix in every field (the points above), so it is tried first.
  if (points.synonym > 0 && related.synonyms.some((word) => words.has(word))) return points.synonym;
  return related.prefixes.some((word) => words.has(word)) ? points.prefix : 0;
}
