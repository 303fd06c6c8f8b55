'use strict';
// Three `yorkie server` processes in forward mode behind haproxy (hashing
// x-shard-key), sharing a MongoDB-wire database and an etcd or Redis session
// store; real SDK clients edit several documents through haproxy while the
// cluster scales out (a fourth node, haproxy reloaded so some documents'
// calls move to it while their Watch streams stay on the old nodes) and then
// loses a node to SIGKILL. This is the membership change that gives upstream
// Yorkie a split brain. Checked: every replica converges with every edit in
// it, Watch streams deliver again, presences are seen, the stored log is
// gapless, and no document ever answers from two owners.

const test = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const { setTimeout: delay } = require('node:timers/promises');
const yorkie = require('@yorkie-js/sdk');

const { Session, singleTarget } = require('../lib/session');
const { waitConverged, waitPresences, waitPushed } = require('../lib/replicas');
const { waitFor } = require('../lib/wait');
const { skipUnlessPresent, startFerretDB, startSessionStore } = require('./lib/processes');
const { YorkieCluster } = require('./lib/yorkie-cluster');
const { explainFailure, runCleanups } = require('./lib/failure');
const { EditLoop } = require('./lib/edit-loop');
const { startBalancer, probePlacement } = require('./lib/balancer');
const wireLog = require('./lib/wire-log').install();
const {
  ownerTimeline,
  ownershipProblems,
  recoveryTimes,
  percentile,
  readChangeLog,
  changeLogProblems,
} = require('./lib/checks');

const DOCS_MOVED = 2; // documents whose traffic haproxy moves to the new node
const DOCS_STAYING = 2;
const CLIENTS_PER_DOC = 3;
// Edits each client makes in each phase (between membership changes).
const EDITS_PER_PHASE = 6;
const EDIT_PAUSE_MS = [150, 350];
const LIVENESS_MS = 20000;

const results = {};

/**
 * One client editing one document until stopped: object keys, a counter,
 * a text and its presence, in turn; remembers everything it did.
 */
class Editor extends EditLoop {
  constructor({ label, client, doc }) {
    super(EDIT_PAUSE_MS);
    this.label = label;
    this.client = client;
    this.doc = doc;
    this.count = 0;
    this.keys = [];
    this.increments = 0;
    this.tokens = [];
    this.presence = null;
  }

  editOnce() {
    const n = ++this.count;
    switch (n % 4) {
      case 0: {
        const presence = { name: this.label, n };
        this.doc.update((_, p) => p.set(presence));
        this.presence = presence;
        break;
      }
      case 1: {
        const key = `${this.label}-${n}`;
        this.doc.update((root) => {
          root.items[key] = n;
        });
        this.keys.push(key);
        break;
      }
      case 2:
        this.doc.update((root) => {
          root.counter.increase(1);
        });
        this.increments += 1;
        break;
      default: {
        const token = `<${this.label}.${n}>`;
        this.doc.update((root) => {
          root.text.edit(root.text.length, root.text.length, token);
        });
        this.tokens.push(token);
      }
    }
  }
}

function summary(values) {
  if (!values.length) return 'none';
  return `p50 ${percentile(values, 50)} ms, max ${Math.max(...values)} ms (n=${values.length})`;
}

