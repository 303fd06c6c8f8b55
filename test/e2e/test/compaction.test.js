'use strict';
// Compaction as the real SDK meets it: CompactDocumentByAdmin (with a
// project's secret key, as upstream's SDK tests call it) replaces a
// document's history with one change. The content stays byte for byte
// (toSortedJSON), a client still attached with the old epoch gets the SDK's
// 'epoch-mismatch' event, detaches and attaches the compacted document, and
// a late joiner converges on it.

const assert = require('node:assert/strict');
const { describe, test, before, after } = require('node:test');
const { startServer } = require('../lib/server');
const { singleServerSkipReason, externalAddrs } = require('../lib/suite');
const { withTimeout, waitFor } = require('../lib/wait');
const { runInSession, singleTarget, newDocKey, yorkie } = require('../lib/session');
const { ProjectAdmin, connectCall } = require('../lib/project-admin');
const { counter } = require('../lib/metrics');

const skip = externalAddrs().length ? 'starts a server of its own' : singleServerSkipReason();
const STOP_GRACE_MS = 10000;

/** Calls CompactDocumentByAdmin with the project's secret key. */
function compact(rpcAddr, secretKey, documentKey, force) {
  return new Promise((resolve, reject) => {
    const http = require('node:http');
    const payload = JSON.stringify({ documentKey, force });
    const req = http.request(new URL(`${rpcAddr}/yorkie.v1.AdminService/CompactDocumentByAdmin`), {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        'Content-Length': Buffer.byteLength(payload),
        Authorization: `API-Key ${secretKey}`,
      },
    }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode, body: JSON.parse(text || '{}') }));
    });
    req.on('error', reject);
    req.end(payload);
  });
}

/** Edits a document with text, nested objects, arrays, counters and removals. */
function edit(doc, round) {
  doc.update((root) => {
    if (!root.text) root.text = new yorkie.Text();
    root.text.edit(0, 0, `r${round} `);
    if (round % 3 === 0) root.text.edit(1, 3, '');
    if (round % 4 === 0) root.text.setStyle(0, 2, { bold: true });
    if (!root.list) root.list = [];
    root.list.push(round);
    if (round % 2 === 0) root.list.delete(0);
    root.nested = { round, tags: ['a', `t${round}`], deep: { ok: round % 2 === 0 } };
    if (!root.count) root.count = new yorkie.Counter(yorkie.CounterType.Int, 0);
    root.count.increase(round);
    root[`k${round % 5}`] = `v${round}`;
    if (round % 7 === 0) delete root[`k${(round + 1) % 5}`];
  });
}

