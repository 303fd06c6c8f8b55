'use strict';
// The server process itself: health check, metrics endpoint, clean stop.

const assert = require('node:assert/strict');
const { describe, test } = require('node:test');
const { startServer } = require('../lib/server');
const { singleServerSkipReason, externalAddrs } = require('../lib/suite');
const { withTimeout, waitFor } = require('../lib/wait');
const { Session, singleTarget, newDocKey, yorkie } = require('../lib/session');
const { recordEvents } = require('../lib/replicas');
const diagnostics = require('../lib/diagnostics');

const skip = externalAddrs().length ? 'uses YORKIE_E2E_RPC_ADDR instead of starting a server' : singleServerSkipReason();

// Generous bound for "stops at all"; not a performance figure.
const STOP_GRACE_MS = 15000;

describe('yorkie server process', { skip }, () => {
  test('serves /healthz on the RPC port and Prometheus metrics on the profiling port, and stops on SIGTERM', async () => {
    const server = await startServer({ logLevel: 'info' });
    try {
      const health = await fetch(`${server.rpcAddr}/healthz`);
      assert.equal(health.status, 200, 'GET /healthz');
      await health.arrayBuffer();

      const metrics = await fetch(server.metricsURL);
      assert.equal(metrics.status, 200, 'GET /metrics');
      const body = await metrics.text();
      assert.match(body, /^# (HELP|TYPE) /m, 'metrics are in the Prometheus text format');
    } finally {
      const exit = await withTimeout(server.stop({ graceMs: STOP_GRACE_MS }), STOP_GRACE_MS + 5000, 'server stop');
      assert.ok(exit.signal === 'SIGTERM' || exit.code === 0, `server stopped on SIGTERM: ${JSON.stringify(exit)}\n${server.logTail()}`);
    }
  });

  test('on SIGTERM with a client watching, it ends the Watch stream retryably and exits; a restarted server tells the client it is unknown', async () => {
    const server = await startServer({ logLevel: 'debug' });
    const session = new Session({ target: singleTarget(server.rpcAddr), transport: 'json' });
    let stopped = false;
    try {
      const client = await session.activateClient();
      const doc = await session.attach(client, newDocKey('shutdown'), { initialPresence: { name: 'watching' } });
      doc.update((root) => {
        root.before = 'shutdown';
      });
      await waitFor(() => !doc.hasLocalChanges(), { what: 'the edit to be acknowledged' });
      const connection = recordEvents(doc, 'connection');
      const mark = diagnostics.mark();

      const exit = await withTimeout(server.stop({ graceMs: STOP_GRACE_MS }), STOP_GRACE_MS + 5000, 'server stop');
      stopped = true;
      assert.ok(
        exit.signal === 'SIGTERM' || exit.code === 0,
        `server exited on SIGTERM while a Watch stream was open (not killed): ${JSON.stringify(exit)}\n${server.logTail()}`,
      );
      await waitFor(() => connection.events.some((e) => e.value === yorkie.StreamConnectionStatus.Disconnected), {
        what: 'the SDK to see its Watch stream end',
        describe: () => JSON.stringify(connection.events),
      });
      // A retryable ending makes the SDK open a new Watch; a non-retryable one
      // stops its watch loop for good.
      await waitFor(
        () => {
          if (!client.getCondition(yorkie.ClientCondition.WatchLoop)) {
            throw new Error(`the SDK stopped watching for good after the shutdown\n${diagnostics.summarize(diagnostics.since(mark))}`);
          }
          return diagnostics.since(mark).some((e) => e.rpc === 'Watch');
        },
        { what: 'the SDK to try to watch again' },
      );
      connection.stop();

      // A server started in its place has never heard of the client: the SDK
      // must be told so (and then stop), not be asked to retry for ever.
      const restarted = await startServer({ logLevel: 'debug', rpcPort: server.rpcPort });
      try {
        await waitFor(() => !client.isActive(), {
          what: 'the SDK to learn from the new server that its client is unknown and deactivate itself',
          timeoutMs: 20000,
          describe: () => `${diagnostics.summarize(diagnostics.since(mark))}\n--- new server log ---\n${restarted.logTail(3000)}`,
        });
        assert.equal(doc.getStatus(), yorkie.DocStatus.Detached, 'its document is detached locally');
      } finally {
        await session.close();
        await restarted.stop();
      }
    } finally {
      if (!stopped) await server.stop({ graceMs: 2000 });
    }
  });
});
