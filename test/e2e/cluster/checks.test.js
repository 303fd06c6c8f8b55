'use strict';
// The after-the-fact checks of the cluster suites must catch what they are
// for; these feed them made-up call records and change logs.

const test = require('node:test');
const assert = require('node:assert/strict');
const { ownerTimeline, ownershipProblems, recoveryTimes, percentile, changeLogProblems } = require('./lib/checks');

const A = Buffer.from('127.0.0.1:1001').toString('base64');
const B = Buffer.from('127.0.0.1:1002').toString('base64');
const known = new Set([A, B]);

function call(at, sessionKey, { method = 'PushPullChanges', ok = true, key = 'doc', clientId = 'c1' } = {}) {
  return { at, sentAt: at - 5, method, document: true, key, clientId, ok, status: ok ? 200 : 503, sessionKey };
}

test('one owner throughout, or a change after the old owner died, is fine', () => {
  assert.deepEqual(ownershipProblems([call(1, A), call(2, A), call(3, A)], ['doc'], { knownKeys: known }), []);
  const moved = [call(1, A), call(2, A), call(50, B), call(60, B)];
  assert.deepEqual(ownershipProblems(moved, ['doc'], { knownKeys: known, ended: { [A]: 10 } }), []);
  assert.equal(ownerTimeline(moved, 'doc').length, 2);
});

test('two owners alternating is reported', () => {
  const entries = [call(1, A), call(2, B), call(3, A)];
  const problems = ownershipProblems(entries, ['doc'], { knownKeys: known });
  assert.ok(problems.some((p) => p.includes('served the document again')), problems.join('\n'));
});

test('a change of owner while the old one lives is reported', () => {
  const problems = ownershipProblems([call(1, A), call(20, B)], ['doc'], { knownKeys: known, ended: { [A]: 30 } });
  assert.ok(problems.some((p) => p.includes('while')), problems.join('\n'));
});

test('an answer from a dead node or an unknown key is reported', () => {
  const late = ownershipProblems([call(1, A), call(5000, A)], ['doc'], { knownKeys: known, ended: { [A]: 8 }, exited: { [A]: 10 } });
  assert.ok(late.some((p) => p.includes('after it exited')), late.join('\n'));
  // An answer sent before the exit may be read much later on a loaded machine.
  const slowRead = { ...call(5000, A), sentAt: 9 };
  assert.deepEqual(ownershipProblems([call(1, A), slowRead], ['doc'], { knownKeys: known, ended: { [A]: 8 }, exited: { [A]: 10 } }), []);
  const stranger = ownershipProblems([call(1, 'bm9wZTox')], ['doc'], { knownKeys: known });
  assert.ok(stranger.some((p) => p.includes('unknown session key')), stranger.join('\n'));
});

test('failed calls and streams that delivered nothing do not count as served', () => {
  const entries = [call(1, A), call(2, B, { method: 'Watch' }), call(3, B, { ok: false }), call(4, A)];
  assert.deepEqual(ownershipProblems(entries, ['doc'], { knownKeys: known }), []);
});

test('a stream counts as served when its first message arrived', () => {
  const watch = { ...call(2, B, { method: 'Watch' }), firstMessageAt: 3 };
  const problems = ownershipProblems([call(1, A), watch, call(4, A)], ['doc'], { knownKeys: known });
  assert.ok(problems.some((p) => p.includes('served the document again')), problems.join('\n'));
});

test('recovery time is from the kill to the first success after a failure', () => {
  const entries = [
    call(90, A),
    call(110, A, { ok: false }),
    call(1200, A, { ok: false }),
    call(3100, B),
    call(3300, B),
    call(120, A, { clientId: 'c2' }),
  ];
  const [c1, c2] = recoveryTimes(entries, [{ clientId: 'c1', key: 'doc' }, { clientId: 'c2', key: 'doc' }], { from: 100 });
  assert.equal(c1.failed, true);
  assert.equal(c1.failures, 2);
  assert.equal(c1.syncedMs, 3000);
  assert.equal(c2.failed, false);
  assert.equal(c2.syncedMs, 20, 'a client that never failed synced with its first call sent after the kill');
  assert.equal(percentile([5, 1, 3, 2, 4], 50), 3);
  assert.equal(percentile([5, 1, 3, 2, 4], 100), 5);
});

test('change log: gaps and repeats of server_seq or client_seq are reported', () => {
  const change = (serverSeq, actor, clientSeq) => ({ serverSeq, actor, clientSeq });
  const good = { changes: [change(1, 'aa', 1), change(2, 'bb', 1), change(3, 'aa', 2)], serverSeq: 3 };
  assert.deepEqual(changeLogProblems(good), []);
  const gap = { changes: [change(1, 'aa', 1), change(3, 'aa', 2)], serverSeq: 3 };
  assert.notDeepEqual(changeLogProblems(gap), []);
  const repeat = { changes: [change(1, 'aa', 1), change(2, 'aa', 1)], serverSeq: 2 };
  assert.notDeepEqual(changeLogProblems(repeat), []);
  const short = { changes: [change(1, 'aa', 1)], serverSeq: 2 };
  assert.notDeepEqual(changeLogProblems(short), []);
});