describe('compaction with the JS SDK', { skip }, () => {
  let server;
  let target;
  let secretKey;

  before(async () => {
    server = await startServer();
    target = singleTarget(server.rpcAddr, { describe: () => `--- server log ---\n${server.logTail(3000)}` });
    const admin = await ProjectAdmin.logIn(server.rpcAddr);
    secretKey = (await admin.project('default')).secretKey;
  });

  after(async () => {
    if (server) await withTimeout(server.stop({ graceMs: STOP_GRACE_MS }), STOP_GRACE_MS + 5000, 'server stop');
  });

  test('forced compaction: epoch-mismatch, content unchanged, a late joiner converges', async () => {
    await runInSession({ target, transport: 'json' }, async (session) => {
      const key = newDocKey('compaction');
      const [c1, c2] = await session.activateClients(2);
      const d1 = new yorkie.Document(key);
      await c1.attach(d1, { syncMode: yorkie.SyncMode.Manual });
      const d2 = new yorkie.Document(key);
      await c2.attach(d2, { syncMode: yorkie.SyncMode.Manual });
      for (let round = 1; round <= 30; round++) {
        edit(round % 2 ? d1 : d2, round);
        await c1.sync(d1);
        await c2.sync(d2);
      }
      await c1.sync(d1);
      const before = d1.toSortedJSON();
      assert.equal(d2.toSortedJSON(), before);
      await c2.detach(d2);

      // Attached: refused with a clear error, nothing changed.
      const refused = await compact(server.rpcAddr, secretKey, key, false);
      assert.equal(refused.status, 400, JSON.stringify(refused.body));
      assert.equal(refused.body.code, 'failed_precondition');
      assert.match(JSON.stringify(refused.body), /ErrDocumentAttached/);
      edit(d1, 31);
      await c1.sync(d1);
      const beforeCompaction = d1.toSortedJSON();

      const forced = await compact(server.rpcAddr, secretKey, key, true);
      assert.equal(forced.status, 200, JSON.stringify(forced.body));
      assert.equal(forced.body.compacted, true);

      const events = [];
      d1.subscribe('epoch-mismatch', (e) => events.push(e));
      await assert.rejects(c1.sync(d1), /epoch mismatch/);
      assert.equal(events.length, 1);
      assert.equal(events[0].type, 'epoch-mismatch');
      assert.equal(events[0].value.method, 'PushPull');

      // Recovery as the SDK documents it: detach, attach again.
      await c1.detach(d1);
      const again = new yorkie.Document(key);
      await c1.attach(again, { syncMode: yorkie.SyncMode.Manual });
      assert.equal(again.toSortedJSON(), beforeCompaction);

      // A late joiner attaches the compacted document; both go on editing.
      const [late] = await session.activateClients(1);
      const d3 = await session.attach(late, key);
      assert.equal(d3.toSortedJSON(), beforeCompaction);
      again.update((root) => {
        root.text.edit(0, 0, 'after ');
        root.list.push(99);
      });
      await c1.sync(again);
      await waitFor(() => d3.toSortedJSON() === again.toSortedJSON(), { timeoutMs: 15000, what: 'late joiner converges' });
      d3.update((root) => root.count.increase(1000));
      await waitFor(async () => {
        await c1.sync(again);
        return again.toSortedJSON() === d3.toSortedJSON();
      }, { timeoutMs: 15000, what: 'edits after compaction converge' });
      assert.match(again.toSortedJSON(), /"val":"after "/);
    });
  });

  test('compaction of an idle document keeps its content; bad input is refused', async () => {
    await runInSession({ target, transport: 'json' }, async (session) => {
      const key = newDocKey('idle');
      const [c1] = await session.activateClients(1);
      const d1 = await session.attach(c1, key);
      for (let round = 1; round <= 12; round++) edit(d1, round);
      await c1.sync(d1);
      const before = d1.toSortedJSON();
      await c1.detach(d1);

      const ok = await compact(server.rpcAddr, secretKey, key, false);
      assert.equal(ok.status, 200, JSON.stringify(ok.body));
      assert.equal(ok.body.compacted, true);
      const again = await compact(server.rpcAddr, secretKey, key, false);
      assert.equal(again.body.compacted || false, false, 'a compacted document has nothing to compact');

      const d2 = await session.attach(c1, key);
      assert.equal(d2.toSortedJSON(), before);

      const unknown = await compact(server.rpcAddr, secretKey, newDocKey('never'), false);
      assert.equal(unknown.status, 404, JSON.stringify(unknown.body));
      const forged = await compact(server.rpcAddr, 'not-a-secret-key', key, true);
      assert.equal(forged.status, 401, JSON.stringify(forged.body));
      const noKey = await connectCall(server.rpcAddr, 'AdminService', 'CompactDocumentByAdmin', { documentKey: key, force: true });
      assert.equal(noKey.status, 401, JSON.stringify(noKey.body));
      assert.equal(d2.toSortedJSON(), before);
    });
  });
});

describe('housekeeping compaction with the JS SDK', { skip }, () => {
  test('a long document no client has attached is compacted; its content stays', async () => {
    const server = await startServer({
      extraArgs: ['--housekeeping-interval', '1s', '--housekeeping-compaction-min-changes', '20'],
    });
    const target = singleTarget(server.rpcAddr, { describe: () => `--- server log ---\n${server.logTail(3000)}` });
    try {
      await runInSession({ target, transport: 'json' }, async (session) => {
        const key = newDocKey('housekeeping');
        const [c1] = await session.activateClients(1);
        const d1 = new yorkie.Document(key);
        await c1.attach(d1, { syncMode: yorkie.SyncMode.Manual });
        for (let round = 1; round <= 25; round++) {
          edit(d1, round);
          await c1.sync(d1);
        }
        const before = d1.toSortedJSON();
        await c1.detach(d1);
        await waitFor(async () => (await counter(server, 'yorkie_backend_compactions_total')) >= 1, {
          timeoutMs: 30000, what: 'housekeeping compacts the document',
        });
        const [late] = await session.activateClients(1);
        const d2 = await session.attach(late, key);
        assert.equal(d2.toSortedJSON(), before);
      });
    } finally {
      await withTimeout(server.stop({ graceMs: STOP_GRACE_MS }), STOP_GRACE_MS + 5000, 'server stop');
    }
  });
});
