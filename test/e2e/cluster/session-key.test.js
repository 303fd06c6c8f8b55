'use strict';
// The session-key fetch wrapper (clients/js/session-key.js): against a fake
// fetch for the wire cases, and against one real yorkie server with the SDK.

const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const fs = require('node:fs');
const { createSessionKeyFetch, installSessionKeyFetch } = require('../../../clients/js/session-key');
const { startServer, yorkieBinary, serversRequired } = require('../lib/server');
const { Session, singleTarget, newDocKey } = require('../lib/session');
const { waitFor } = require('../lib/wait');

const BASE = 'http://cluster.test';
const SVC = `${BASE}/yorkie.v1.YorkieService`;
const KEY_A = Buffer.from('127.0.0.1:7001').toString('base64');
const KEY_B = Buffer.from('127.0.0.1:7002').toString('base64');

function wrongNodeJSON(key) {
  return {
    code: 'unavailable',
    message: 'document is owned by another node',
    details: [
      {
        type: 'google.rpc.ErrorInfo',
        value: 'AAAA',
        debug: { reason: 'ErrWrongNode', metadata: { code: 'ErrWrongNode', session_key: key } },
      },
    ],
  };
}

function frame(flags, obj) {
  const payload = Buffer.from(JSON.stringify(obj));
  const head = Buffer.alloc(5);
  head[0] = flags;
  head.writeUInt32BE(payload.length, 1);
  return Buffer.concat([head, payload]);
}

/** A fake fetch: records each request's headers and answers with `reply(method, req)`. */
function fakeFetch(reply) {
  const calls = [];
  const fn = async (url, init = {}) => {
    const headers = new Headers(init.headers);
    const method = url.split('/').pop();
    calls.push({ method, shardKey: headers.get('x-shard-key'), sessionKey: headers.get('x-session-key') });
    return reply(method, headers);
  };
  fn.calls = calls;
  return fn;
}

function call(fetchFn, method, shardKey, body = '{}') {
  return fetchFn(`${SVC}/${method}`, {
    method: 'POST',
    headers: new Headers({ 'content-type': 'application/json', 'x-shard-key': shardKey }),
    body,
  });
}

test('remembers the session key per document and sends it back only for that document', async () => {
  const owner = { 'k/doc-a': KEY_A, 'k/doc-b': KEY_B };
  const base = fakeFetch((method, h) => {
    const key = owner[h.get('x-shard-key')];
    const headers = { 'content-type': 'application/json' };
    if (key && method !== 'ActivateClient') headers['x-session-key'] = key;
    return new Response('{}', { status: 200, headers });
  });
  const f = createSessionKeyFetch(base);

  await call(f, 'ActivateClient', 'k/doc-a'); // a client key that collides with a document key
  await call(f, 'AttachDocument', 'k/doc-a');
  await call(f, 'PushPullChanges', 'k/doc-a');
  await call(f, 'AttachDocument', 'k/doc-b');
  await call(f, 'PushPullChanges', 'k/doc-b');
  await call(f, 'PushPullChanges', 'k/doc-c'); // never answered with a key
  await call(f, 'PushPullChanges', 'k/doc-c');
  await call(f, 'ActivateClient', 'k/doc-a');

  assert.deepEqual(
    base.calls.map((c) => [c.method, c.shardKey, c.sessionKey]),
    [
      ['ActivateClient', 'k/doc-a', null],
      ['AttachDocument', 'k/doc-a', null],
      ['PushPullChanges', 'k/doc-a', KEY_A],
      ['AttachDocument', 'k/doc-b', null],
      ['PushPullChanges', 'k/doc-b', KEY_B],
      ['PushPullChanges', 'k/doc-c', null],
      ['PushPullChanges', 'k/doc-c', null],
      ['ActivateClient', 'k/doc-a', null],
    ],
  );
  assert.equal(f.sessionKeys.size, 2);
  assert.equal(f.stats.learned, 2);
  assert.equal(f.stats.wrongNode, 0);
});

