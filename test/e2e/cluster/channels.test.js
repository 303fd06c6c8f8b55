'use strict';
// One channel across three `yorkie server` processes (etcd store, shared
// MongoDB-wire database, forward mode) with SDK clients on every node: one
// straight to each node and three through haproxy. They all see one count,
// every broadcast reaches every other client exactly once, and after the
// node owning the channel is SIGKILLed the heartbeats of the surviving
// clients bring the count right again. In redirect mode, clients behind a
// proxy that routes by the session key (with clients/js/session-key.js)
// reach the owner the same way. A drain of the node owning the channel
// (AdminService DrainNode) moves its sessions with it: no count drops.

const test = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const yorkie = require('@yorkie-js/sdk');

const { Session } = require('../lib/session');
const { waitFor, waitForEvent, withTimeout } = require('../lib/wait');
const { skipUnlessPresent } = require('./lib/processes');
const { startEtcdCluster } = require('./lib/yorkie-cluster');
const { explainFailure, runCleanups } = require('./lib/failure');
const { startBalancer } = require('./lib/balancer');
const { startRoutingHAProxy } = require('./lib-redirect/haproxy');
const { installSessionKeyFetch } = require('../../../clients/js/session-key');
const { adminCall, logIn } = require('../lib/admin');

const TTL_S = 6;
const HEARTBEAT_MS = 1000;
// Bounds of the waits; they only end broken runs.
const WAIT_MS = 60000;

async function awaitCount(ch, n, what) {
  if (ch.getSessionCount() === n) return;
  await waitForEvent((cb) => ch.subscribe('presence', cb), (e) => e.count === n, {
    what: `${what}: a count of ${n} (now ${ch.getSessionCount()})`,
    timeoutMs: WAIT_MS,
  });
}

/** Attaches every client to one channel of key and waits until each counts them all. */
async function attachAll(clients, key) {
  const channels = [];
  for (const c of clients) {
    const ch = new yorkie.Channel(key);
    await withTimeout(c.attach(ch), 15000, `attach of client ${c.e2eIndex}`);
    channels.push(ch);
  }
  for (const [i, ch] of channels.entries()) await awaitCount(ch, clients.length, `client ${i}`);
  return channels;
}

