'use strict';
// The server process itself: health check, metrics endpoint, clean stop.

const assert = require('node:assert/strict');
const { describe, test } = require('node:test');
const { startServer } = require('../lib/server');
const { singleServerSkipReason, externalAddrs } = require('../lib/suite');
const { withTimeout } = require('../lib/wait');

const skip = externalAddrs().length ? 'uses YORKIE_E2E_RPC_ADDR instead of starting a server' : singleServerSkipReason();

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
      const exit = await withTimeout(server.stop({ graceMs: 10000 }), 15000, 'server stop');
      assert.ok(exit.signal === 'SIGTERM' || exit.code === 0, `server stopped on SIGTERM: ${JSON.stringify(exit)}\n${server.logTail()}`);
    }
  });
});
