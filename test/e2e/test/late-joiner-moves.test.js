'use strict';
// A late joiner that attaches from a snapshot while a moved array element's
// old position is still kept (a client that has not synced since the move
// holds back its collection) must see the array in the document's order,
// and go on editing with everyone.

const assert = require('node:assert/strict');
const { describe, test, before, after } = require('node:test');
const { startServer } = require('../lib/server');
const { singleServerSkipReason, externalAddrs } = require('../lib/suite');
const { withTimeout } = require('../lib/wait');
const { runInSession, singleTarget, newDocKey, yorkie } = require('../lib/session');
const { waitConverged, waitPushed } = require('../lib/replicas');

const skip = externalAddrs().length ? 'starts a server with its own flags' : singleServerSkipReason();

const THRESHOLD = 20;

describe('late joiner after array moves', { skip }, () => {
  let server;
  before(async () => {
    server = await startServer({
      logLevel: 'info',
      extraArgs: ['--snapshot-threshold', String(THRESHOLD), '--snapshot-interval', '10'],
    });
  });
  after(async () => {
    if (server) await server.stop();
  });

  test('a snapshot keeps the element pushed after a moved one in place', async () => {
    await runInSession({ target: singleTarget(server.rpcAddr, { describe: () => server.logTail(3000) }), transport: 'json' }, async (s) => {
      const [writer, idle, lateClient] = await s.activateClients(3);
      const key = newDocKey('late-moves');
      const w = await s.attach(writer, key);
      w.update((root) => {
        root.l = ['a', 'b', 'c'];
        root.count = new yorkie.Counter(yorkie.CounterType.Int, 0);
      });
      await waitPushed(w);
      // idle attaches, then never syncs again: the server keeps a's old position.
      const i = new yorkie.Document(key);
      await withTimeout(idle.attach(i, { syncMode: yorkie.SyncMode.Manual }), 15000, 'manual attach');

      w.update((root) => {
        root.l.moveAfter(root.l.getElementByIndex(2).getID(), root.l.getElementByIndex(0).getID());
      });
      w.update((root) => root.l.push('d'));
      // Enough changes after them that the late joiner gets a snapshot holding both.
      for (let n = 0; n < THRESHOLD * 3; n++) w.update((root) => root.count.increase(1));
      await waitPushed(w);
      assert.deepEqual(JSON.parse(w.toSortedJSON()).l, ['b', 'c', 'a', 'd']);

      const late = new yorkie.Document(key);
      const snapshots = [];
      late.subscribe((e) => {
        if (e.type === 'snapshot') snapshots.push(e);
      });
      await withTimeout(lateClient.attach(late), 15000, 'late attach');
      assert.ok(snapshots.length >= 1, 'the late attach was answered with a snapshot');
      assert.deepEqual(JSON.parse(late.toSortedJSON()), JSON.parse(w.toSortedJSON()));

      late.update((root) => root.l.push('e'));
      await withTimeout(idle.sync(), 15000, 'sync of the idle client');
      const json = await waitConverged([w, late], { expect: (j) => j.l.includes('e') });
      assert.deepEqual(json.l, ['b', 'c', 'a', 'd', 'e']);
      await withTimeout(idle.sync(), 15000, 'second sync of the idle client');
      assert.deepEqual(JSON.parse(i.toSortedJSON()), json);
    });
  });
});
