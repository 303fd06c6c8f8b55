'use strict';
// A project's channel_session_ttl applies to its channel sessions, as
// upstream's: a client that stops sending heartbeats leaves the counts of a
// project with a short TTL after that TTL, while a silent client of a
// project without one stays under the server's --channel-session-ttl.

const assert = require('node:assert/strict');
const { describe, test, before, after } = require('node:test');
const { startServer } = require('../lib/server');
const { singleServerSkipReason, externalAddrs } = require('../lib/suite');
const { waitForEvent, withTimeout } = require('../lib/wait');
const { runInSession, singleTarget, newDocKey, yorkie } = require('../lib/session');
const { ProjectAdmin } = require('../lib/project-admin');

const skip = externalAddrs().length ? 'starts a server with its own flags' : singleServerSkipReason();
const HEARTBEAT_MS = 400;
const SILENT = { channelHeartbeatInterval: 3600000 };
// Longest wait for a count: a TTL, a sweep (every 5 s) and a busy machine.
const COUNT_WAIT_MS = 30000;

async function awaitCount(ch, n, what) {
  if (ch.getSessionCount() === n) return;
  await waitForEvent((cb) => ch.subscribe('presence', cb), (e) => e.count === n, {
    what: `${what}: a count of ${n} (now ${ch.getSessionCount()})`,
    timeoutMs: COUNT_WAIT_MS,
  });
}

async function attachChannel(client, key) {
  const ch = new yorkie.Channel(key);
  await withTimeout(client.attach(ch), 15000, `attach of channel ${key}`);
  return ch;
}

describe("a project's channel_session_ttl", { skip }, () => {
  let server;
  before(async () => {
    // The server's own TTL is long: only the project's can expire a session.
    server = await startServer({ logLevel: 'info', extraArgs: ['--channel-session-ttl', '1h'] });
  });
  after(async () => {
    if (server) await server.stop();
  });

  test("a silent client expires after its project's TTL, not the server's", async () => {
    const admin = await ProjectAdmin.logIn(server.rpcAddr);
    await admin.call('CreateProject', { name: 'short-ttl' });
    const short = await admin.update('short-ttl', { channelSessionTtl: '2s' });
    assert.equal(short.channelSessionTtl, '2s');
    const target = singleTarget(server.rpcAddr, { describe: () => server.logTail(3000) });
    await runInSession({ target, clientOptions: { channelHeartbeatInterval: HEARTBEAT_MS } }, async (session) => {
      const key = newDocKey('ttl');
      // The default project (no TTL of its own): one client listening, one silent.
      const defWatcher = await session.activateClient();
      const defSilent = await session.activateClient(SILENT);
      const dw = await attachChannel(defWatcher, key);
      await attachChannel(defSilent, key);
      await awaitCount(dw, 2, 'default project: both counted');

      // The project with a 2 s TTL, the same channel key in its own scope.
      const watcher = await session.activateClient({ apiKey: short.publicKey });
      const silent = await session.activateClient({ apiKey: short.publicKey, ...SILENT });
      const sw = await attachChannel(watcher, key);
      await attachChannel(silent, key);
      await awaitCount(sw, 2, 'short-ttl project: both counted');
      await awaitCount(sw, 1, "short-ttl project: the silent client expired after the project's TTL");

      // Sessions of the default project live by the server's hour-long TTL.
      assert.equal(dw.getSessionCount(), 2, 'the default project still counts its silent client');
    });
  });
});
