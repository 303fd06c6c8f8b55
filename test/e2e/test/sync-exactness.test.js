'use strict';
// What the SDK needs to be exact, checked step by step with manual syncs:
// tombstones purged as soon as every replica has synced past a removal, the
// last edits delivered together with a document's removal, and a new,
// greater client ID on every activation.

const assert = require('node:assert/strict');
const { yorkie, newDocKey } = require('../lib/session');
const { withTimeout } = require('../lib/wait');
const { defineSingleServerSuite } = require('../lib/suite');

const STEP_MS = 15000;

/** One value type: how to create some content and how to remove part of it. */
const KINDS = [
  {
    name: 'Text',
    create: (root) => {
      root.t = new yorkie.Text();
      root.t.edit(0, 0, 'hello world');
    },
    remove: (root) => root.t.edit(0, 6, ''),
  },
  {
    name: 'Tree',
    create: (root) => {
      root.t = new yorkie.Tree({
        type: 'doc',
        children: [{ type: 'p', children: [{ type: 'text', value: 'hello world' }] }],
      });
    },
    remove: (root) => root.t.edit(1, 7),
  },
  {
    name: 'Object',
    create: (root) => {
      root.o = { keep: 1, gone: { nested: 2 } };
    },
    remove: (root) => {
      delete root.o.gone;
    },
  },
  {
    name: 'Array',
    create: (root) => {
      root.a = [1, 2, 3];
    },
    remove: (root) => root.a.delete(1),
  },
];

async function attachManual(client, key) {
  const doc = new yorkie.Document(key);
  await withTimeout(client.attach(doc, { syncMode: yorkie.SyncMode.Manual }), STEP_MS, `attach of ${key}`);
  return doc;
}

function sync(client, doc) {
  return withTimeout(client.sync(doc), STEP_MS, `sync of client ${client.e2eIndex}`);
}

/**
 * A removal's tombstones stay while a replica has not seen it, and go on
 * both replicas as soon as both have synced past it: the second replica on
 * the sync after the one that pulled it, the first on its next sync.
 */
async function garbagePurgedOnceBothSynced(s, kind) {
  const [c1, c2] = await s.activateClients(2);
  const key = newDocKey(`gc-${kind.name}`);
  const d1 = await attachManual(c1, key);
  d1.update(kind.create, `create ${kind.name}`);
  await sync(c1, d1);
  const d2 = await attachManual(c2, key);
  await sync(c1, d1);
  await sync(c2, d2);
  assert.equal(d2.toSortedJSON(), d1.toSortedJSON(), 'replicas agree before the removal');
  assert.equal(d1.getGarbageLen(), 0, 'no garbage before the removal on replica 1');
  assert.equal(d2.getGarbageLen(), 0, 'no garbage before the removal on replica 2');

  d1.update(kind.remove, `remove from ${kind.name}`);
  const garbage = d1.getGarbageLen();
  assert.ok(garbage > 0, `the removal leaves garbage on replica 1 (${garbage})`);
  await sync(c1, d1);
  assert.equal(d1.getGarbageLen(), garbage, 'replica 1 keeps the tombstones replica 2 has not seen');
  await sync(c2, d2);
  assert.equal(d2.toSortedJSON(), d1.toSortedJSON(), 'replica 2 applied the removal');
  assert.ok(d2.getGarbageLen() > 0, 'replica 2 keeps the tombstones until its vector has been reported');

  await sync(c2, d2);
  assert.equal(d2.getGarbageLen(), 0, 'replica 2 purges once both replicas have synced the removal');
  await sync(c1, d1);
  assert.equal(d1.getGarbageLen(), 0, 'replica 1 purges on its next sync');
  assert.equal(d1.toSortedJSON(), d2.toSortedJSON(), 'replicas agree after purging');
}

/** A replica that syncs after another client removed the document gets the last edits with the removal. */
async function lastEditsArriveWithRemoval(s) {
  const [c1, c2] = await s.activateClients(2);
  const key = newDocKey('remove-pending');
  const d1 = await attachManual(c1, key);
  const d2 = await attachManual(c2, key);
  d1.update((root) => {
    root.title = 'first';
  });
  await sync(c1, d1);
  await sync(c2, d2);
  assert.deepEqual(JSON.parse(d2.toSortedJSON()), { title: 'first' });

  d1.update((root) => {
    root.title = 'last edit before removal';
    root.items = [1, 2];
  });
  await withTimeout(c1.remove(d1), STEP_MS, 'remove');
  await sync(c2, d2);
  assert.equal(d2.getStatus(), yorkie.DocStatus.Removed, 'replica 2 learns of the removal');
  assert.deepEqual(
    JSON.parse(d2.toSortedJSON()),
    { title: 'last edit before removal', items: [1, 2] },
    'replica 2 got the edits made right before the removal',
  );
}

/** Every activation makes a new client, with an ID above the ones before, whatever its key. */
async function freshIncreasingClientIDs(s) {
  const c = s.newClient();
  const ids = [];
  for (let i = 0; i < 3; i++) {
    await withTimeout(c.activate(), STEP_MS, `activation ${i}`);
    ids.push(c.getID());
    await withTimeout(c.deactivate(), STEP_MS, `deactivation ${i}`);
  }
  const sameKey = s.newClient({ key: c.getKey() });
  await withTimeout(sameKey.activate(), STEP_MS, 'activation of a second client with the same key');
  ids.push(sameKey.getID());
  for (const id of ids) assert.match(id, /^[0-9a-f]{24}$/, 'a client ID is 24 lowercase hex characters');
  for (let i = 1; i < ids.length; i++) {
    assert.ok(ids[i] > ids[i - 1], `activation ${i} of key ${c.getKey()} got ${ids[i]}, not above ${ids[i - 1]}: ${ids}`);
  }
}

const list = [
  ...KINDS.map((kind) => ({
    name: `${kind.name}: garbage drops to 0 on both replicas once both have synced a removal`,
    run: (s) => garbagePurgedOnceBothSynced(s, kind),
  })),
  { name: 'a sync after a removal by another client delivers the last edits with it', run: lastEditsArriveWithRemoval },
  { name: 'every activation gets a new client ID, above the earlier ones', run: freshIncreasingClientIDs },
];

defineSingleServerSuite({ title: 'sync exactness', list });
