'use strict';
// Crash and takeover with snapshots. Three `yorkie server` processes in
// forward mode behind haproxy, on FerretDB and etcd, store a snapshot every
// SNAPSHOT_INTERVAL changes. SDK clients edit one document (object, counter,
// text, tree, array) past several intervals, its owner is killed with SIGKILL
// while they go on editing, and another node takes the document over from its newest snapshot and the
// changes after it. Checked: every replica converges with every edit, the
// new owner goes on storing snapshots, the operator's view of the document
// (GET /admin/documents/{key}, on every live node) is every replica's
// toSortedJSON byte for byte, and a client that attaches late is sent a
// snapshot instead of the change log, equals the others and keeps converging
// with them.

const test = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const yorkie = require('@yorkie-js/sdk');

const { Session, singleTarget } = require('../lib/session');
const { waitConverged, waitPushed } = require('../lib/replicas');
const { waitFor } = require('../lib/wait');
const { documentView: viewWith, assertRootIs, logIn } = require('../lib/admin');
const { skipUnlessPresent } = require('./lib/processes');
const { startEtcdCluster } = require('./lib/yorkie-cluster');
const { explainFailure, runCleanups } = require('./lib/failure');
const { EditLoop } = require('./lib/edit-loop');
const { startBalancer } = require('./lib/balancer');
const wireLog = require('./lib/wire-log').install();
const { ownerTimeline, recoveryTimes, percentile } = require('./lib/checks');

const SNAPSHOT_INTERVAL = 20;
const SNAPSHOT_THRESHOLD = 20;
const CLIENTS = 3;
// Intervals of changes stored before the SIGKILL and after it.
const INTERVALS_BEFORE = 4;
const INTERVALS_AFTER = 3;
const EDIT_PAUSE_MS = [20, 80];
const LIVENESS_MS = 30000;

/**
 * Records what AttachDocument answers carried: a snapshot (its size in
 * bytes) or changes, and the checkpoint. It wraps globalThis.fetch, which the
 * SDK looks up on every call, around the wire log's wrapper.
 */
const attaches = [];
{
  const inner = globalThis.fetch;
  globalThis.fetch = async function attachRecordingFetch(input, init) {
    const res = await inner(input, init);
    const url = typeof input === 'string' ? input : input.url;
    if (url.endsWith('/AttachDocument') && res.status === 200 && /json/.test(res.headers.get('content-type') || '')) {
      try {
        const msg = await res.clone().json();
        const pack = msg.changePack || {};
        attaches.push({
          key: pack.documentKey,
          at: Date.now(),
          snapshotBytes: pack.snapshot ? Buffer.from(pack.snapshot, 'base64').length : 0,
          changes: (pack.changes || []).length,
          serverSeq: Number((pack.checkpoint && pack.checkpoint.serverSeq) || 0),
        });
      } catch {
        // an answer this cannot read is still the SDK's to handle
      }
    }
    return res;
  };
}

/** One client editing until stopped: object keys, a counter, text, a tree and a list, in turn. */
class Editor extends EditLoop {
  constructor({ label, client, doc }) {
    super(EDIT_PAUSE_MS);
    Object.assign(this, { label, client, doc, count: 0, keys: [], increments: 0, tokens: [] });
  }

  editOnce() {
    const n = ++this.count;
    switch (n % 5) {
      case 0: {
        const key = `${this.label}-${n}`;
        this.doc.update((root) => {
          root.items[key] = n;
        });
        this.keys.push(key);
        break;
      }
      case 1:
        this.doc.update((root) => root.counter.increase(1));
        this.increments += 1;
        break;
      case 2: {
        const token = `<${this.label}.${n}>`;
        this.doc.update((root) => root.text.edit(root.text.length, root.text.length, token));
        this.tokens.push(token);
        break;
      }
      case 3:
        this.doc.update((root) => root.tree.edit(1, 1, { type: 'text', value: this.label }));
        break;
      default:
        // Pushes and removals: the list's tombstones go with garbage collection.
        this.doc.update((root) => {
          root.list.push(n);
          if (root.list.length > 4) root.list.delete(0);
        });
    }
  }
}

const adminOf = (node) => `http://127.0.0.1:${node.profilingPort}`;

