'use strict';
// The session store's error metric, which an operator watches to see a Redis
// failover start and end: a store call that fails must be counted under
// yorkie_sessionstore_call_seconds{outcome="error"}.

const test = require('node:test');
const assert = require('node:assert/strict');
const { skipUnlessPresent, startRedis } = require('./lib/processes');
const { Session, singleTarget, newDocKey } = require('../lib/session');
const { NodeSet, metricSum } = require('./lib-redirect/nodes');

test(
  'a failed session store call is counted with outcome="error"',
  { skip: skipUnlessPresent(['yorkie', 'redis']), timeout: 60000 },
  async (t) => {
    const redis = await startRedis();
    const nodes = new NodeSet({ args: ['--session-store', 'redis', '--redis-addr', redis.addr] });
    let session;
    try {
      const node = await nodes.add();
      session = new Session({ target: singleTarget(node.rpcAddr) });
      const client = await session.activateClient();
      await session.attach(client, newDocKey('metrics-ok'));

      // Redis goes away: binding a new document fails.
      await redis.process.kill();
      let refused = null;
      try {
        await session.attach(client, newDocKey('metrics-refused'));
      } catch (err) {
        refused = err;
      }
      assert.ok(refused, 'an attach that needs a new binding fails while Redis is gone');
      assert.match(String(refused.message), /\[unavailable\]/);

      const text = await nodes.metrics(node);
      const errors = metricSum(text, 'yorkie_sessionstore_call_seconds_count', { outcome: 'error' });
      const ok = metricSum(text, 'yorkie_sessionstore_call_seconds_count', { outcome: 'ok' });
      t.diagnostic(`store calls: ok ${ok}, error ${errors}; attach refused with: ${String(refused.message).slice(0, 200)}`);
      assert.ok(
        errors >= 1,
        `the failed store call is counted as an error:\n${text.split('\n').filter((l) => l.startsWith('yorkie_sessionstore_call_seconds_count')).join('\n')}`,
      );
    } finally {
      if (session) await session.close();
      await nodes.stopAll();
      await redis.stop();
    }
  },
);
