'use strict';
// Document revisions with the real SDK: createRevision, listRevisions (pages
// in both directions), getRevision and restoreRevision, whose change reaches
// every attached client. Runs on the memory database, and on MongoDB with
// YORKIE_E2E_DATABASE=mongo (npm run test:mongo).

const assert = require('node:assert/strict');
const { describe, test, before, after } = require('node:test');
const { startServer } = require('../lib/server');
const { singleServerSkipReason, externalAddrs } = require('../lib/suite');
const { withTimeout } = require('../lib/wait');
const { runInSession, singleTarget, newDocKey, yorkie } = require('../lib/session');
const { waitConverged } = require('../lib/replicas');

const skip = externalAddrs().length ? 'starts its own server' : singleServerSkipReason();

/** The rich content a revision keeps: every kind of value. */
function fill(root) {
  root.title = 'first';
  root.n = 7;
  root.list = [1, 'two', { three: 3 }];
  root.nested = { a: { b: [true, null] } };
  root.count = new yorkie.Counter(yorkie.CounterType.Int, 0);
  root.count.increase(5);
  root.text = new yorkie.Text();
  root.text.edit(0, 0, 'hello world');
  root.text.setStyle(0, 5, { bold: 'true' });
  root.tree = new yorkie.Tree({
    type: 'doc',
    children: [{ type: 'p', attributes: { align: 'left' }, children: [{ type: 'text', value: 'ab' }] }],
  });
}

/** Edits that change every part of the content filled above. */
function scramble(root) {
  root.title = 'second';
  delete root.n;
  root.list.push(4);
  root.list.delete(0);
  root.nested.a.c = 'new';
  root.count.increase(10);
  root.text.edit(0, 5, 'HOWDY');
  root.tree.edit(1, 1, { type: 'text', value: 'x' });
  root.extra = { added: true };
}

/** Expects the promise to fail with the Connect code and Yorkie error code. */
async function rejectsWith(promise, code, yorkieCode) {
  await assert.rejects(promise, (err) => {
    const text = `${err && err.message} ${JSON.stringify(err && err.details)}`;
    assert.match(String(err && err.message), new RegExp(`\\[${code}\\]`), text);
    if (yorkieCode) {
      const codes = (err.details || []).map((d) => JSON.stringify(d));
      assert.ok(codes.some((c) => c.includes(yorkieCode)) || text.includes(yorkieCode), `want ${yorkieCode}: ${text}`);
    }
    return true;
  });
}