test('a response without a key, or with a malformed one, leaves the stored key alone', async () => {
  let answer = KEY_A;
  const base = fakeFetch(() => {
    const headers = { 'content-type': 'application/json' };
    if (answer !== null) headers['x-session-key'] = answer;
    return new Response('{}', { status: 200, headers });
  });
  const f = createSessionKeyFetch(base);
  await call(f, 'AttachDocument', 'k/doc');
  answer = null;
  await call(f, 'PushPullChanges', 'k/doc');
  answer = 'not a key!';
  await call(f, 'PushPullChanges', 'k/doc');
  await call(f, 'PushPullChanges', 'k/doc');
  assert.deepEqual(base.calls.map((c) => c.sessionKey), [null, KEY_A, KEY_A, KEY_A]);
});

test('a unary ErrWrongNode answer replaces the key and is counted', async () => {
  let first = true;
  const base = fakeFetch((method) => {
    if (method === 'PushPullChanges' && first) {
      first = false;
      return new Response(JSON.stringify(wrongNodeJSON(KEY_B)), {
        status: 503,
        headers: { 'content-type': 'application/json', 'x-session-key': KEY_B },
      });
    }
    return new Response('{}', { status: 200, headers: { 'content-type': 'application/json', 'x-session-key': KEY_B } });
  });
  const events = [];
  const f = createSessionKeyFetch(base, { onEvent: (e) => events.push(e.type) });
  f.sessionKeys.set(`${BASE} k/doc`, KEY_A);
  const res = await call(f, 'PushPullChanges', 'k/doc');
  assert.equal(res.status, 503);
  assert.equal((await res.json()).code, 'unavailable', 'the SDK still sees the whole error body');
  await call(f, 'PushPullChanges', 'k/doc');
  assert.deepEqual(base.calls.map((c) => c.sessionKey), [KEY_A, KEY_B]);
  assert.equal(f.stats.wrongNode, 1);
  assert.deepEqual(events, ['wrong-node', 'changed']);
});

test('a Watch stream that ends with ErrWrongNode in its end-of-stream frame updates the key', async () => {
  const base = fakeFetch((method) => {
    if (method !== 'Watch') return new Response('{}', { status: 200, headers: { 'content-type': 'application/json' } });
    const bytes = Buffer.concat([
      frame(0, { initialization: {} }),
      frame(2, { error: wrongNodeJSON(KEY_B), metadata: { 'X-Session-Key': [KEY_B] } }),
    ]);
    // Delivered in awkward pieces, as a network may.
    const pieces = [bytes.subarray(0, 3), bytes.subarray(3, 20), bytes.subarray(20)];
    const body = new ReadableStream({
      pull(c) {
        const p = pieces.shift();
        if (p) c.enqueue(new Uint8Array(p));
        else c.close();
      },
    });
    return new Response(body, { status: 200, headers: { 'content-type': 'application/connect+json' } });
  });
  const f = createSessionKeyFetch(base);
  f.sessionKeys.set(`${BASE} k/doc`, KEY_A);
  const res = await call(f, 'Watch', 'k/doc');
  const got = Buffer.from(await res.arrayBuffer());
  assert.ok(got.includes(Buffer.from('initialization')), 'the stream reaches the caller unchanged');
  await call(f, 'PushPullChanges', 'k/doc');
  assert.deepEqual(base.calls.map((c) => c.sessionKey), [KEY_A, KEY_B]);
  assert.equal(f.stats.wrongNode, 1);
});

test('a gRPC-web stream ending with ErrWrongNode in its trailer frame updates the key', async () => {
  // google.rpc.Status { code: 14, details: [ErrorInfo{ reason: ErrWrongNode }] }, only as bytes.
  const status = Buffer.concat([Buffer.from([0x08, 0x0e, 0x1a, 0x0e]), Buffer.from('..ErrWrongNode')]).toString('base64').replace(/=+$/, '');
  const trailer = Buffer.from(`grpc-status: 14\r\nx-session-key: ${KEY_B}\r\ngrpc-status-details-bin: ${status}\r\n`);
  const head = Buffer.alloc(5);
  head[0] = 0x80;
  head.writeUInt32BE(trailer.length, 1);
  const base = fakeFetch(() =>
    new Response(new Uint8Array(Buffer.concat([head, trailer])), { status: 200, headers: { 'content-type': 'application/grpc-web+proto' } }),
  );
  const f = createSessionKeyFetch(base);
  f.sessionKeys.set(`${BASE} k/doc`, KEY_A);
  await (await call(f, 'Watch', 'k/doc')).arrayBuffer();
  await (await call(f, 'Watch', 'k/doc')).arrayBuffer();
  assert.deepEqual(base.calls.map((c) => c.sessionKey), [KEY_A, KEY_B]);
  assert.equal(f.stats.wrongNode, 2);
});