test(
  'one channel over three nodes behind haproxy: one count, broadcasts once, counts back after the owner dies',
  { skip: skipUnlessPresent(['yorkie', 'ferretdb', 'haproxy', 'etcd']), timeout: 180000 },
  async (t) => {
    const cleanups = [];
    let cluster;
    let lb;
    let session;
    let killed;
    try {
      cluster = await startEtcdCluster({
        cleanups,
        name: 'channels',
        extraArgs: ['--affinity-mode', 'forward', '--channel-session-ttl', `${TTL_S}s`],
      });
      lb = await startBalancer({ servers: cluster.nodes });
      cleanups.push(() => lb.stop());

      // Clients 0-2 talk to node 0-2 directly, clients 3-5 through haproxy.
      const addrs = [...cluster.nodes.map((n) => n.rpcAddr), lb.addr, lb.addr, lb.addr];
      session = new Session({
        target: { name: 'cluster', addrFor: (i) => addrs[i], describe: () => cluster.describe(2000) },
        clientOptions: { channelHeartbeatInterval: HEARTBEAT_MS },
      });
      const clients = await session.activateClients(addrs.length);
      const channels = await attachAll(clients, `room-${crypto.randomBytes(4).toString('hex')}`);

      // Every client broadcasts twice; each other client gets each message once.
      const received = channels.map((ch) => {
        const got = [];
        ch.subscribe('broadcast', (e) => got.push(`${e.clientID}:${e.payload}`));
        return got;
      });
      for (const round of ['first', 'second']) {
        for (const [i, ch] of channels.entries()) ch.broadcast('t', `${round}-${i}`);
      }
      await waitFor(() => received.every((got) => got.filter((m) => /:second-/.test(m)).length === 5), {
        what: 'every client to receive the second round from the five others',
        timeoutMs: WAIT_MS,
        describe: () => JSON.stringify(received),
      });
      for (const [i, got] of received.entries()) {
        const want = clients
          .flatMap((c, j) => (j === i ? [] : [`${c.getID()}:first-${j}`, `${c.getID()}:second-${j}`]))
          .sort();
        assert.deepEqual([...got].sort(), want, `client ${i} got each other client's broadcasts once and never its own`);
      }

      // The owner holds the six sessions.
      const byNode = await cluster.metricByNode('yorkie_channel_sessions');
      const owner = cluster.nodes.find((n) => byNode[n.name] === 6);
      assert.ok(owner, `one node holds all six sessions: ${JSON.stringify(byNode)}`);
      const ownerIndex = cluster.nodes.indexOf(owner);
      const killedAt = Date.now();
      killed = owner;
      await cluster.kill(owner);
      // The client talking only to the dead node is gone; the five others
      // come back through their heartbeats at the new owner.
      const survivors = channels.filter((_, i) => i !== ownerIndex);
      const recovered = await Promise.all(
        survivors.map(async (ch, i) => {
          // First the count drops (the new owner starts empty), then rises.
          await awaitCount(ch, 5, `survivor ${i} after the owner died`);
          return Date.now() - killedAt;
        }),
      );
      t.diagnostic(`kill of the owner to the right count at every survivor: max ${Math.max(...recovered)} ms (TTL ${TTL_S} s, heartbeat ${HEARTBEAT_MS} ms, node TTL 2 s)`);
      const after = await cluster.metricByNode('yorkie_channel_sessions');
      assert.equal(Object.values(after).reduce((a, b) => a + b, 0), 5, `five sessions left in the cluster: ${JSON.stringify(after)}`);

      // Broadcasts flow again, once each.
      const mark = received.map((got) => got.length);
      survivors[0].broadcast('t', 'after');
      await waitFor(() => survivors.slice(1).every((ch) => received[channels.indexOf(ch)].length === mark[channels.indexOf(ch)] + 1), {
        what: 'the survivors to receive the broadcast after the failover',
        timeoutMs: WAIT_MS,
      });
    } catch (err) {
      throw explainFailure(err, { session, cluster });
    } finally {
      // The client that talked only to the killed node retries its calls on
      // timers, which keep this process alive, until a server answers at its
      // address: start the node again so that it can deactivate there.
      if (killed) await cluster.restart(killed).catch(() => {});
      if (session) await session.close();
      await runCleanups(cleanups);
    }
  },
);

test(
  'redirect mode: channel clients behind a session-key proxy reach the owner, one count, broadcasts once',
  { skip: skipUnlessPresent(['yorkie', 'ferretdb', 'haproxy', 'etcd']), timeout: 120000 },
  async () => {
    const cleanups = [];
    let cluster;
    let session;
    const uninstall = installSessionKeyFetch();
    cleanups.push(async () => uninstall());
    try {
      cluster = await startEtcdCluster({
        cleanups,
        name: 'channels-redirect',
        extraArgs: ['--affinity-mode', 'redirect'],
      });
      const lb = await startRoutingHAProxy({ nodes: cluster.nodes.map((n) => n.hostPort) });
      cleanups.push(() => lb.stop());

      session = new Session({
        target: { name: 'redirect proxy', addrFor: () => lb.addr, describe: () => cluster.describe(2000) },
        clientOptions: { channelHeartbeatInterval: HEARTBEAT_MS },
      });
      const clients = await session.activateClients(4);
      const key = `hall-${crypto.randomBytes(4).toString('hex')}`;
      const channels = [];
      for (const [i, c] of clients.entries()) {
        // Sub-channels of one group: one owner, and the root counts them all.
        const ch = new yorkie.Channel(i === 0 ? key : `${key}.${i}`);
        await withTimeout(c.attach(ch), 15000, `attach of client ${i}`);
        channels.push(ch);
      }
      await awaitCount(channels[0], 4, 'the root channel');
      const received = channels.map((ch) => {
        const got = [];
        ch.subscribe('broadcast', (e) => got.push(`${e.clientID}:${e.payload}`));
        return got;
      });
      // A second client on the root channel, to receive a broadcast there.
      const listener = await session.activateClient();
      const lc = new yorkie.Channel(key);
      await withTimeout(listener.attach(lc), 15000, 'attach of the listener');
      const heard = [];
      lc.subscribe('broadcast', (e) => heard.push(`${e.clientID}:${e.payload}`));
      channels[0].broadcast('t', 'one');
      channels[0].broadcast('t', 'two');
      await waitFor(() => heard.length === 2, { what: "the listener to receive the root's two broadcasts", timeoutMs: WAIT_MS });
      assert.deepEqual(heard, [`${clients[0].getID()}:one`, `${clients[0].getID()}:two`], 'each broadcast once, in order');
      assert.deepEqual(received[0], [], 'the sender got nothing back');
      const byNode = await cluster.metricByNode('yorkie_channel_sessions');
      assert.deepEqual(Object.values(byNode).sort(), [0, 0, 5], `one node holds the five sessions: ${JSON.stringify(byNode)}`);
    } catch (err) {
      throw explainFailure(err, { session, cluster });
    } finally {
      if (session) await session.close();
      await runCleanups(cleanups);
    }
  },
);

