'use strict';
// Compaction, the size limit and channel presence over three `yorkie server`
// processes (etcd store, shared MongoDB-wire database) with real SDK clients,
// in forward mode (each client straight to another node) and in redirect
// mode (through a proxy routing by the session key). Admin calls go to a
// node the clients do not use, so the owner serves them through the
// ClusterService.
// - Compaction: refused while a client is attached; forced, the client
//   still attached with the old epoch gets 'epoch-mismatch' as the SDK
//   expects, re-attaches to the same content, and a late joiner on another
//   node converges and edits on.
// - Size limit: two clients on different nodes each stay under the
//   project's limit locally and converge past it; a further local update is
//   refused by the SDK, and syncing goes on.
// - Channel presence: a client that subscribes to 'presence' after attach
//   hears the count, and hears a client attached at another node join.

const test = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const yorkie = require('@yorkie-js/sdk');

const { Session } = require('../lib/session');
const { waitConverged } = require('../lib/replicas');
const { withTimeout, waitFor } = require('../lib/wait');
const { ProjectAdmin, connectCall } = require('../lib/project-admin');
const { skipUnlessPresent } = require('./lib/processes');
const { startEtcdCluster } = require('./lib/yorkie-cluster');
const { explainFailure, runCleanups } = require('./lib/failure');
const { startRoutingHAProxy } = require('./lib-redirect/haproxy');
const { installSessionKeyFetch } = require('../../../clients/js/session-key');

const WAIT_MS = 60000;
const LIMIT = 3000;

const suffix = () => crypto.randomBytes(4).toString('hex');

/** Edits with text, nested objects, arrays, counters and removals. */
function edit(doc, round) {
  doc.update((root) => {
    if (!root.text) root.text = new yorkie.Text();
    root.text.edit(0, 0, `r${round} `);
    if (round % 3 === 0) root.text.edit(1, 3, '');
    if (!root.list) root.list = [];
    root.list.push(round);
    if (round % 2 === 0) root.list.delete(0);
    root.nested = { round, tags: ['a', `t${round}`] };
    if (!root.count) root.count = new yorkie.Counter(yorkie.CounterType.Int, 0);
    root.count.increase(round);
    root[`k${round % 5}`] = `v${round}`;
    if (round % 7 === 0) delete root[`k${(round + 1) % 5}`];
  });
}

async function compaction(session, adminAddr, secretKey) {
  const compact = (documentKey, force) =>
    connectCall(adminAddr, 'AdminService', 'CompactDocumentByAdmin', { documentKey, force }, null, `API-Key ${secretKey}`);
  const key = `compact-${suffix()}`;
  const [c1, c2] = await session.activateClients(2);
  const d1 = new yorkie.Document(key);
  await withTimeout(c1.attach(d1, { syncMode: yorkie.SyncMode.Manual }), 15000, 'attach 1');
  const d2 = new yorkie.Document(key);
  await withTimeout(c2.attach(d2, { syncMode: yorkie.SyncMode.Manual }), 15000, 'attach 2');
  for (let round = 1; round <= 20; round++) {
    edit(round % 2 ? d1 : d2, round);
    await c1.sync(d1);
    await c2.sync(d2);
  }
  await c1.sync(d1);
  assert.equal(d2.toSortedJSON(), d1.toSortedJSON());
  await c2.detach(d2);

  const refused = await compact(key, false);
  assert.equal(refused.status, 400, JSON.stringify(refused.body));
  assert.match(JSON.stringify(refused.body), /ErrDocumentAttached/);
  const before = d1.toSortedJSON();

  const forced = await compact(key, true);
  assert.equal(forced.status, 200, JSON.stringify(forced.body));
  assert.equal(forced.body.compacted, true);

  const events = [];
  d1.subscribe('epoch-mismatch', (e) => events.push(e));
  await assert.rejects(c1.sync(d1), /epoch mismatch/);
  assert.equal(events.length, 1);
  assert.equal(events[0].value.method, 'PushPull');
  await c1.detach(d1);
  const again = new yorkie.Document(key);
  await withTimeout(c1.attach(again, { syncMode: yorkie.SyncMode.Manual }), 15000, 're-attach');
  assert.equal(again.toSortedJSON(), before, 'content unchanged');

  const [late] = await session.activateClients(1);
  const d3 = await session.attach(late, key);
  assert.equal(d3.toSortedJSON(), before, 'the late joiner attaches the compacted document');
  again.update((root) => root.list.push('after'));
  await c1.sync(again);
  await waitFor(() => d3.toSortedJSON() === again.toSortedJSON(), { timeoutMs: WAIT_MS, what: 'late joiner converges' });
  d3.update((root) => root.count.increase(1000));
  await waitFor(async () => {
    await c1.sync(again);
    return again.toSortedJSON() === d3.toSortedJSON();
  }, { timeoutMs: WAIT_MS, what: 'edits after compaction converge' });
}

