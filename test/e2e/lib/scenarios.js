'use strict';
// Scenarios that drive the real SDK through a Session. They know nothing
// about where the server runs: the session's target decides which address
// each client uses, so a single server and a cluster run the same code.

const assert = require('node:assert/strict');
const { yorkie, newDocKey } = require('./session');
const { waitFor, withTimeout } = require('./wait');
const { dropWatchStreams, delayWatchClose, holdNextAnswer } = require('./diagnostics');
const {
  waitConverged,
  waitPresences,
  waitPresenceGone,
  recordEvents,
  waitRecorded,
  waitPushed,
} = require('./replicas');

const ROUNDS = 5;

/** Builds the shared structure every data-type scenario edits. */
function createStructure(root) {
  root.obj = {};
  root.list = [];
  root.counter = new yorkie.Counter(yorkie.CounterType.Int, 0);
  root.text = new yorkie.Text();
  root.tree = new yorkie.Tree({
    type: 'doc',
    children: [{ type: 'p', children: [{ type: 'text', value: 'base' }] }],
  });
}

/**
 * One round of edits by client `i`: object keys, array push/delete/move,
 * counter, text edit and style, tree edit and presence.
 */
function editRound(doc, i, r) {
  doc.update((root, presence) => {
    root.obj[`c${i}r${r}`] = r;
    if (r > 0) delete root.obj[`c${i}r${r - 1}`];
    root.obj.shared = `client-${i}`;

    root.list.push(`${i}-${r}`);
    if (r === 2) {
      const idx = [...root.list].indexOf(`${i}-0`);
      assert.ok(idx >= 0, `client ${i} should still see its own element ${i}-0`);
      root.list.delete(idx);
    }
    if (r === 3) {
      const idx = [...root.list].indexOf(`${i}-1`);
      assert.ok(idx >= 0, `client ${i} should still see its own element ${i}-1`);
      root.list.moveFront(root.list.getElementByIndex(idx).getID());
    }

    root.counter.increase(i + 1);

    const token = `[${i}.${r}]`;
    root.text.edit(0, 0, token);
    if (r % 2 === 0) root.text.setStyle(0, token.length, { bold: 'true', by: `c${i}` });

    root.tree.edit(1, 1, { type: 'text', value: `(${i}.${r})` });

    presence.set({ name: `client-${i}`, round: r });
  }, `round ${r} by client ${i}`);
}

function textOf(json) {
  return json.text.map((chunk) => chunk.val).join('');
}

function treeText(node) {
  if (node.type === 'text') return node.value;
  return (node.children || []).map(treeText).join('');
}

/** Checks the converged value against what the edits of `n` clients must give. */
function assertEditsApplied(json, n) {
  const want = {};
  for (let i = 0; i < n; i++) want[`c${i}r${ROUNDS - 1}`] = ROUNDS - 1;
  const { shared, ...keys } = json.obj;
  assert.deepEqual(keys, want, 'object keys: each client keeps only its last key');
  assert.match(shared, /^client-\d+$/, 'object key set by every client holds one of the values');

  const wantList = [];
  for (let i = 0; i < n; i++) for (let r = 1; r < ROUNDS; r++) wantList.push(`${i}-${r}`);
  assert.deepEqual([...json.list].sort(), wantList.sort(), 'array holds every pushed element except the deleted ones');

  let sum = 0;
  for (let i = 0; i < n; i++) sum += (i + 1) * ROUNDS;
  assert.equal(json.counter, sum, 'counter is the sum of all increases');

  const text = textOf(json);
  let tokenLength = 0;
  for (let i = 0; i < n; i++) {
    for (let r = 0; r < ROUNDS; r++) {
      const token = `[${i}.${r}]`;
      tokenLength += token.length;
      assert.equal(text.split(token).length - 1, 1, `text holds ${token} exactly once: ${text}`);
    }
  }
  assert.equal(text.length, tokenLength, `text holds nothing but the inserted tokens: ${text}`);
  assert.ok(json.text.some((chunk) => chunk.attrs && chunk.attrs.bold === 'true'), 'text keeps style attributes');

  const treeContent = treeText(json.tree);
  for (let i = 0; i < n; i++) {
    for (let r = 0; r < ROUNDS; r++) {
      assert.ok(treeContent.includes(`(${i}.${r})`), `tree holds (${i}.${r}): ${treeContent}`);
    }
  }
  assert.ok(treeContent.endsWith('base'), `tree keeps its initial text after the inserts: ${treeContent}`);
}

/** Attaches `clients` to a new key; client 0 creates the structure first. */
async function setUpSharedDoc(s, clients, label) {
  const key = newDocKey(label);
  const docs = [];
  for (let i = 0; i < clients.length; i++) {
    docs.push(await s.attach(clients[i], key, { initialPresence: { name: `client-${i}`, round: -1 } }));
    if (i === 0) {
      docs[0].update(createStructure, 'create structure');
      await waitPushed(docs[0]);
    }
  }
  await waitConverged(docs, {
    what: 'every replica to receive the initial structure',
    expect: (json) => json.tree !== undefined && json.counter === 0,
  });
  return { key, docs };
}