test(
  'a drain of the channel owner moves its sessions: no client sees the count drop',
  { skip: skipUnlessPresent(['yorkie', 'ferretdb', 'haproxy', 'etcd']), timeout: 120000 },
  async (t) => {
    const cleanups = [];
    let cluster;
    let session;
    try {
      cluster = await startEtcdCluster({
        cleanups,
        name: 'channels-drain',
        extraArgs: ['--affinity-mode', 'forward', '--shutdown-drain-timeout', '20s'],
      });
      const lb = await startBalancer({ servers: cluster.nodes });
      cleanups.push(() => lb.stop());
      const addrs = [...cluster.nodes.map((n) => n.rpcAddr), lb.addr, lb.addr, lb.addr, lb.addr];
      session = new Session({
        target: { name: 'cluster', addrFor: (i) => addrs[i], describe: () => cluster.describe(2000) },
        clientOptions: { channelHeartbeatInterval: HEARTBEAT_MS },
      });
      const clients = await session.activateClients(6);
      const key = `lobby-${crypto.randomBytes(4).toString('hex')}`;
      const channels = await attachAll(clients, key);
      // Every count each client sees from now on.
      const seen = channels.map((ch) => {
        const counts = [];
        ch.subscribe('presence', (e) => counts.push(e.count));
        return counts;
      });
      const byNode = await cluster.metricByNode('yorkie_channel_sessions');
      const owner = cluster.nodes.find((n) => byNode[n.name] === 6);
      assert.ok(owner, `one node holds all six sessions: ${JSON.stringify(byNode)}`);
      const other = cluster.nodes.find((n) => n !== owner);

      const token = await logIn(other.rpcAddr);
      const drained = await adminCall(other.rpcAddr, 'DrainNode', { node: owner.hostPort }, token);
      t.diagnostic(`drain: ${JSON.stringify(drained)}`);
      const after = await cluster.metricByNode('yorkie_channel_sessions');
      assert.equal(after[owner.name], 0, `the drained node holds no session: ${JSON.stringify(after)}`);
      assert.ok(Object.values(after).includes(6), `the next owner holds the six sessions: ${JSON.stringify(after)}`);

      // A newcomer: every client goes to 7, and never saw fewer than 6.
      const late = await session.activateClient();
      const lc = new yorkie.Channel(key);
      await withTimeout(late.attach(lc), 15000, 'attach of the newcomer');
      for (const [i, ch] of channels.entries()) await awaitCount(ch, 7, `client ${i} after the drain`);
      for (const [i, counts] of seen.entries()) {
        assert.ok(counts.every((n) => n === 6 || n === 7), `client ${i} saw the counts ${JSON.stringify(counts)}, want only 6 then 7`);
      }
    } catch (err) {
      throw explainFailure(err, { session, cluster });
    } finally {
      if (session) await session.close();
      await runCleanups(cleanups);
    }
  },
);