async function forwardScenario(t, storeKind, ferret) {
  const cleanups = [];
  const cleanup = async () => {
    await runCleanups(cleanups);
  };
  let cluster;
  let lb;
  let session;
  const fail = (err) => {
    throw explainFailure(err, { session, cluster, lb });
  };

  try {
    const store = await startSessionStore(storeKind);
    cleanups.push(() => store.stop());
    cluster = new YorkieCluster({
      storeArgs: store.args,
      mongoURI: ferret.uri,
      database: `forward-${storeKind}-${crypto.randomBytes(4).toString('hex')}`,
      nodeTTL: '2s',
      extraArgs: ['--affinity-mode', 'forward'],
    });
    cleanups.push(() => cluster.stop());
    await cluster.start(3);
    lb = await startBalancer({ servers: cluster.nodes });
    cleanups.push(() => lb.stop());

    // Documents: some that the hash will move to the fourth node, some that
    // it leaves where they are (asked of a throw-away haproxy with the
    // future server list).
    const nextNode = { name: `node${cluster.nextId}`, id: cluster.nextId };
    const candidates = Array.from({ length: 48 }, (_, i) => `fwd-${storeKind}-${i}-${crypto.randomBytes(4).toString('hex')}`);
    const placement = await probePlacement({
      servers: [...cluster.nodes, { ...nextNode, hostPort: cluster.nodes[0].hostPort }],
      shardKeys: candidates.map((k) => `/${k}`),
      liveHostPort: cluster.nodes[0].hostPort,
    });
    const moved = candidates.filter((k) => placement[`/${k}`] === nextNode.name).slice(0, DOCS_MOVED);
    const staying = candidates.filter((k) => placement[`/${k}`] !== nextNode.name).slice(0, DOCS_STAYING);
    assert.equal(moved.length, DOCS_MOVED, `the probe found too few keys for ${nextNode.name}: ${JSON.stringify(placement)}`);
    const keys = [...moved, ...staying];

    const wireMark = wireLog.mark();
    session = new Session({ target: singleTarget(lb.addr, { name: `haproxy ${lb.addr}` }), transport: 'json' });
    cleanups.push(() => session.close());

    // Clients: the first creates the structure, the others attach to it.
    const byDoc = {};
    for (const key of keys) {
      byDoc[key] = [];
      for (let i = 0; i < CLIENTS_PER_DOC; i++) {
        const label = `${keys.indexOf(key)}${String.fromCharCode(97 + i)}`;
        const client = await session.activateClient();
        const doc = await session.attach(client, key, {
          initialPresence: { name: label, n: 0 },
          initialRoot:
            i === 0
              ? { items: {}, counter: new yorkie.Counter(yorkie.CounterType.Int, 0), text: new yorkie.Text() }
              : undefined,
        });
        if (i === 0) await waitPushed(doc);
        byDoc[key].push(new Editor({ label, client, doc }));
      }
    }
    const editors = Object.values(byDoc).flat();
    const docsOf = (key) => byDoc[key].map((e) => e.doc);
    await Promise.all(keys.map((key) => waitConverged(docsOf(key), { what: `${key} to be set up on every replica` })));

    // Sample how many documents each live node believes it owns: the sum
    // must never exceed the number of documents.
    const ownedSamples = [];
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const byNode = await cluster.metricByNode('yorkie_affinity_bindings_owned');
        const sum = Object.values(byNode).reduce((a, v) => a + (v || 0), 0);
        ownedSamples.push({ at: Date.now(), sum, byNode });
        await delay(200);
      }
    })();
    cleanups.push(async () => {
      sampling = false;
      await sampler;
    });

    const editedAtLeast = async (n, what) =>
      waitFor(() => {
        const broken = editors.find((e) => e.error);
        if (broken) throw broken.error;
        return editors.every((e) => e.count >= n);
      }, { timeoutMs: LIVENESS_MS * 2, what });

    for (const e of editors) e.start();
    await editedAtLeast(EDITS_PER_PHASE, 'every client to make its first edits');

    // Scale out: a fourth node, and haproxy reloaded with it.
    const fourth = await cluster.addNode();
    assert.equal(fourth.name, nextNode.name);
    const reloadAt = Date.now();
    await lb.reload(cluster.nodes);
    const base = Math.max(...editors.map((e) => e.count));
    await editedAtLeast(base + EDITS_PER_PHASE, 'every client to keep editing after the scale-out');
    // The moved documents' calls now reach the new node (which forwards
    // them), while their Watch streams stay where they were opened.
    await waitFor(
      () =>
        moved.every((key) =>
          wireLog
            .since(wireMark)
            .some((e) => e.key === key && e.method === 'PushPullChanges' && e.ok && e.lbServer === fourth.name),
        ),
      { timeoutMs: LIVENESS_MS, what: `PushPulls of ${moved.join(', ')} to be routed to ${fourth.name}` },
    );
    const watchReopened = wireLog
      .since(wireMark)
      .filter((e) => e.method === 'Watch' && e.sentAt >= reloadAt && moved.includes(e.key));
    assert.deepEqual(
      watchReopened.map((e) => `${e.key} ${e.clientId}`),
      [],
      'the Watch streams of the moved documents should stay open on the old nodes across the reload',
    );

    // Crash the owner of a moved document.
    const ownerOf = (key) => {
      const tl = ownerTimeline(wireLog.since(wireMark), key);
      return tl.length ? cluster.nodeBySessionKey(tl[tl.length - 1].sessionKey) : undefined;
    };
    const victim = ownerOf(moved[0]);
    assert.ok(victim && victim.alive, `owner of ${moved[0]} should be a live node`);
    const affected = keys.filter((k) => ownerOf(k) === victim);
    const killAt = Date.now();
    await cluster.kill(victim);
    t.diagnostic(`${storeKind}: SIGKILL ${victim.name}, owner of ${affected.join(', ')}`);

    // Every client of an affected document syncs again.
    const affectedPairs = affected.flatMap((key) =>
      byDoc[key].map((e) => ({ clientId: e.client.getID(), key, label: e.label })),
    );
    await waitFor(
      () => recoveryTimes(wireLog.since(wireMark), affectedPairs, { from: killAt }).every((r) => r.syncedMs !== null),
      {
        timeoutMs: LIVENESS_MS,
        what: `every client of ${affected.join(', ')} to sync again after the SIGKILL`,
        describe: () => JSON.stringify(recoveryTimes(wireLog.since(wireMark), affectedPairs, { from: killAt })),
      },
    );
    const base2 = Math.max(...editors.map((e) => e.count));
    await editedAtLeast(base2 + EDITS_PER_PHASE, 'every client to keep editing after the SIGKILL');

    // Stop editing; everything must be acknowledged and seen by everyone.
    await Promise.all(editors.map((e) => e.stop()));
    for (const e of editors) assert.equal(e.error, null, `${e.label} failed to edit: ${e.error}`);
    await Promise.all(editors.map((e) => waitPushed(e.doc, { timeoutMs: LIVENESS_MS })));
    for (const key of keys) {
      const eds = byDoc[key];
      const json = await waitConverged(docsOf(key), { what: `every replica of ${key} to converge`, timeoutMs: LIVENESS_MS });
      const keysMissing = eds.flatMap((e) => e.keys.filter((k) => !(k in json.items)));
      assert.deepEqual(keysMissing, [], `${key}: object keys set by clients are missing`);
      assert.equal(json.counter, eds.reduce((a, e) => a + e.increments, 0), `${key}: counter should hold every increment`);
      const text = eds[0].doc.getRoot().text.toString();
      const tokensMissing = eds.flatMap((e) => e.tokens.filter((tok) => !text.includes(tok)));
      assert.deepEqual(tokensMissing, [], `${key}: text inserts are missing`);
    }

    // Watch streams deliver again: one more edit per document reaches the
    // other clients, which have nothing of their own to push.
    for (const key of keys) {
      const [writer] = byDoc[key];
      writer.doc.update((root) => {
        root.items.final = writer.label;
      });
      await waitConverged(docsOf(key), {
        what: `the last edit of ${writer.label} to reach every replica of ${key} through Watch`,
        timeoutMs: LIVENESS_MS,
        expect: (json) => json.items.final === writer.label,
      });
      const expected = Object.fromEntries(byDoc[key].map((e) => [e.client.getID(), e.presence || { name: e.label, n: 0 }]));
      await waitPresences(docsOf(key), expected, { what: `last presences on ${key}`, timeoutMs: LIVENESS_MS });
    }

    // Every client ends with one open Watch stream per document that has
    // delivered its initialization; those of the dead node's documents have
    // delivered since the SIGKILL (opened again, or moved to the new owner).
    for (const e of editors) {
      const key = e.doc.getKey();
      const watches = wireLog
        .since(wireMark)
        .filter((w) => w.method === 'Watch' && w.key === key && w.clientId === e.client.getID());
      const open = watches.filter((w) => w.firstMessageAt && !w.endedAt);
      assert.equal(open.length, 1, `${e.label} on ${key}: open Watch streams ${JSON.stringify(watches)}`);
      if (affected.includes(key)) {
        // Opened again after the SIGKILL, or kept open by the node it went
        // through and moved to the new owner (it then delivered since).
        assert.ok(open[0].lastMessageAt > killAt, `${e.label} on ${key}: its Watch stream delivered nothing since the SIGKILL`);
      }
    }

    // The stored log, read by a fresh client from server_seq 0, is gapless.
    for (const key of keys) {
      const log = await readChangeLog(lb.addr, key);
      assert.deepEqual(changeLogProblems(log), [], `${key}: change log read from server_seq 0`);
      const actors = new Set(log.changes.map((c) => c.actor));
      for (const e of byDoc[key]) assert.ok(actors.has(e.client.getID()), `${key}: no stored change of ${e.label}`);
    }

    sampling = false;
    await sampler;

    // No two owners: per document, owners change only when one dies.
    const entries = wireLog.since(wireMark);
    const nodeName = (k) => (cluster.nodeBySessionKey(k) || { name: k }).name;
    const problems = ownershipProblems(entries, keys, {
      knownKeys: new Set(cluster.nodes.map((n) => n.sessionKey)),
      ended: { [victim.sessionKey]: killAt },
      exited: { [victim.sessionKey]: victim.exitedAt },
      nodeName,
    });
    assert.deepEqual(problems, [], 'each document must be served by one owner at a time');
    for (const key of keys.filter((k) => !affected.includes(k))) {
      assert.equal(ownerTimeline(entries, key).length, 1, `${key} changed owner although its owner never died`);
    }
    const overOwned = ownedSamples.filter((s) => s.sum > keys.length);
    assert.deepEqual(overOwned.slice(0, 5), [], `live nodes together claimed more than ${keys.length} documents`);
    // With every client still attached, the live nodes own each document once.
    await waitFor(
      async () => {
        const byNode = await cluster.metricByNode('yorkie_affinity_bindings_owned');
        return Object.values(byNode).reduce((a, v) => a + (v || 0), 0) === keys.length;
      },
      {
        timeoutMs: LIVENESS_MS,
        what: `yorkie_affinity_bindings_owned to add up to ${keys.length} over the live nodes`,
        describe: async () => JSON.stringify(await cluster.metricByNode('yorkie_affinity_bindings_owned')),
      },
    );
    t.diagnostic(
      `${storeKind}: ${ownedSamples.length} samples of yorkie_affinity_bindings_owned, largest sum ${Math.max(...ownedSamples.map((s) => s.sum))}`,
    );

    // Kill-to-sync times of the affected clients.
    const rec = recoveryTimes(entries, affectedPairs, { from: killAt });
    const synced = rec.map((r) => r.syncedMs);
    results[storeKind] = { synced, victim: victim.name, affected };
    const line =
      `${storeKind}: SIGKILL of ${victim.name} (owner of ${affected.length} of ${keys.length} documents) ` +
      `to next successful PushPull (after an error, or sent after the SIGKILL when none failed), ${affectedPairs.length} clients: ${summary(synced)}`;
    console.log(line);
    t.diagnostic(line);
    t.diagnostic(
      `${storeKind}: per client (first error / synced, ms after the SIGKILL, failed calls): ` +
        rec.map((r) => `${r.label} ${r.firstFailureMs}/${r.syncedMs} x${r.failures}`).join(', '),
    );
    t.diagnostic(
      `${storeKind}: owners ${keys.map((k) => `${k.split('-').slice(0, 3).join('-')}: ${ownerTimeline(entries, k).map((s) => nodeName(s.sessionKey)).join('->')}`).join('; ')}`,
    );
  } catch (err) {
    fail(err);
  } finally {
    await cleanup();
  }
}

const NEEDED = ['yorkie', 'ferretdb', 'haproxy'];
let ferret = null;
async function sharedFerret() {
  if (!ferret) ferret = await startFerretDB();
  return ferret;
}
test.after(async () => {
  if (ferret) await ferret.stop();
  const figures = Object.entries(results).map(([store, r]) => `${store} ${summary(r.synced)}`);
  if (figures.length) console.log(`kill-to-sync: ${figures.join('; ')}`);
});

for (const storeKind of ['etcd', 'redis']) {
  const skip = skipUnlessPresent([...NEEDED, storeKind === 'etcd' ? 'etcd' : 'redis']);
  test(`forward mode, ${storeKind} store: scale out and SIGKILL under editing, one owner per document`, { skip, timeout: 150000 }, async (t) =>
    forwardScenario(t, storeKind, await sharedFerret()),
  );
}
