'use strict';
// The size limit as the SDK applies it (upstream's rule): the SDK refuses a
// local edit past the project's max_size_per_document and always accepts
// remote changes, and the server accepts what concurrent edits take past
// the limit (it keeps only a hard bound, --document-size-hard-limit-factor
// times the limit). Two clients that each stay under the limit locally
// converge past it, and a further local edit is refused by the SDK.

const assert = require('node:assert/strict');
const { describe, test } = require('node:test');
const { startServer } = require('../lib/server');
const { singleServerSkipReason, externalAddrs } = require('../lib/suite');
const { withTimeout } = require('../lib/wait');
const { runInSession, singleTarget, newDocKey, yorkie } = require('../lib/session');
const { ProjectAdmin } = require('../lib/project-admin');

const skip = externalAddrs().length ? 'starts a server of its own' : singleServerSkipReason();
const STOP_GRACE_MS = 10000;
const LIMIT = 3000;

describe('the size limit with the JS SDK', { skip }, () => {
  test('concurrent edits converge past the limit; a further local edit is refused', async () => {
    const server = await startServer();
    const target = singleTarget(server.rpcAddr, { describe: () => `--- server log ---\n${server.logTail(3000)}` });
    try {
      const admin = await ProjectAdmin.logIn(server.rpcAddr);
      await admin.update('default', { maxSizePerDocument: LIMIT });
      await runInSession({ target, transport: 'json' }, async (session) => {
        const key = newDocKey('size');
        const [c1, c2] = await session.activateClients(2);
        const d1 = new yorkie.Document(key);
        await c1.attach(d1, { syncMode: yorkie.SyncMode.Manual });
        const d2 = new yorkie.Document(key);
        await c2.attach(d2, { syncMode: yorkie.SyncMode.Manual });

        // Each edit alone stays under the limit; together they pass it.
        d1.update((root) => {
          root.a = 'a'.repeat(900);
        });
        d2.update((root) => {
          root.b = 'b'.repeat(900);
        });
        assert.ok(d1.getDocSize().live.data < LIMIT && d2.getDocSize().live.data < LIMIT);
        await c1.sync(d1);
        await c2.sync(d2);
        await c1.sync(d1);
        assert.equal(d1.toSortedJSON(), d2.toSortedJSON(), 'both replicas converge');
        const size = d1.getDocSize();
        assert.ok(size.live.data + size.live.meta > LIMIT, `the document passed the limit: ${JSON.stringify(size)}`);
        assert.match(d1.toSortedJSON(), /"a":"a{900}","b":"b{900}"/);

        for (const doc of [d1, d2]) {
          assert.throws(
            () => doc.update((root) => {
              root.c = 'c';
            }),
            (e) => e.code === 'ErrDocumentSizeExceedsLimit',
            'the SDK refuses a local edit past the limit',
          );
          assert.equal(doc.getRoot().c, undefined);
        }
        // Syncing goes on: nothing was refused by the server.
        await c1.sync(d1);
        await c2.sync(d2);
      });
    } finally {
      await withTimeout(server.stop({ graceMs: STOP_GRACE_MS }), STOP_GRACE_MS + 5000, 'server stop');
    }
  });
});