async function concurrentEditsConverge(s, { clients: n = 3 } = {}) {
  const clients = await s.activateClients(n);
  const { docs } = await setUpSharedDoc(s, clients, 'concurrent');

  for (let r = 0; r < ROUNDS; r++) {
    for (let i = 0; i < n; i++) editRound(docs[i], i, r);
    // Let one client's round reach the server before the next round, so that
    // later rounds are made on top of some, but not all, remote changes.
    await waitPushed(docs[r % n]);
  }

  const json = await waitConverged(docs, { what: `${n} replicas to converge after concurrent edits` });
  assertEditsApplied(json, n);

  const expected = {};
  clients.forEach((c, i) => {
    expected[c.getID()] = { name: `client-${i}`, round: ROUNDS - 1 };
  });
  await waitPresences(docs, expected);
}

async function lateAttachGetsFullState(s) {
  const clients = await s.activateClients(2);
  const { key, docs } = await setUpSharedDoc(s, clients, 'late-attach');
  for (let r = 0; r < ROUNDS; r++) {
    for (let i = 0; i < clients.length; i++) editRound(docs[i], i, r);
  }
  const before = await waitConverged(docs, { what: 'the first two replicas to converge' });
  assertEditsApplied(before, clients.length);

  const late = await s.activateClient();
  const lateDoc = await s.attach(late, key, { initialPresence: { name: 'late', round: 0 } });
  const after = await waitConverged([...docs, lateDoc], { what: 'the late replica to catch up' });
  assert.deepEqual(after, before, 'the late client sees exactly the state the others had');

  const expected = { [late.getID()]: { name: 'late', round: 0 } };
  clients.forEach((c, i) => {
    expected[c.getID()] = { name: `client-${i}`, round: ROUNDS - 1 };
  });
  await waitPresences([...docs, lateDoc], expected);
}

/**
 * Activates three clients and attaches them to one new document (key from
 * `prefix`), each with the presence { name: 'client-i' }, and waits until
 * every replica sees all three.
 */
async function threeNamedOnOneDoc(s, prefix) {
  const clients = await s.activateClients(3);
  const key = newDocKey(prefix);
  const docs = [];
  for (let i = 0; i < clients.length; i++) {
    docs.push(await s.attach(clients[i], key, { initialPresence: { name: `client-${i}` } }));
  }
  const ids = clients.map((c) => c.getID());
  await waitPresences(docs, Object.fromEntries(ids.map((id, i) => [id, { name: `client-${i}` }])));
  return { clients, docs, ids, key };
}

async function detachLeavesOthersWorking(s) {
  const { clients, docs, ids, key } = await threeNamedOnOneDoc(s, 'detach');

  docs[2].update((root) => {
    root.fromDetached = 'kept';
  });
  await waitConverged(docs, { expect: (json) => json.fromDetached === 'kept' });

  const watchers = [recordEvents(docs[0], 'others'), recordEvents(docs[1], 'others')];
  await clients[2].detach(docs[2]);
  assert.equal(docs[2].getStatus(), yorkie.DocStatus.Detached, 'detached document reports status detached');
  assert.equal(clients[2].has(key), false, 'client no longer holds the detached document');

  for (const w of watchers) await waitRecorded(w, 'unwatched', ids[2]);
  await waitPresenceGone(docs.slice(0, 2), ids[2]);

  docs[0].update((root) => {
    root.afterDetach = 1;
  });
  const json = await waitConverged(docs.slice(0, 2), { expect: (j) => j.afterDetach === 1 });
  assert.equal(json.fromDetached, 'kept', 'edits of the detached client stay in the document');

  // A client that never saw the document gets everything, including the
  // detached client's edits.
  const newcomer = await s.activateClient();
  const newDoc = await s.attach(newcomer, key);
  await waitConverged([docs[0], docs[1], newDoc], { expect: (j) => j.afterDetach === 1 });
  watchers.forEach((w) => w.stop());
}

async function reattachAfterDetach(s) {
  const [c0, c1] = await s.activateClients(2);
  const key = newDocKey('reattach');
  const d0 = await s.attach(c0, key, { initialPresence: { name: 'stays' } });
  const first = await s.attach(c1, key, { initialPresence: { name: 'leaves' } });
  first.update((root) => {
    root.own = 'written before detach';
  });
  await waitConverged([d0, first], { expect: (j) => j.own !== undefined });
  const others = recordEvents(d0, 'others');
  await c1.detach(first);
  await waitRecorded(others, 'unwatched', c1.getID());

  d0.update((root) => {
    root.other = 'written while detached';
  });
  await waitPushed(d0);

  const again = await s.attach(c1, key, { initialPresence: { name: 'back' } });
  const json = await waitConverged([d0, again], { expect: (j) => j.other !== undefined && j.own !== undefined });
  assert.deepEqual(json, { own: 'written before detach', other: 'written while detached' });
  await waitFor(
    () => others.events.some((e) => e.type === 'watched' && e.value.clientID === c1.getID() && e.value.presence.name === 'back'),
    { what: 'the re-attached client to be watched again with its new presence', describe: () => JSON.stringify(others.events) },
  );
  await waitPresences([d0, again], { [c0.getID()]: { name: 'stays' }, [c1.getID()]: { name: 'back' } });
  again.update((root) => {
    root.own = 'edited after re-attach';
  });
  await waitConverged([d0, again], { expect: (j) => j.own === 'edited after re-attach' });
  others.stop();
}

