'use strict';
// The default project's webhooks as the SDK meets them: an auth webhook that
// allows one document and denies another, one that answers unauthenticated
// once (the SDK asks authTokenInjector again and goes on), one that is down
// (calls fail closed), and the event webhook posting a signed
// DocumentRootChanged once per burst of edits.

const assert = require('node:assert/strict');
const { describe, test, before, after } = require('node:test');
const { startServer } = require('../lib/server');
const { singleServerSkipReason, externalAddrs } = require('../lib/suite');
const { withTimeout } = require('../lib/wait');
const { newDocKey, yorkie } = require('../lib/session');
const { waitPushed, waitConverged } = require('../lib/replicas');
const { updateDefaultProject, startAuthHook, startEventHook, downURL, QUICK_AUTH_FLAGS } = require('../lib/webhooks');

const skip = externalAddrs().length ? 'starts servers with its own flags' : singleServerSkipReason();

const GUARDED = ['ActivateClient', 'DeactivateClient', 'AttachDocument', 'DetachDocument', 'PushPull', 'Watch'];

/** The ErrorInfo code of a ConnectError from the SDK. */
function errorCode(err) {
  for (const d of err.details || []) {
    const code = d.debug && d.debug.metadata && d.debug.metadata.code;
    if (code) return code;
  }
  const m = /"code":"(\w+)"/.exec(JSON.stringify(err.details || []));
  return m ? m[1] : String(err);
}

// Tokens the test's webhook tells apart.
const EXPIRED = 'expired-token';
const FRESH = 'fresh-token';

describe('webhooks of the default project', { skip }, () => {
  let server;
  let down;
  let auth;
  let events;
  let project;
  let expiredOnce = false;

  before(async () => {
    auth = await startAuthHook((req) => {
      // A push with the expired token is refused as unauthenticated; the
      // attach and its reads still pass with it.
      if (req.method === 'PushPull' && req.token === EXPIRED && req.attributes[0].verb === 'rw') {
        expiredOnce = true;
        return [401, { allowed: false, reason: 'token expired' }];
      }
      for (const a of req.attributes || []) {
        if (a.key.includes('denied')) return [403, { allowed: false, reason: 'not your document' }];
      }
      return [200, { allowed: true }];
    });
    events = await startEventHook(() => project.secretKey);
    server = await startServer({ logLevel: 'info', extraArgs: QUICK_AUTH_FLAGS });
    // Set before the first SDK call reads the default project.
    project = await updateDefaultProject(server.rpcAddr, {
      authWebhookUrl: auth.url,
      authWebhookMethods: { methods: GUARDED },
      eventWebhookUrl: events.url,
      eventWebhookEvents: { events: ['DocumentRootChanged'] },
    });
    // A refused attempt lasts the request timeout, as an unanswered one does.
    down = await startServer({ logLevel: 'info', extraArgs: [...QUICK_AUTH_FLAGS, '--auth-webhook-request-timeout', '200ms'] });
    await updateDefaultProject(down.rpcAddr, {
      authWebhookUrl: await downURL(),
      authWebhookMethods: { methods: GUARDED },
    });
  });
  after(async () => {
    await Promise.all([server && server.stop(), down && down.stop(), auth && auth.close(), events && events.close()]);
  });

  test('a webhook allowing one document and denying another', async () => {
    const client = new yorkie.Client({ rpcAddr: server.rpcAddr, authTokenInjector: async () => 'user-1' });
    await client.activate();
    try {
      const ok = new yorkie.Document(newDocKey('allowed'));
      await client.attach(ok);
      ok.update((root) => {
        root.n = 1;
      });
      await waitPushed(ok);
      const denied = new yorkie.Document(newDocKey('denied'));
      const err = await client.attach(denied).then(() => null, (e) => e);
      assert.ok(err, 'attaching the denied document fails');
      assert.equal(err.code, 7, `permission_denied, got ${err}`); // Connect's PermissionDenied
      assert.equal(errorCode(err), 'ErrPermissionDenied');
      assert.match(String(err.message), /not your document/);
      const asked = auth.requests.filter((r) => r.method === 'AttachDocument').map((r) => r.attributes[0]);
      assert.deepEqual(asked.map((a) => a.key), [ok.getKey(), denied.getKey()]);
      assert.ok(auth.requests.every((r) => r.token === 'user-1' || r.token === EXPIRED || r.token === FRESH));
    } finally {
      await client.deactivate();
    }
  });

  test('an unauthenticated answer makes the SDK refresh its token and go on', async () => {
    const reasons = [];
    const writer = new yorkie.Client({
      rpcAddr: server.rpcAddr,
      authTokenInjector: async (reason) => {
        reasons.push(reason);
        // The first token, taken at activation, has expired by the first push.
        return reasons.length === 1 ? EXPIRED : FRESH;
      },
    });
    const reader = new yorkie.Client({ rpcAddr: server.rpcAddr, authTokenInjector: async () => 'user-2' });
    await writer.activate();
    await reader.activate();
    try {
      const key = newDocKey('refresh');
      const doc = new yorkie.Document(key);
      await writer.attach(doc);
      doc.update((root) => {
        root.title = 'written after a token refresh';
      });
      await withTimeout(waitPushed(doc), 30000, 'the push after the refresh');
      assert.ok(expiredOnce, 'the webhook refused the expired token');
      assert.deepEqual(reasons.slice(0, 2), [undefined, 'token expired'], 'authTokenInjector was asked again with the reason');
      const copy = new yorkie.Document(key);
      await reader.attach(copy);
      await waitConverged([doc, copy]);
      assert.equal(copy.getRoot().title, 'written after a token refresh');
    } finally {
      await Promise.all([writer.deactivate(), reader.deactivate()]);
    }
  });

  test('a webhook that is down fails calls closed', async () => {
    const client = new yorkie.Client({ rpcAddr: down.rpcAddr, authTokenInjector: async () => 'user-3' });
    const err = await withTimeout(client.activate().then(() => null, (e) => e), 30000, 'activate against a down webhook');
    assert.ok(err, 'activation fails');
    assert.equal(err.code, 13, `internal, which the SDK does not retry, got ${err}`);
    assert.equal(errorCode(err), 'ErrWebhookTimeout');
    assert.equal(client.isActive(), false);
  });

  test('the event webhook gets one signed DocumentRootChanged per burst', async () => {
    const client = new yorkie.Client({ rpcAddr: server.rpcAddr, authTokenInjector: async () => 'user-4' });
    await client.activate();
    try {
      const key = newDocKey('events');
      const doc = new yorkie.Document(key);
      await client.attach(doc);
      for (let i = 0; i < 5; i++) {
        doc.update((root) => {
          root[`k${i}`] = i;
        });
      }
      await waitPushed(doc);
      const first = await withTimeout(events.next(key), 30000, 'the event of the burst');
      assert.equal(first.signed, true, 'signed with the project secret key');
      assert.equal(first.body.type, 'DocumentRootChanged');
      assert.equal(first.body.attributes.key, key);
      assert.match(first.body.attributes.issuedAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      // A marker edit after the burst's post gives exactly one more post.
      doc.update((root) => {
        root.marker = true;
      });
      await waitPushed(doc);
      const second = await withTimeout(events.next(key), 30000, 'the event of the marker edit');
      assert.equal(second.signed, true);
      assert.equal(second.body.attributes.key, key);
      const ofKey = events.posts.filter((p) => p.body.attributes.key === key);
      assert.equal(ofKey.length, 2, 'one post for the burst, one for the marker');
    } finally {
      await client.deactivate();
    }
  });
});
