'use strict';
// A client that attaches a channel and then subscribes to its 'presence'
// hears the count, as against upstream: the SDK publishes 'initialized'
// while attach() runs, before the caller can subscribe, so the server
// announces the count again in an event after the initialization.

const assert = require('node:assert/strict');
const { describe, test, before, after } = require('node:test');
const { startServer } = require('../lib/server');
const { singleServerSkipReason, externalAddrs } = require('../lib/suite');
const { withTimeout, waitFor } = require('../lib/wait');
const { runInSession, singleTarget, yorkie } = require('../lib/session');

const skip = externalAddrs().length ? 'starts a server of its own' : singleServerSkipReason();
const STOP_GRACE_MS = 10000;

describe('channel presence after attach', { skip }, () => {
  let server;
  let target;

  before(async () => {
    server = await startServer();
    target = singleTarget(server.rpcAddr, { describe: () => `--- server log ---\n${server.logTail(3000)}` });
  });

  after(async () => {
    if (server) await withTimeout(server.stop({ graceMs: STOP_GRACE_MS }), STOP_GRACE_MS + 5000, 'server stop');
  });

  for (const transport of ['json', 'grpc-web']) {
    test(`subscribing to 'presence' after attach receives the count (${transport})`, async () => {
      await runInSession({ target, transport }, async (session) => {
        const key = `room-${process.pid}-${transport}.lobby`;
        const [a, b] = await session.activateClients(2);
        const first = new yorkie.Channel(key);
        await withTimeout(a.attach(first), 15000, 'first attach');
        const firstCounts = [];
        first.subscribe('presence', (e) => firstCounts.push(e.count));
        await waitFor(() => firstCounts.length > 0, { timeoutMs: 10000, what: 'the first client hears its count' });
        assert.equal(firstCounts.at(-1), 1);

        const second = new yorkie.Channel(key);
        await withTimeout(b.attach(second), 15000, 'second attach');
        const secondCounts = [];
        second.subscribe('presence', (e) => secondCounts.push(e.count));
        await waitFor(() => secondCounts.length > 0, { timeoutMs: 10000, what: 'the second client hears the count' });
        assert.equal(secondCounts.at(-1), 2);
        await waitFor(() => firstCounts.at(-1) === 2, { timeoutMs: 10000, what: 'the first client hears the second' });
        assert.equal(second.getSessionCount(), 2);
      });
    });
  }
});
