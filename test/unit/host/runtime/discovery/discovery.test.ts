// The tool catalog behind search() and describe(): words from names, ranking judged on the tool
// lists of published MCP servers with the queries a model writes, describe() giving exactly what
// declarations() says of a tool, the budgeted text, and bad arguments named.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { bindingPaths, declarations, toolCatalog, type ToolSchema } from '../../../../../host/index.ts';
import { splitWords, stem } from '../../../../../host/runtime/discovery/words.ts';
import { REAL_TOOLS } from '../../../../fixtures/discovery/tools.ts';
import { declared } from '../../../../helpers/declared.ts';
import type { Runtime } from '../../../../../host/index.ts';
import { describeUpstreams } from '../../../../../host/mcp/server.ts';
import type { Upstream } from '../../../../../host/mcp/upstreams.ts';

const WORDS: Array<[string, string[]]> = [
  ['listIssues', ['list', 'issues']],
  ['list_issues', ['list', 'issues']],
  ['github.list-issues', ['github', 'list', 'issues']],
  ['getHTTPResponse', ['get', 'http', 'response']],
  ['s3Bucket', ['s3', 'bucket']],
  ['SLACK_POST_MESSAGE', ['slack', 'post', 'message']],
];
for (const [text, words] of WORDS) test(`words of ${text}`, () => assert.equal(splitWords(text), words));

test('a word and its forms fold together', () => {
  for (const group of [['issue', 'issues'], ['create', 'created', 'creating', 'creates'], ['directory', 'directories'], ['run', 'running'], ['search', 'searches', 'searching']]) {
    assert.equal(new Set(group.map(stem)).size, 1, group.join(', '));
  }
});

// [query, the path that must come first]: what a model asks for, in its own words.
const QUERIES: Array<[string, string]> = [
  ['list open issues', 'github.list_issues'],
  ['comment on an issue', 'github.add_issue_comment'],
  ['merge a pull request', 'github.merge_pull_request'],
  ['create pull request', 'github.create_pull_request'],
  ['which files changed in a PR', 'github.get_pull_request_files'],
  ['fork repo', 'github.fork_repository'],
  ['read file', 'filesystem.read_file'],
  ['write a file', 'filesystem.write_file'],
  ['make a folder', 'filesystem.create_directory'],
  ['rename a file', 'filesystem.move_file'],
  ['ls directory', 'filesystem.list_directory'],
  ['file metadata', 'filesystem.get_file_info'],
  ['take a screenshot', 'puppeteer.puppeteer_screenshot'],
  ['run javascript in the browser', 'puppeteer.puppeteer_evaluate'],
  ['post message to slack channel', 'slack.slack_post_message'],
  ['react with emoji', 'slack.slack_add_reaction'],
  ['reply in a thread', 'slack.slack_reply_to_thread'],
  ['get user profile', 'slack.slack_get_user_profile'],
  ['web search', 'brave.brave_web_search'],
  ['find restaurants nearby', 'brave.brave_local_search'],
  ['delete entities', 'memory.delete_entities'],
  ['knowledge graph', 'memory.read_graph'],
  ['sql query', 'postgres.query'],
  ['environment variables', 'everything.printEnv'],
  ['add numbers', 'everything.add'],
  ['listIssues', 'github.list_issues'],
  ['github.create_issue', 'github.create_issue'],
  ['github', 'github'],
];
const catalog = toolCatalog(REAL_TOOLS);
for (const [query, first] of QUERIES) {
  test(`search(${JSON.stringify(query)}) ranks ${first} first`, () => {
    const { matches } = catalog.search(query, { limit: 5 });
    assert.equal(matches[0]?.path, first, `got ${matches.map((match) => match.path).join(', ')}`);
  });
}

test('a match names its callable path, its kind, and the first sentence of its description; a namespace its number of tools', () => {
  assert.equal(catalog.search('read file', { limit: 1 }), {
    matches: [{ path: 'filesystem.read_file', kind: 'tool', summary: 'Read the complete contents of a file from the file system.' }],
    truncated: true,
  });
  assert.equal(catalog.search('filesystem', { limit: 1 }).matches, [{ path: 'filesystem', kind: 'namespace', summary: '', tools: 12 }]);
});

