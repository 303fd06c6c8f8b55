'use strict';
// The operator's view of a document (GET /admin/documents/{key} on the
// profiling port, with an admin token: the owner's current state) against
// the real SDK: after concurrent edits of objects,
// arrays, counters, text with styles, a tree (split, merge, styles) and every
// primitive type, its root is every replica's toSortedJSON, its live size is
// a fresh replica's, and it follows later edits and a client that attaches
// late.

const test = require('node:test');
const assert = require('node:assert/strict');
const { startServer, serversRequired, yorkieBinary } = require('../lib/server');
const { Session, singleTarget, newDocKey, yorkie } = require('../lib/session');
const { withTimeout } = require('../lib/wait');
const { documentView: viewWith, assertRootIs, logIn } = require('../lib/admin');
const fs = require('node:fs');

const STEP_MS = 15000;

function skipReason() {
  if (fs.existsSync(yorkieBinary()) || serversRequired()) return false;
  return `no yorkie binary at ${yorkieBinary()} (build it or set YORKIE_BIN)`;
}

async function attachManual(client, key) {
  const doc = new yorkie.Document(key);
  await withTimeout(client.attach(doc, { syncMode: yorkie.SyncMode.Manual }), STEP_MS, `attach of ${key}`);
  return doc;
}

const sync = (client, doc) => withTimeout(client.sync(doc), STEP_MS, `sync of client ${client.e2eIndex}`);

/** Syncs every pair twice over, so that each replica has every change. */
async function syncAll(pairs) {
  for (let round = 0; round < 2; round++) {
    for (const [c, d] of pairs) await sync(c, d);
  }
}

function assertMatches(view, docs, what) {
  for (const [i, d] of docs.entries()) assertRootIs(view, d, `${what}, replica ${i}`);
}

/**
 * A client attaching now equals the view. When it builds the document from
 * the log in server order, as the view does, its live size is the view's too
 * (replicas that made concurrent edits may count a few bytes of metadata
 * differently). A client sent a snapshot is only compared by content: the
 * SDK's snapshot reader and its change reader do not agree on sizes (see
 * server/document/sdkdiff), so its size is reported, not asserted.
 */
async function assertFreshReplica(t, session, view, key, what, { compareSize }) {
  const c = await session.activateClient();
  const d = await attachManual(c, key);
  assertRootIs(view, d, `${what}: fresh replica`);
  if (compareSize) {
    assert.deepEqual(view.size.live, d.getDocSize().live, `${what}: live size of a fresh replica`);
  } else {
    t.diagnostic(`${what}: live size of the view ${JSON.stringify(view.size.live)}, of a replica sent a snapshot ${JSON.stringify(d.getDocSize().live)}`);
  }
  await withTimeout(c.detach(d), STEP_MS, 'detach of the fresh replica');
}

/**
 * Edits on two replicas, then a late joiner's, each step checked against the
 * view. `extraArgs` are server flags; `snapshots` says the view must have
 * started from a stored snapshot by the end.
 */
