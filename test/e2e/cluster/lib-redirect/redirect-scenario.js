'use strict';
// The redirect-mode cluster scenario: yorkie nodes in redirect mode behind
// haproxy that routes by x-session-key, SDK clients with the session-key
// fetch wrapper, concurrent editing while a node is added and an owner is
// killed.

const assert = require('node:assert/strict');
const { installSessionKeyFetch } = require('../../../../clients/js/session-key');
const { startSessionStore, startFerretDB } = require('../lib/processes');
const { Session, singleTarget, newDocKey } = require('../../lib/session');
const { waitFor } = require('../../lib/wait');
const { NodeSet } = require('./nodes');
const { startRoutingHAProxy, serverName } = require('./haproxy');
const { DocGroup, runEditors, editRound, logOf } = require('./workload');

const DOCS = 4;
const CLIENTS_PER_DOC = 3;
const EDIT_INTERVAL_MS = 500;

function clientIdOf(body) {
  let text = body;
  if (body instanceof Uint8Array) text = Buffer.from(body).toString('utf8');
  if (typeof text !== 'string') return undefined;
  const m = /"clientId"\s*:\s*"([0-9a-f]+)"/.exec(text);
  return m ? m[1] : undefined;
}

/**
 * Records every call below the session-key wrapper: the key it carried, the
 * haproxy server that answered (x-served-by) and the status.
 */
function installWireRecorder() {
  const calls = [];
  const previous = globalThis.fetch;
  globalThis.fetch = async (input, init = {}) => {
    const url = typeof input === 'string' ? input : input.url;
    const h = new Headers(init.headers);
    const rec = {
      at: Date.now(),
      method: url.split('/').pop(),
      shardKey: h.get('x-shard-key'),
      sessionKey: h.get('x-session-key'),
      clientId: clientIdOf(init.body),
    };
    calls.push(rec);
    try {
      const res = await previous(input, init);
      rec.status = res.status;
      rec.doneAt = Date.now();
      rec.servedBy = res.headers.get('x-served-by');
      return res;
    } catch (err) {
      rec.error = String(err.cause || err.message);
      throw err;
    }
  };
  return { calls, uninstall: () => (globalThis.fetch = previous) };
}