test('matches are capped: limit (at most 50), truncated when more matched, and a namespace restricts them', () => {
  assert.is(catalog.search('github', { limit: 50 }).matches.length, 26);
  assert.is(catalog.search('github', { limit: 50 }).truncated, false);
  assert.is(catalog.search('github', { limit: 1000 }).matches.length, 26);
  assert.is(catalog.search('github').matches.length, 10);
  assert.is(catalog.search('github').truncated, true);
  const many = toolCatalog(Array.from({ length: 80 }, (_, index) => ({ name: `t${index}`, description: 'Counts sheep.' })));
  assert.is(many.search('sheep', { limit: 500 }).matches.length, 50);
  assert.ok(catalog.search('delete', { namespace: 'memory' }).matches.every((match) => match.path.startsWith('memory.')));
  assert.equal(catalog.search('search', { namespace: 'github', limit: 50 }).matches.slice(0, 4).map((match) => match.path).sort(), ['github.search_code', 'github.search_issues', 'github.search_repositories', 'github.search_users']);
});

test('an empty query lists one level: namespaces at the top, a namespace\'s tools inside it', () => {
  assert.equal(catalog.search('', { limit: 50 }).matches.map((match) => match.path), ['github', 'filesystem', 'memory', 'slack', 'brave', 'puppeteer', 'postgres', 'everything']);
  assert.equal(catalog.search('', { namespace: 'brave' }).matches.map((match) => match.path), ['brave.brave_web_search', 'brave.brave_local_search']);
  assert.equal(catalog.search('the of a').matches, []);
});

test('describe(tool) is exactly what declarations() says of it, at the path the whole list gives it', () => {
  const tools: ToolSchema[] = [
    { name: 'a.list-items', description: 'First.', inputSchema: { type: 'object', properties: { n: { type: 'integer', minimum: 1 } }, required: ['n'] } },
    { name: 'a.list_items', description: 'Second: maps to the same identifier, so it is list_items_2.', inputSchema: { type: 'object', properties: { q: { type: 'string' } } } },
    { name: 'b.tree', inputSchema: { $ref: '#/$defs/Node', $defs: { Node: { type: 'object', properties: { children: { type: 'array', items: { $ref: '#/$defs/Node' } } } } } } },
  ];
  const mine = toolCatalog(tools);
  const full = declarations(tools, { discovery: true });
  const second = mine.describe('a.list_items_2');
  const inner = /^declare namespace a \{\n([^]*)\}\n$/.exec(second)?.[1];
  assert.ok(inner !== undefined && full.includes(inner) && !inner.includes('function list_items('), second);
  assert.match(second, 'function list_items_2(args?: {');
  // By the tool's original name too; and a namespace gives all of its tools.
  assert.is(mine.describe('a.list_items'), mine.describe('a.list_items'));
  assert.equal(declared(mine.describe('a')).functions, ['a.list_items', 'a.list_items_2']);
  const tree = mine.describe('b.tree');
  assert.equal([declared(tree).errors, declared(tree).functions, declared(tree).types], [[], ['b.tree'], ['Node']]);
  assert.ok(full.includes(/^type Node = .*$/m.exec(tree)![0]));
});

test('describe() of every real tool parses and declares that one tool', () => {
  for (const [index, path] of catalog.paths.entries()) {
    const found = declared(catalog.describe(path.join('.')));
    assert.equal([found.errors, found.functions], [[], [path.join('.')]], REAL_TOOLS[index]!.name);
  }
});

test('describe() of an unknown name fails with the closest paths', () => {
  assert.throws(() => catalog.describe('github.list_issue'), (error: Error & { code?: string }) => error.code === 'PTC_UNKNOWN_TOOL' && /^describe: no tool or namespace is named "github\.list_issue"; the closest are github\.list_issues, /.test(error.message));
});

test('with discovery, a top-level search or describe is mapped to search_ in paths and declarations', () => {
  assert.equal(bindingPaths(['search', 'describe', 'web.search'], { discovery: true }), [['search_'], ['describe_'], ['web', 'search']]);
  assert.equal(bindingPaths(['search']), [['search']]);
  assert.equal(toolCatalog([{ name: 'search' }]).paths, [['search_']]);
  const text = declarations([{ name: 'search', description: 'Web search.' }], { discovery: true });
  const found = declared(text);
  assert.equal([found.errors, found.functions], [[], ['search_', 'search', 'describe']]);
});

