'use strict';
// A cluster on MongoDB alone, as upstream's yorkie-cluster Helm chart runs
// one: three `yorkie server` processes started with the chart's argument
// list (build/charts/yorkie-cluster/templates/yorkie/deployment.yaml of
// upstream v0.7.17, rendered with its default values: no session store is
// named) on one MongoDB-wire server (FerretDB), behind haproxy hashing
// x-shard-key. The nodes find each other through the mongo session store,
// which they choose by themselves. Real SDK clients edit several documents;
// the owner of one is SIGKILLed. Checked: every replica converges with every
// edit, each document is answered by one owner at a time, the killed node's
// documents move to live nodes, and the stored logs are gapless.

const test = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const yorkie = require('@yorkie-js/sdk');

const { Session, singleTarget } = require('../lib/session');
const { waitConverged, waitPushed } = require('../lib/replicas');
const { waitFor } = require('../lib/wait');
const { ProjectAdmin } = require('../lib/project-admin');
const { skipUnlessPresent, startFerretDB } = require('./lib/processes');
const { YorkieCluster } = require('./lib/yorkie-cluster');
const { explainFailure, runCleanups } = require('./lib/failure');
const { EditLoop } = require('./lib/edit-loop');
const { startBalancer } = require('./lib/balancer');
const wireLog = require('./lib/wire-log').install();
const { ownerTimeline, ownershipProblems, recoveryTimes, readChangeLog, changeLogProblems } = require('./lib/checks');

const DOCS = 4;
const CLIENTS_PER_DOC = 2;
const EDITS_PER_PHASE = 4;
const LIVENESS_MS = 30000;

/**
 * The chart's container args with its default values, on this machine's
 * ports: $(POD_IP) is the loopback address, the database the chart's
 * default name (the test's own FerretDB holds nothing else).
 */
function helmChartArgs({ mongoURI, rpcPort, profilingPort }) {
  return [
    'server',
    '--mongo-connection-uri', mongoURI,
    '--mongo-yorkie-database', 'yorkie-meta',
    '--pprof-enabled',
    '--rpc-port', String(rpcPort),
    '--profiling-port', String(profilingPort),
    '--backend-gateway-addr', 'yorkie-gateway.yorkie.svc.cluster.local',
    '--backend-rpc-addr', `127.0.0.1:${rpcPort}`,
    '--backend-use-default-project=false',
    '--log-level', 'info',
  ];
}

/** Nodes started with the chart's arguments only. */
class HelmCluster extends YorkieCluster {
  argsFor({ rpcPort, profilingPort }) {
    return helmChartArgs({ mongoURI: this.mongoURI, rpcPort, profilingPort });
  }
}

/** One client adding keys and increments to one document until stopped. */
class Editor extends EditLoop {
  constructor({ label, client, doc }) {
    super([100, 300]);
    this.label = label;
    this.client = client;
    this.doc = doc;
    this.count = 0;
    this.keys = [];
    this.increments = 0;
  }

  editOnce() {
    const n = ++this.count;
    if (n % 2) {
      const key = `${this.label}-${n}`;
      this.doc.update((root) => {
        root.items[key] = n;
      });
      this.keys.push(key);
    } else {
      this.doc.update((root) => {
        root.counter.increase(1);
      });
      this.increments += 1;
    }
  }
}

