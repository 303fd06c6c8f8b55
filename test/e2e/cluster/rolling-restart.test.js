'use strict';
// A rolling restart of every node of a three-node cluster under real SDK
// load, as an operator's deploy does it: SIGTERM one node, wait for it to
// exit, start it again on the same ports, next node. haproxy checks
// /healthz, so a draining node (503) leaves the rotation at once. Run in
// forward mode (etcd store, haproxy hashing x-shard-key) and in redirect
// mode (Redis store, haproxy routing by x-session-key, the SDK behind the
// session-key fetch wrapper).
//
// Checked: no error reaches any SDK client (no failed unary call, no
// sync-failed or auth-error event, no failed edit), and every replica of
// every document ends with exactly the entries written (none lost, none
// twice) and everyone's last presence. Logged, not asserted: the sync gap
// (from a client's edit to its arrival in another replica) p50/p99/max,
// Watch streams the clients had to open again, and what the drain did.

const test = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');

const { installSessionKeyFetch } = require('../../../clients/js/session-key');
const { Session, singleTarget, newDocKey } = require('../lib/session');
const { waitFor } = require('../lib/wait');
const { skipUnlessPresent, startFerretDB, startSessionStore } = require('./lib/processes');
const { YorkieCluster } = require('./lib/yorkie-cluster');
const { startBalancer } = require('./lib/balancer');
const { startRoutingHAProxy } = require('./lib-redirect/haproxy');
const { percentile } = require('./lib/checks');
const { DocGroup, runEditors, logOf } = require('./lib-redirect/workload');

const DOCS = 3;
const CLIENTS_PER_DOC = 3;
const EDIT_INTERVAL_MS = 400;
const EDITS_BETWEEN_RESTARTS = 3;
const DRAIN_TIMEOUT = '10s';

/**
 * Records every call the SDK sees (installed above the session-key wrapper,
 * if any): unary calls that did not answer 200, calls whose fetch failed, and
 * how long each took to answer (for a stream, until its headers).
 */
function installCallRecorder() {
  const calls = [];
  const previous = globalThis.fetch;
  globalThis.fetch = async (input, init = {}) => {
    const url = typeof input === 'string' ? input : input.url;
    const rec = { at: Date.now(), method: url.split('/').pop(), client: clientOf(init.body) };
    calls.push(rec);
    try {
      const res = await previous(input, init);
      rec.status = res.status;
      rec.ms = Date.now() - rec.at;
      if (res.status !== 200) {
        const body = await res.clone().text().catch(() => '');
        rec.error = body.slice(0, 300);
      }
      return res;
    } catch (err) {
      rec.error = String((err && err.cause) || (err && err.message) || err);
      throw err;
    }
  };
  return { calls, uninstall: () => (globalThis.fetch = previous) };
}

/** The clientId of a Connect JSON request body, if it has one. */
function clientOf(body) {
  try {
    let bytes = typeof body === 'string' ? Buffer.from(body) : Buffer.from(body);
    // A streaming call's body is one Connect envelope: flags, length, message.
    if (bytes.length > 5 && bytes[0] === 0 && bytes.readUInt32BE(1) === bytes.length - 5) bytes = bytes.subarray(5);
    return JSON.parse(bytes.toString('utf8')).clientId;
  } catch {
    return undefined;
  }
}

function stats(values) {
  if (!values.length) return 'none';
  return `p50 ${percentile(values, 50)} ms, p99 ${percentile(values, 99)} ms, max ${Math.max(...values)} ms (n=${values.length})`;
}

/**
 * Follows what each replica receives: for every entry of another client
 * that arrives, the time since it was written (the sync gap), and the
 * SDK's sync-failed, auth-error and connection events.
 */