async function sizeLimit(session, publicKey) {
  const key = `size-${suffix()}`;
  const [c1, c2] = await session.activateClients(2, { apiKey: publicKey });
  const d1 = new yorkie.Document(key);
  await withTimeout(c1.attach(d1, { syncMode: yorkie.SyncMode.Manual }), 15000, 'attach 1');
  const d2 = new yorkie.Document(key);
  await withTimeout(c2.attach(d2, { syncMode: yorkie.SyncMode.Manual }), 15000, 'attach 2');
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
  for (const doc of [d1, d2]) {
    assert.throws(
      () => doc.update((root) => {
        root.c = 'c';
      }),
      (e) => e.code === 'ErrDocumentSizeExceedsLimit',
      'the SDK refuses a local edit past the limit',
    );
  }
  await c1.sync(d1);
  await c2.sync(d2);
  assert.equal(d1.toSortedJSON(), d2.toSortedJSON());
}

async function channelPresence(session) {
  const key = `room-${suffix()}.lobby`;
  const [a, b] = await session.activateClients(2);
  const first = new yorkie.Channel(key);
  await withTimeout(a.attach(first), 15000, 'first channel attach');
  const firstCounts = [];
  first.subscribe('presence', (e) => firstCounts.push(e.count));
  await waitFor(() => firstCounts.length > 0, { timeoutMs: WAIT_MS, what: 'the first client hears its count' });
  assert.equal(firstCounts.at(-1), 1);

  const second = new yorkie.Channel(key);
  await withTimeout(b.attach(second), 15000, 'second channel attach');
  const secondCounts = [];
  second.subscribe('presence', (e) => secondCounts.push(e.count));
  await waitFor(() => secondCounts.length > 0, { timeoutMs: WAIT_MS, what: 'the second client hears the count' });
  assert.equal(secondCounts.at(-1), 2);
  await waitFor(() => firstCounts.at(-1) === 2, { timeoutMs: WAIT_MS, what: 'the first client hears the second' });
  await withTimeout(b.detach(second), 15000, 'channel detach');
  await waitFor(() => firstCounts.at(-1) === 1, { timeoutMs: WAIT_MS, what: 'the first client hears the second leave' });
}

async function run(mode, addrFor, cluster) {
  const adminAddr = cluster.nodes[2].rpcAddr;
  const admin = await ProjectAdmin.logIn(adminAddr);
  const secretKey = (await admin.project('default')).secretKey;
  const name = `limited-${mode}`;
  await admin.call('CreateProject', { name });
  const limited = await admin.update(name, { maxSizePerDocument: LIMIT });

  const parts = [
    ['compaction', (s) => compaction(s, adminAddr, secretKey)],
    ['size limit', (s) => sizeLimit(s, limited.publicKey)],
    ['channel presence', (s) => channelPresence(s)],
  ];
  for (const [what, fn] of parts) {
    const session = new Session({ target: { name: `${mode} cluster`, addrFor, describe: () => cluster.describe(2000) } });
    try {
      await fn(session);
    } catch (err) {
      err.message = `${what}: ${err.message}`;
      throw explainFailure(err, { session, cluster });
    } finally {
      await session.close();
    }
  }
}

test(
  'forward mode: compaction, the size limit and channel presence with clients on every node',
  { skip: skipUnlessPresent(['yorkie', 'ferretdb', 'etcd']), timeout: 180000 },
  async () => {
    const cleanups = [];
    try {
      const cluster = await startEtcdCluster({ cleanups, name: 'sdk-features', extraArgs: ['--affinity-mode', 'forward'] });
      // Clients use nodes 0 and 1 in turn; admin calls go to node 2.
      const addrs = cluster.nodes.map((n) => n.rpcAddr);
      await run('forward', (i) => addrs[i % 2], cluster);
    } finally {
      await runCleanups(cleanups);
    }
  },
);

test(
  'redirect mode: compaction, the size limit and channel presence through the session-key proxy',
  { skip: skipUnlessPresent(['yorkie', 'ferretdb', 'haproxy', 'etcd']), timeout: 180000 },
  async () => {
    const cleanups = [];
    const uninstall = installSessionKeyFetch();
    cleanups.push(async () => uninstall());
    try {
      const cluster = await startEtcdCluster({ cleanups, name: 'sdk-features-redirect', extraArgs: ['--affinity-mode', 'redirect'] });
      const lb = await startRoutingHAProxy({ nodes: cluster.nodes.map((n) => n.hostPort) });
      cleanups.push(() => lb.stop());
      await run('redirect', () => lb.addr, cluster);
    } finally {
      await runCleanups(cleanups);
    }
  },
);
