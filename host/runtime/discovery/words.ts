// Text to search terms: names split at case changes, underscores, dashes and dots, lower-cased,
// common English endings folded so `issues`, `issue` and `issued` meet, and a few verbs that
// tool authors use interchangeably (get/fetch/read, delete/remove, …) grouped.

/** Words that say nothing about which tool is meant. */
const STOP_WORDS = new Set(['a', 'an', 'and', 'the', 'of', 'to', 'in', 'on', 'for', 'by', 'with', 'from', 'at', 'as', 'or', 'is', 'are', 'be', 'it', 'its', 'this', 'that', 'me', 'my', 'i', 'we', 'you', 'your', 'some', 'any', 'all', 'how', 'what', 'which', 'do', 'does', 'can', 'tool', 'tools', 'function']);

/** Verbs grouped by what they mean to a tool author; a word in one group matches the others (less than itself). */
const SYNONYMS: ReadonlyArray<readonly string[]> = [
  ['get', 'fetch', 'read', 'retrieve', 'load', 'show', 'view', 'lookup'],
  ['list', 'enumerate', 'browse'],
  ['find', 'search', 'query', 'lookup', 'filter'],
  ['create', 'add', 'new', 'make', 'insert'],
  ['update', 'edit', 'modify', 'change', 'set', 'patch'],
  ['delete', 'remove', 'destroy', 'drop', 'erase', 'archive'],
  ['send', 'post', 'publish', 'notify', 'message'],
  ['run', 'execute', 'start', 'launch', 'invoke', 'trigger'],
  ['stop', 'cancel', 'kill', 'terminate', 'abort', 'close'],
  ['write', 'save', 'store', 'put', 'upload'],
  ['download', 'export', 'pull'],
  ['user', 'member', 'person', 'account', 'people'],
  ['file', 'document', 'doc'],
  ['directory', 'folder', 'dir'],
];

/** Abbreviations a query may use for the words tools spell out. */
const ABBREVIATIONS = new Map<string, string[]>([
  ['pr', ['pull', 'request']], ['prs', ['pull', 'request']], ['repo', ['repository']], ['repos', ['repository']],
  ['ls', ['list']], ['rm', ['remove']], ['mkdir', ['create', 'directory']], ['db', ['database']], ['env', ['environment']],
  ['msg', ['message']], ['img', ['image']], ['dm', ['direct', 'message']], ['url', ['url']], ['js', ['javascript']],
]);

/** The raw words of `text`: `getHTTPResponse_v2.body-text` is get, http, response, v2, body, text. */
export function splitWords(text: string): string[] {
  const spaced = text
    .replace(/([\p{Ll}\p{N}])(\p{Lu})/gu, '$1 $2')
    .replace(/(\p{Lu}+)(\p{Lu}\p{Ll})/gu, '$1 $2');
  return spaced.toLowerCase().split(/[^\p{L}\p{N}]+/u).filter((word) => word !== '');
}

/** Folds a lower-case word's common endings; applied alike to queries and to what they search. */
export function stem(word: string): string {
  let w = word;
  if (w.length <= 3 || /\d/.test(w)) return w;
  if (w.endsWith('ies') && w.length > 4) w = `${w.slice(0, -3)}y`;
  else if (/(?:ss|ch|sh|x|z)es$/.test(w)) w = w.slice(0, -2);
  else if (w.endsWith('s') && !/(?:ss|us|is)$/.test(w)) w = w.slice(0, -1);
  else if (w.endsWith('ing') && w.length > 5) w = w.slice(0, -3);
  else if (w.endsWith('ed') && w.length > 4) w = w.slice(0, -2);
  // creating, created, create -> creat; a doubled consonant left by -ing or -ed is undoubled (running -> run).
  if (w !== word && /([b-df-hj-np-tv-z])\1$/.test(w) && !/(?:ll|ss|zz)$/.test(w)) w = w.slice(0, -1);
  if (w.length > 3 && w.endsWith('e')) w = w.slice(0, -1);
  return w;
}

/** The search terms of `text`: its words without stop words, stemmed, each once; a query's abbreviations are spelled out. */
export function terms(text: string, query = false): string[] {
  const words = splitWords(text).filter((word) => !STOP_WORDS.has(word));
  return [...new Set((query ? words.flatMap((word) => ABBREVIATIONS.get(word) ?? [word]) : words).map(stem))];
}

const groups = new Map<string, Set<string>>();
for (const group of SYNONYMS) {
  for (const word of group) {
    const key = stem(word);
    const set = groups.get(key) ?? new Set<string>();
    for (const other of group) if (stem(other) !== key) set.add(stem(other));
    groups.set(key, set);
  }
}

/** The stemmed words that mean what `term` means, not `term` itself. */
export function synonyms(term: string): ReadonlySet<string> {
  return groups.get(term) ?? EMPTY;
}
const EMPTY: ReadonlySet<string> = new Set();