async function deactivateDropsClient(s) {
  const { clients, docs, ids, key } = await threeNamedOnOneDoc(s, 'deactivate');

  docs[2].update((root) => {
    root.list = [1, 2, 3];
    root.note = 'written before deactivate';
  });
  await waitConverged(docs, { expect: (json) => json.note !== undefined });

  const watchers = [recordEvents(docs[0], 'others'), recordEvents(docs[1], 'presence')];
  await clients[2].deactivate();
  assert.equal(clients[2].isActive(), false, 'deactivated client reports inactive');

  for (const w of watchers) await waitRecorded(w, 'unwatched', ids[2]);
  await waitPresenceGone(docs.slice(0, 2), ids[2]);

  const newcomer = await s.activateClient();
  const newDoc = await s.attach(newcomer, key);
  const json = await waitConverged([docs[0], docs[1], newDoc], { expect: (j) => j.note !== undefined });
  assert.deepEqual(json, { list: [1, 2, 3], note: 'written before deactivate' });
  await waitFor(() => !newDoc.getPresences().some((p) => p.clientID === ids[2]), {
    what: 'the newcomer not to list the deactivated client as online',
    describe: () => JSON.stringify(newDoc.getPresences()),
  });
  await waitPresences([newDoc], { [ids[0]]: { name: 'client-0' }, [ids[1]]: { name: 'client-1' } });
  watchers.forEach((w) => w.stop());
}

async function watchEventsReachWatcher(s) {
  const [c0, c1, c2] = await s.activateClients(3);
  const key = newDocKey('watch-events');
  const d0 = await s.attach(c0, key, { initialPresence: { name: 'watcher' } });
  const others = recordEvents(d0, 'others');
  const presence = recordEvents(d0, 'presence');

  const d1 = await s.attach(c1, key, { initialPresence: { name: 'one' } });
  for (const rec of [others, presence]) {
    const ev = await waitRecorded(rec, 'watched', c1.getID());
    assert.deepEqual(ev.value.presence, { name: 'one' }, 'watched event carries the presence');
  }

  d1.update((_, p) => p.set({ name: 'one', typing: true }));
  const changed = await waitFor(
    () =>
      others.events.find(
        (e) => e.type === 'presence-changed' && e.value.clientID === c1.getID() && e.value.presence.typing === true,
      ),
    { what: 'presence-changed event for client one', describe: () => JSON.stringify(others.events) },
  );
  assert.deepEqual(changed.value.presence, { name: 'one', typing: true });

  await s.attach(c2, key, { initialPresence: { name: 'two' } });
  await waitRecorded(others, 'watched', c2.getID());

  await c1.detach(d1);
  const unwatched = await waitRecorded(others, 'unwatched', c1.getID());
  assert.equal(unwatched.value.presence.name, 'one', 'unwatched event carries the last presence');

  await c2.deactivate();
  await waitRecorded(others, 'unwatched', c2.getID());
  await waitRecorded(presence, 'unwatched', c2.getID());

  // Only the watcher itself is left online.
  await waitFor(() => d0.getPresences().length === 1, {
    what: 'the watcher to be the only online client',
    describe: () => JSON.stringify(d0.getPresences()),
  });
  assert.deepEqual(d0.getPresences(), [{ clientID: c0.getID(), presence: { name: 'watcher' } }]);
  // The watcher never hears about itself.
  assert.ok(!others.events.some((e) => e.value && e.value.clientID === c0.getID()), 'no event about the watcher itself');
  others.stop();
  presence.stop();
}

async function removeDocument(s) {
  const [c0, c1, cm] = await s.activateClients(3);
  const key = newDocKey('remove');
  const d0 = await s.attach(c0, key);
  const d1 = await s.attach(c1, key);
  const dm = new yorkie.Document(key);
  await cm.attach(dm, { syncMode: yorkie.SyncMode.Manual });
  d0.update((root) => {
    root.title = 'to be removed';
  });
  await waitConverged([d0, d1], { expect: (json) => json.title !== undefined });
  await cm.sync(dm);
  assert.equal(dm.getRoot().title, 'to be removed');

  const statuses = recordEvents(d1, 'status');
  await c0.remove(d0);
  assert.equal(d0.getStatus(), yorkie.DocStatus.Removed, 'remover sees its document removed');
  assert.equal(c0.has(key), false, 'remover no longer holds the document');

  // A realtime replica learns of the removal by itself.
  await waitFor(() => d1.getStatus() === yorkie.DocStatus.Removed, {
    what: 'the other realtime replica to report status removed',
    describe: () => `status ${d1.getStatus()}, events ${JSON.stringify(statuses.events)}`,
  });
  assert.ok(
    statuses.events.some((e) => e.value && e.value.status === yorkie.DocStatus.Removed),
    'the other replica got a status event for the removal',
  );
  assert.throws(() => d1.update((root) => {
    root.title = 'edit after removal';
  }), 'a removed document cannot be edited');
  statuses.stop();

  // A manual replica learns of it on its next sync.
  await cm.sync(dm);
  assert.equal(dm.getStatus(), yorkie.DocStatus.Removed, 'a manual replica sees the removal on sync');

  // The key is free again: a new attach starts an empty document.
  const c2 = await s.activateClient();
  const fresh = await s.attach(c2, key);
  assert.equal(fresh.getStatus(), yorkie.DocStatus.Attached);
  assert.deepEqual(JSON.parse(fresh.toSortedJSON()), {}, 'a document created after removal starts empty');
}

