// declarations(tools): tool schemas as published by real MCP servers and schema generators, each
// with the exact .d.ts text a model reads; every output must also type-check as a declaration file.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import ts from 'typescript';
import { bindingPaths, declarations, type ToolSchema } from '../../../../host/index.ts';

const cases: Array<[string, ToolSchema[], string]> = [
  ['GitHub MCP server create_issue: required vs optional, arrays, integer, description JSDoc', [{
    name: 'github.create_issue',
    description: 'Create a new issue in a GitHub repository',
    inputSchema: {
      type: 'object',
      properties: {
        owner: { type: 'string', description: 'Repository owner' },
        repo: { type: 'string', description: 'Repository name' },
        title: { type: 'string', description: 'Issue title' },
        body: { type: 'string', description: 'Issue body content' },
        assignees: { type: 'array', items: { type: 'string' }, description: 'Usernames to assign to this issue' },
        milestone: { type: 'number', description: 'Milestone number' },
        labels: { type: 'array', items: { type: 'string' }, description: 'Labels to apply to this issue' },
      },
      required: ['owner', 'repo', 'title'],
    },
  }], `declare namespace github {
  /** Create a new issue in a GitHub repository */
  function create_issue(args: {
    /** Repository owner */
    owner: string;
    /** Repository name */
    repo: string;
    /** Issue title */
    title: string;
    /** Issue body content */
    body?: string;
    /** Usernames to assign to this issue */
    assignees?: string[];
    /** Milestone number */
    milestone?: number;
    /** Labels to apply to this issue */
    labels?: string[];
  }): Promise<unknown>;
}
`],
  ['filesystem server edit_file: zod-to-json-schema output with $schema and additionalProperties: false', [{
    name: 'fs.edit_file',
    description: 'Make line-based edits to a text file.',
    inputSchema: {
      type: 'object',
      properties: {
        path: { type: 'string' },
        edits: {
          type: 'array',
          items: {
            type: 'object',
            properties: { oldText: { type: 'string', description: 'Text to search for - must match exactly' }, newText: { type: 'string', description: 'Text to replace with' } },
            required: ['oldText', 'newText'],
            additionalProperties: false,
          },
        },
        dryRun: { type: 'boolean', default: false, description: 'Preview changes using git-style diff format' },
      },
      required: ['path', 'edits'],
      additionalProperties: false,
      $schema: 'http://json-schema.org/draft-07/schema#',
    },
  }], `declare namespace fs {
  /** Make line-based edits to a text file. */
  function edit_file(args: {
    path: string;
    edits: {
      /** Text to search for - must match exactly */
      oldText: string;
      /** Text to replace with */
      newText: string;
    }[];
    /**
     * Preview changes using git-style diff format
     * @default false
     */
    dryRun?: boolean;
  }): Promise<unknown>;
}
`],
  ['zod-to-json-schema with definitions and a recursive $ref, plus an outputSchema', [{
    name: 'notes.search',
    description: 'Search notes.',
    inputSchema: {
      type: 'object',
      properties: { query: { type: 'string', minLength: 1 }, filter: { $ref: '#/definitions/Filter' } },
      required: ['query'],
      definitions: {
        Filter: {
          anyOf: [
            { type: 'object', properties: { tag: { type: 'string' } }, required: ['tag'], additionalProperties: false },
            { type: 'object', properties: { and: { type: 'array', items: { $ref: '#/definitions/Filter' } } }, required: ['and'], additionalProperties: false },
          ],
        },
      },
    },
    outputSchema: {
      type: 'object',
      properties: { hits: { type: 'array', items: { $ref: '#/$defs/hit' } }, next: { type: ['string', 'null'], description: 'Cursor of the next page' } },
      required: ['hits', 'next'],
      $defs: { hit: { type: 'object', properties: { id: { type: 'string', format: 'uuid' }, updated: { type: 'string', format: 'date-time' } }, required: ['id'] } },
    },
  }], `declare namespace notes {
  /** Search notes. */
  function search(args: {
    /** minLength 1 */
    query: string;
    filter?: Filter;
  }): Promise<{
    hits: Hit[];
    /** Cursor of the next page */
    next: string | null;
  }>;
}

// Types the tools above refer to.
type Filter = {
  tag: string;
} | {
  and: Filter[];
};
type Hit = {
  /** @format uuid */
  id: string;
  /** @format date-time */
  updated?: string;
};
`],
  ['a recursive root ($ref "#"), tuples in both drafts, OpenAPI nullable, const and enum literals', [
    { name: 'tree.put', inputSchema: { type: 'object', properties: { name: { type: 'string' }, children: { type: 'array', items: { $ref: '#' } } }, required: ['name'] } },
    {
      name: 'geo.route',
      inputSchema: {
        type: 'object',
        properties: {
          from: { type: 'array', prefixItems: [{ type: 'number', description: 'lat' }, { type: 'number' }], items: false, minItems: 2 },
          via: { type: 'array', items: [{ type: 'string' }, { type: 'integer' }], additionalItems: { type: 'boolean' } },
          mode: { enum: ['car', 'bike', 42, null] },
          version: { const: 2 },
          note: { type: 'string', nullable: true },
        },
        required: ['from', 'mode'],
      },
    },
  ], `declare namespace tree {
  function put(args: TreePutInput): Promise<unknown>;
}
declare namespace geo {
  function route(args: {
    /** minItems 2 */
    from: [number, number];
    via?: [string?, number /* integer */?, ...boolean[]];
    mode: "car" | "bike" | 42 | null;
    version?: 2;
    note?: string | null;
  }): Promise<unknown>;
}

// Types the tools above refer to.
type TreePutInput = {
  name: string;
  children?: TreePutInput[];
};
`],
  ['patternProperties and additionalProperties as one index signature; if/then/else; oneOf with discriminants', [
    {
      name: 'pkg.set_scripts',
      inputSchema: {
        type: 'object',
        properties: { name: { type: 'string' } },
        patternProperties: { '^x-': { type: 'string' }, '^[0-9]+$': { type: 'integer' } },
        additionalProperties: false,
      },
    },
    { name: 'pkg.env', inputSchema: { type: 'object', additionalProperties: { type: 'string' }, propertyNames: { pattern: '^[A-Z_]+$' } } },
    {
      name: 'pay.charge',
      inputSchema: {
        type: 'object',
        properties: { method: { enum: ['card', 'iban'] }, amount: { type: 'number', exclusiveMinimum: 0 } },
        required: ['method', 'amount'],
        if: { properties: { method: { const: 'card' } } },
        then: { properties: { cardToken: { type: 'string' } }, required: ['cardToken'] },
        else: { properties: { iban: { type: 'string' } }, required: ['iban'] },
      },
    },
    {
      name: 'pay.refund',
      inputSchema: {
        oneOf: [
          { type: 'object', properties: { kind: { const: 'full' }, chargeId: { type: 'string' } }, required: ['kind', 'chargeId'] },
          { type: 'object', properties: { kind: { const: 'partial' }, chargeId: { type: 'string' }, amount: { type: 'number' } }, required: ['kind', 'chargeId', 'amount'] },
        ],
      },
    },
  ], `declare namespace pkg {
  function set_scripts(args?: {
    name?: string;
  } & {
    /**
     * keys matching /^x-/: string
     * keys matching /^[0-9]+$/: number
     */
    [key: string]: string | number /* integer */;
  }): Promise<unknown>;
  function env(args?: {
    /** key names match /^[A-Z_]+$/ */
    [key: string]: string;
  }): Promise<unknown>;
}
declare namespace pay {
  function charge(args: {
    method: "card" | "iban";
    /** exclusiveMinimum 0 */
    amount: number;
  } & (({
    method?: "card";
  } & {
    cardToken: string;
  }) | {
    iban: string;
  })): Promise<unknown>;
  function refund(args: {
    kind: "full";
    chargeId: string;
  } | {
    kind: "partial";
    chargeId: string;
    amount: number;
  }): Promise<unknown>;
}
`],
  ['names that are not identifiers, a reserved word and a runtime global, allOf, tools without schemas', [
    { name: 'browser-tools.take-screenshot', description: 'Screenshot the page.', inputSchema: { type: 'object', properties: { 'full page': { type: 'boolean' }, 'selector': { type: 'string', deprecated: true } } } },
    { name: 'browser-tools.take screenshot!', inputSchema: { type: 'object', properties: {} } },
    { name: 'delete', inputSchema: { allOf: [{ type: 'object', properties: { id: { type: 'string' } }, required: ['id'] }, { type: 'object', properties: { force: { type: 'boolean' } } }] } },
    { name: 'inspect' },
    { name: '3d.render', inputSchema: { type: 'object', properties: { ref: { $ref: 'https://example.com/scene.json' }, bad: { $ref: '#/$defs/missing' }, any: true, none: false, dyn: { $dynamicRef: '#meta' } } } },
  ], `/** (The tool's name is "delete"; call it as delete_.) */
declare function delete_(args: {
  id: string;
} & {
  force?: boolean;
}): Promise<unknown>;
/** (The tool's name is "inspect"; call it as inspect_.) */
declare function inspect_(...args: unknown[]): Promise<unknown>;
declare namespace browser_tools {
  /**
   * Screenshot the page.
   * (The tool's name is "browser-tools.take-screenshot"; call it as browser_tools.take_screenshot.)
   */
  function take_screenshot(args?: {
    "full page"?: boolean;
    /** @deprecated */
    selector?: string;
  }): Promise<unknown>;
  /** (The tool's name is "browser-tools.take screenshot!"; call it as browser_tools.take_screenshot_.) */
  function take_screenshot_(args?: {}): Promise<unknown>;
}
declare namespace _3d {
  /** (The tool's name is "3d.render"; call it as _3d.render.) */
  function render(args?: {
    ref?: unknown /* $ref "https://example.com/scene.json" is not followed */;
    bad?: unknown /* $ref "#/$defs/missing" does not resolve */;
    any?: unknown;
    none?: never;
    dyn?: unknown /* $dynamicRef is not followed */;
  }): Promise<unknown>;
}
`],
  ['constraints of the argument object and of the result itself, which no property carries, go into the tool\'s JSDoc', [{
    name: 'search',
    description: 'Search the index.',
    inputSchema: {
      type: 'object',
      properties: { q: { type: 'string' }, id: { type: 'string' } },
      minProperties: 1,
      if: { required: ['q'] },
      then: { required: ['id'] },
      not: { required: ['all'] },
    },
    outputSchema: { type: 'array', items: { type: 'string' }, maxItems: 10, description: 'Matching ids' },
  }, {
    name: 'legacy',
    inputSchema: { type: 'object', description: 'The filter', deprecated: true },
  }], `/**
 * Search the index.
 * @param args minProperties 1
 * when it matches {"required":["q"]}, it must also match {"required":["id"]}
 * must not match {"required":["all"]}
 * @returns Matching ids
 * maxItems 10
 */
declare function search(args: {
  q?: string;
  id?: string;
}): Promise<string[]>;
/**
 * @param args The filter
 * @deprecated
 */
declare function legacy(args?: {
  [key: string]: unknown;
}): Promise<unknown>;
`],
];

