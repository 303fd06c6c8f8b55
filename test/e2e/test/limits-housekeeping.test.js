'use strict';
// Per-client bounds and housekeeping as the real SDK meets them: which
// refusals it retries, which it gives up on, and a client that went silent
// being deactivated while a watching one stays.

const assert = require('node:assert/strict');
const { describe, test } = require('node:test');
const { startServer } = require('../lib/server');
const { singleServerSkipReason, externalAddrs } = require('../lib/suite');
const { withTimeout, waitFor } = require('../lib/wait');
const { runInSession, singleTarget, newDocKey, yorkie } = require('../lib/session');
const { waitConverged } = require('../lib/replicas');
const { counter, refusedWatches } = require('../lib/metrics');
const { deactivateSilentClient, checkWatcherKept } = require('../lib/housekeeping');

const skip = externalAddrs().length ? 'starts servers with its own flags' : singleServerSkipReason();
const STOP_GRACE_MS = 10000;

/** Starts a server with extra flags, runs fn(session, server), stops it. */
async function withServer(extraArgs, fn) {
  const server = await startServer({ extraArgs });
  const target = singleTarget(server.rpcAddr, { describe: () => `--- server log ---\n${server.logTail(3000)}` });
  try {
    await runInSession({ target, transport: 'json' }, (session) => fn(session, server));
  } finally {
    await withTimeout(server.stop({ graceMs: STOP_GRACE_MS }), STOP_GRACE_MS + 5000, 'server stop');
  }
}

describe('per-client bounds and housekeeping with the JS SDK', { skip }, () => {
  test('a Watch past --max-watch-streams-per-client is retried by the SDK and connects once a stream frees', async () => {
    await withServer(['--max-watch-streams-per-client', '1'], async (session, server) => {
      const [client, peer] = await session.activateClients(2);
      const first = await session.attach(client, newDocKey('first'));
      const secondKey = newDocKey('second');
      const second = new yorkie.Document(secondKey);
      // attach resolves although the stream is refused: the SDK keeps retrying it.
      await withTimeout(client.attach(second), 15000, 'attach of the second document');
      await waitFor(async () => (await refusedWatches(server)) >= 2, {
        what: 'the SDK to retry the refused Watch',
        describe: async () => `refused so far: ${await refusedWatches(server)}`,
      });
      assert.ok(client.getCondition(yorkie.ClientCondition.WatchLoop), 'the SDK keeps its watch loop running');

      // Once the first stream ends, a retry gets through: the peer's edit
      // reaches the second document in realtime, which needs its stream.
      await withTimeout(client.detach(first), 15000, 'detach of the first document');
      const peerDoc = await session.attach(peer, secondKey);
      peerDoc.update((root) => {
        root.from = 'peer';
      });
      await waitConverged([second, peerDoc], { expect: (json) => json.from === 'peer' });
    });
  });

  test('an attach past --max-attachments-per-client is refused with ErrTooManyAttachments and not retried', async () => {
    await withServer(['--max-attachments-per-client', '1'], async (session) => {
      const client = await session.activateClient();
      await session.attach(client, newDocKey('only'));
      const refused = new yorkie.Document(newDocKey('one-too-many'));
      const err = await client.attach(refused).then(
        () => assert.fail('the attach past the bound succeeded'),
        (e) => e,
      );
      assert.equal(err.code, 8 /* resource_exhausted */, `code of ${err}`);
      assert.match(err.message, /documents attached/);
      assert.equal(refused.getStatus(), yorkie.DocStatus.Detached, 'the refused document stays detached');
      assert.ok(client.isActive(), 'the client stays active');
    });
  });

  test('housekeeping deactivates a client that went silent; it learns so on its next call, a watching one stays', async () => {
    const args = ['--client-deactivate-threshold', '1s', '--housekeeping-interval', '200ms'];
    await withServer(args, async (session, server) => {
      const { silent, watcher, watcherDoc } = await deactivateSilentClient(session, server, 'housekeeping');
      await waitFor(() => !silent.isActive(), { what: 'the SDK to deactivate the silent client itself' });
      await checkWatcherKept(watcher, watcherDoc);
      assert.equal(await counter(server, 'yorkie_housekeeping_clients_deactivated_total'), 1, 'only the silent client was deactivated');
    });
  });
});