async function runRedirectScenario({ store, log = console.log }) {
  const cleanups = [];
  const report = { store };
  let nodes;
  let session;
  let lb;
  const wire = installWireRecorder();
  cleanups.push(() => wire.uninstall());
  const keys = installSessionKeyFetch();
  cleanups.push(() => keys());
  try {
    const sessionStore = await startSessionStore(store);
    cleanups.push(() => sessionStore.stop());
    const db = await startFerretDB();
    cleanups.push(() => db.stop());
    nodes = new NodeSet({
      args: ['--affinity-mode', 'redirect', ...sessionStore.args, '--mongo-connection-uri', db.uri, '--node-ttl', '2s'],
    });
    cleanups.push(() => nodes.stopAll());
    for (let i = 0; i < 3; i++) await nodes.add();
    lb = await startRoutingHAProxy({ nodes: nodes.nodes.map((n) => n.hostPort) });
    cleanups.push(() => lb.stop());

    // haproxy itself: a key naming a node reaches it, a forged one is hashed.
    for (const n of nodes.nodes) {
      assert.equal((await lb.servedBy({ 'x-session-key': n.sessionKey })).server, serverName(n.hostPort));
    }
    const forged = await lb.servedBy({ 'x-session-key': Buffer.from('127.0.0.1:1').toString('base64') });
    assert.ok(nodes.nodes.some((n) => serverName(n.hostPort) === forged.server), `forged key went to ${forged.server}`);

    session = new Session({ target: singleTarget(lb.addr) });
    cleanups.unshift(() => session.close());
    const clients = await session.activateClients(DOCS * CLIENTS_PER_DOC);
    const groups = [];
    for (let d = 0; d < DOCS; d++) {
      const g = new DocGroup(newDocKey(`redirect-${store}-${d}`));
      await g.attach(session, clients.slice(d * CLIENTS_PER_DOC, (d + 1) * CLIENTS_PER_DOC));
      groups.push(g);
    }
    const ownerOf = (g) => nodes.byKey(keys.sessionKeys.get(`${lb.addr} /${g.key}`));
    const owners = () => groups.map((g) => `${g.key} -> ${ownerOf(g)?.hostPort}`).join(', ');

    // Phase 1: a stable cluster of three.
    await editRound(groups, 4, 'three nodes', { intervalMs: EDIT_INTERVAL_MS });
    log(`owners with three nodes: ${owners()}`);
    report.wrongNodeStable = keys.stats.wrongNode;

    // Phase 2: a fourth node joins; haproxy is reloaded; a new document is attached.
    const fourth = await nodes.add();
    await lb.setNodes(nodes.nodes.map((n) => n.hostPort));
    const late = new DocGroup(newDocKey(`redirect-${store}-late`));
    await late.attach(session, clients.slice(0, CLIENTS_PER_DOC));
    groups.push(late);
    await editRound(groups, 4, 'after adding a fourth node', { intervalMs: EDIT_INTERVAL_MS });
    log(`owners with four nodes (new node ${fourth.hostPort}): ${owners()}`);

    // Phase 3: SIGKILL the node owning the most documents, while editing.
    const counts = new Map();
    for (const g of groups) {
      const o = ownerOf(g);
      assert.ok(o, `no owner known for ${g.key}: ${JSON.stringify([...keys.sessionKeys])}`);
      counts.set(o, (counts.get(o) || 0) + 1);
    }
    const victim = [...counts.entries()].sort((a, b) => b[1] - a[1])[0][0];
    const affected = groups.filter((g) => ownerOf(g) === victim);
    const beforeKill = { wrongNode: keys.stats.wrongNode, calls: wire.calls.length };

    const run = runEditors(groups, { intervalMs: EDIT_INTERVAL_MS });
    let t0;
    const recovery = [];
    try {
      await waitFor(() => groups.every((g) => g.editors.every((e) => e.count >= 1)), { what: 'editing to resume' });
      t0 = Date.now();
      await nodes.kill(victim);
      log(`killed ${victim.hostPort} (pid ${victim.pid}), owner of ${affected.map((g) => g.key).join(', ')}`);
      const marks = new Map(groups.flatMap((g) => g.editors).map((e) => [e, e.count]));
      // Per affected client: the first PushPull sent after the kill that
      // succeeds (sync) and the first moment it holds another client's
      // post-kill change (receive).
      await Promise.all(
        affected.flatMap((g) =>
          g.editors.map(async (e) => {
            const r = { doc: g.key, client: e.tag };
            const id = e.client.getID();
            await waitFor(
              () => {
                const now = Date.now() - t0;
                if (r.syncMs === undefined) {
                  const ok = wire.calls.find(
                    (c) => c.at >= t0 && c.method === 'PushPullChanges' && c.status === 200 && c.clientId === id && c.shardKey === `/${g.key}`,
                  );
                  if (ok) r.syncMs = ok.doneAt - t0;
                }
                if (r.receiveMs === undefined) {
                  const log = logOf(e.doc) || [];
                  const others = g.editors.filter((o) => o !== e);
                  if (others.some((o) => o.entries.slice(marks.get(o)).some((x) => log.includes(x)))) r.receiveMs = now;
                }
                return r.syncMs !== undefined && r.receiveMs !== undefined;
              },
              {
                what: `client ${e.tag} of ${g.key} to sync and receive again after the kill`,
                timeoutMs: 30000,
                intervalMs: 20,
                describe: () => {
                  const mine = wire.calls
                    .filter((c) => c.at >= t0 && c.clientId === id && c.shardKey === `/${g.key}`)
                    .map((c) => `${new Date(c.at).toISOString().slice(11, 23)} ${c.method} key=${c.sessionKey ? Buffer.from(c.sessionKey, 'base64').toString() : '-'} -> ${c.servedBy || '-'} ${c.status || c.error}`);
                  return `progress ${JSON.stringify(r)}, count ${e.count} (mark ${marks.get(e)}), local changes ${e.doc.hasLocalChanges()}, status ${e.doc.getStatus()}, client ${id} active ${e.client.isActive()}\ncalls after the kill:\n${mine.slice(-60).join('\n')}`;
                },
              },
            );
            recovery.push(r);
          }),
        ),
      );
      // Keep editing a while on the survivors, every client included.
      const marks2 = new Map(groups.flatMap((g) => g.editors).map((e) => [e, e.count]));
      await waitFor(() => [...marks2].every(([e, c]) => e.count >= c + 3), { what: 'three more edits by every client after recovery', timeoutMs: 60000 });
    } finally {
      run.stop();
    }
    for (const g of groups) await g.waitConverged({ timeoutMs: 30000 });
    for (const g of affected) {
      const o = ownerOf(g);
      assert.ok(o && o !== victim && !o.exitInfo, `${g.key} has a live new owner (${o && o.hostPort})`);
    }

    // Routing: while every node lived, each document call that carried a key
    // was answered by the node the key names.
    const keyed = wire.calls.slice(0, beforeKill.calls).filter((c) => c.method !== 'healthz' && c.sessionKey && c.status === 200);
    const misrouted = keyed.filter((c) => c.servedBy !== serverName(Buffer.from(c.sessionKey, 'base64').toString()));
    assert.deepEqual(misrouted.slice(0, 5), [], 'calls with a session key reach the node it names');
    const docCalls = wire.calls.filter((c) => c.method !== 'healthz' && c.shardKey && c.method !== 'ActivateClient' && c.method !== 'DeactivateClient');

    report.docs = groups.length;
    report.clients = clients.length;
    report.entries = groups.reduce((s, g) => s + g.written().length, 0);
    report.documentCalls = docCalls.length;
    report.documentCallsWithKey = docCalls.filter((c) => c.sessionKey).length;
    report.wrongNodeBeforeKill = beforeKill.wrongNode;
    report.wrongNodeAfterKill = keys.stats.wrongNode - beforeKill.wrongNode;
    report.keyChanges = keys.stats.changed;
    report.keysForgotten = keys.stats.forgotten;
    // Answers haproxy made itself (no node behind them), and calls that failed
    // below HTTP, from the kill on.
    report.proxyErrorsAfterKill = wire.calls.slice(beforeKill.calls).filter((c) => c.status >= 500 && !c.servedBy).length;
    report.networkErrorsAfterKill = wire.calls.slice(beforeKill.calls).filter((c) => c.error).length;
    report.redirectsByNode = await nodes.metric('yorkie_affinity_redirects_total');
    report.victim = victim.hostPort;
    report.affectedDocs = affected.length;
    report.recovery = recovery.sort((a, b) => a.syncMs - b.syncMs);
    const syncs = recovery.map((r) => r.syncMs).sort((a, b) => a - b);
    report.killToSyncMs = { min: syncs[0], median: syncs[Math.floor(syncs.length / 2)], max: syncs[syncs.length - 1] };
    log(`redirect ${store} report: ${JSON.stringify(report)}`);
    return report;
  } catch (err) {
    const extra = [
      session ? `--- wire ---\n${session.report()}` : '',
      `--- session keys ---\n${JSON.stringify([...keys.sessionKeys])} stats ${JSON.stringify(keys.stats)}`,
      nodes ? nodes.describe() : '',
      lb ? `--- haproxy ---\n${lb.process.logTail(2000)}` : '',
    ].join('\n');
    err.message += `\n${extra}`;
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

module.exports = { runRedirectScenario, installWireRecorder };