const BIG = BigInt('9007199254740993');
const BYTES = [0, 1, 127, 128, 254, 255];
const WHEN = Date.UTC(2024, 0, 2, 3, 4, 5, 6);

/** Creates one element of every value type the SDK offers. */
function createEveryType(root) {
  root.prims = {
    nul: null,
    yes: true,
    no: false,
    int: 42,
    neg: -7,
    long: BIG,
    dbl: 3.25,
    str: 'héllo ✓ "quoted" \\ 日本',
    bytes: new Uint8Array(BYTES),
    date: new Date(WHEN),
  };
  root.nested = { a: [1, { b: [true, null, 'deep'] }], c: { d: 'gone soon' } };
  root.arr = ['a', 'b', 'c', 'd'];
  root.cnt = new yorkie.Counter(yorkie.CounterType.Int, 10);
  root.lcnt = new yorkie.Counter(yorkie.CounterType.Long, BigInt(5));
  root.dedup = new yorkie.DedupCounter();
  root.text = new yorkie.Text();
  root.tree = new yorkie.Tree({
    type: 'doc',
    children: [{ type: 'p', attributes: { id: 'first' }, children: [{ type: 'text', value: 'hello world' }] }],
  });
}

/** Applies every kind of operation once: set, add, move, remove, array set, edit, style, increase, tree edit and style. */
function applyEveryOperation(root) {
  const arr = root.arr;
  arr.moveBefore(arr.getElementByIndex(0).getID(), arr.getElementByIndex(3).getID()); // d a b c
  arr.moveLast(arr.getElementByIndex(1).getID()); // d b c a
  arr.insertAfter(arr.getElementByIndex(0).getID(), 'x'); // d x b c a
  arr.delete(2); // d x c a
  arr.setValue(1, 'y'); // d y c a
  arr.push({ obj: 'in array' });

  root.cnt.increase(5).increase(-3);
  root.lcnt.increase(BigInt(10));
  root.dedup.add('visitor-a').add('visitor-b').add('visitor-a');

  root.text.edit(0, 0, 'Hello', { bold: 'true' });
  root.text.edit(5, 5, ' there', { italic: 'true' });
  root.text.setStyle(0, 3, { color: 'red' });
  root.text.edit(1, 2, 'E');

  root.tree.edit(root.tree.getSize(), root.tree.getSize(), {
    type: 'p',
    children: [{ type: 'text', value: 'second' }],
  });
  root.tree.style(0, 1, { align: 'center', tmp: 'x' });
  root.tree.removeStyle(0, 1, ['tmp']);
  root.tree.edit(3, 3, undefined, 1); // split the first paragraph
  root.tree.edit(1, 2); // delete one character

  delete root.nested.c;
  root.prims.str = 'replaced';
  root.prims.added = 'later';
}

async function everyTypeRoundTrips(s) {
  const [writer, live] = await s.activateClients(2);
  const key = newDocKey('every-type');
  const presence = { name: 'writer', cursor: { x: 1.5, y: -2 }, tags: ['a', 'b'], active: true, none: null };
  const wDoc = await s.attach(writer, key, { initialPresence: presence });
  const lDoc = await s.attach(live, key);

  // The expected value comes from the same edits on a document that never
  // talks to a server.
  const offline = new yorkie.Document(newDocKey('offline'));
  offline.update(createEveryType);
  offline.update(applyEveryOperation);
  const expected = JSON.parse(offline.toSortedJSON());

  wDoc.update(createEveryType, 'create every type');
  await waitPushed(wDoc);
  wDoc.update(applyEveryOperation, 'apply every operation');
  const json = await waitConverged([wDoc, lDoc], { expect: (j) => j.prims && j.prims.added === 'later' });
  assert.deepEqual(json, expected, 'replicas hold what the same edits give offline');

  const late = await s.activateClient();
  const lateDoc = await s.attach(late, key);
  await waitConverged([wDoc, lDoc, lateDoc], { what: 'a late replica to receive every type' });

  for (const doc of [lDoc, lateDoc]) {
    const root = doc.getRoot();
    assert.equal(typeof root.prims.long, 'bigint', 'long stays a bigint');
    assert.equal(root.prims.long, BIG);
    assert.ok(root.prims.bytes instanceof Uint8Array, 'bytes stay bytes');
    assert.deepEqual([...root.prims.bytes], BYTES);
    assert.ok(root.prims.date instanceof Date, 'date stays a Date');
    assert.equal(root.prims.date.getTime(), WHEN);
    assert.equal(root.dedup.getValue(), 2, 'dedup counter counts distinct actors');
    assert.equal(root.tree.toXML(), offline.getRoot().tree.toXML());
    assert.equal(root.text.toString(), offline.getRoot().text.toString());
  }
  await waitPresences([lDoc, lateDoc], { [writer.getID()]: presence });
}

