'use strict';
// A project's limits as the real SDK meets them, set through the admin API
// on the default project (the one clients without an API key use): the
// error code of each refusal, and what the SDK then does.

const assert = require('node:assert/strict');
const { describe, test } = require('node:test');
const { startServer } = require('../lib/server');
const { singleServerSkipReason, externalAddrs } = require('../lib/suite');
const { withTimeout, waitFor } = require('../lib/wait');
const { runInSession, singleTarget, newDocKey, yorkie } = require('../lib/session');
const { waitConverged, waitPushed, recordEvents, waitRecorded } = require('../lib/replicas');
const { ProjectAdmin } = require('../lib/project-admin');
const { refusedWatches } = require('../lib/metrics');
const { deactivateSilentClient, checkWatcherKept } = require('../lib/housekeeping');
const diagnostics = require('../lib/diagnostics');

const skip = externalAddrs().length ? 'starts servers with its own flags' : singleServerSkipReason();
const STOP_GRACE_MS = 10000;

/** Starts a server, sets the default project's `fields`, runs fn(session, server), stops it. */
async function withLimits(fields, fn, extraArgs = []) {
  const server = await startServer({ extraArgs });
  const target = singleTarget(server.rpcAddr, { describe: () => `--- server log ---\n${server.logTail(3000)}` });
  try {
    const admin = await ProjectAdmin.logIn(server.rpcAddr);
    const project = await admin.update('default', fields);
    for (const [name, value] of Object.entries(fields)) {
      assert.deepEqual(project[name], value, `UpdateProject answers the new ${name}`);
    }
    await runInSession({ target, transport: 'json' }, (session) => fn(session, server));
  } finally {
    await withTimeout(server.stop({ graceMs: STOP_GRACE_MS }), STOP_GRACE_MS + 5000, 'server stop');
  }
}

/**
 * Opens a Watch for the client's document as the SDK does (Connect JSON
 * streaming) and returns its first frame: { end: true, error } when the
 * server ends the stream at once, else { end: false, message }.
 */
async function firstWatchFrame(rpcAddr, clientID, documentID) {
  const json = Buffer.from(JSON.stringify({ clientId: clientID, resources: [{ document: { documentId: documentID } }] }));
  const envelope = Buffer.alloc(5 + json.length);
  envelope.writeUInt32BE(json.length, 1);
  json.copy(envelope, 5);
  const ac = new AbortController();
  const res = await fetch(`${rpcAddr}/yorkie.v1.YorkieService/Watch`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/connect+json', 'Connect-Protocol-Version': '1' },
    body: envelope,
    signal: ac.signal,
  });
  const reader = res.body.getReader();
  let buf = Buffer.alloc(0);
  try {
    for (;;) {
      if (buf.length >= 5 && buf.length >= 5 + buf.readUInt32BE(1)) {
        const frame = JSON.parse(buf.subarray(5, 5 + buf.readUInt32BE(1)).toString());
        return buf[0] & 2 ? { end: true, error: frame.error } : { end: false, message: frame };
      }
      const { done, value } = await reader.read();
      if (done) throw new Error(`Watch ended after ${buf.length} bytes without a whole frame`);
      buf = Buffer.concat([buf, Buffer.from(value)]);
    }
  } finally {
    ac.abort();
  }
}

/** The Yorkie code name in a Connect error's ErrorInfo detail, as the SDK reads it. */
function errorInfoCode(error) {
  const detail = (error.details || []).find((d) => d.type === 'google.rpc.ErrorInfo');
  if (!detail) return undefined;
  // Connect JSON carries the detail's bytes; the metadata strings are in them.
  const raw = Buffer.from(detail.value, 'base64').toString('latin1');
  const m = raw.match(/Err[A-Za-z]+/);
  return m ? m[0] : undefined;
}

/** The document ID the SDK attached `key` under. */
function documentIDOf(client, key) {
  return client.attachmentMap.get(key).resourceID;
}

