'use strict';
// Housekeeping as a client sees it: a client that makes no call and watches
// nothing is deactivated, and learns so on its next call; one that watches
// is kept.

const assert = require('node:assert/strict');
const { withTimeout, waitFor } = require('./wait');
const { newDocKey, yorkie } = require('./session');
const { waitPushed } = require('./replicas');
const { counter } = require('./metrics');

/**
 * Attaches a silent client (manual sync: no Watch stream, no call until it
 * syncs) and a watching one to a new document named after label, waits for
 * housekeeping to deactivate a client, and checks that the silent one's next
 * sync is refused as the deactivated client's.
 */
async function deactivateSilentClient(session, server, label) {
  const [silent, watcher] = await session.activateClients(2);
  const key = newDocKey(label);
  await withTimeout(silent.attach(new yorkie.Document(key), { syncMode: yorkie.SyncMode.Manual }), 15000, 'manual attach');
  const watcherDoc = await session.attach(watcher, key);
  await waitFor(async () => (await counter(server, 'yorkie_housekeeping_clients_deactivated_total')) >= 1, {
    what: 'housekeeping to deactivate the silent client',
    timeoutMs: 20000,
  });
  const err = await silent.sync().then(
    () => assert.fail('the deactivated client synced'),
    (e) => e,
  );
  assert.match(String(err), /not activated|deactivated/i, `error of the deactivated client's sync: ${err}`);
  return { silent, watcher, watcherDoc };
}

/** Checks that the watching client was kept: it still edits and syncs. */
async function checkWatcherKept(watcher, watcherDoc) {
  watcherDoc.update((root) => {
    root.after = 'housekeeping';
  });
  await waitPushed(watcherDoc);
  assert.ok(watcher.isActive(), 'the watching client is still active');
}

module.exports = { deactivateSilentClient, checkWatcherKept };