describe('document revisions', { skip }, () => {
  let server;
  before(async () => {
    server = await startServer({ logLevel: 'info' });
  });
  after(async () => {
    if (server) await server.stop();
  });
  const target = () => singleTarget(server.rpcAddr, { describe: () => server.logTail(3000) });

  test('create, list in pages both ways, get and restore, which a second client receives', async () => {
    await runInSession({ target: target(), transport: 'json' }, async (s) => {
      const [c0, c1] = await s.activateClients(2);
      const key = newDocKey('revisions');
      const d0 = await s.attach(c0, key);
      const d1 = await s.attach(c1, key);

      d0.update(fill);
      const first = await waitConverged([d0, d1], { expect: (j) => j.title === 'first' });
      const r1 = await withTimeout(c0.createRevision(d0, 'v1', 'the first content'), 15000, 'createRevision');
      assert.equal(r1.label, 'v1');
      assert.equal(r1.description, 'the first content');
      assert.match(r1.id, /^[0-9a-f]{24}$/);
      assert.ok(r1.createdAt instanceof Date && !Number.isNaN(r1.createdAt.getTime()), 'createdAt is a date');

      // More revisions, each of another state.
      const labels = ['v1'];
      for (let i = 2; i <= 5; i++) {
        d1.update((root) => {
          root.n = i * 10;
        });
        await waitConverged([d0, d1], { expect: (j) => j.n === i * 10 });
        await c1.createRevision(d1, `v${i}`);
        labels.push(`v${i}`);
      }

      // Newest first by default, oldest first forward, pages of both.
      const all = await c0.listRevisions(d0, { pageSize: 10 });
      assert.deepEqual(all.map((r) => r.label), [...labels].reverse());
      assert.ok(all.every((r) => r.snapshot === ''), 'a list leaves the content out');
      const back1 = await c0.listRevisions(d0, { pageSize: 3 });
      const back2 = await c0.listRevisions(d0, { pageSize: 3, offset: 3 });
      assert.deepEqual([...back1, ...back2].map((r) => r.label), ['v5', 'v4', 'v3', 'v2', 'v1']);
      const fwd1 = await c0.listRevisions(d0, { pageSize: 2, isForward: true });
      const fwd2 = await c0.listRevisions(d0, { pageSize: 2, offset: 2, isForward: true });
      const fwd3 = await c0.listRevisions(d0, { pageSize: 2, offset: 4, isForward: true });
      assert.deepEqual([fwd1, fwd2, fwd3].map((p) => p.map((r) => r.label)), [['v1', 'v2'], ['v3', 'v4'], ['v5']]);
      assert.deepEqual(await c0.listRevisions(d0, { pageSize: 2, offset: 9 }), []);

      // Get: the content in YSON, as upstream writes it (attribute values
      // as the SDK stores them, JSON encoded).
      const got = await c1.getRevision(d1, r1.id);
      assert.equal(got.id, r1.id);
      assert.equal(got.label, 'v1');
      assert.equal(got.description, 'the first content');
      assert.ok(got.snapshot.startsWith('{"count":Counter(Int(5)),"list":[Int(1),"two",{"three":Int(3)}],"n":Int(7)'), got.snapshot);
      assert.ok(got.snapshot.includes('"text":Text([{"val":"hello","attrs":{"bold":"\\"true\\""}},{"val":" world"}])'), got.snapshot);
      assert.ok(got.snapshot.includes('"tree":Tree({"type":"doc","children":[{"type":"p","attrs":{"align":"\\"left\\""},"children":[{"type":"text","value":"ab"}]}]})'), got.snapshot);

      // Restore: both replicas come back to the first content and go on.
      d1.update(scramble);
      await waitConverged([d0, d1], { expect: (j) => j.title === 'second' });
      await withTimeout(c1.restoreRevision(d1, r1.id), 15000, 'restoreRevision');
      const restored = await waitConverged([d0, d1], { expect: (j) => j.title === 'first' && j.extra === undefined });
      assert.deepEqual(restored, first);
      d0.update((root) => {
        root.text.edit(0, 0, '>');
        root.count.increase(1);
      });
      const after = await waitConverged([d0, d1], { expect: (j) => j.count === 6 });
      assert.equal(after.text[0].val, '>');

      // The restored content is a revision's content again.
      const again = await c0.createRevision(d0, 'after');
      const gotAgain = await c0.getRevision(d0, again.id);
      assert.ok(gotAgain.snapshot.includes('"title":"first"'), gotAgain.snapshot);
    });
  });

  test('a client attached in manual mode receives the restore on its next sync', async () => {
    await runInSession({ target: target(), transport: 'grpc-web' }, async (s) => {
      const [c0, c1] = await s.activateClients(2);
      const key = newDocKey('revisions-manual');
      const d0 = new yorkie.Document(key);
      await withTimeout(c0.attach(d0, { syncMode: yorkie.SyncMode.Manual }), 15000, 'attach');
      d0.update((root) => {
        root.k1 = 'v1';
        root.k2 = 'v2';
      });
      await c0.sync();
      const rev = await c0.createRevision(d0, 'v1.0', 'Initial state');
      const d1 = new yorkie.Document(key);
      await withTimeout(c1.attach(d1, { syncMode: yorkie.SyncMode.Manual }), 15000, 'attach');
      d0.update((root) => {
        root.k1 = 'modified';
        root.k2 = 'v3';
      });
      await c0.sync();
      await c1.sync();
      assert.equal(d1.toSortedJSON(), '{"k1":"modified","k2":"v3"}');
      await c0.restoreRevision(d0, rev.id);
      await c0.sync();
      await c1.sync();
      assert.equal(d0.toSortedJSON(), '{"k1":"v1","k2":"v2"}');
      assert.equal(d1.toSortedJSON(), '{"k1":"v1","k2":"v2"}');
    });
  });

  test('an unknown revision is not found and a removed document is not restored', async () => {
    await runInSession({ target: target(), transport: 'json' }, async (s) => {
      const [c0, c1] = await s.activateClients(2);
      const key = newDocKey('revisions-bad');
      const d0 = new yorkie.Document(key);
      await withTimeout(c0.attach(d0, { syncMode: yorkie.SyncMode.Manual }), 15000, 'attach');
      d0.update((root) => {
        root.k = 'v';
      });
      await c0.sync();
      const rev = await c0.createRevision(d0, 'kept');
      const unknown = '0123456789abcdef01234567';
      await rejectsWith(c0.getRevision(d0, unknown), 'not_found', 'ErrRevisionNotFound');
      await rejectsWith(c0.restoreRevision(d0, unknown), 'not_found', 'ErrRevisionNotFound');
      await rejectsWith(c0.getRevision(d0, 'not-an-id'), 'not_found', 'ErrRevisionNotFound');

      // Another document's revision is not this one's.
      const other = await s.attach(c1, newDocKey('revisions-other'));
      await rejectsWith(c1.getRevision(other, rev.id), 'not_found', 'ErrRevisionNotFound');
      await rejectsWith(c1.restoreRevision(other, rev.id), 'not_found', 'ErrRevisionNotFound');
      assert.equal(other.toSortedJSON(), '{}');

      // Removed by another client, the document refuses the restore.
      const d1 = new yorkie.Document(key);
      await withTimeout(c1.attach(d1, { syncMode: yorkie.SyncMode.Manual }), 15000, 'attach');
      await c1.remove(d1);
      await rejectsWith(c0.restoreRevision(d0, rev.id), 'failed_precondition', 'ErrDocumentRemoved');
      // Its revisions stay readable.
      assert.equal((await c0.getRevision(d0, rev.id)).snapshot, '{"k":"v"}');
    });
  });
});