test('a gateway error without a key drops the stale key so the next call is placed afresh', async () => {
  let status = 503;
  const base = fakeFetch(() => new Response('<html>no server is available</html>', { status, headers: { 'content-type': 'text/html' } }));
  const f = createSessionKeyFetch(base);
  f.sessionKeys.set(`${BASE} k/doc`, KEY_A);
  await call(f, 'PushPullChanges', 'k/doc');
  await call(f, 'PushPullChanges', 'k/doc');
  assert.deepEqual(base.calls.map((c) => c.sessionKey), [KEY_A, null]);
  assert.equal(f.stats.forgotten, 1);

  // Any other error keeps the key: it says nothing about where the owner is.
  status = 500;
  f.sessionKeys.set(`${BASE} k/doc`, KEY_A);
  await call(f, 'PushPullChanges', 'k/doc');
  await call(f, 'PushPullChanges', 'k/doc');
  assert.deepEqual(base.calls.slice(2).map((c) => c.sessionKey), [KEY_A, KEY_A]);
});

test('uninstall restores the previous fetch', () => {
  const before = globalThis.fetch;
  const uninstall = installSessionKeyFetch();
  assert.notEqual(globalThis.fetch, before);
  uninstall();
  assert.equal(globalThis.fetch, before);
});

const missing = !fs.existsSync(yorkieBinary());
test(
  'with the SDK and one real server: the key of the server is learned at attach and sent on later calls',
  { skip: missing && !serversRequired() ? `no yorkie binary at ${path.relative(process.cwd(), yorkieBinary())}` : false },
  async () => {
    const server = await startServer({ logLevel: 'info' });
    const seen = [];
    // Records what reaches the network, below the wrapper.
    const realFetch = globalThis.fetch;
    globalThis.fetch = async (input, init = {}) => {
      const h = new Headers(init.headers);
      seen.push({ method: String(input.url || input).split('/').pop(), shardKey: h.get('x-shard-key'), sessionKey: h.get('x-session-key') });
      return realFetch(input, init);
    };
    const uninstall = installSessionKeyFetch();
    const session = new Session({ target: singleTarget(server.rpcAddr) });
    try {
      const client = await session.activateClient();
      const key = newDocKey('session-key');
      const doc = await session.attach(client, key);
      doc.update((root) => {
        root.n = 1;
      });
      await waitFor(() => !doc.hasLocalChanges(), { what: 'the edit to be pushed' });
      const expected = Buffer.from(`127.0.0.1:${server.rpcPort}`).toString('base64');
      const mine = seen.filter((s) => s.shardKey === `/${key}`);
      assert.ok(mine.length >= 3, `document calls seen: ${JSON.stringify(mine)}`);
      assert.equal(mine[0].method, 'AttachDocument');
      assert.equal(mine[0].sessionKey, null, 'nothing is known before the first answer');
      const later = mine.slice(1);
      assert.ok(later.some((s) => s.method === 'Watch'), JSON.stringify(later));
      assert.ok(later.some((s) => s.method === 'PushPullChanges'), JSON.stringify(later));
      for (const s of later) assert.equal(s.sessionKey, expected, `${s.method} carries the owner's key`);
      assert.ok(
        seen.filter((s) => s.method === 'ActivateClient').every((s) => s.sessionKey === null),
        'client calls carry no document key',
      );
      assert.equal(uninstall.stats.wrongNode, 0);
    } finally {
      await session.close();
      uninstall();
      globalThis.fetch = realFetch;
      await server.stop();
    }
  },
);
