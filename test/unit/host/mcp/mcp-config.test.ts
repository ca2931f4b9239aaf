// The `ptc mcp --config` file: the mcpServers shape clients use, checked field by field.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { McpConfigError, parseMcpConfig } from '../../../../host/mcp/config.ts';

test('stdio and Streamable HTTP entries, with the ptc section passed through', () => {
  const config = parseMcpConfig({
    mcpServers: {
      github: { command: 'github-mcp-server', args: ['stdio'], env: { TOKEN: 't' }, cwd: '/srv', type: 'stdio' },
      docs: { url: 'https://docs.example.com/mcp', headers: { Authorization: 'Bearer x' }, type: 'http' },
      bare: { command: 'server' },
      slow: { command: 'server', startTimeoutMs: 60000 },
    },
    ptc: { timeoutMs: 5000 },
  }, 'servers.json');
  assert.equal([...config.upstreams.keys()], ['github', 'docs', 'bare', 'slow']);
  assert.equal(config.upstreams.get('github'), { kind: 'stdio', command: 'github-mcp-server', args: ['stdio'], env: { TOKEN: 't' }, cwd: '/srv', startTimeoutMs: 5000 });
  const docs = config.upstreams.get('docs')!;
  assert.ok(docs.kind === 'http' && docs.url.href === 'https://docs.example.com/mcp' && docs.headers.Authorization === 'Bearer x');
  assert.equal(config.upstreams.get('bare'), { kind: 'stdio', command: 'server', args: [], startTimeoutMs: 5000 });
  assert.equal(config.upstreams.get('slow'), { kind: 'stdio', command: 'server', args: [], startTimeoutMs: 60000 });
  assert.equal(config.ptc, { timeoutMs: 5000 });
});

test('every mistake names the field and the value', () => {
  const table: Array<[unknown, string]> = [
    [[], 'f.json must hold a JSON object {"mcpServers": {...}, "ptc"?: {...}}, got []'],
    [{ servers: {} }, 'f.json: servers is not a known field (expected "mcpServers" and optionally "ptc" and "approval")'],
    [{ mcpServers: [] }, 'f.json: mcpServers must be an object of named servers, got []'],
    [{ mcpServers: {}, ptc: 3 }, 'f.json: ptc must be an object of runtime fields, got 3'],
    [{ mcpServers: { a: 'cmd' } }, 'f.json: mcpServers.a must be an object with "command" or "url", got "cmd"'],
    [{ mcpServers: { a: {} } }, 'f.json: mcpServers.a.command must be a non-empty string (or give "url" for an HTTP server), got undefined'],
    [{ mcpServers: { a: { command: 'x', args: 'y' } } }, 'f.json: mcpServers.a.args must be an array of strings, got "y"'],
    [{ mcpServers: { a: { command: 'x', startTimeoutMs: 0 } } }, 'f.json: mcpServers.a.startTimeoutMs must be a positive integer of ms, got 0'],
    [{ mcpServers: { a: { command: 'x', env: { N: 1 } } } }, 'f.json: mcpServers.a.env must be an object of strings, got {"N":1}'],
    [{ mcpServers: { a: { command: 'x', url: 'http://h' } } }, 'f.json: mcpServers.a.command is not a field of a Streamable HTTP server (url, headers, startTimeoutMs)'],
    [{ mcpServers: { a: { url: 'ftp://h' } } }, 'f.json: mcpServers.a.url must be an http(s) URL, got "ftp://h"'],
    [{ mcpServers: { a: { url: 'not a url' } } }, 'f.json: mcpServers.a.url must be an http(s) URL, got "not a url"'],
    [{ mcpServers: { a: { url: 'http://h', type: 'sse' } } }, 'f.json: mcpServers.a.type must be "http" or "streamable-http" here, got "sse"'],
    [{ mcpServers: { a: { command: 'x', disabled: true } } }, 'f.json: mcpServers.a.disabled is not a field of a stdio server (command, args, env, cwd, startTimeoutMs)'],
  ];
  for (const [value, message] of table) {
    assert.throws(() => parseMcpConfig(value, 'f.json'), (error: Error) => error instanceof McpConfigError && error.message === message, message);
  }
});

test.run();
