'use strict';
// The server's own copy of each document, as SDK clients meet it: a change
// that does not apply is refused (and the document stays usable for
// everyone), a late joiner of a long document gets a snapshot, and
// concurrent pushes that take the document past its size limit are accepted
// (the SDK refuses local edits past it; the server only has a hard bound).

const assert = require('node:assert/strict');
const { describe, test, before, after } = require('node:test');
const { startServer } = require('../lib/server');
const { singleServerSkipReason, externalAddrs } = require('../lib/suite');
const { withTimeout } = require('../lib/wait');
const { runInSession, singleTarget, newDocKey, yorkie } = require('../lib/session');
const { waitConverged, waitPushed } = require('../lib/replicas');

const skip = externalAddrs().length ? 'starts servers with its own flags' : singleServerSkipReason();

const THRESHOLD = 200;
const SIZE_LIMIT = 8000;
const ROOT = { actorId: 'AAAAAAAAAAAAAAAA' };

/** One Connect JSON call made by hand, as a misbehaving client would. */
async function call(addr, method, body) {
  const res = await fetch(`${addr}/yorkie.v1.YorkieService/${method}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'Connect-Protocol-Version': '1' },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: await res.json() };
}

/** The ErrorInfo code names a Connect error JSON carries. */
function errorCodes(json) {
  return (json.details || [])
    .filter((d) => /ErrorInfo$/.test(d.type))
    .map((d) => Buffer.from(d.value, 'base64').toString('latin1'));
}

/** The bad changes of the issue: each is refused with its own code. */
function poisons(actorId) {
  const at = { lamport: '1000', actorId };
  return [
    { name: 'an empty operation', code: 'ErrInvalidOperation', op: {} },
    {
      name: 'an unknown parent',
      code: 'ErrElementNotFound',
      op: {
        set: {
          parentCreatedAt: { lamport: '999', actorId },
          key: 'x',
          value: { createdAt: at, type: 'VALUE_TYPE_STRING', value: Buffer.from('v').toString('base64') },
          executedAt: at,
        },
      },
    },
    { name: 'a removal of the root', code: 'ErrRemoveRoot', op: { remove: { parentCreatedAt: ROOT, createdAt: ROOT, executedAt: at } } },
  ];
}

describe('server-side documents', { skip }, () => {
  let server;
  let limited;
  before(async () => {
    [server, limited] = await Promise.all([
      startServer({
        logLevel: 'info',
        extraArgs: ['--snapshot-threshold', String(THRESHOLD), '--snapshot-interval', '100'],
      }),
      startServer({ logLevel: 'info', extraArgs: ['--max-size-per-document', String(SIZE_LIMIT)] }),
    ]);
  });
  after(async () => {
    await Promise.all([server && server.stop(), limited && limited.stop()]);
  });
  const target = (srv = server) => singleTarget(srv.rpcAddr, { describe: () => srv.logTail(3000) });

  test('changes that do not apply are refused with their code, and SDK clients keep working', async () => {
    await runInSession({ target: target(), transport: 'json' }, async (s) => {
      const [c0, c1] = await s.activateClients(2);
      const key = newDocKey('poison');
      const d0 = await s.attach(c0, key);
      const d1 = await s.attach(c1, key);
      d0.update((root) => {
        root.list = [1, 2];
        root.count = new yorkie.Counter(yorkie.CounterType.Int, 0);
        root.text = new yorkie.Text();
        root.text.edit(0, 0, 'hello');
      });
      await waitConverged([d0, d1], { expect: (j) => j.count === 0 });

      const { json: activated } = await call(server.rpcAddr, 'ActivateClient', { clientKey: 'poisoner' });
      const clientId = activated.clientId;
      const actorId = Buffer.from(clientId, 'hex').toString('base64');
      const attached = await call(server.rpcAddr, 'AttachDocument', {
        clientId,
        changePack: { documentKey: key, checkpoint: {} },
      });
      assert.equal(attached.status, 200, JSON.stringify(attached.json));
      assert.equal(attached.json.maxSizePerDocument, 10 * 1024 * 1024, 'the size limit is sent on attach');
      for (const p of poisons(actorId)) {
        const res = await call(server.rpcAddr, 'PushPullChanges', {
          clientId,
          documentId: attached.json.documentId,
          changePack: {
            documentKey: key,
            checkpoint: { serverSeq: attached.json.changePack.checkpoint.serverSeq, clientSeq: 1 },
            changes: [{
              id: { clientSeq: 1, lamport: '1000', actorId, versionVector: { vector: { [actorId]: '1000' } } },
              operations: [p.op],
            }],
          },
        });
        assert.equal(res.json.code, 'invalid_argument', `${p.name}: ${JSON.stringify(res.json)}`);
        assert.ok(errorCodes(res.json).some((c) => c.includes(p.code)), `${p.name}: want ${p.code} in ${JSON.stringify(res.json)}`);
      }

      // Everyone goes on: the attached clients edit and converge, a fresh
      // client attaches and edits.
      d1.update((root) => {
        root.list.push(3);
        root.count.increase(2);
        root.text.edit(5, 5, ' world');
      });
      await waitConverged([d0, d1], { expect: (j) => j.count === 2 });
      const c2 = await s.activateClient();
      const d2 = await s.attach(c2, key);
      d2.update((root) => root.count.increase(1));
      const json = await waitConverged([d0, d1, d2], { expect: (j) => j.count === 3 });
      assert.deepEqual(json.list, [1, 2, 3]);
      assert.equal(json.text.map((t) => t.val).join(''), 'hello world');
    });
  });

  for (const transport of ['json', 'grpc-web']) {
    test(`a late joiner of a long document attaches from a snapshot and edits on (${transport})`, async () => {
      await runInSession({ target: target(), transport }, async (s) => {
        const [writer, other] = await s.activateClients(2);
        const key = newDocKey('late-snapshot');
        const w = await s.attach(writer, key);
        const o = await s.attach(other, key);
        w.update((root) => {
          root.count = new yorkie.Counter(yorkie.CounterType.Int, 0);
          root.text = new yorkie.Text();
          root.items = [];
          root.tree = new yorkie.Tree({
            type: 'doc',
            children: [{ type: 'p', children: [{ type: 'text', value: 'ab' }] }],
          });
        });
        const n = THRESHOLD * 3;
        for (let i = 0; i < n; i++) {
          w.update((root) => {
            root.count.increase(1);
            // A text kept short: its history grows, it does not.
            root.text.edit(root.text.length, root.text.length, String(i % 10));
            if (root.text.length > 20) root.text.edit(0, 1, '');
            if (i % 50 === 0) root.items.push(i);
            if (i % 20 === 0) {
              // Type into the paragraph and split it now and then.
              root.tree.edit(2, 2, { type: 'text', value: String(i % 10) });
              if (i % 100 === 0) root.tree.edit(2, 2, undefined, 1);
            }
            root[`k${i % 5}`] = i;
          });
        }
        await waitPushed(w);
        const before = await waitConverged([w, o], { expect: (j) => j.count === n });

        const late = await s.activateClient();
        const doc = new yorkie.Document(key);
        const snapshots = [];
        doc.subscribe((e) => {
          if (e.type === 'snapshot') snapshots.push(e);
        });
        await withTimeout(late.attach(doc), 15000, 'late attach');
        assert.ok(snapshots.length >= 1, 'the late attach was answered with a snapshot');
        assert.deepEqual(JSON.parse(doc.toSortedJSON()), before);

        doc.update((root) => {
          root.count.increase(10);
          root.text.edit(0, 0, 'L');
        });
        o.update((root) => root.items.push('o'));
        const after = await waitConverged([w, o, doc], { expect: (j) => j.count === n + 10 && j.items.includes('o') });
        assert.equal(after.text[0].val[0], 'L');
      });
    });
  }

  test('concurrent pushes that take the document past its size limit are accepted', async () => {
    await runInSession({ target: target(limited), transport: 'json' }, async (s) => {
      const [c0, c1] = await s.activateClients(2);
      const key = newDocKey('size');
      const manual = async (c) => {
        const d = new yorkie.Document(key);
        await withTimeout(c.attach(d, { syncMode: yorkie.SyncMode.Manual }), 15000, 'manual attach');
        return d;
      };
      const d0 = await manual(c0);
      const d1 = await manual(c1);
      assert.equal(d0.getMaxSizePerDocument(), SIZE_LIMIT);
      // Each edit fits alone (the SDK checks that much itself); both do not.
      const half = 'x'.repeat(SIZE_LIMIT / 2 / 2 - 200); // two bytes per character
      d0.update((root) => {
        root.a = half;
      });
      d1.update((root) => {
        root.b = half + half.slice(0, 500);
      });
      await withTimeout(c0.sync(d0), 15000, 'sync of the first edit');
      await withTimeout(c1.sync(d1), 15000, 'sync of the second edit');
      await withTimeout(c0.sync(d0), 15000, 'pull of the second edit');
      assert.equal(d0.toSortedJSON(), d1.toSortedJSON());

      // Both were stored: a fresh client sees them.
      const c2 = await s.activateClient();
      const d2 = await s.attach(c2, key);
      const json = JSON.parse(d2.toSortedJSON());
      assert.equal(json.a, half);
      assert.equal(json.b, half + half.slice(0, 500));
    });
  });
});