async function severalDocumentsPerClient(s) {
  const clients = await s.activateClients(2);
  const keys = [newDocKey('multi-a'), newDocKey('multi-b'), newDocKey('multi-c')];
  // docs[k][i]: document k as client i holds it.
  const docs = [];
  for (const key of keys) {
    const row = [];
    for (let i = 0; i < clients.length; i++) {
      row.push(await s.attach(clients[i], key, { initialPresence: { name: `client-${i}`, doc: key } }));
      if (i === 0) {
        // Created once: concurrent creation of one key would let one object win.
        row[0].update((root) => {
          root.items = {};
        });
        await waitPushed(row[0]);
      }
    }
    docs.push(row);
  }
  for (let round = 0; round < 3; round++) {
    docs.forEach((row, k) => {
      row.forEach((doc, i) => {
        doc.update((root) => {
          root.items[`c${i}-r${round}`] = `${keys[k]}`;
        });
      });
    });
  }
  for (let k = 0; k < keys.length; k++) {
    const json = await waitConverged(docs[k], {
      what: `replicas of document ${k} to converge`,
      expect: (j) => j.items && Object.keys(j.items).length === 6,
    });
    assert.ok(Object.values(json.items).every((v) => v === keys[k]), `document ${k} holds only its own edits`);
    const expected = {};
    clients.forEach((c, i) => {
      expected[c.getID()] = { name: `client-${i}`, doc: keys[k] };
    });
    await waitPresences(docs[k], expected);
  }
}

const BURST = 1500;

async function burstBetweenSyncsArrives(s) {
  const [writer, reader] = await s.activateClients(2);
  const key = newDocKey('burst');
  const wDoc = await s.attach(writer, key);
  const rDoc = await s.attach(reader, key);
  wDoc.update((root) => {
    root.count = new yorkie.Counter(yorkie.CounterType.Int, 0);
    root.log = [];
  });
  await waitConverged([wDoc, rDoc], { expect: (j) => j.count === 0 });

  // Many separate local changes made before the next sync tick (a scripted
  // import, or edits made while the network was down) are pushed together.
  for (let i = 0; i < BURST; i++) {
    wDoc.update((root) => {
      root.count.increase(1);
      if (i % 100 === 0) root.log.push(i);
    });
  }
  const json = await waitConverged([wDoc, rDoc], {
    what: `${BURST} changes made between two syncs to reach the other replica`,
    expect: (j) => j.count === BURST,
  });
  assert.equal(json.log.length, BURST / 100);
  // The reader can pull the last changes before the writer has read the answer that
  // acknowledges them: wait for the acknowledgement rather than expect it at once.
  await waitPushed(wDoc);
}

async function overlappingConcurrentDeletesConverge(s) {
  const clients = await s.activateClients(3);
  const key = newDocKey('overlap');
  const docs = [];
  for (let i = 0; i < clients.length; i++) {
    docs.push(await s.attach(clients[i], key));
    if (i === 0) {
      docs[0].update((root) => {
        root.text = new yorkie.Text();
        root.text.edit(0, 0, 'abcdefghijklmnopqrstuvwxyz');
        root.tree = new yorkie.Tree({
          type: 'doc',
          children: [
            { type: 'p', children: [{ type: 'text', value: 'abcdefghij' }] },
            { type: 'p', children: [{ type: 'text', value: 'klmnopqrst' }] },
          ],
        });
        root.list = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9];
      });
      await waitPushed(docs[0]);
    }
  }
  await waitConverged(docs, { expect: (j) => j.text !== undefined });

  // Every client deletes, restyles and inserts over ranges the others touch too,
  // without seeing the others' edits first.
  docs.forEach((doc, i) => {
    doc.update((root) => {
      root.text.edit(2 + i * 3, 10 + i * 3, `<${i}>`);
      root.text.setStyle(0, 12, { weight: `w${i}` });
      root.tree.edit(2 + i, 5 + i);
      root.tree.style(0, 1, { owner: `c${i}` });
      root.tree.edit(13, 13, { type: 'text', value: `[${i}]` });
      root.list.delete(3 + i);
      root.list.delete(3 + i);
    });
  });
  const json = await waitConverged(docs, { what: 'replicas to converge after overlapping deletes' });
  const text = json.text.map((c) => c.val).join('');
  for (let i = 0; i < clients.length; i++) {
    assert.ok(text.includes(`<${i}>`), `text keeps the insert of client ${i}: ${text}`);
  }
  assert.ok(text.startsWith('ab') && text.endsWith('uvwxyz'), `text keeps what nobody deleted: ${text}`);
  assert.deepEqual(json.list, [0, 1, 2, 7, 8, 9], 'array loses exactly the union of deleted elements');
}

/**
 * A client's Watch stream fails as on a network drop; the connection itself
 * closes `closeConnectionAfterMs` later (0: at once; more than the SDK's 1 s
 * reconnect delay: the new stream opens while the server still holds the old
 * one).
 */