test(
  'snapshots across a SIGKILL of the owner: the new owner serves the same document, late joiners attach from a snapshot',
  { skip: skipUnlessPresent(['yorkie', 'ferretdb', 'haproxy', 'etcd']), timeout: 240000 },
  async (t) => {
    const cleanups = [];
    let cluster;
    let lb;
    let session;
    try {
      cluster = await startEtcdCluster({
        cleanups,
        name: 'snapshots',
        extraArgs: [
          '--affinity-mode', 'forward',
          '--snapshot-interval', String(SNAPSHOT_INTERVAL),
          '--snapshot-threshold', String(SNAPSHOT_THRESHOLD),
        ],
      });
      lb = await startBalancer({ servers: cluster.nodes });
      cleanups.push(() => lb.stop());

      const key = `snap-${crypto.randomBytes(6).toString('hex')}`;
      const wireMark = wireLog.mark();
      session = new Session({ target: singleTarget(lb.addr, { name: `haproxy ${lb.addr}` }), transport: 'json' });
      cleanups.push(() => session.close());
      const editors = [];
      for (let i = 0; i < CLIENTS; i++) {
        const client = await session.activateClient();
        const doc = await session.attach(client, key, {
          initialPresence: { name: `c${i}` },
          initialRoot:
            i === 0
              ? {
                  items: {},
                  counter: new yorkie.Counter(yorkie.CounterType.Int, 0),
                  text: new yorkie.Text(),
                  tree: new yorkie.Tree({ type: 'doc', children: [{ type: 'p', children: [{ type: 'text', value: '.' }] }] }),
                  list: [],
                }
              : undefined,
        });
        if (i === 0) await waitPushed(doc);
        editors.push(new Editor({ label: `c${i}`, client, doc }));
      }
      const docs = () => editors.map((e) => e.doc);
      const token = await logIn(cluster.live()[0].rpcAddr);
      const documentView = (base, k) => viewWith(base, k, { token });
      const liveView = async () => documentView(adminOf(cluster.live()[0]), key);
      const stored = async (atLeast, what) => {
        let last;
        await waitFor(
          async () => {
            const broken = editors.find((e) => e.error);
            if (broken) throw broken.error;
            last = await liveView().catch(() => null);
            return last !== null && last.server_seq >= atLeast && last.snapshot !== null;
          },
          { timeoutMs: LIVENESS_MS * 2, what, describe: () => JSON.stringify(last && { server_seq: last.server_seq, snapshot: last.snapshot }) },
        );
        return last;
      };

      for (const e of editors) e.start();
      const beforeKill = await stored(INTERVALS_BEFORE * SNAPSHOT_INTERVAL, `${INTERVALS_BEFORE} snapshot intervals of changes`);
      assert.ok(
        beforeKill.snapshot.server_seq >= (INTERVALS_BEFORE - 1) * SNAPSHOT_INTERVAL,
        `a snapshot every ${SNAPSHOT_INTERVAL} changes: newest at ${beforeKill.snapshot.server_seq} of ${beforeKill.server_seq}`,
      );

      // SIGKILL the owner while the clients keep editing.
      const ownerNow = () => {
        const tl = ownerTimeline(wireLog.since(wireMark), key);
        return tl.length ? cluster.nodeBySessionKey(tl[tl.length - 1].sessionKey) : undefined;
      };
      const victim = ownerNow();
      assert.ok(victim && victim.alive, 'the document has a live owner');
      const killAt = Date.now();
      await cluster.kill(victim);
      t.diagnostic(`SIGKILL ${victim.name} at server_seq ${beforeKill.server_seq}, newest snapshot at ${beforeKill.snapshot.server_seq}`);
      // The view is the owner's state: once another node has taken the
      // document over (rebuilt from the newest snapshot and the log), any
      // live node answers it from there.
      let duringOutage = null;
      await waitFor(
        async () => {
          duringOutage = await liveView().catch(() => null);
          return duringOutage !== null && duringOutage.snapshot !== null;
        },
        { timeoutMs: LIVENESS_MS, what: 'the view from the new owner after the SIGKILL' },
      );
      // The view shows the owner's newest snapshot, stored or being stored:
      // one the killed owner was still storing is lost with it, so the new
      // owner may name an older one. No acknowledged change is lost.
      assert.ok(
        duringOutage.server_seq >= beforeKill.server_seq,
        `view right after the SIGKILL: ${JSON.stringify({ server_seq: duringOutage.server_seq, snapshot: duringOutage.snapshot })}`,
      );

      const pairs = editors.map((e) => ({ clientId: e.client.getID(), key, label: e.label }));
      await waitFor(
        () => recoveryTimes(wireLog.since(wireMark), pairs, { from: killAt }).every((r) => !r.failed || r.syncedMs !== null),
        { timeoutMs: LIVENESS_MS, what: 'every client to sync again after the SIGKILL' },
      );
      const afterKill = await stored(
        beforeKill.server_seq + INTERVALS_AFTER * SNAPSHOT_INTERVAL,
        `${INTERVALS_AFTER} more snapshot intervals of changes after the SIGKILL`,
      );

      await Promise.all(editors.map((e) => e.stop()));
      for (const e of editors) assert.equal(e.error, null, `${e.label} failed to edit: ${e.error}`);
      await Promise.all(editors.map((e) => waitPushed(e.doc, { timeoutMs: LIVENESS_MS })));
      await waitConverged(docs(), {
        what: 'every replica to converge after the takeover',
        timeoutMs: LIVENESS_MS,
        expect: (j) => editors.every((e) => e.keys.every((k) => k in j.items)) && j.counter === editors.reduce((a, e) => a + e.increments, 0),
      });
      const text = editors[0].doc.getRoot().text.toString();
      assert.deepEqual(editors.flatMap((e) => e.tokens.filter((tok) => !text.includes(tok))), [], 'every text insert is in');

      // Another node owns the document now, and stored snapshots after the takeover.
      const newOwner = ownerNow();
      assert.ok(newOwner && newOwner !== victim && newOwner.alive, `a live node took over from ${victim.name}`);
      assert.ok(
        afterKill.snapshot.server_seq > beforeKill.server_seq,
        `the new owner stored a snapshot after the takeover: ${JSON.stringify(afterKill.snapshot)} (SIGKILL at ${beforeKill.server_seq})`,
      );
      // Every live node's view is the replicas' document, byte for byte. The
      // views are read one after the other, and the owner may collect garbage
      // in between (a client's sync moves the minimum synced version vector),
      // so they are read again until they agree.
      let views = [];
      await waitFor(
        async () => {
          views = [];
          for (const node of cluster.live()) {
            const view = await documentView(adminOf(node), key);
            for (const [i, d] of docs().entries()) assertRootIs(view, d, `view of ${node.name}, replica ${i}`);
            views.push(view);
          }
          return views.every((v) => v.text === views[0].text);
        },
        {
          timeoutMs: LIVENESS_MS,
          what: 'every live node to show the same view',
          describe: () => views.map((v) => JSON.stringify({ ...v, root: undefined })).join('\n'),
        },
      );
      assert.ok(views.length >= 2, 'two nodes are left');
      const view = views[0];

      // A late joiner is sent a snapshot, not the change log, and equals the others.
      const lateClient = await session.activateClient();
      const lateDoc = await session.attach(lateClient, key, { initialPresence: { name: 'late' } });
      const attach = attaches.filter((a) => a.key === key).pop();
      assert.ok(attach && attach.snapshotBytes > 0, `the late joiner's attach carried a snapshot: ${JSON.stringify(attach)}`);
      assert.ok(
        attach.changes < SNAPSHOT_THRESHOLD && attach.serverSeq >= view.server_seq,
        `the attach sent ${attach.changes} changes with the snapshot, up to ${attach.serverSeq} of ${view.server_seq}`,
      );
      assertRootIs(view, lateDoc, 'late joiner');

      // It goes on editing with the others.
      const late = new Editor({ label: 'late', client: lateClient, doc: lateDoc });
      for (let i = 0; i < 8; i++) late.editOnce();
      editors[1].editOnce();
      const everyone = [...docs(), lateDoc];
      await Promise.all(everyone.map((d) => waitPushed(d, { timeoutMs: LIVENESS_MS })));
      const final = await waitConverged(everyone, {
        what: 'the late joiner and the others to converge',
        timeoutMs: LIVENESS_MS,
        expect: (j) => late.keys.every((k) => k in j.items) && editors[1].keys.every((k) => k in j.items),
      });
      assert.equal(final.counter, [...editors, late].reduce((a, e) => a + e.increments, 0), 'the counter holds every increment');
      const finalView = await documentView(adminOf(newOwner), key);
      for (const [i, d] of everyone.entries()) assertRootIs(finalView, d, `final view, replica ${i}`);

      const rec = recoveryTimes(wireLog.since(wireMark), pairs, { from: killAt }).filter((r) => r.failed).map((r) => r.syncedMs);
      t.diagnostic(
        `SIGKILL of ${victim.name} at server_seq ${beforeKill.server_seq}; ${newOwner.name} took over; ` +
          `snapshot at ${afterKill.snapshot.server_seq} of ${afterKill.server_seq}; final server_seq ${finalView.server_seq}; ` +
          `late joiner got a ${attach.snapshotBytes}-byte snapshot and ${attach.changes} changes; ` +
          `kill-to-sync p50 ${percentile(rec, 50)} ms, max ${rec.length ? Math.max(...rec) : NaN} ms (n=${rec.length})`,
      );
    } catch (err) {
      throw explainFailure(err, { session, cluster, lb });
    } finally {
      await runCleanups(cleanups);
    }
  },
);
