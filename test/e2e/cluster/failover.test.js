'use strict';
// A Redis master -> replica failover under a running multi-process cluster.
// The yorkie nodes reach Redis through a TCP proxy that, like a Kubernetes
// Service, keeps established connections on the old master and sends new
// ones to the new master. The nodes must keep serving without a restart:
// each pooled connection that hits the demoted master (READONLY) is dropped
// and re-dialled. A control node started with
// --redis-close-conn-on-readonly=false shows what happens without that.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const { skipUnlessPresent, startFerretDB } = require('./lib/processes');
const { Session, roundRobinTarget, newDocKey } = require('../lib/session');
const { waitFor } = require('../lib/wait');
const { NodeSet, metricSum } = require('./lib-redirect/nodes');
const { startRedisPair, info } = require('./lib-redirect/redis-pair');
const { startTcpSwitch } = require('./lib-redirect/tcp-switch');
const { DocGroup, runEditors, editRound } = require('./lib-redirect/workload');

const EDIT_INTERVAL_MS = 500;

function countLines(file, re) {
  try {
    return fs.readFileSync(file, 'utf8').split('\n').filter((l) => re.test(l)).length;
  } catch {
    return 0;
  }
}

const READONLY_LINE = /READONLY/;
const DISCARD_LINE = /closed a pooled connection to a read-only replica/;
const LEASE_LOST_LINE = /lease lost/;

/** What one node shows about its store: error metric, log lines. */
async function storeHealth(nodes, node) {
  let errors = null;
  try {
    errors = metricSum(await nodes.metrics(node), 'yorkie_sessionstore_call_seconds_count', { outcome: 'error' });
  } catch {
    // a node that does not answer shows as null
  }
  return {
    storeCallErrors: errors,
    readOnlyLines: countLines(node.logFile, READONLY_LINE),
    discards: countLines(node.logFile, DISCARD_LINE),
    leaseLost: countLines(node.logFile, LEASE_LOST_LINE),
  };
}

async function healthOf(nodes) {
  const out = {};
  for (const n of nodes.nodes) out[n.rpcPort] = await storeHealth(nodes, n);
  return out;
}

/** Commands the Redis server at `addr` has run for clients (replication chatter left out). */
async function clientCommands(addr) {
  const stats = await info(addr, 'commandstats');
  let sum = 0;
  for (const [k, v] of Object.entries(stats)) {
    if (/^cmdstat_(replconf|psync|sync|ping|info|replicaof|slaveof|command)/.test(k)) continue;
    const m = /calls=(\d+)/.exec(v);
    if (m) sum += Number(m[1]);
  }
  return sum;
}