async function watchDropRecovers(s, { closeConnectionAfterMs }) {
  const [c0, c1] = await s.activateClients(2);
  const key = newDocKey('watch-drop');
  const d0 = await s.attach(c0, key, { initialPresence: { name: 'stays' } });
  const d1 = await s.attach(c1, key, { initialPresence: { name: 'drops', phase: 'before' } });
  await waitPresences([d0, d1], {
    [c0.getID()]: { name: 'stays' },
    [c1.getID()]: { name: 'drops', phase: 'before' },
  });
  const connection = recordEvents(d1, 'connection');

  const closed = dropWatchStreams(c1.getID(), { closeConnectionAfterMs });
  await waitFor(() => connection.events.some((e) => e.value === 'disconnected'), {
    what: 'the SDK to notice the dropped Watch stream',
    describe: () => JSON.stringify(connection.events),
  });
  d0.update((root) => {
    root.duringDrop = 'written while the stream was down';
  });
  await waitFor(() => connection.events.findIndex((e) => e.value === 'disconnected') < connection.events.map((e) => e.value).lastIndexOf('connected'), {
    what: 'the SDK to open a new Watch stream',
    describe: () => JSON.stringify(connection.events),
  });
  await waitConverged([d0, d1], { expect: (j) => j.duringDrop !== undefined });
  assert.equal(await closed, 1, 'exactly one Watch stream was open for the client');

  // Once the old connection is gone, the client must still count as online
  // for the others, and changes must flow both ways.
  d1.update((root, p) => {
    root.afterDrop = 'written after reconnecting';
    p.set({ phase: 'after' });
  });
  await waitConverged([d0, d1], { expect: (j) => j.afterDrop !== undefined });
  await waitPresences([d0, d1], {
    [c0.getID()]: { name: 'stays' },
    [c1.getID()]: { name: 'drops', phase: 'after' },
  });
  d0.update((root) => {
    root.last = 'seen through the new stream';
  });
  await waitConverged([d0, d1], { expect: (j) => j.last !== undefined });
  connection.stop();
}

async function syncModes(s) {
  const [c0, c1] = await s.activateClients(2);
  const key = newDocKey('sync-modes');
  const d0 = await s.attach(c0, key, { initialPresence: { name: 'realtime' } });
  d0.update((root) => {
    root.fromRealtime = 1;
  });
  await waitPushed(d0);

  // Manual mode: nothing moves without an explicit sync.
  const d1 = new yorkie.Document(key);
  await c1.attach(d1, { syncMode: yorkie.SyncMode.Manual, initialPresence: { name: 'manual' } });
  assert.deepEqual(JSON.parse(d1.toSortedJSON()), { fromRealtime: 1 }, 'attach in manual mode still loads the document');
  d1.update((root) => {
    root.fromManual = 2;
  });
  await c1.sync(d1);
  assert.equal(d1.hasLocalChanges(), false, 'explicit sync pushed the change');
  await waitConverged([d0, d1], { expect: (j) => j.fromManual === 2 });

  d0.update((root) => {
    root.beforePushOnly = 3;
  });
  await waitPushed(d0);

  // Push-only: local changes go out, nothing comes in.
  await c1.changeSyncMode(d1, yorkie.SyncMode.RealtimePushOnly);
  d1.update((root) => {
    root.fromPushOnly = 4;
  });
  await waitFor(() => d0.getRoot().fromPushOnly === 4, { what: 'a push-only change to reach the realtime replica' });
  await waitPushed(d1);
  assert.equal(d1.getRoot().beforePushOnly, undefined, 'a push-only replica received no remote change');

  // Back to realtime: everything arrives, and the client is online for others.
  await c1.changeSyncMode(d1, yorkie.SyncMode.Realtime);
  const json = await waitConverged([d0, d1], { expect: (j) => j.beforePushOnly === 3 && j.fromPushOnly === 4 });
  assert.deepEqual(json, { fromRealtime: 1, fromManual: 2, beforePushOnly: 3, fromPushOnly: 4 });
  await waitPresences([d0, d1], { [c0.getID()]: { name: 'realtime' }, [c1.getID()]: { name: 'manual' } });
}

async function offlineEditsSurviveOthersDeletes(s) {
  const [c0, c1, c2] = await s.activateClients(3);
  const key = newDocKey('offline-gc');
  const d0 = await s.attach(c0, key);
  d0.update((root) => {
    root.text = new yorkie.Text();
    root.text.edit(0, 0, 'hello world');
    root.list = ['a', 'b', 'c', 'd'];
    root.obj = { keep: 1, drop: 2 };
  });
  await waitPushed(d0);
  const d1 = await s.attach(c1, key);
  const d2 = await s.attach(c2, key);
  await waitConverged([d0, d1, d2], { expect: (j) => j.text !== undefined });

  // c1 goes offline and edits inside what the others are about to delete.
  await c1.changeSyncMode(d1, yorkie.SyncMode.Manual);
  d1.update((root) => {
    root.text.edit(8, 8, 'XYZ'); // inside "world"
    root.text.setStyle(6, 9, { mark: 'offline' });
    root.list.insertAfter(root.list.getElementByIndex(2).getID(), 'after-c');
    root.obj.drop = 'changed offline';
  });

  // Meanwhile the online replicas delete that region and keep syncing, so a
  // server that reported a wrong minimum synced version would let them
  // collect the tombstones the offline edits point at.
  d0.update((root) => {
    root.text.edit(5, 11, '');
    root.list.delete(2);
    delete root.obj.drop;
  });
  for (let i = 0; i < 5; i++) {
    d0.update((root) => {
      root.text.edit(0, 0, `${i}`);
    });
    d2.update((root) => {
      root.list.push(`d2-${i}`);
    });
    await waitPushed(d0);
    await waitPushed(d2);
  }
  await waitConverged([d0, d2], { expect: (j) => j.list.includes('d2-4') && j.text.map((c) => c.val).join('').startsWith('4') });

  await c1.sync(d1);
  await c1.changeSyncMode(d1, yorkie.SyncMode.Realtime);
  const json = await waitConverged([d0, d1, d2], { what: 'the offline replica and the others to converge' });
  const text = json.text.map((c) => c.val).join('');
  assert.equal(text, '43210helloXYZ', 'the offline insert survives the concurrent delete around it');
  assert.deepEqual(json.list, ['a', 'b', 'after-c', 'd', 'd2-0', 'd2-1', 'd2-2', 'd2-3', 'd2-4']);
  assert.equal(json.obj.keep, 1);
}

