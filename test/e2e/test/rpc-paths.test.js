'use strict';
// Which of the RPC port's paths answered the SDK. By default the server's own
// HTTP/1.1 loop answers its unary calls and counts them in
// yorkie_rpc_http1_fast_requests_total; with --rpc-fast-http1=false (as
// `npm run test:stock` passes through YORKIE_E2E_SERVER_ARGS) net/http answers
// them and the metric does not exist.

const assert = require('node:assert/strict');
const { describe, test } = require('node:test');
const { startServer } = require('../lib/server');
const { singleServerSkipReason, externalAddrs } = require('../lib/suite');
const { waitFor } = require('../lib/wait');
const { Session, singleTarget, newDocKey } = require('../lib/session');

const skip = externalAddrs().length ? 'uses YORKIE_E2E_RPC_ADDR instead of starting a server' : singleServerSkipReason();

const FAST_COUNTER = /^yorkie_rpc_http1_fast_requests_total (\S+)$/m;

describe('RPC port paths', { skip }, () => {
  test('the SDK syncs, and the fast counter shows which path answered it', async () => {
    const server = await startServer({ logLevel: 'info' });
    const session = new Session({ target: singleTarget(server.rpcAddr), transport: 'json' });
    try {
      const client = await session.activateClient();
      const doc = await session.attach(client, newDocKey('paths'));
      doc.update((root) => {
        root.path = 'answered';
      });
      await waitFor(() => !doc.hasLocalChanges(), { what: 'the edit to be acknowledged' });

      const metrics = await (await fetch(server.metricsURL)).text();
      const counted = metrics.match(FAST_COUNTER);
      if (server.args.includes('--rpc-fast-http1=false')) {
        assert.equal(counted, null, 'no fast loop on a server started with --rpc-fast-http1=false');
      } else {
        // ActivateClient, AttachDocument and at least one PushPullChanges.
        assert.ok(counted && Number(counted[1]) >= 3, `the fast loop answered the SDK's calls: ${counted && counted[0]}`);
      }
    } finally {
      await session.close();
      await server.stop();
    }
  });
});
