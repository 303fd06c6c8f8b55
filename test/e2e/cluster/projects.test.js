'use strict';
// Projects in a cluster: three yorkie processes on one MongoDB-wire database
// and an etcd session store, in forward mode (clients spread over the nodes,
// so most calls are relayed to the owner with their API key) and in redirect
// mode (behind haproxy routing by x-session-key, the SDK's fetch echoing the
// key). Two projects attach the same document key; each project's document
// is owned by one node and served like any other, its replicas converge, and
// nothing crosses between the projects.

const test = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const { installSessionKeyFetch } = require('../../../clients/js/session-key');
const { skipUnlessPresent, startSessionStore, startFerretDB } = require('./lib/processes');
const { NodeSet, metricSum } = require('./lib-redirect/nodes');
const { startRoutingHAProxy } = require('./lib-redirect/haproxy');
const { singleTarget, roundRobinTarget } = require('../lib/session');
const { twoProjects, assertProjectsApart } = require('../lib/projects');

/** Sum of a counter over the nodes. */
async function total(nodes, name) {
  let sum = 0;
  for (const n of nodes.live) sum += metricSum(await nodes.metrics(n), name);
  return sum;
}

for (const mode of ['forward', 'redirect']) {
  test(
    `two projects with the same document key stay apart in a 3-node cluster (${mode} mode)`,
    { skip: skipUnlessPresent(['yorkie', 'ferretdb', 'etcd', 'haproxy']), timeout: 170000 },
    async () => {
      const cleanups = [];
      try {
        const store = await startSessionStore('etcd');
        cleanups.push(() => store.stop());
        const db = await startFerretDB();
        cleanups.push(() => db.stop());
        const nodes = new NodeSet({
          args: [
            '--affinity-mode', mode, ...store.args, '--node-ttl', '2s',
            '--mongo-connection-uri', db.uri, '--mongo-database', `projects-${mode}-${crypto.randomBytes(4).toString('hex')}`,
          ],
        });
        cleanups.push(() => nodes.stopAll());
        for (let i = 0; i < 3; i++) await nodes.add();
        const describe = () => nodes.describe();
        let target;
        if (mode === 'forward') {
          target = roundRobinTarget(nodes.nodes.map((n) => n.rpcAddr), { describe });
        } else {
          const lb = await startRoutingHAProxy({ nodes: nodes.nodes.map((n) => n.hostPort) });
          cleanups.push(() => lb.stop());
          const uninstall = installSessionKeyFetch();
          cleanups.push(() => uninstall());
          target = singleTarget(lb.addr, { describe });
        }
        // The admin API of one node creates them; every node serves them.
        const { a, b } = await twoProjects(nodes.nodes[1].rpcAddr, mode);
        const before = await total(nodes, mode === 'forward' ? 'yorkie_affinity_forwards_total' : 'yorkie_affinity_redirects_total');
        await assertProjectsApart({ target, keyA: a.publicKey, keyB: b.publicKey, docKey: 'shared' });
        if (mode === 'forward') {
          const after = await total(nodes, 'yorkie_affinity_forwards_total');
          assert.ok(after > before, `calls were relayed to the owners (forwards ${before} -> ${after})`);
        }
      } finally {
        for (const c of cleanups.reverse()) {
          try {
            await c();
          } catch {
            // best effort
          }
        }
      }
    },
  );
}