for (const [name, tools, expected] of cases) {
  test(name, () => {
    assert.fixture(declarations(tools), expected);
  });
}

/** TypeScript's diagnostics for `text` as a declaration file next to a program that uses it. */
function diagnostics(text: string, usage = ''): string[] {
  const files = new Map([['/tools.d.ts', text], ['/program.ts', `export async function main(): Promise<void> {\n${usage}\n}\n`]]);
  const options: ts.CompilerOptions = { strict: true, noEmit: true, target: ts.ScriptTarget.ES2022, lib: ['lib.es2022.d.ts'], types: [] };
  const host = ts.createCompilerHost(options);
  const read = host.getSourceFile.bind(host);
  host.getSourceFile = (file, language) => (files.has(file) ? ts.createSourceFile(file, files.get(file)!, language) : read(file, language));
  host.fileExists = (file) => files.has(file) || ts.sys.fileExists(file);
  const program = ts.createProgram([...files.keys()], options, host);
  return ts.getPreEmitDiagnostics(program).map((d) => `${d.file?.fileName ?? ''}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
}

test('every table output is a valid declaration file', () => {
  for (const [name, tools] of cases) assert.equal(diagnostics(declarations(tools)), [], name);
});

test('the declarations accept the calls the schemas allow and reject the ones they forbid', () => {
  const text = cases.map(([, tools]) => declarations(tools)).join('\n').replaceAll('// Types the tools above refer to.', '');
  const ok = [
    'await github.create_issue({ owner: "o", repo: "r", title: "t", labels: ["bug"] });',
    'await notes.search({ query: "q", filter: { and: [{ tag: "a" }, { and: [] }] } });',
    'const found = await notes.search({ query: "q" }); const next: string | null = found.next; found.hits[0]?.id.toUpperCase();',
    'await tree.put({ name: "a", children: [{ name: "b", children: [] }] });',
    'await geo.route({ from: [1, 2], via: ["a", 1, true, false], mode: null });',
    'await pkg.set_scripts({ "x-a": "1", "2": 3 }); await pkg.env({ HOME: "/h" });',
    'await pay.charge({ method: "card", amount: 1, cardToken: "t" }); await pay.refund({ kind: "full", chargeId: "c" });',
    'await delete_({ id: "x" }); await browser_tools.take_screenshot({ "full page": true }); await inspect_(1, 2);',
  ];
  assert.equal(diagnostics(text, ok.join('\n')), []);
  const bad: Array<[string, RegExp]> = [
    ['await github.create_issue({ owner: "o", repo: "r" });', /Property 'title' is missing/],
    ['await fs.edit_file({ path: "p", edits: [{ oldText: "a" }] });', /Property 'newText' is missing/],
    ['await geo.route({ from: [1, 2, 3], mode: "car" });', /not assignable/],
    ['await geo.route({ from: [1, 2], mode: "plane" });', /not assignable/],
    ['await pay.refund({ kind: "partial", chargeId: "c" });', /not assignable|missing/],
    ['await pkg.env({ HOME: 1 });', /not assignable/],
    ['await delete_({ force: true });', /Property 'id' is missing/],
  ];
  for (const [usage, message] of bad) {
    const found = diagnostics(text, usage);
    assert.ok(found.length > 0 && found.every((line) => line.startsWith('/program.ts')), `${usage}: ${found.join('; ')}`);
    assert.match(found.join('\n'), message, usage);
  }
});

test('bindingPaths maps names predictably and the declarations say so', () => {
  assert.equal(
    bindingPaths(['github.list-issues', 'github.list_issues', 'github.list issues', 'class', 'Image', 'ns.Image', '9lives', 'a.b.c']),
    [['github', 'list_issues'], ['github', 'list_issues_2'], ['github', 'list_issues_3'], ['class_'], ['Image_'], ['ns', 'Image'], ['_9lives'], ['a', 'b', 'c']],
  );
  assert.match(declarations([{ name: 'github.list-issues' }, { name: 'github.list_issues' }]), /\(The tool's name is "github\.list-issues"; call it as github\.list_issues\.\)[\s\S]*function list_issues_2\(/);
});

test('bad tool lists are refused with the tool and the value named', () => {
  const table: Array<[unknown, RegExp]> = [
    [{ name: 'x' }, /^declarations\(\) expects an array of tools, got \{ name: 'x' \}$/],
    [[{ name: 'a' }, 'b'], /^tool 1 must be an object \{name, description\?, inputSchema\?, outputSchema\?\}, got 'b'$/],
    [[{ name: '' }], /^tool 0: name must be a non-empty string of dot-separated parts, got ''$/],
    [[{ name: 'a..b' }], /^tool 0: name must be a non-empty string/],
    [[{ name: 'a' }, { name: 'a' }], /^tool 1: name "a" is used twice$/],
    [[{ name: 'a' }, { name: 'a.b' }], /^tool 1: name "a\.b" needs a namespace where another tool is named "a"$/],
    [[{ name: 'a.b' }, { name: 'a' }], /^tool 1: name "a" is also a namespace of other tools$/],
    [[{ name: 'a', inputSchema: 'string' }], /^tool 'a': inputSchema must be a JSON Schema object, got 'string'$/],
    [[{ name: 'a', description: 3 }], /^tool 'a': description must be a string, got 3$/],
    [[{ name: 'a', input_schema: {} }], /^tool 0 \('a'\): unknown field "input_schema"$/],
  ];
  for (const [tools, message] of table) {
    assert.throws(() => declarations(tools as ToolSchema[]), (error: Error) => error instanceof TypeError && message.test(error.message), String(message));
  }
});

test('a hostile schema (deep nesting, a comment terminator in a description) stays well-formed', () => {
  let deep: Record<string, unknown> = { type: 'string' };
  for (let i = 0; i < 200; i++) deep = { type: 'array', items: deep };
  const text = declarations([{ name: 'deep', description: 'ends */ here', inputSchema: { type: 'object', properties: { d: deep, 'e*/': { type: 'string', description: '*/ declare const x: 1; /*' } } } }]);
  assert.match(text, /\/\*\* ends \*\\\/ here \*\//);
  assert.match(text, /unknown \/\* nested too deeply \*\//);
  assert.equal(diagnostics(text), []);
});

test.run();
