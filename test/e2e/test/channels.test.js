'use strict';
// Channels as the SDK uses them: presence counts (join, leave, detach, a
// silent client expiring, the heartbeat keeping one alive, a parent counting
// its children), broadcasts (topics, never back to the sender, a payload
// over the limit refused), realtime and manual modes.

const assert = require('node:assert/strict');
const { describe, test, before, after } = require('node:test');
const { startServer } = require('../lib/server');
const { singleServerSkipReason, externalAddrs } = require('../lib/suite');
const { waitFor, waitForEvent, withTimeout } = require('../lib/wait');
const { runInSession, singleTarget, newDocKey, yorkie } = require('../lib/session');
const diagnostics = require('../lib/diagnostics');

const skip = externalAddrs().length ? 'starts a server with its own flags' : singleServerSkipReason();

// A short TTL, so that a silent client expires within the test; the clients
// that must stay send their heartbeat far more often than that.
const TTL = '4s';
const HEARTBEAT_MS = 400;
const PAYLOAD_LIMIT = 1024;
// Longest wait for a count: a TTL, a sweep and a busy machine.
const COUNT_WAIT_MS = 30000;

/** Resolves once the channel's count is n, awaiting its presence events. */
async function awaitCount(ch, n, what) {
  if (ch.getSessionCount() === n) return;
  await waitForEvent((cb) => ch.subscribe('presence', cb), (e) => e.count === n, {
    what: `${what}: a count of ${n} (now ${ch.getSessionCount()})`,
    timeoutMs: COUNT_WAIT_MS,
  });
}

/** Collects the broadcasts a channel's subscriber (topic or type) receives. */
function collect(ch, topicOrType) {
  const got = [];
  ch.subscribe(topicOrType, (e) => got.push({ from: e.clientID, topic: e.topic, payload: e.payload }));
  return got;
}

async function attachChannel(client, key, opts) {
  const ch = new yorkie.Channel(key);
  await withTimeout(client.attach(ch, opts), 15000, `attach of channel ${key}`);
  return ch;
}

