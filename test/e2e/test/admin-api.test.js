'use strict';
// The AdminService's document and channel calls, and YorkieService
// PeekChannel, against what the real JS SDK wrote: the document's root is
// every replica's toSortedJSON, its history has every change, and channel
// counts follow the SDK's sessions.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const { startServer, serversRequired, yorkieBinary } = require('../lib/server');
const { Session, singleTarget, newDocKey, yorkie } = require('../lib/session');
const { withTimeout, waitFor } = require('../lib/wait');
const { adminCall, logIn } = require('../lib/admin');

function skipReason() {
  if (fs.existsSync(yorkieBinary()) || serversRequired()) return false;
  return 'the yorkie binary is not built';
}

/** One AdminService call with a project's secret key, as the dashboard makes it. */
async function withKey(rpcAddr, secret, method, body) {
  const res = await fetch(`${rpcAddr}/yorkie.v1.AdminService/${method}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'Connect-Protocol-Version': '1', authorization: `API-Key ${secret}` },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(10000),
  });
  const json = await res.json();
  if (res.status !== 200) {
    const err = new Error(`AdminService/${method}: ${res.status} ${JSON.stringify(json)}`);
    err.status = res.status;
    err.body = json;
    throw err;
  }
  return json;
}

/** PeekChannel in Connect JSON: the default project needs no API key. */
async function peek(rpcAddr, channelKey) {
  const res = await fetch(`${rpcAddr}/yorkie.v1.YorkieService/PeekChannel`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'Connect-Protocol-Version': '1' },
    body: JSON.stringify({ channelKey }),
    signal: AbortSignal.timeout(10000),
  });
  const json = await res.json();
  if (res.status !== 200) throw new Error(`PeekChannel: ${res.status} ${JSON.stringify(json)}`);
  return Number(json.sessionCount || 0);
}

test('the admin document calls show what the SDK wrote', { skip: skipReason(), timeout: 120000 }, async () => {
  const server = await startServer();
  const session = new Session({ target: singleTarget(server.rpcAddr) });
  try {
    const token = await logIn(server.rpcAddr);
    const { project } = await adminCall(server.rpcAddr, 'GetProject', { name: 'default' }, token);
    const secret = project.secretKey;
    const [c1, c2] = await session.activateClients(2);
    const key = newDocKey('admin-api');
    const d1 = await session.attach(c1, key, { initialPresence: { name: 'one' } });
    const d2 = await session.attach(c2, key, { initialPresence: { name: 'two' } });
    d1.update((root) => {
      root.title = 'notes';
      root.todos = ['write', 'review'];
      root.text = new yorkie.Text();
      root.text.edit(0, 0, 'hello');
    }, 'create');
    d2.update((root) => {
      root.n = new yorkie.Counter(yorkie.CounterType.Int, 1);
    }, 'counter');
    await waitFor(() => d1.toSortedJSON() === d2.toSortedJSON() && d1.getRoot().n !== undefined, { what: 'replicas converge' });
    await Promise.all([c1.sync(), c2.sync()]);

    const got = await waitFor(async () => {
      const { document } = await withKey(server.rpcAddr, secret, 'GetDocument', { documentKey: key });
      return document.root === d1.toSortedJSON() ? document : null;
    }, { what: 'GetDocument to show the replicas\' root' });
    assert.equal(got.key, key);
    assert.equal(got.attachedClients, 2);
    assert.deepEqual(Object.keys(got.presences).sort(), [c1.getID(), c2.getID()].sort());
    assert.equal(got.presences[c1.getID()].data.name, '"one"');
    assert.deepEqual(got.documentSize.live, d1.getDocSize().live, 'live size as the SDK counts it');

    const listed = await withKey(server.rpcAddr, secret, 'ListDocuments', { pageSize: 10, includeRoot: true });
    assert.ok(listed.documents.some((d) => d.key === key && d.id === got.id), 'listed');
    const found = await withKey(server.rpcAddr, secret, 'SearchDocuments', { query: key, pageSize: 10 });
    assert.equal(found.totalCount, 1);

    const { changes } = await withKey(server.rpcAddr, secret, 'ListChanges', { documentKey: key });
    const head = Number(d1.getCheckpoint().getServerSeq());
    assert.equal(changes.length, head, 'every stored change');
    assert.ok(changes.some((c) => c.message === 'create') && changes.some((c) => c.message === 'counter'));
    const meta = await withKey(server.rpcAddr, secret, 'GetSnapshotMeta', { documentKey: key, serverSeq: String(head) });
    const snap = yorkie.converter.bytesToSnapshot(Buffer.from(meta.snapshot, 'base64'));
    assert.equal(snap.root.toSortedJSON(), d1.toSortedJSON(), 'the snapshot at the head is the replicas\' document');

    await assert.rejects(withKey(server.rpcAddr, secret, 'RemoveDocumentByAdmin', { documentKey: key }), (err) => err.status === 412 || err.body.code === 'failed_precondition');
    await assert.rejects(withKey(server.rpcAddr, 'forged', 'GetDocument', { documentKey: key }), (err) => err.body.code === 'unauthenticated');
  } finally {
    await session.close();
    await server.stop();
  }
});

test('PeekChannel and the admin channel calls count the SDK\'s sessions', { skip: skipReason(), timeout: 120000 }, async () => {
  const server = await startServer();
  const session = new Session({ target: singleTarget(server.rpcAddr) });
  try {
    const token = await logIn(server.rpcAddr);
    const { project } = await adminCall(server.rpcAddr, 'GetProject', { name: 'default' }, token);
    const root = newDocKey('peek');
    assert.equal(await peek(server.rpcAddr, root), 0, 'nobody joined');
    const [a, b] = await session.activateClients(2);
    const ca = new yorkie.Channel(root);
    await withTimeout(a.attach(ca), 15000, 'attach of a');
    await withTimeout(b.attach(new yorkie.Channel(`${root}.sub`)), 15000, 'attach of b');
    assert.equal(await peek(server.rpcAddr, root), 2, 'the channel and its sub-channel; the peek is not counted');
    assert.equal(await peek(server.rpcAddr, root), 2, 'peeking twice changes nothing');

    const { channels } = await withKey(server.rpcAddr, project.secretKey, 'ListChannels', { query: root, limit: 10 });
    assert.deepEqual(channels.map((c) => [c.key, c.sessionCount]), [[root, 1], [`${root}.sub`, 1]]);
    const got = await withKey(server.rpcAddr, project.secretKey, 'GetChannels', { channelKeys: [root], includeSubPath: true });
    assert.equal(got.channels[0].sessionCount, 2);

    const heard = [];
    ca.subscribe('notice', (e) => heard.push(e.payload));
    await withKey(server.rpcAddr, project.secretKey, 'BroadcastByAdmin', {
      channelKey: root, topic: 'notice', payload: Buffer.from(JSON.stringify({ hi: 1 })).toString('base64'),
    });
    await waitFor(() => heard.length === 1, { what: 'the SDK to hear the admin broadcast' });
    assert.deepEqual(heard[0], { hi: 1 });
  } finally {
    await session.close();
    await server.stop();
  }
});
