'use strict';
// Request limits as the SDK meets them: a large legal document goes through,
// a push over the limit fails once instead of being retried for ever, and
// a browser page on another origin may read the headers the SDK and the
// redirect wrapper need.

const assert = require('node:assert/strict');
const { describe, test, before, after } = require('node:test');
const { startServer } = require('../lib/server');
const { singleServerSkipReason, externalAddrs } = require('../lib/suite');
const { waitFor, withTimeout } = require('../lib/wait');
const { runInSession, singleTarget, newDocKey, yorkie } = require('../lib/session');
const { waitPushed } = require('../lib/replicas');
const diagnostics = require('../lib/diagnostics');

const skip = externalAddrs().length ? 'starts servers with its own flags' : singleServerSkipReason();

// Bounds of the waits around a push of megabytes on a busy machine; they
// only end broken runs.
const BIG_MS = 120000;

describe('request limits', { skip }, () => {
  let server;
  let small;
  before(async () => {
    server = await startServer({ logLevel: 'info' });
    small = await startServer({ logLevel: 'info', extraArgs: ['--rpc-max-request-bytes', String(1 << 20)] });
  });
  after(async () => {
    await Promise.all([server && server.stop(), small && small.stop()]);
  });

  for (const transport of ['json', 'grpc-web']) {
    test(`a 6 MB document pushed by one client is read back by another (${transport})`, async () => {
      await runInSession({ target: singleTarget(server.rpcAddr, { describe: () => server.logTail(3000) }), transport }, async (session) => {
        const [writer, reader] = await session.activateClients(2);
        const key = newDocKey('big');
        const doc = await session.attach(writer, key);
        // 3.2 million characters: 6.4 MB as the SDK counts a document's size.
        const big = 'yorkie-0123456789'.repeat(200000).slice(0, 3200000);
        doc.update((root) => {
          root.big = big;
        });
        await waitPushed(doc, { timeoutMs: BIG_MS });
        const copy = await withTimeout(session.attach(reader, key), BIG_MS, 'attach of the big document');
        const got = copy.getRoot().big;
        assert.equal(typeof got, 'string');
        assert.equal(got.length, big.length, 'the reader has the whole string');
        assert.ok(got === big, 'the reader has the same string');
      });
    });

    test(`a push over the request limit fails once, with a code the SDK does not retry (${transport})`, async () => {
      await runInSession({ target: singleTarget(small.rpcAddr, { describe: () => small.logTail(3000) }), transport }, async (session) => {
        const client = await session.activateClient();
        const doc = await session.attach(client, newDocKey('too-big'));
        const mark = diagnostics.mark();
        doc.update((root) => {
          root.big = 'x'.repeat(2 << 20);
        });
        // resource_exhausted or unavailable would keep the sync loop retrying.
        await waitFor(() => !client.getCondition(yorkie.ClientCondition.SyncLoop), {
          what: 'the SDK to stop its sync loop on the refused push',
          timeoutMs: BIG_MS,
          describe: () => diagnostics.summarize(diagnostics.since(mark)),
        });
        const failed = diagnostics.since(mark).filter((e) => e.rpc === 'PushPullChanges' && e.failed);
        assert.equal(failed.length, 1, `one refused push: ${diagnostics.summarize(failed)}`);
        if (transport === 'json') {
          assert.match(failed[0].responseBody, /"code":"invalid_argument"/);
          assert.match(failed[0].responseBody, /ErrRequestTooLarge/);
        } else {
          assert.equal(failed[0].grpcStatus, '3', 'grpc-status invalid_argument');
        }
      });
    });
  }

  test('a cross-origin page may read the session key and the status headers', async () => {
    const origin = 'https://app.example';
    const url = (method) => `${server.rpcAddr}/yorkie.v1.YorkieService/${method}`;
    const preflight = await fetch(url('AttachDocument'), {
      method: 'OPTIONS',
      headers: {
        Origin: origin,
        'Access-Control-Request-Method': 'POST',
        'Access-Control-Request-Headers': 'content-type,connect-protocol-version,x-session-key',
      },
    });
    await preflight.arrayBuffer();
    assert.equal(preflight.status, 204, 'preflight answered');
    assert.equal(preflight.headers.get('access-control-allow-origin'), origin);
    assert.match(preflight.headers.get('access-control-allow-methods') || '', /POST/);
    assert.match(preflight.headers.get('access-control-allow-headers') || '', /x-session-key/i);

    const call = async (method, body) => {
      const res = await fetch(url(method), {
        method: 'POST',
        headers: { Origin: origin, 'Content-Type': 'application/json', 'Connect-Protocol-Version': '1' },
        body: JSON.stringify(body),
      });
      const json = await res.json();
      assert.equal(res.status, 200, `${method}: ${JSON.stringify(json)}`);
      return { res, json };
    };
    const { json: activated } = await call('ActivateClient', { clientKey: 'cors-page' });
    const { res } = await call('AttachDocument', {
      clientId: activated.clientId,
      changePack: { documentKey: newDocKey('cors'), checkpoint: {} },
    });
    assert.equal(res.headers.get('access-control-allow-origin'), origin);
    const exposed = (res.headers.get('access-control-expose-headers') || '').toLowerCase().split(/\s*,\s*/);
    for (const name of ['x-session-key', 'grpc-status', 'grpc-message', 'grpc-status-details-bin', 'connect-content-encoding']) {
      assert.ok(exposed.includes(name), `${name} exposed: ${exposed.join(', ')}`);
    }
    // What a page reads through the exposed header: the owner's key.
    const key = res.headers.get('x-session-key');
    assert.ok(key, 'the answer carries a session key');
    assert.equal(Buffer.from(key, 'base64').toString(), `127.0.0.1:${server.rpcPort}`);
  });
});