describe('channels with the JS SDK', { skip }, () => {
  let server;
  before(async () => {
    server = await startServer({
      logLevel: 'info',
      extraArgs: ['--channel-session-ttl', TTL, '--channel-max-payload-bytes', String(PAYLOAD_LIMIT)],
    });
  });
  after(async () => {
    if (server) await server.stop();
  });
  const target = () => singleTarget(server.rpcAddr, { describe: () => server.logTail(3000) });
  const fast = { channelHeartbeatInterval: HEARTBEAT_MS };

  for (const transport of ['json', 'grpc-web']) {
    test(`counts follow joins, detaches and deactivations (${transport})`, async () => {
      await runInSession({ target: target(), transport, clientOptions: fast }, async (session) => {
        const [a, b, c] = await session.activateClients(3);
        const key = newDocKey('count');
        const ca = await attachChannel(a, key);
        assert.equal(ca.getSessionCount(), 1, 'the first client counts itself');
        const cb = await attachChannel(b, key);
        await attachChannel(c, key);
        await awaitCount(ca, 3, 'a after b and c joined');
        await awaitCount(cb, 3, 'b after c joined');

        await b.detach(cb);
        assert.equal(cb.getStatus(), yorkie.ChannelStatus.Detached);
        await awaitCount(ca, 2, 'a after b detached');

        // The SDK sends no DetachChannel when it deactivates.
        await c.deactivate();
        await awaitCount(ca, 1, 'a after c deactivated');
      });
    });

    test(`broadcasts reach the other clients' topics, never the sender (${transport})`, async () => {
      await runInSession({ target: target(), transport, clientOptions: fast }, async (session) => {
        const [a, b] = await session.activateClients(2);
        const key = newDocKey('cast');
        const ca = await attachChannel(a, key);
        const cb = await attachChannel(b, key);
        await awaitCount(ca, 2, 'a after b joined');
        const aAll = collect(ca, 'broadcast');
        const aCursor = collect(ca, 'cursor');
        const bAll = collect(cb, 'broadcast');

        cb.broadcast('chat', { text: 'hi' });
        cb.broadcast('cursor', { x: 1, y: 2 });
        await waitFor(() => aAll.length === 2, { what: "a to receive b's two broadcasts" });
        assert.deepEqual(aAll.map((m) => m.topic), ['chat', 'cursor']);
        assert.deepEqual(aCursor, [{ from: b.getID(), topic: 'cursor', payload: { x: 1, y: 2 } }], 'the cursor topic got only its message');

        // b's broadcasts were delivered before a sends this one; had they
        // come back to b, they would arrive first.
        ca.broadcast('chat', { text: 'hello' });
        await waitFor(() => bAll.length >= 1, { what: "b to receive a's broadcast" });
        assert.deepEqual(bAll, [{ from: a.getID(), topic: 'chat', payload: { text: 'hello' } }], 'b never gets its own broadcasts');
        assert.equal(aAll.length, 2, 'a never gets its own broadcast');
      });
    });
  }

  test('a parent channel counts the sessions of its sub-channels', async () => {
    await runInSession({ target: target(), clientOptions: fast }, async (session) => {
      const [p, x, y] = await session.activateClients(3);
      const root = newDocKey('tree');
      const parent = await attachChannel(p, root);
      const child = await attachChannel(x, `${root}.a`);
      await attachChannel(y, `${root}.a.deep`);
      await awaitCount(parent, 3, 'the parent with two sessions below it');
      await awaitCount(child, 2, 'the child with one session below it');
      // Broadcasts stay on their channel: the parent's watcher does not get
      // the child's.
      const parentGot = collect(parent, 'broadcast');
      const childGot = collect(child, 'broadcast');
      const other = await attachChannel(y, `${root}.a`);
      other.broadcast('t', 'to the child');
      await waitFor(() => childGot.length === 1, { what: 'the child channel to receive the broadcast' });
      assert.equal(parentGot.length, 0, "the parent got no sub-channel's broadcast");
    });
  });

  test('a silent client expires after the TTL while a heartbeating one stays', async () => {
    await runInSession({ target: target(), clientOptions: fast }, async (session) => {
      const watcher = await session.activateClient();
      const kept = await session.activateClient();
      // Its heartbeat would come after the test: to the server it is silent.
      const silent = await session.activateClient({ channelHeartbeatInterval: 3600000 });
      const key = newDocKey('ttl');
      const cw = await attachChannel(watcher, key);
      // kept joins before silent: it outlives silent only by its heartbeats.
      await attachChannel(kept, key);
      await attachChannel(silent, key);
      await awaitCount(cw, 3, 'all three counted');
      await awaitCount(cw, 2, 'the silent client expired');
      const refreshes = diagnostics.since(session.mark).filter((e) => e.rpc === 'RefreshChannel' && !e.failed);
      assert.ok(refreshes.length > 0, 'the heartbeats were sent');
    });
  });

  test('manual mode: counted without a stream, sync refreshes the count', async () => {
    await runInSession({ target: target(), clientOptions: fast }, async (session) => {
      const [m, r] = await session.activateClients(2);
      const key = newDocKey('manual');
      const mark = diagnostics.mark();
      const cm = await attachChannel(m, key, { isRealtime: false });
      assert.equal(cm.getSessionCount(), 1);
      const cr = await attachChannel(r, key);
      await awaitCount(cr, 2, 'the realtime client counts the manual one');
      assert.equal(cm.getSessionCount(), 1, 'no event reaches a manual channel');
      await m.sync(cm);
      assert.equal(cm.getSessionCount(), 2, 'sync brought the current count');
      const watches = diagnostics.since(mark).filter((e) => e.rpc === 'Watch');
      assert.equal(watches.length, 1, 'only the realtime client opened a Watch');
    });
  });

  test('a payload over the limit is refused once, and the channel goes on', async () => {
    await runInSession({ target: target(), clientOptions: fast }, async (session) => {
      const [a, b] = await session.activateClients(2);
      const key = newDocKey('big');
      const ca = await attachChannel(a, key);
      const cb = await attachChannel(b, key);
      await awaitCount(ca, 2, 'a after b joined');
      const got = collect(ca, 'broadcast');
      const mark = diagnostics.mark();
      // SDK 0.7.7 hands a refusal it does not retry to no callback: it logs
      // it. What the user sees is that one call failed with a clear error.
      cb.broadcast('big', 'x'.repeat(PAYLOAD_LIMIT + 1));
      const failures = () => diagnostics.since(mark).filter((e) => e.rpc === 'Broadcast' && e.failed);
      await waitFor(() => failures().length === 1, { what: 'the refused broadcast' });
      assert.match(failures()[0].responseBody || '', /"code":"invalid_argument"/);
      assert.match(failures()[0].responseBody || '', /ErrPayloadTooLarge/);
      const logged = diagnostics.since(mark).filter((e) => e.sdkLog && /payload too large/.test(e.sdkLog));
      assert.ok(logged.length > 0, 'the SDK logged the reason');
      cb.broadcast('small', 'ok');
      await waitFor(() => got.length === 1, { what: 'a to receive the small broadcast' });
      assert.deepEqual(got.map((m) => m.topic), ['small']);
      assert.equal(failures().length, 1, `one refused broadcast, not retried: ${diagnostics.summarize(failures())}`);
    });
  });
});
