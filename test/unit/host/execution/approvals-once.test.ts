// The parts of "approvals that ask once" that are pure functions: which gated bindings a program
// reaches (what a person approving the whole program is shown), how a standing rule matches a
// call, the idempotency key, and the config's check of approval.rules.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { reachableBindings } from '../../../../host/execution/program-reach.ts';
import { matchRule, type ApprovalRule } from '../../../../host/execution/approval.ts';
import { idempotencyKey } from '../../../../host/execution/call-context.ts';
import { resolveApproval } from '../../../../host/runtime/approval-config.ts';

const GATED = ['git.deleteBranch', 'git.push', 'mail.send', 'wipe'];
const reach = (code: string, format: 'async-function' | 'vm-script' = 'async-function') => reachableBindings(code, format, GATED);

test('a program reaches the bindings it names through static member chains', () => {
  assert.equal(reach('await git.deleteBranch("a"); return 1'), ['git.deleteBranch']);
  assert.equal(reach('await git["push"]("x"); await wipe()'), ['git.push', 'wipe']);
  assert.equal(reach('return await git.deleteBranch.call(null, "a")'), ['git.deleteBranch']);
  assert.equal(reach('const x = { git: 1 }; return x.git'), [], 'a property named like a namespace is not the namespace');
  assert.equal(reach('return 1'), []);
});

test('a namespace used as a value or by a computed name reaches all of it; globalThis, eval and Function reach everything', () => {
  assert.equal(reach('const g = git; return g'), ['git.deleteBranch', 'git.push']);
  assert.equal(reach('const k = "push"; return git[k]("x")'), ['git.deleteBranch', 'git.push']);
  assert.equal(reach('return globalThis["mail"].send()'), GATED);
  assert.equal(reach('return eval("wipe()")'), GATED);
  assert.equal(reach('return new Function("return wipe")()()'), GATED);
  assert.equal(reach('return await import("node:fs")'), GATED);
  assert.equal(reach('this.wipe()', 'vm-script'), GATED, "a script's top-level this is the global object");
  assert.equal(reach('return ((('), GATED, 'a program that does not parse reaches everything');
});

test('a standing rule matches by binding glob and argument patterns, first match wins', () => {
  const rules: ApprovalRule[] = [
    { binding: 'git.*', args: ['main'], decision: 'reject' },
    { binding: 'git.deleteBranch', args: ['feature/*', { force: false }], decision: 'approve' },
    { binding: 'mail.send', args: (args) => String(args[0]).endsWith('@example.com'), decision: 'approve' },
    { binding: 'wipe', args: () => { throw new Error('boom'); }, decision: 'approve' },
  ];
  const index = (binding: string, args: unknown[]) => matchRule(rules, { binding, args })?.index;
  assert.is(index('git.push', ['main']), 0);
  assert.is(index('git.deleteBranch', ['feature/x', { force: false, dryRun: true }]), 1, 'an object pattern lists the keys it checks');
  assert.is(index('git.deleteBranch', ['feature/x', { force: true }]), undefined);
  assert.is(index('git.deleteBranch', ['feature/x']), undefined, 'a missing argument does not match an object pattern');
  assert.is(index('git.deleteBranch', ['release']), undefined);
  assert.is(index('mail.send', ['ann@example.com']), 2);
  assert.is(index('mail.send', ['ann@elsewhere.org']), undefined);
  assert.is(index('wipe', []), undefined, 'an approve rule whose predicate throws does not match');
  assert.is(index('gitx.push', ['main']), undefined, 'the glob covers the whole name');
});

test('the idempotency key is the same for one call and differs between calls and runs', () => {
  assert.is(idempotencyKey('run-1', 2), idempotencyKey('run-1', 2));
  assert.is.not(idempotencyKey('run-1', 2), idempotencyKey('run-1', 3));
  assert.is.not(idempotencyKey('run-1', 12), idempotencyKey('run-11', 2));
  assert.match(idempotencyKey('r', 1), /^[0-9a-f]{32}$/);
});

test('approval.rules is checked, naming the rule, the field and the value', () => {
  const problem = (rules: unknown): string => {
    try {
      resolveApproval({ rules });
    } catch (error) {
      return (error as Error).message;
    }
    return 'accepted';
  };
  assert.is(problem({}), 'ptc config: approval.rules must be an array of { binding, args?, decision, reason? }, got {}');
  assert.is(problem([{ binding: 'a', decision: 'allow' }]), 'ptc config: approval.rules[0].decision must be "approve" or "reject", got \'allow\'');
  assert.is(problem([{ binding: '', decision: 'approve' }]), 'ptc config: approval.rules[0].binding must be a binding\'s dotted name (`*` matches any characters), got \'\'');
  assert.is(problem([{ binding: 'a', decision: 'approve', args: 'x' }]), 'ptc config: approval.rules[0].args must be an array of argument patterns or a predicate of the arguments, got \'x\'');
  assert.is(problem([{ binding: 'a', decision: 'approve', scope: 'run' }]), 'ptc config: approval.rules[0]: unknown field "scope" (value \'run\')');
  assert.is(problem([{ binding: 'a', decision: 'approve' }]), 'accepted');
});

test.run();
