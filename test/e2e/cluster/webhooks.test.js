'use strict';
// The auth webhook in a three-node cluster (etcd store, shared MongoDB-wire
// database), in forward mode with clients on every node and in redirect mode
// behind a proxy routing by the session key: the webhook is asked once per
// SDK call that succeeded, whatever node the call landed on and however
// many hops it took to the owner. A call forwarded to the owner is not asked
// again there, and a call refused with ErrWrongNode never reaches it.

const test = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const yorkie = require('@yorkie-js/sdk');

const { Session } = require('../lib/session');
const { waitConverged } = require('../lib/replicas');
const { withTimeout } = require('../lib/wait');
const { skipUnlessPresent, startFerretDB, startSessionStore } = require('./lib/processes');
const { YorkieCluster } = require('./lib/yorkie-cluster');
const { explainFailure, runCleanups } = require('./lib/failure');
const { startRoutingHAProxy } = require('./lib-redirect/haproxy');
const { installSessionKeyFetch } = require('../../../clients/js/session-key');
const { updateDefaultProject, startAuthHook, ALLOW_LOOPBACK_WEBHOOKS } = require('../lib/webhooks');
const wireLog = require('./lib/wire-log').install();

// Unary calls, so that every SDK call's outcome is its HTTP answer.
const GUARDED = ['ActivateClient', 'AttachDocument', 'PushPull', 'DetachDocument', 'DeactivateClient'];
const WIRE_NAME = { PushPull: 'PushPullChanges' };

async function runCluster(t, mode) {
  const cleanups = [];
  let cluster;
  let session;
  try {
    const hook = await startAuthHook(() => [200, { allowed: true }]);
    cleanups.push(() => hook.close());
    const ferret = await startFerretDB();
    cleanups.push(() => ferret.stop());
    const store = await startSessionStore('etcd');
    cleanups.push(() => store.stop());
    cluster = new YorkieCluster({
      storeArgs: store.args,
      mongoURI: ferret.uri,
      database: `webhooks-${mode}-${crypto.randomBytes(4).toString('hex')}`,
      nodeTTL: '2s',
      // No cache: every call the webhook guards asks it.
      extraArgs: ['--affinity-mode', mode, '--auth-webhook-cache-size', '-1', ...ALLOW_LOOPBACK_WEBHOOKS],
    });
    cleanups.push(() => cluster.stop());
    await cluster.start(3);
    let addrs = cluster.nodes.map((n) => n.rpcAddr);
    if (mode === 'redirect') {
      const uninstall = installSessionKeyFetch();
      cleanups.push(async () => uninstall());
      const lb = await startRoutingHAProxy({ nodes: cluster.nodes.map((n) => n.hostPort) });
      cleanups.push(() => lb.stop());
      addrs = [lb.addr, lb.addr, lb.addr];
    }
    await updateDefaultProject(cluster.nodes[0].rpcAddr, {
      authWebhookUrl: hook.url,
      authWebhookMethods: { methods: GUARDED },
    });

    const mark = wireLog.mark();
    session = new Session({
      target: { name: mode, addrFor: (i) => addrs[i % addrs.length], describe: () => cluster.describe(2000) },
    });
    // A token per client: concurrent identical questions share one webhook
    // call, which would hide a call asked twice behind another not asked.
    const clients = [];
    for (let i = 0; i < 3; i++) clients.push(await session.activateClient({ authTokenInjector: async () => `user-${i}` }));
    const key = `webhooks-${mode}-${crypto.randomBytes(4).toString('hex')}`;
    const docs = [];
    for (const c of clients) {
      const doc = new yorkie.Document(key);
      await withTimeout(c.attach(doc), 15000, `attach of client ${c.e2eIndex}`);
      docs.push(doc);
    }
    for (const [i, doc] of docs.entries()) {
      doc.update((root) => {
        root[`k${i}`] = i;
      });
    }
    await waitConverged(docs, { timeoutMs: 60000 });
    for (const [i, c] of clients.entries()) await withTimeout(c.detach(docs[i]), 15000, `detach of client ${i}`);
    await session.close();
    session = null;

    if (mode === 'forward') {
      const forwards = await cluster.metricByNode('yorkie_affinity_forwards_total');
      assert.ok(Object.values(forwards).reduce((a, b) => a + b, 0) > 0, `calls were forwarded: ${JSON.stringify(forwards)}`);
    }
    const calls = wireLog.since(mark);
    for (const method of GUARDED) {
      const wire = WIRE_NAME[method] || method;
      const ok = calls.filter((e) => e.method === wire && e.ok).length;
      assert.ok(ok > 0, `the SDK made ${method} calls`);
      const others = calls.filter((e) => e.method === wire && !e.ok).map((e) => `${e.status} ${e.networkError || ''} ${e.lbServer || ''}`);
      assert.equal(hook.count(method), ok, `${mode}: the webhook was asked once per successful ${method} call; not ok: ${JSON.stringify(others)}`);
    }
    const refused = calls.filter((e) => !e.ok).length;
    t.diagnostic(`${mode}: ${calls.length} calls, ${refused} refused or failed, ${hook.requests.length} webhook requests`);
    assert.ok(hook.requests.every((r) => /^user-\d$/.test(r.token)), 'every request carried its client token');
  } catch (err) {
    throw explainFailure(err, { session, cluster });
  } finally {
    if (session) await session.close();
    await runCleanups(cleanups);
  }
}

for (const mode of ['forward', 'redirect']) {
  test(
    `${mode} mode: the auth webhook is asked once per SDK call, not once per hop`,
    { skip: skipUnlessPresent(['yorkie', 'ferretdb', 'haproxy', 'etcd']), timeout: 180000 },
    (t) => runCluster(t, mode),
  );
}