async function simultaneousFirstAttach(s, { clients: n = 4 } = {}) {
  const clients = await s.activateClients(n);
  const key = newDocKey('first-attach');
  const docs = await Promise.all(
    clients.map((c, i) => s.attach(c, key, { initialPresence: { name: `client-${i}` } })),
  );
  docs.forEach((doc, i) => {
    doc.update((root) => {
      root[`from${i}`] = i;
    });
  });
  const want = {};
  for (let i = 0; i < n; i++) want[`from${i}`] = i;
  const json = await waitConverged(docs, {
    what: 'clients that created the document together to share it',
    expect: (j) => Object.keys(j).length === n,
  });
  assert.deepEqual(json, want);
  const expected = {};
  clients.forEach((c, i) => {
    expected[c.getID()] = { name: `client-${i}` };
  });
  await waitPresences(docs, expected);
}

async function editsRightBeforeDetachAreKept(s) {
  const [c0, c1] = await s.activateClients(2);
  const key = newDocKey('edit-then-detach');
  const d0 = await s.attach(c0, key);
  const d1 = await s.attach(c1, key);
  d1.update((root) => {
    root.last = 'written just before detach';
    root.items = [1, 2, 3];
  });
  // No wait for the sync loop: the detach call carries the change.
  await c1.detach(d1);
  await waitFor(() => d0.getRoot().last !== undefined, {
    what: 'the edit made right before detach to reach the other replica',
    describe: () => d0.toSortedJSON(),
  });
  assert.deepEqual(JSON.parse(d0.toSortedJSON()), { last: 'written just before detach', items: [1, 2, 3] });
}

async function reactivateAndReattach(s) {
  const [c0, c1] = await s.activateClients(2);
  const key = newDocKey('reactivate');
  const d0 = await s.attach(c0, key, { initialPresence: { name: 'stays' } });
  const first = await s.attach(c1, key, { initialPresence: { name: 'returns', visit: 1 } });
  first.update((root) => {
    root.visit1 = 'first session';
  });
  await waitConverged([d0, first], { expect: (j) => j.visit1 !== undefined });
  const others = recordEvents(d0, 'others');
  const firstID = c1.getID();
  await c1.deactivate();
  await waitRecorded(others, 'unwatched', firstID);

  await c1.activate();
  const second = await s.attach(c1, key, { initialPresence: { name: 'returns', visit: 2 } });
  await waitConverged([d0, second], { expect: (j) => j.visit1 !== undefined });
  second.update((root) => {
    root.visit2 = 'second session';
  });
  const json = await waitConverged([d0, second], { expect: (j) => j.visit2 !== undefined });
  assert.deepEqual(json, { visit1: 'first session', visit2: 'second session' });
  await waitPresences([d0, second], { [c0.getID()]: { name: 'stays' }, [c1.getID()]: { name: 'returns', visit: 2 } }, {
    events: others,
  });
  others.stop();
}

const HISTORY = 3000;

async function longHistoryLateAttach(s) {
  const [writer, other] = await s.activateClients(2);
  const key = newDocKey('long-history');
  const wDoc = await s.attach(writer, key);
  const oDoc = await s.attach(other, key);
  wDoc.update((root) => {
    root.text = new yorkie.Text();
    root.count = new yorkie.Counter(yorkie.CounterType.Int, 0);
  });
  for (let i = 0; i < HISTORY; i++) {
    wDoc.update((root) => {
      root.count.increase(1);
      root.text.edit(root.text.length, root.text.length, String(i % 10));
      if (i % 7 === 0) root.text.edit(0, 1, '');
    });
    if (i % 500 === 499) await waitPushed(wDoc);
  }
  const before = await waitConverged([wDoc, oDoc], { expect: (j) => j.count === HISTORY });

  const late = await s.activateClient();
  const lateDoc = await s.attach(late, key);
  const after = await waitConverged([wDoc, oDoc, lateDoc], { what: 'a late replica to load the long history' });
  assert.deepEqual(after, before);
  lateDoc.update((root) => {
    root.count.increase(1);
  });
  await waitConverged([wDoc, oDoc, lateDoc], { expect: (j) => j.count === HISTORY + 1 });
}

/**
 * The client detaches and attaches again while the server still holds its
 * old Watch connection (a proxy in between notices a closed client
 * connection only later). The others must see it online again.
 */