test('declarations(): all of them under the budget; past it, the namespaces with counts and the discovery globals', () => {
  const full = catalog.declarations();
  assert.equal(declared(full).functions.length, REAL_TOOLS.length + 2);
  assert.is(catalog.declarations({ budget: full.length }), full);
  const budget = 3_000;
  const short = catalog.declarations({ budget });
  assert.ok(short.length <= budget, `${short.length} characters`);
  const found = declared(short);
  assert.equal([found.errors, found.functions], [[], ['search', 'describe']]);
  assert.match(short, `// ${REAL_TOOLS.length} tools are too many to declare here`);
  assert.match(short, /^\/\/ {3}github: 25 tools$/m);
  assert.match(short, /^\/\/ {3}postgres: 1 tool$/m);
  // A budget too small for every namespace line says how many it left out.
  const cut = catalog.declarations({ budget: short.length - 50 });
  assert.ok(cut.length <= short.length - 50, `${cut.length} characters`);
  assert.match(cut, /^\/\/ {3}… and \d+ more namespaces: search\(""\) lists them\.$/m);
});

test('bad arguments are named with their value', async () => {
  const { search, describe } = catalog.bindings();
  const cases: Array<[() => unknown, string]> = [
    [() => search(42), 'search: query must be a string of words, got 42'],
    [() => search('x', { limit: 0 }), 'search: limit must be a positive integer (at most 50), got 0'],
    [() => search('x', { top: 3 }), 'search: unknown option "top" (it takes limit and namespace)'],
    [() => search('x', { namespace: 'gitlab' }), 'search: namespace \'gitlab\' is not a namespace here (there are github, filesystem, memory, slack, brave, puppeteer, postgres, everything)'],
    [() => search('x', 'y'), 'search: options must be an object {limit?, namespace?}, got \'y\''],
    [() => describe(), 'describe takes one name, got 0 arguments'],
    [() => describe(''), 'describe: name must be the path of a tool or namespace, such as search() gives, got \'\''],
  ];
  for (const [call, message] of cases) {
    try {
      await call();
      assert.unreachable(message);
    } catch (error) {
      assert.equal([(error as Error).message, (error as { code?: string }).code], [message, 'PTC_BAD_ARGUMENTS']);
    }
  }
  // A budget below what the short form takes: whichever of the two is shorter.
  const two = toolCatalog([{ name: 'a.x' }, { name: 'b.y' }]);
  assert.is(two.declarations({ budget: 10 }), two.declarations());
  assert.throws(() => catalog.declarations({ budget: -1 }), /declarations: budget must be a positive integer of characters, got -1/);
});

test('ptc mcp: an upstream named search is the namespace search_, and the description keeps to its budget', () => {
  const runtime = { executionInstructions: 'Write the program.' } as Runtime;
  const upstream = (name: string, count: number): Upstream => ({
    name,
    tools: Array.from({ length: count }, (_, index) => ({ name: `tool_${index}`, description: `Tool number ${index}.`, inputSchema: { type: 'object' as const } })),
    down: undefined,
    exact: true,
    unavailable: () => undefined,
    ask: async () => undefined,
    call: async () => ({ content: [] }),
    close: async () => {},
  });
  const small = describeUpstreams(runtime, [upstream('search', 2)]);
  assert.equal(declared(/^```ts\n([^]*)\n```$/m.exec(small.description)![1]!).functions, ['inspect', 'yieldControl', 'search_.tool_0', 'search_.tool_1', 'search', 'describe']);
  assert.equal(small.bindings.map(([path]) => path.join('.')), ['search_.tool_0', 'search_.tool_1']);
  const big = describeUpstreams(runtime, [upstream('search', 300), upstream('other', 300)], undefined, { descriptionBudget: 5_000 });
  assert.ok(big.description.length <= 5_000, `${big.description.length} characters`);
  assert.match(big.description, /^Run a TypeScript program that calls the tools of the MCP servers below, which are too many to declare here/);
  assert.match(big.description, /^\/\/ {3}search_: 300 tools\. Declared by the upstream MCP server "search"/m);
  assert.is(big.bindings.length, 600);
  assert.is(big.catalog.search('tool number 7', { namespace: 'other' }).matches[0]!.path, 'other.tool_7');
});

test.run();