const skip = skipUnlessPresent(['yorkie', 'ferretdb', 'haproxy']);
test('three replicas with upstream Helm chart args on one MongoDB: SDK converges, one owner per document, a SIGKILLed replica\'s documents move', { skip, timeout: 180000 }, async (t) => {
  const cleanups = [];
  let cluster;
  let lb;
  let session;
  const fail = (err) => {
    throw explainFailure(err, { session, cluster, lb });
  };
  try {
    const ferret = await startFerretDB();
    cleanups.push(() => ferret.stop());
    cluster = new HelmCluster({ mongoURI: ferret.uri });
    cleanups.push(() => cluster.stop());
    await cluster.start(3);
    for (const n of cluster.nodes) {
      assert.match(n.logTail(20000), /session store chosen" session-store=mongo/, `${n.name} should choose the mongo session store`);
    }
    lb = await startBalancer({ servers: cluster.nodes });
    cleanups.push(() => lb.stop());

    // --backend-use-default-project=false: the SDK needs a project's key.
    const admin = await ProjectAdmin.logIn(cluster.nodes[0].rpcAddr);
    const project = (await admin.call('CreateProject', { name: `helm-${crypto.randomBytes(3).toString('hex')}` })).project;

    const wireMark = wireLog.mark();
    session = new Session({ target: singleTarget(lb.addr, { name: `haproxy ${lb.addr}` }), clientOptions: { apiKey: project.publicKey } });
    cleanups.push(() => session.close());

    const keys = Array.from({ length: DOCS }, (_, i) => `helm-${i}-${crypto.randomBytes(4).toString('hex')}`);
    const byDoc = {};
    for (const key of keys) {
      byDoc[key] = [];
      for (let i = 0; i < CLIENTS_PER_DOC; i++) {
        const label = `${keys.indexOf(key)}${String.fromCharCode(97 + i)}`;
        const client = await session.activateClient();
        const doc = await session.attach(client, key, {
          initialRoot: i === 0 ? { items: {}, counter: new yorkie.Counter(yorkie.CounterType.Int, 0) } : undefined,
        });
        if (i === 0) await waitPushed(doc);
        byDoc[key].push(new Editor({ label, client, doc }));
      }
    }
    const editors = Object.values(byDoc).flat();
    const docsOf = (key) => byDoc[key].map((e) => e.doc);
    await Promise.all(keys.map((key) => waitConverged(docsOf(key), { what: `${key} to be set up on every replica` })));

    const editedAtLeast = (n, what) =>
      waitFor(() => {
        const broken = editors.find((e) => e.error);
        if (broken) throw broken.error;
        return editors.every((e) => e.count >= n);
      }, { timeoutMs: LIVENESS_MS * 2, what });
    for (const e of editors) e.start();
    await editedAtLeast(EDITS_PER_PHASE, 'every client to make its first edits');

    // SIGKILL the owner of the first document.
    const ownerOf = (key) => {
      const tl = ownerTimeline(wireLog.since(wireMark), key);
      return tl.length ? cluster.nodeBySessionKey(tl[tl.length - 1].sessionKey) : undefined;
    };
    const victim = ownerOf(keys[0]);
    assert.ok(victim && victim.alive, `owner of ${keys[0]} should be a live node`);
    const affected = keys.filter((k) => ownerOf(k) === victim);
    const killAt = Date.now();
    await cluster.kill(victim);
    t.diagnostic(`SIGKILL ${victim.name}, owner of ${affected.join(', ')}`);

    const affectedPairs = affected.flatMap((key) => byDoc[key].map((e) => ({ clientId: e.client.getID(), key, label: e.label })));
    await waitFor(
      () => recoveryTimes(wireLog.since(wireMark), affectedPairs, { from: killAt }).every((r) => !r.failed || r.syncedMs !== null),
      {
        timeoutMs: LIVENESS_MS,
        what: `every client of ${affected.join(', ')} to sync again after the SIGKILL`,
        describe: () => JSON.stringify(recoveryTimes(wireLog.since(wireMark), affectedPairs, { from: killAt })),
      },
    );
    const base = Math.max(...editors.map((e) => e.count));
    await editedAtLeast(base + EDITS_PER_PHASE, 'every client to keep editing after the SIGKILL');

    await Promise.all(editors.map((e) => e.stop()));
    for (const e of editors) assert.equal(e.error, null, `${e.label} failed to edit: ${e.error}`);
    await Promise.all(editors.map((e) => waitPushed(e.doc, { timeoutMs: LIVENESS_MS })));
    for (const key of keys) {
      const eds = byDoc[key];
      const json = await waitConverged(docsOf(key), { what: `every replica of ${key} to converge`, timeoutMs: LIVENESS_MS });
      const missing = eds.flatMap((e) => e.keys.filter((k) => !(k in json.items)));
      assert.deepEqual(missing, [], `${key}: object keys set by clients are missing`);
      assert.equal(json.counter, eds.reduce((a, e) => a + e.increments, 0), `${key}: counter should hold every increment`);
      const log = await readChangeLog(lb.addr, key, { apiKey: project.publicKey });
      assert.deepEqual(changeLogProblems(log), [], `${key}: change log read from server_seq 0`);
    }

    // One owner at a time; the killed node's documents moved to live nodes,
    // the others never changed owner.
    const entries = wireLog.since(wireMark);
    const problems = ownershipProblems(entries, keys, {
      knownKeys: new Set(cluster.nodes.map((n) => n.sessionKey)),
      ended: { [victim.sessionKey]: killAt },
      exited: { [victim.sessionKey]: victim.exitedAt },
      nodeName: (k) => (cluster.nodeBySessionKey(k) || { name: k }).name,
    });
    assert.deepEqual(problems, [], 'each document must be served by one owner at a time');
    for (const key of affected) {
      const now = ownerOf(key);
      assert.ok(now && now !== victim && now.alive, `${key} should have moved to a live node, is on ${now && now.name}`);
    }
    for (const key of keys.filter((k) => !affected.includes(k))) {
      assert.equal(ownerTimeline(entries, key).length, 1, `${key} changed owner although its owner never died`);
    }
    await waitFor(
      async () => {
        const byNode = await cluster.metricByNode('yorkie_affinity_bindings_owned');
        return Object.values(byNode).reduce((a, v) => a + (v || 0), 0) === keys.length;
      },
      { timeoutMs: LIVENESS_MS, what: `the live nodes to own the ${keys.length} documents once each` },
    );
  } catch (err) {
    fail(err);
  } finally {
    await runCleanups(cleanups);
  }
});