describe("a project's limits with the JS SDK", { skip }, () => {
  test('an attach past the attachments per document is refused with ErrTooManyAttachments and not retried; a detach makes room', async () => {
    await withLimits({ maxAttachmentsPerDocument: 2 }, async (session) => {
      const [a, b, c] = await session.activateClients(3);
      const key = newDocKey('attachments');
      const docA = await session.attach(a, key);
      await session.attach(b, key);
      const mark = diagnostics.mark();
      const refused = new yorkie.Document(key);
      const err = await c.attach(refused).then(
        () => assert.fail('the attach past the bound succeeded'),
        (e) => e,
      );
      assert.equal(err.code, 8 /* resource_exhausted */, `code of ${err}`);
      const failed = diagnostics.since(mark).filter((e) => e.rpc === 'AttachDocument' && e.failed);
      assert.equal(failed.length, 1, `one refused attach, not retried: ${diagnostics.summarize(failed)}`);
      assert.match(failed[0].responseBody, /ErrTooManyAttachments/);
      assert.equal(refused.getStatus(), yorkie.DocStatus.Detached, 'the refused document stays detached');
      assert.ok(c.isActive(), 'the refused client stays active');
      // Another document is not limited by this one.
      await session.attach(c, newDocKey('elsewhere'));

      await withTimeout(a.detach(docA), 15000, 'detach');
      const docC = await session.attach(c, key);
      docC.update((root) => {
        root.by = 'c';
      });
      await waitPushed(docC);
    });
  });

  test('a Watch past the subscribers per document gets ErrTooManySubscribers; the SDK retries it and connects once a watcher leaves', async () => {
    await withLimits({ maxSubscribersPerDocument: 2 }, async (session, server) => {
      const [a, b, c] = await session.activateClients(3);
      const key = newDocKey('subscribers');
      const docA = await session.attach(a, key);
      const docB = await session.attach(b, key);
      const seenByB = recordEvents(docB, 'presence');
      // attach resolves although the stream is refused: the SDK keeps retrying it.
      const docC = await session.attach(c, key);
      const frame = await firstWatchFrame(server.rpcAddr, c.getID(), documentIDOf(c, key));
      assert.ok(frame.end, `the third watcher's stream is ended at once: ${JSON.stringify(frame)}`);
      assert.equal(frame.error.code, 'resource_exhausted');
      assert.equal(errorInfoCode(frame.error), 'ErrTooManySubscribers', JSON.stringify(frame.error));
      await waitFor(async () => (await refusedWatches(server)) >= 3, {
        what: 'the SDK to retry the refused Watch',
        describe: async () => `refused so far: ${await refusedWatches(server)}`,
      });
      assert.ok(c.getCondition(yorkie.ClientCondition.WatchLoop), 'the SDK keeps its watch loop running');
      // The document is attached all the same: its pushes go through.
      docC.update((root) => {
        root.by = 'c';
      });
      await waitPushed(docC);

      // Once a watcher leaves, a retry gets through: the other watcher is told.
      await withTimeout(a.detach(docA), 15000, 'detach');
      await waitRecorded(seenByB, 'watched', c.getID(), { what: 'b to see c start watching' });
      docB.update((root) => {
        root.from = 'b';
      });
      await waitConverged([docB, docC], { expect: (json) => json.from === 'b' && json.by === 'c' });
    });
  });

  test("the project's size per document is sent on attach; the SDK refuses a local edit past it", async () => {
    await withLimits({ maxSizePerDocument: 2000 }, async (session) => {
      const client = await session.activateClient();
      const doc = await session.attach(client, newDocKey('size'));
      doc.update((root) => {
        root.small = 'x'.repeat(100);
      });
      await waitPushed(doc);
      assert.throws(
        () =>
          doc.update((root) => {
            root.big = 'y'.repeat(2000);
          }),
        (e) => e.code === 'ErrDocumentSizeExceedsLimit',
        'the SDK refuses the edit past the project limit',
      );
      assert.equal(doc.getRoot().big, undefined, 'nothing of the refused edit is kept');
      assert.ok(client.getCondition(yorkie.ClientCondition.SyncLoop), 'the client goes on syncing');
    });
  });

  test("a project's limits hold for the clients with its public key, not for the default project's", async () => {
    await withLimits({}, async (session, server) => {
      const admin = await ProjectAdmin.logIn(server.rpcAddr);
      const { project } = await admin.call('CreateProject', { name: `limited-${process.pid}` });
      await admin.update(project.name, { maxAttachmentsPerDocument: 1 });
      const [a, b] = await session.activateClients(2, { apiKey: project.publicKey });
      const key = newDocKey('per-project');
      await session.attach(a, key);
      const err = await b.attach(new yorkie.Document(key)).then(
        () => assert.fail("the attach past the project's bound succeeded"),
        (e) => e,
      );
      assert.equal(err.code, 8 /* resource_exhausted */, `code of ${err}`);
      const [c, d] = await session.activateClients(2);
      const other = newDocKey('default-project');
      await session.attach(c, other);
      await session.attach(d, other);
    });
  });

  test('with remove on detach, the last client to detach removes the document; the key starts anew', async () => {
    await withLimits({ removeOnDetach: true }, async (session) => {
      const [a, b, later] = await session.activateClients(3);
      const key = newDocKey('remove-on-detach');
      const docA = await session.attach(a, key);
      const docB = await session.attach(b, key);
      docA.update((root) => {
        root.kept = 'until the last detach';
      });
      await waitConverged([docA, docB], { expect: (json) => json.kept !== undefined });
      await withTimeout(a.detach(docA), 15000, 'first detach');
      assert.equal(docA.getStatus(), yorkie.DocStatus.Detached, 'another client is attached: only detached');
      await withTimeout(b.detach(docB), 15000, 'last detach');
      assert.equal(docB.getStatus(), yorkie.DocStatus.Removed, 'the last detach removes the document');
      const fresh = await session.attach(later, key);
      assert.equal(fresh.toSortedJSON(), '{}', 'the key names a new, empty document');
    });
  });

  test("housekeeping deactivates a silent client after the project's threshold, shorter than the server's", async () => {
    const args = ['--client-deactivate-threshold', '24h', '--housekeeping-interval', '200ms'];
    await withLimits(
      { clientDeactivateThreshold: '1s' },
      async (session, server) => {
        const { watcher, watcherDoc } = await deactivateSilentClient(session, server, 'threshold');
        await checkWatcherKept(watcher, watcherDoc);
      },
      args,
    );
  });
});
