'use strict';
// The redirect contract on the wire (README, "The redirect contract"): two
// nodes in redirect mode sharing etcd and FerretDB; raw Connect JSON calls,
// no SDK. Every document call without a session key that reaches the node
// which does not own the document must fail at once with code unavailable,
// the owner's session key in the x-session-key response header, and an
// ErrorInfo with code=ErrWrongNode and session_key=<owner's key>; one that
// carries a (stale) key is relayed and answered with the owner's key.

const test = require('node:test');
const assert = require('node:assert/strict');
const { skipUnlessPresent, startSessionStore, startFerretDB } = require('./lib/processes');
const { NodeSet } = require('./lib-redirect/nodes');

const SVC = '/yorkie.v1.YorkieService';

async function unary(addr, method, body, shardKey, extraHeaders = {}) {
  const res = await fetch(`${addr}${SVC}/${method}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-shard-key': shardKey, ...extraHeaders },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(10000),
  });
  const text = await res.text();
  let json = null;
  try {
    json = JSON.parse(text);
  } catch {
    // left null
  }
  return { status: res.status, header: res.headers.get('x-session-key'), json, text };
}

/**
 * A server-streaming Connect call; reads until the end-of-stream frame. A
 * stream still open after `maxMs` is cut and returned without `end`: a hang
 * guard, generous because a correct node ends it at once.
 */
async function stream(addr, method, body, shardKey, { maxMs = 30000 } = {}) {
  const payload = Buffer.from(JSON.stringify(body));
  const head = Buffer.alloc(5);
  head.writeUInt32BE(payload.length, 1);
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), maxMs);
  const res = await fetch(`${addr}${SVC}/${method}`, {
    method: 'POST',
    headers: { 'content-type': 'application/connect+json', 'x-shard-key': shardKey },
    body: Buffer.concat([head, payload]),
    signal: ctl.signal,
  });
  const frames = [];
  let buf = Buffer.alloc(0);
  let end = null;
  try {
    for await (const chunk of res.body) {
      buf = Buffer.concat([buf, Buffer.from(chunk)]);
      while (buf.length >= 5 && buf.length >= 5 + buf.readUInt32BE(1)) {
        const len = buf.readUInt32BE(1);
        const frame = { flags: buf[0], json: JSON.parse(buf.subarray(5, 5 + len).toString('utf8')) };
        buf = buf.subarray(5 + len);
        if (frame.flags & 0x02) end = frame.json;
        else frames.push(frame.json);
      }
      if (end) break;
    }
  } catch {
    // aborted after maxMs: the stream stayed open
  } finally {
    clearTimeout(timer);
    ctl.abort();
  }
  return { status: res.status, header: res.headers.get('x-session-key'), frames, end };
}

function errorInfo(errorJSON) {
  const d = ((errorJSON && errorJSON.details) || []).find((x) => x.type === 'google.rpc.ErrorInfo');
  return d && d.debug ? d.debug.metadata : undefined;
}

test(
  'redirect contract: each document call on the non-owner names the owner in the header and the ErrorInfo',
  { skip: skipUnlessPresent(['yorkie', 'ferretdb', 'etcd']), timeout: 120000 },
  async (t) => {
    const cleanups = [];
    let nodes;
    try {
      const store = await startSessionStore('etcd');
      cleanups.push(() => store.stop());
      const db = await startFerretDB();
      cleanups.push(() => db.stop());
      nodes = new NodeSet({ args: ['--affinity-mode', 'redirect', ...store.args, '--mongo-connection-uri', db.uri] });
      cleanups.push(() => nodes.stopAll());
      const [a, b] = [await nodes.add(), await nodes.add()];

      const key = `contract-${Date.now().toString(16)}`;
      const shard = `/${key}`;
      const clientKey = `contract-client-${Date.now()}`;
      const act = await unary(a.rpcAddr, 'ActivateClient', { clientKey }, `/${clientKey}`);
      assert.equal(act.status, 200, act.text);
      const clientId = act.json.clientId;
      const attach = await unary(
        a.rpcAddr,
        'AttachDocument',
        { clientId, changePack: { documentKey: key, checkpoint: { serverSeq: '0', clientSeq: 0 } } },
        shard,
      );
      assert.equal(attach.status, 200, attach.text);
      const ownerKey = attach.header;
      const owner = nodes.byKey(ownerKey);
      assert.ok(owner, `AttachDocument names a node: ${ownerKey}`);
      const other = owner === a ? b : a;
      const documentId = attach.json.documentId;
      t.diagnostic(`owner ${owner.hostPort}, asking ${other.hostPort}`);

      // AttachDocument through the other node succeeds too and names the same owner.
      const act2 = await unary(other.rpcAddr, 'ActivateClient', { clientKey: `${clientKey}-2` }, `/${clientKey}-2`);
      const attach2 = await unary(
        other.rpcAddr,
        'AttachDocument',
        { clientId: act2.json.clientId, changePack: { documentKey: key, checkpoint: { serverSeq: '0', clientSeq: 0 } } },
        shard,
      );
      assert.equal(attach2.status, 200, attach2.text);
      assert.equal(attach2.header, ownerKey);

      // The owner serves document calls and names itself.
      const pp = { clientId, documentId, changePack: { documentKey: key, checkpoint: { serverSeq: '0', clientSeq: 0 } } };
      const served = await unary(owner.rpcAddr, 'PushPullChanges', pp, shard);
      assert.equal(served.status, 200, served.text);
      assert.equal(served.header, ownerKey);

      const problems = [];
      const expectRedirect = (what, { code, info, header }) => {
        if (code !== 'unavailable') problems.push(`${what}: code ${code}, want unavailable`);
        if (!info || info.code !== 'ErrWrongNode') problems.push(`${what}: ErrorInfo ${JSON.stringify(info)}, want code ErrWrongNode`);
        else if (info.session_key !== ownerKey) problems.push(`${what}: ErrorInfo session_key ${info.session_key}, want ${ownerKey}`);
        if (header !== ownerKey) problems.push(`${what}: x-session-key response header ${JSON.stringify(header)}, want ${ownerKey}`);
      };

      const unaryCalls = {
        PushPullChanges: pp,
        DetachDocument: pp,
        RemoveDocument: { ...pp, changePack: { ...pp.changePack, isRemoved: true } },
      };
      for (const [method, body] of Object.entries(unaryCalls)) {
        const r = await unary(other.rpcAddr, method, body, shard);
        expectRedirect(method, { code: r.json && r.json.code, info: errorInfo(r.json), header: r.header });
        // A call that carries a session key came by a key gone stale (here
        // one naming the asked node itself): it is relayed to the owner, never
        // to the address the key names, and answered by the owner (with its
        // key when it succeeds; RemoveDocument after the relayed detach gets
        // the owner's own refusal), so that a rolling restart or a failover
        // tells no client where to go with an error.
        const stale = await unary(other.rpcAddr, method, body, shard, { 'x-session-key': other.sessionKey });
        const staleInfo = errorInfo(stale.json);
        if (staleInfo && staleInfo.code === 'ErrWrongNode') problems.push(`${method} with a stale key: refused with ErrWrongNode, want it relayed`);
        if (stale.status === 200 && stale.header !== ownerKey) problems.push(`${method} with a stale key: x-session-key ${JSON.stringify(stale.header)}, want the owner's ${ownerKey}`);
      }
      const streams = {
        Watch: { clientId, resources: [{ document: { documentId } }] },
        WatchDocument: { clientId, documentId },
      };
      for (const [method, body] of Object.entries(streams)) {
        const r = await stream(other.rpcAddr, method, body, shard);
        assert.equal(r.frames.length, 0, `${method} on the non-owner sends no message: ${JSON.stringify(r.frames)}`);
        assert.ok(r.end && r.end.error, `${method} ends with an error frame instead of staying open: ${JSON.stringify(r)}`);
        const trailerKey = r.end.metadata && Object.entries(r.end.metadata).find(([k]) => k.toLowerCase() === 'x-session-key');
        t.diagnostic(`${method} on the non-owner: HTTP ${r.status}, response header x-session-key ${JSON.stringify(r.header)}, end-of-stream metadata x-session-key ${JSON.stringify(trailerKey && trailerKey[1])}`);
        // The contract asks for the response header on every redirected call,
        // streams included: a proxy or client that reads headers only (no
        // body parsing) must learn the owner from a refused Watch as well.
        expectRedirect(method, { code: r.end.error.code, info: errorInfo(r.end.error), header: r.header });
      }
      assert.deepEqual(problems, []);
    } catch (err) {
      if (nodes) err.message += `\n${nodes.describe(2000)}`;
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