async function viewMatchesReplicas(t, { extraArgs = [], snapshots = false } = {}) {
  const server = await startServer({ extraArgs });
  const session = new Session({ target: singleTarget(server.rpcAddr) });
  const admin = `http://127.0.0.1:${server.profilingPort}`;
  const token = await logIn(server.rpcAddr);
  const documentView = (base, key) => viewWith(base, key, { token });
  try {
    const [c1, c2, c3] = await session.activateClients(3);
    const key = newDocKey('admin-view');
    const d1 = await attachManual(c1, key);
    const d2 = await attachManual(c2, key);

    d1.update((root) => {
      root.o = { a: 1, nested: { b: 'x', gone: true } };
      root.list = [1, 2, 3, 'four'];
      root.n = new yorkie.Counter(yorkie.CounterType.Int, 10);
      root.big = new yorkie.Counter(yorkie.CounterType.Long, BigInt(1));
      root.t = new yorkie.Text();
      root.t.edit(0, 0, 'hello world');
      root.tree = new yorkie.Tree({
        type: 'doc',
        children: [
          { type: 'p', children: [{ type: 'text', value: 'first line' }] },
          // Two attributes, so that removing one leaves the node with attributes:
          // an SDK replica prints a node whose attributes were all removed as
          // "attributes":{} when it applied the removal, and without them when
          // it loaded a snapshot, so replicas would not agree.
          { type: 'p', attributes: { align: 'left', id: 'p2' }, children: [{ type: 'text', value: 'second' }] },
        ],
      });
      root.values = {
        nothing: null,
        yes: true,
        int: 42,
        neg: -7,
        double: 1.5,
        text: 'quote " backslash \\ <tag> & é 😀',
        long: BigInt('9007199254740993'),
        bytes: new Uint8Array([1, 2, 255]),
        date: new Date(Date.UTC(2024, 0, 2, 3, 4, 5, 6)),
      };
    }, 'create');
    await syncAll([[c1, d1], [c2, d2]]);

    // Concurrent edits on both replicas, before either syncs.
    d1.update((root) => {
      delete root.o.nested.gone;
      root.list.push(5);
      root.list.moveFront(root.list.getElementByIndex(3).getID());
      root.n.increase(5);
      root.big.increase(BigInt('4294967296'));
      root.o.a = 'one';
      root.t.edit(0, 5, 'HELLO', { bold: true });
      root.t.setStyle(6, 11, { italic: true, size: 12 });
      root.tree.edit(6, 6, undefined, 1); // split the first paragraph
      root.tree.style(0, 1, { bold: 'true' });
    }, 'edits of replica 1');
    d2.update((root) => {
      root.list[1] = 'set';
      root.list.delete(0);
      root.n.increase(-3);
      root.o.a = 'uno';
      root.o.added = [{ deep: [] }];
      root.t.edit(5, 6, ' dear "friend" ');
      root.t.edit(11, 11, '😀');
      root.tree.edit(1, 1, { type: 'text', value: 'the ' });
      root.tree.removeStyle(16, 17, ['align']);
    }, 'edits of replica 2');
    await syncAll([[c1, d1], [c2, d2]]);
    assert.equal(d1.toSortedJSON(), d2.toSortedJSON(), 'replicas converge');

    let view = await documentView(admin, key);
    t.diagnostic(`view: ${view.text.trim()}`);
    assert.equal(view.key, key);
    assert.equal(view.removed, false);
    assert.equal(view.server_seq, Number(d1.getCheckpoint().getServerSeq()), 'server_seq is the replicas\' checkpoint');
    if (!snapshots) assert.equal(view.snapshot, null, 'no snapshot stored yet');
    assertMatches(view, [d1, d2], 'after concurrent edits');
    await assertFreshReplica(t, session, view, key, 'after concurrent edits', { compareSize: !snapshots });

    // A late joiner gets the same document, and its edits show too.
    const d3 = await attachManual(c3, key);
    assertRootIs(view, d3, 'late joiner');
    d3.update((root) => {
      root.list.insertAfter(root.list.getElementByIndex(0).getID(), 'inserted');
      delete root.values;
      root.n.increase(100);
      root.t.edit(0, 2, '');
      root.t.setStyle(0, 3, { bold: null, color: 'red' });
      // Delete across a paragraph boundary, which merges two paragraphs.
      root.tree.edit(3, 9);
    }, 'edits of the late joiner');
    await syncAll([[c3, d3], [c1, d1], [c2, d2]]);
    view = await documentView(admin, key);
    assertMatches(view, [d1, d2, d3], 'after the late joiner\'s edits');
    await assertFreshReplica(t, session, view, key, 'after the late joiner\'s edits', { compareSize: !snapshots });
    t.diagnostic(`final view: server_seq ${view.server_seq}, size ${JSON.stringify(view.size)}, garbage ${view.garbage_len}, snapshot ${JSON.stringify(view.snapshot)}`);
    if (snapshots) {
      assert.ok(view.snapshot && view.snapshot.server_seq > 0, `the owner took a snapshot: ${JSON.stringify(view.snapshot)}`);
    }
  } catch (err) {
    err.message += `\n--- wire ---\n${session.report()}\n--- server log ---\n${server.logTail(4000)}`;
    throw err;
  } finally {
    await session.close();
    await server.stop();
  }
}

test('the admin view of a document equals the SDK replicas', { skip: skipReason(), timeout: 120000 }, (t) => viewMatchesReplicas(t));

test(
  'the admin view of a document with stored snapshots equals the SDK replicas',
  { skip: skipReason(), timeout: 120000 },
  (t) => viewMatchesReplicas(t, { extraArgs: ['--snapshot-interval', '2', '--snapshot-threshold', '2'], snapshots: true }),
);

test('the admin view answers 404 for an unknown document, 401 without credentials', { skip: skipReason(), timeout: 60000 }, async () => {
  const server = await startServer();
  try {
    const key = newDocKey('never-used');
    const token = await logIn(server.rpcAddr);
    await assert.rejects(viewWith(`http://127.0.0.1:${server.profilingPort}`, key, { token }), (err) => {
      assert.equal(err.status, 404);
      assert.equal(err.body.code, 'document_not_found');
      return true;
    });
    await assert.rejects(viewWith(`http://127.0.0.1:${server.profilingPort}`, key), (err) => {
      assert.equal(err.status, 401);
      assert.equal(err.body.code, 'unauthenticated');
      return true;
    });
  } finally {
    await server.stop();
  }
});