function observe(groups, writtenAt) {
  const out = { gaps: [], gapsConnected: [], gapsReconnected: [], arrivals: [], syncFailed: [], authErrors: [], disconnects: 0, stops: [] };
  for (const g of groups) {
    for (const e of g.editors) {
      const seen = new Set(logOf(e.doc) || []);
      const mine = `${e.tag}:`;
      // When this replica's Watch stream was down: since when (null while
      // it is up), and each earlier outage. A change written before an
      // outage ends and arriving after it began is the reconnecting kind:
      // while its stream is down a replica learns of others' changes only
      // when it syncs its own, whatever the server does.
      let downSince = null;
      const outages = [];
      const crossedOutage = (at, now) => downSince !== null || outages.some(([from, to]) => from <= now && to >= at);
      out.stops.push(
        e.doc.subscribe((ev) => {
          if (ev.type !== 'remote-change' && ev.type !== 'snapshot') return;
          const now = Date.now();
          for (const entry of logOf(e.doc) || []) {
            if (seen.has(entry)) continue;
            seen.add(entry);
            const at = writtenAt.get(`${g.key} ${entry}`);
            if (at && !entry.startsWith(mine)) {
              const connected = !crossedOutage(at, now);
              out.gaps.push(now - at);
              out.arrivals.push({ at, gap: now - at, entry, reader: e.client.getID(), writer: g.editors[Number(entry.split(':')[0])].client.getID(), connected });
              (connected ? out.gapsConnected : out.gapsReconnected).push(now - at);
            }
          }
        }),
      );
      out.stops.push(
        e.doc.subscribe('sync', (ev) => {
          if (ev.value === 'sync-failed') out.syncFailed.push({ at: Date.now(), key: g.key, tag: e.tag });
        }),
      );
      out.stops.push(e.doc.subscribe('auth-error', (ev) => out.authErrors.push({ key: g.key, tag: e.tag, ev })));
      out.stops.push(
        e.doc.subscribe('connection', (ev) => {
          if (ev.value === 'disconnected' && downSince === null) {
            out.disconnects += 1;
            downSince = Date.now();
          } else if (ev.value === 'connected' && downSince !== null) {
            outages.push([downSince, Date.now()]);
            downSince = null;
          }
        }),
      );
    }
  }
  return out;
}