test(
  'redis failover behind a repointed address: the cluster keeps serving without a restart',
  { skip: skipUnlessPresent(['yorkie', 'ferretdb', 'redis']), timeout: 170000 },
  async (t) => {
    const cleanups = [];
    const log = (line) => t.diagnostic(line);
    let nodes;
    let control;
    let session;
    try {
      const pair = await startRedisPair();
      cleanups.push(() => pair.stop());
      const sw = await startTcpSwitch({ backend: pair.master.addr });
      cleanups.push(() => sw.stop());
      const db = await startFerretDB();
      cleanups.push(() => db.stop());
      nodes = new NodeSet({ args: ['--session-store', 'redis', '--redis-addr', sw.addr, '--mongo-connection-uri', db.uri] });
      cleanups.push(() => nodes.stopAll());
      for (let i = 0; i < 3; i++) await nodes.add();

      // The control: one node on its own Redis pair that keeps READONLY
      // connections, as radix does by default.
      const controlPair = await startRedisPair();
      cleanups.push(() => controlPair.stop());
      const controlSw = await startTcpSwitch({ backend: controlPair.master.addr });
      cleanups.push(() => controlSw.stop());
      control = new NodeSet({ args: ['--session-store', 'redis', '--redis-addr', controlSw.addr, '--redis-close-conn-on-readonly=false'] });
      cleanups.push(() => control.stopAll());
      const controlNode = await control.add();

      session = new Session({ target: roundRobinTarget(nodes.nodes.map((n) => n.rpcAddr)) });
      cleanups.unshift(() => session.close());
      const clients = await session.activateClients(6);
      const groups = [];
      for (let d = 0; d < 2; d++) {
        const g = new DocGroup(newDocKey(`failover-${d}`));
        // Clients i, i+1, i+2 talk to three different nodes.
        await g.attach(session, [clients[d], clients[d + 1], clients[d + 2]]);
        groups.push(g);
      }
      await editRound(groups, 3, 'before the failover', { intervalMs: EDIT_INTERVAL_MS });
      const pids = nodes.nodes.map((n) => n.pid);
      const before = await healthOf(nodes);
      const controlBefore = await storeHealth(control, controlNode);

      // Fail over while the clients edit.
      const editors = groups.flatMap((g) => g.editors);
      let run = runEditors(groups, { intervalMs: EDIT_INTERVAL_MS });
      let tF;
      try {
        const mark = new Map(editors.map((e) => [e, e.count]));
        await waitFor(() => editors.every((e) => e.count >= mark.get(e) + 2), { what: 'editing before the failover' });
        tF = Date.now();
        await Promise.all([pair.failover(), controlPair.failover()]);
        sw.repoint(pair.master.addr);
        controlSw.repoint(controlPair.master.addr);
        log(`failover: ${pair.replica.addr} demoted, ${pair.master.addr} promoted; open connections by backend ${JSON.stringify(sw.openCounts())}`);
        const mark2 = new Map(editors.map((e) => [e, e.count]));
        await waitFor(() => editors.every((e) => e.count >= mark2.get(e) + 4), { what: 'editing after the failover', timeoutMs: 60000 });
      } finally {
        run.stop();
      }
      for (const g of groups) await g.waitConverged({ timeoutMs: 30000 });
      const convergedMs = Date.now() - tF;

      // New documents: an attach binds the document, a write to Redis. Each is
      // attached first through a different node.
      const fresh = [];
      for (let j = 0; j < 3; j++) {
        const g = new DocGroup(newDocKey(`failover-new-${j}`));
        await g.attach(session, [clients[j], clients[j + 3]], { retryUnavailable: true });
        fresh.push(g);
      }
      await editRound([...groups, ...fresh], 3, 'after the failover with new documents', { intervalMs: EDIT_INTERVAL_MS });

      // Recovery: the store errors stop. Wait for a quiet stretch in which
      // the new master ran at least 60 commands from the nodes and no node
      // logged a new READONLY error or a failed store call.
      const errorsNow = async () => {
        const h = await healthOf(nodes);
        return JSON.stringify(Object.values(h).map((x) => [x.storeCallErrors, x.readOnlyLines]));
      };
      let quietFrom = { errors: await errorsNow(), commands: await clientCommands(pair.master.addr), at: Date.now() };
      const controlAtQuietStart = await storeHealth(control, controlNode);
      await waitFor(
        async () => {
          const errors = await errorsNow();
          const commands = await clientCommands(pair.master.addr);
          if (errors !== quietFrom.errors) {
            quietFrom = { errors, commands, at: Date.now() };
            return false;
          }
          return commands >= quietFrom.commands + 60;
        },
        { what: 'a stretch of 60 store commands without a new store error', timeoutMs: 30000, intervalMs: 200, describe: async () => JSON.stringify(await healthOf(nodes)) },
      );
      const after = await healthOf(nodes);
      const controlAfter = await storeHealth(control, controlNode);

      // The control, as a user sees it: attaches through it after the
      // failover. Only reported; what it does is the point of the flag.
      const controlSession = new Session({ target: roundRobinTarget([controlNode.rpcAddr]) });
      const controlAttaches = { ok: 0, refused: 0, sample: null };
      try {
        const c = await controlSession.activateClient();
        for (let i = 0; i < 3; i++) {
          try {
            await controlSession.attach(c, newDocKey(`failover-control-${i}`));
            controlAttaches.ok += 1;
          } catch (err) {
            controlAttaches.refused += 1;
            controlAttaches.sample = String(err.message).slice(0, 200);
          }
        }
      } catch (err) {
        controlAttaches.sample = `activate: ${String(err.message).slice(0, 200)}`;
      } finally {
        await controlSession.close();
      }

      // The same processes served throughout.
      assert.deepEqual(nodes.nodes.map((n) => n.pid), pids);
      for (const n of nodes.nodes) assert.equal(n.exitInfo, null, `node ${n.hostPort} still runs`);
      assert.equal((await info(pair.master.addr, 'replication')).role, 'master');
      assert.equal((await info(pair.replica.addr, 'replication')).role, 'slave');
      // Each node met the demoted master on a pooled connection and dropped it.
      const discards = nodes.nodes.map((n) => after[n.rpcPort].discards - before[n.rpcPort].discards);
      assert.ok(discards.some((d) => d > 0), `READONLY connections were dropped: ${JSON.stringify(after)}`);

      const report = {
        convergedAfterFailoverMs: convergedMs,
        quietAfterFailoverMs: quietFrom.at - tF,
        entries: [...groups, ...fresh].reduce((s, g) => s + g.written().length, 0),
        attachRefusedAfterFailover: fresh.flatMap((g) => g.attachRefusals).map((r) => ({ afterFailoverMs: r.at - tF, message: r.message })),
        perNode: Object.fromEntries(
          nodes.nodes.map((n) => [
            n.rpcPort,
            {
              storeCallErrors: after[n.rpcPort].storeCallErrors - before[n.rpcPort].storeCallErrors,
              readOnlyLines: after[n.rpcPort].readOnlyLines - before[n.rpcPort].readOnlyLines,
              discards: after[n.rpcPort].discards - before[n.rpcPort].discards,
              leaseLost: after[n.rpcPort].leaseLost - before[n.rpcPort].leaseLost,
            },
          ]),
        ),
        proxyOpenedByBackend: sw.openedCounts(),
        proxyOpenNow: sw.openCounts(),
        control: {
          readOnlyLinesAfterFailover: controlAfter.readOnlyLines - controlBefore.readOnlyLines,
          readOnlyLinesDuringQuietWindow: controlAfter.readOnlyLines - controlAtQuietStart.readOnlyLines,
          storeCallErrors: controlAfter.storeCallErrors - controlBefore.storeCallErrors,
          leaseLost: controlAfter.leaseLost - controlBefore.leaseLost,
          proxyOpenNow: controlSw.openCounts(),
          attachesAfterFailover: controlAttaches,
        },
      };
      log(`failover report: ${JSON.stringify(report)}`);
    } catch (err) {
      err.message += `\n${session ? `--- wire ---\n${session.report()}\n` : ''}${nodes ? nodes.describe() : ''}\n${control ? control.describe(1500) : ''}`;
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
  },
);
