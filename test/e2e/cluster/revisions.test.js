'use strict';
// Document revisions over three `yorkie server` processes (etcd store, shared
// MongoDB-wire database) with real SDK clients: in forward mode each client
// talks to another node; in redirect mode they go through a proxy that routes
// by the session key (clients/js/session-key.js). Revisions are created,
// listed, read and restored at the document's owner, and the restore reaches
// every attached client, which converge and edit on.

const test = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const yorkie = require('@yorkie-js/sdk');

const { Session } = require('../lib/session');
const { waitConverged } = require('../lib/replicas');
const { withTimeout } = require('../lib/wait');
const { skipUnlessPresent } = require('./lib/processes');
const { startEtcdCluster } = require('./lib/yorkie-cluster');
const { explainFailure, runCleanups } = require('./lib/failure');
const { startRoutingHAProxy } = require('./lib-redirect/haproxy');
const { installSessionKeyFetch } = require('../../../clients/js/session-key');

const WAIT_MS = 60000;

/** Creates, lists, gets and restores a revision with three clients. */
async function scenario(session) {
  const clients = await session.activateClients(3);
  const key = `rev-${crypto.randomBytes(4).toString('hex')}`;
  const docs = [];
  for (const [i, c] of clients.entries()) {
    const d = new yorkie.Document(key);
    await withTimeout(c.attach(d), 15000, `attach of client ${i}`);
    docs.push(d);
  }
  docs[0].update((root) => {
    root.title = 'first';
    root.text = new yorkie.Text();
    root.text.edit(0, 0, 'hello');
    root.list = [1, 2, 3];
  });
  const first = await waitConverged(docs, { expect: (j) => j.title === 'first', timeoutMs: WAIT_MS });
  const rev = await withTimeout(clients[1].createRevision(docs[1], 'v1', 'first content'), 15000, 'createRevision');
  const listed = await clients[2].listRevisions(docs[2], { pageSize: 5 });
  assert.deepEqual(listed.map((r) => r.label), ['v1']);
  const got = await clients[0].getRevision(docs[0], rev.id);
  assert.ok(got.snapshot.includes('"title":"first"'), got.snapshot);

  docs[1].update((root) => {
    root.title = 'second';
    root.text.edit(0, 5, 'bye');
    root.list.push(4);
  });
  await waitConverged(docs, { expect: (j) => j.title === 'second', timeoutMs: WAIT_MS });
  await withTimeout(clients[2].restoreRevision(docs[2], rev.id), 15000, 'restoreRevision');
  const restored = await waitConverged(docs, { expect: (j) => j.title === 'first', timeoutMs: WAIT_MS });
  assert.deepEqual(restored, first);
  docs[0].update((root) => root.list.push('after'));
  await waitConverged(docs, { expect: (j) => j.list.includes('after'), timeoutMs: WAIT_MS });
}

test(
  'forward mode: revisions are made and restored at the owner for clients on every node',
  { skip: skipUnlessPresent(['yorkie', 'ferretdb', 'etcd']), timeout: 120000 },
  async () => {
    const cleanups = [];
    let cluster;
    let session;
    try {
      cluster = await startEtcdCluster({ cleanups, name: 'revisions', extraArgs: ['--affinity-mode', 'forward'] });
      const addrs = cluster.nodes.map((n) => n.rpcAddr);
      session = new Session({
        target: { name: 'cluster', addrFor: (i) => addrs[i % addrs.length], describe: () => cluster.describe(2000) },
      });
      await scenario(session);
    } catch (err) {
      throw explainFailure(err, { session, cluster });
    } finally {
      if (session) await session.close();
      await runCleanups(cleanups);
    }
  },
);

test(
  'redirect mode: revision calls follow the session key to the owner',
  { skip: skipUnlessPresent(['yorkie', 'ferretdb', 'haproxy', 'etcd']), timeout: 120000 },
  async () => {
    const cleanups = [];
    let cluster;
    let session;
    const uninstall = installSessionKeyFetch();
    cleanups.push(async () => uninstall());
    try {
      cluster = await startEtcdCluster({ cleanups, name: 'revisions-redirect', extraArgs: ['--affinity-mode', 'redirect'] });
      const lb = await startRoutingHAProxy({ nodes: cluster.nodes.map((n) => n.hostPort) });
      cleanups.push(() => lb.stop());
      session = new Session({
        target: { name: 'redirect proxy', addrFor: () => lb.addr, describe: () => cluster.describe(2000) },
      });
      await scenario(session);
    } catch (err) {
      throw explainFailure(err, { session, cluster });
    } finally {
      if (session) await session.close();
      await runCleanups(cleanups);
    }
  },
);