async function rollingRestart(t, mode, storeKind, ferret) {
  const cleanups = [];
  const log = (line) => t.diagnostic(`${mode}: ${line}`);
  let cluster;
  let session;
  let recorder;
  try {
    let keys = null;
    if (mode === 'redirect') {
      keys = installSessionKeyFetch();
      cleanups.push(() => keys());
    }
    recorder = installCallRecorder();
    cleanups.unshift(() => recorder.uninstall());

    const store = await startSessionStore(storeKind);
    cleanups.push(() => store.stop());
    cluster = new YorkieCluster({
      storeArgs: store.args,
      mongoURI: ferret.uri,
      database: `rolling-${mode}-${crypto.randomBytes(4).toString('hex')}`,
      nodeTTL: '2s',
      extraArgs: ['--affinity-mode', mode, '--shutdown-drain-timeout', DRAIN_TIMEOUT],
    });
    cleanups.push(() => cluster.stop());
    await cluster.start(3);
    let lb;
    if (mode === 'redirect') {
      lb = await startRoutingHAProxy({ nodes: cluster.nodes.map((n) => n.hostPort) });
    } else {
      lb = await startBalancer({
        servers: cluster.nodes,
        // The readiness probe an operator configures: a draining node
        // answers 503 and leaves the rotation.
        extraBackendLines: [
          'option httpchk GET /healthz',
          'retry-on conn-failure empty-response',
          // Retries a refused connection (a node that closed its port but
          // is not yet marked down) on another node at once: a retry on
          // the same node waits haproxy's turn-around timer (min of
          // timeout connect and 1 s) first, which held PushPulls ~1.1 s.
          'option redispatch 1',
        ],
      });
    }
    cleanups.push(() => lb.stop());

    session = new Session({ target: singleTarget(lb.addr) });
    cleanups.unshift(() => session.close());
    const clients = await session.activateClients(DOCS * CLIENTS_PER_DOC);
    const groups = [];
    for (let d = 0; d < DOCS; d++) {
      const g = new DocGroup(newDocKey(`rolling-${mode}-${d}`));
      await g.attach(session, clients.slice(d * CLIENTS_PER_DOC, (d + 1) * CLIENTS_PER_DOC));
      groups.push(g);
    }
    for (const g of groups) await g.waitConverged({ timeoutMs: 30000 });
    const writtenAt = new Map();
    const seen = observe(groups, writtenAt);
    cleanups.unshift(() => seen.stops.forEach((stop) => stop()));
    const callMark = recorder.calls.length;

    const editors = groups.flatMap((g) => g.editors);
    const run = runEditors(groups, {
      intervalMs: EDIT_INTERVAL_MS,
      onWrite: (e, entry) => writtenAt.set(`${e.group.key} ${entry}`, Date.now()),
    });
    const restarts = [];
    try {
      const editMore = async (what) => {
        const mark = new Map(editors.map((e) => [e, e.count]));
        await waitFor(
          () => {
            const broken = editors.find((e) => e.error);
            if (broken) throw broken.error;
            return editors.every((e) => e.count >= mark.get(e) + EDITS_BETWEEN_RESTARTS);
          },
          { what, timeoutMs: 60000 },
        );
      };
      await editMore('editing before the restarts');
      for (let i = 0; i < cluster.nodes.length; i++) {
        const node = cluster.nodes[i];
        const began = Date.now();
        await cluster.terminate(node, { graceMs: 30000 });
        const exited = Date.now();
        assert.equal(node.process.exitInfo.code, 0, `${node.name} should exit cleanly on SIGTERM: ${JSON.stringify(node.process.exitInfo)}`);
        const drained = /drain done[^\n]*/.exec(node.logTail(20000));
        const fresh = await cluster.restart(node, { readyTimeoutMs: 30000 });
        restarts.push({ node: node.name, began, ready: Date.now(), exitMs: exited - began, downMs: Date.now() - exited, drain: drained ? drained[0].slice(0, 200) : 'no "drain done" line' });
        log(`restarted ${fresh.name}: ${JSON.stringify(restarts[restarts.length - 1])}`);
        await editMore(`editing after restarting ${node.name}`);
      }
    } finally {
      run.stop();
    }

    for (const g of groups) await g.waitPushed({ timeoutMs: 30000 });
    for (const g of groups) await g.waitConverged({ timeoutMs: 30000 });

    const calls = recorder.calls.slice(callMark);
    const failed = calls.filter((c) => c.error && c.method !== 'Watch' && c.method !== 'WatchDocument');
    const watchFailed = calls.filter((c) => c.error && (c.method === 'Watch' || c.method === 'WatchDocument'));
    const watchOpened = calls.filter((c) => c.method === 'Watch' || c.method === 'WatchDocument').length;
    const report = {
      mode,
      store: storeKind,
      entries: groups.reduce((s, g) => s + g.written().length, 0),
      syncGap: stats(seen.gaps),
      syncGapConnectionStayedUp: stats(seen.gapsConnected),
      syncGapAcrossReconnect: stats(seen.gapsReconnected),
      // Written while a node drained, exited or started again, or outside
      // those windows (the machine's steady state, for comparison).
      syncGapDuringRestarts: stats(seen.arrivals.filter((a) => restarts.some((r) => a.at >= r.began && a.at <= r.ready)).map((a) => a.gap)),
      // Written and arrived with no restart under way in between, to a
      // reader whose stream stayed up: a change written just before a
      // SIGTERM whose delivery waits for the drain is not the steady state.
      syncGapBetweenRestarts: stats(seen.arrivals.filter((a) => a.connected && !restarts.some((r) => a.at <= r.ready && a.at + a.gap >= r.began)).map((a) => a.gap)),
      // The SDK's PushPull round trips: a sync gap is made of a few of
      // them (the writer's, then the reader's after the Watch event).
      pushPull: stats(calls.filter((c) => c.method === 'PushPullChanges' && c.ms != null).map((c) => c.ms)),
      pushPullBetweenRestarts: stats(
        calls.filter((c) => c.method === 'PushPullChanges' && c.ms != null && !restarts.some((r) => c.at <= r.ready && c.at + c.ms >= r.began)).map((c) => c.ms),
      ),
      calls: calls.length,
      failedCalls: failed.length,
      watchStreamsOpenedAgain: watchOpened,
      watchOpensFailed: watchFailed.length,
      disconnectEvents: seen.disconnects,
      sessionKeyStats: keys ? keys.stats : undefined,
      restarts,
    };
    log(`report ${JSON.stringify(report)}`);
    console.log(
      `rolling restart, ${mode} mode (${storeKind}): sync gap ${report.syncGap}; connection stayed up ${report.syncGapConnectionStayedUp}; ` +
        `across a reconnect ${report.syncGapAcrossReconnect}; written during a restart ${report.syncGapDuringRestarts}; ` +
        `between restarts ${report.syncGapBetweenRestarts}; PushPull ${report.pushPull}, between restarts ${report.pushPullBetweenRestarts}; failed calls ${failed.length}; watch streams opened again ${watchOpened}`,
    );

    // The largest gaps of clients whose connection stayed up, each with the
    // writer's (w) and the reader's (r) calls from the edit to its arrival
    // and the restarts under way: where such a gap went.
    const slowest = seen.arrivals.filter((a) => a.connected).sort((x, y) => y.gap - x.gap).slice(0, 6);
    for (const a of slowest) {
      const parts = calls
        .filter((c) => (c.client === a.writer || c.client === a.reader) && c.at + (c.ms || 0) >= a.at && c.at <= a.at + a.gap)
        .map((c) => `${c.client === a.writer ? 'w' : 'r'} ${c.method} +${c.at - a.at}${c.ms != null ? `..+${c.at - a.at + c.ms}` : ''}`);
      const during = restarts.filter((r) => a.at <= r.ready && a.at + a.gap >= r.began).map((r) => `${r.node} +${r.began - a.at}..+${r.ready - a.at}`);
      log(`gap ${a.gap} ms ${a.entry} at ${a.at} writer ${a.writer} reader ${a.reader}: ${parts.join(', ')}${during.length ? `; restart ${during.join(', ')}` : ''}`);
    }

    assert.deepEqual(failed.slice(0, 5), [], 'no unary call may fail during a rolling restart');
    assert.deepEqual(seen.syncFailed.slice(0, 5), [], 'no sync-failed event may reach a client');
    assert.deepEqual(seen.authErrors.slice(0, 5), [], 'no auth-error event may reach a client');
    for (const e of editors) assert.equal(e.error, undefined, `${e.group.key}/${e.tag} failed to edit: ${e.error}`);
  } catch (err) {
    if (cluster) err.message += `\n${cluster.describe(2500)}`;
    if (recorder) {
      const bad = recorder.calls.filter((c) => c.error).slice(0, 20);
      err.message += `\n--- failed calls ---\n${bad.map((c) => `${new Date(c.at).toISOString().slice(11, 23)} ${c.method} ${c.status || ''} ${c.error}`).join('\n')}`;
    }
    throw err;
  } finally {
    for (const c of cleanups) {
      try {
        await c();
      } catch {
        // keep cleaning
      }
    }
  }
}

let ferret = null;
async function sharedFerret() {
  if (!ferret) ferret = await startFerretDB();
  return ferret;
}
test.after(async () => {
  if (ferret) await ferret.stop();
});

for (const [mode, storeKind] of [
  ['forward', 'etcd'],
  ['redirect', 'redis'],
]) {
  test(
    `rolling restart of three nodes under SDK load, ${mode} mode (${storeKind}): no client error, nothing lost`,
    { skip: skipUnlessPresent(['yorkie', 'ferretdb', 'haproxy', storeKind]), timeout: 240000 },
    async (t) => rollingRestart(t, mode, storeKind, await sharedFerret()),
  );
}