async function reattachWhileOldStreamHalfOpen(s) {
  const [c0, c1] = await s.activateClients(2);
  const key = newDocKey('reattach-half-open');
  const d0 = await s.attach(c0, key, { initialPresence: { name: 'stays' } });
  const first = await s.attach(c1, key, { initialPresence: { name: 'leaves' } });
  await waitPresences([d0], { [c1.getID()]: { name: 'leaves' } });
  const others = recordEvents(d0, 'others');

  assert.equal(delayWatchClose(c1.getID(), 3000), 1, 'one Watch stream open for the client');
  await c1.detach(first);
  await waitRecorded(others, 'unwatched', c1.getID());

  const again = await s.attach(c1, key, { initialPresence: { name: 'back' } });
  await waitPresences([d0, again], { [c0.getID()]: { name: 'stays' }, [c1.getID()]: { name: 'back' } }, {
    what: 'the re-attached client to be online for the others while its old connection lingers',
    events: others,
  });
  // And still after the old connection is finally closed.
  d0.update((root) => {
    root.ping = 1;
  });
  await waitConverged([d0, again], { expect: (j) => j.ping === 1 });
  again.update((_, p) => p.set({ name: 'back', later: true }));
  await waitPresences([d0, again], { [c0.getID()]: { name: 'stays' }, [c1.getID()]: { name: 'back', later: true } }, {
    what: 'the re-attached client to stay online once its old connection closed',
  });
  others.stop();
}

/**
 * The client detaches and attaches again while the other client's pull is
 * in flight: the server answered that pull after the detach and before the
 * new attach, but the other client applies the answer only after the
 * WATCHED of the new attach, which came on its Watch stream (another
 * connection). The client that came back must be online for the other.
 */
async function reattachWhileOthersPullInFlight(s) {
  const [c0, c1] = await s.activateClients(2);
  const key = newDocKey('reattach-pull-in-flight');
  const d0 = await s.attach(c0, key, { initialPresence: { name: 'stays' } });
  const first = await s.attach(c1, key, { initialPresence: { name: 'leaves' } });
  await waitPresences([d0], { [c1.getID()]: { name: 'leaves' } });
  const others = recordEvents(d0, 'others');

  const pull = holdNextAnswer('PushPullChanges', c0.getID());
  try {
    await c1.detach(first);
    await waitRecorded(others, 'unwatched', c1.getID());
    await withTimeout(pull.answered, 15000, 'the pull that follows the detach');
    const again = await s.attach(c1, key, { initialPresence: { name: 'back' } });
    // The SDK keeps no public record of an online client without a presence.
    await waitFor(() => d0.onlineClients.has(c1.getID()), { what: "the other client to apply the returning client's WATCHED" });
    pull.release();
    await waitPresences([d0, again], { [c0.getID()]: { name: 'stays' }, [c1.getID()]: { name: 'back' } }, {
      what: 'the re-attached client to be online for the other client once its pull in flight is applied',
      events: others,
    });
  } finally {
    pull.release();
    others.stop();
  }
}

/** Every scenario, by name. Each takes a Session and uses fresh keys. */
const scenarios = [
  { name: 'three clients editing every data type concurrently converge, with presence', run: concurrentEditsConverge },
  { name: 'six clients editing every data type concurrently converge, with presence', run: (s) => concurrentEditsConverge(s, { clients: 6 }) },
  { name: 'every value type and operation reaches other replicas intact, with a structured presence', run: everyTypeRoundTrips },
  { name: 'clients attached to several documents keep each document and presence apart', run: severalDocumentsPerClient },
  { name: 'concurrent overlapping deletes and styles on text, tree and array converge', run: overlappingConcurrentDeletesConverge },
  { name: `${BURST} changes made between two syncs all reach the other replica`, run: burstBetweenSyncsArrives },
  { name: 'manual and push-only sync modes move changes only as asked, then realtime catches up', run: syncModes },
  { name: 'edits made offline inside a region others deleted still merge after they kept syncing', run: offlineEditsSurviveOthersDeletes },
  { name: 'four clients attaching a new key at the same moment share one document', run: simultaneousFirstAttach },
  { name: 'edits made right before detach reach the others', run: editsRightBeforeDetachAreKept },
  { name: 'a client re-attaching while the server still holds its old Watch connection is online for others', run: reattachWhileOldStreamHalfOpen },
  { name: "a client re-attaching while another client's pull of its detach is in flight is online for that client", run: reattachWhileOthersPullInFlight },
  { name: 'a client can deactivate, activate again and re-attach; its new edits reach others', run: reactivateAndReattach },
  { name: `a client attaching to a document with ${HISTORY} changes of history gets the full state`, run: longHistoryLateAttach },
  { name: 'a client that attaches later gets the full state and presences', run: lateAttachGetsFullState },
  { name: 'detach: others see the client go and keep working; a new client sees everything', run: detachLeavesOthersWorking },
  { name: 'the same client can attach again after detaching and sees all edits, its own included', run: reattachAfterDetach },
  { name: 'deactivate: others see the client go; a new client still gets the data', run: deactivateDropsClient },
  { name: 'a watcher gets watched, presence-changed and unwatched events of others', run: watchEventsReachWatcher },
  {
    name: 'a dropped Watch stream reconnects and catches up; the client stays online for others',
    run: (s) => watchDropRecovers(s, { closeConnectionAfterMs: 0 }),
  },
  {
    name: 'a Watch stream reopened while the old connection is still half-open keeps the client online',
    run: (s) => watchDropRecovers(s, { closeConnectionAfterMs: 2500 }),
  },
  { name: 'remove document: remover and realtime replicas see it removed at once, a manual one on sync; the key can be reused', run: removeDocument },
];

module.exports = { scenarios, editRound, createStructure, assertEditsApplied, ROUNDS };
