'use strict';
// Records every call the SDK makes, with what a cluster test needs to know
// about it: which document and client it was for, whether it succeeded, which
// node owned the document (x-session-key) and, behind the test balancer,
// which server and configuration routed it (x-lb-server, x-lb-generation).
// The SDK looks up globalThis.fetch on every call, so one wrapper sees all.

const diagnostics = require('../../lib/diagnostics');

const { headerOf } = diagnostics;

/** Calls that name one document, with x-shard-key = <apiKey>/<docKey>. */
const DOCUMENT_METHODS = new Set([
  'AttachDocument',
  'DetachDocument',
  'PushPullChanges',
  'Watch',
  'WatchDocument',
  'RemoveDocument',
]);

/** Server streams: their 200 comes before the owner answers anything. */
const STREAM_METHODS = new Set(['Watch', 'WatchDocument']);

const entries = [];
let installed = false;

function bodyText(body) {
  if (typeof body === 'string') return body;
  if (body instanceof Uint8Array) return Buffer.from(body).toString('utf8');
  return '';
}

/**
 * Passes a Connect stream through unchanged while noting on `entry` when its
 * first message arrived (`firstMessageAt`), the last (`lastMessageAt`), how
 * many there were (`messages`), and how it ended (`endedAt`, `endError`: the Connect error code of its
 * end-of-stream frame, or 'transport' when the connection failed).
 */
function observeStream(res, entry) {
  let pending = Buffer.alloc(0);
  entry.messages = 0;
  const inspect = (chunk) => {
    pending = pending.length ? Buffer.concat([pending, Buffer.from(chunk)]) : Buffer.from(chunk);
    while (pending.length >= 5) {
      const size = pending.readUInt32BE(1);
      if (pending.length < 5 + size) break;
      const flags = pending[0];
      const payload = pending.subarray(5, 5 + size);
      pending = pending.subarray(5 + size);
      if (flags & 0x02) {
        entry.endedAt = Date.now();
        try {
          const end = JSON.parse(payload.toString('utf8') || '{}');
          entry.endError = end.error ? end.error.code || 'unknown' : null;
        } catch {
          entry.endError = 'unparsable end-of-stream';
        }
      } else {
        entry.messages += 1;
        if (!entry.firstMessageAt) entry.firstMessageAt = Date.now();
        entry.lastMessageAt = Date.now();
      }
    }
  };
  const observer = new TransformStream({
    transform(chunk, controller) {
      try {
        inspect(chunk);
      } catch {
        // a frame we cannot read is still passed on
      }
      controller.enqueue(chunk);
    },
    flush() {
      if (!entry.endedAt) entry.endedAt = Date.now();
    },
  });
  res.body.pipeTo(observer.writable).catch(() => {
    // The connection failed, or the SDK cancelled the stream.
    if (!entry.endedAt) {
      entry.endedAt = Date.now();
      entry.endError = 'transport';
    }
  });
  return new Response(observer.readable, { status: res.status, statusText: res.statusText, headers: res.headers });
}

/**
 * Wraps globalThis.fetch (once per process; the shared diagnostics recorder
 * is installed first so both see every call). Returns the module.
 */
function install() {
  if (installed) return module.exports;
  installed = true;
  diagnostics.install();
  const inner = globalThis.fetch;
  globalThis.fetch = async function wireLoggingFetch(input, init = {}) {
    const url = typeof input === 'string' ? input : input.url;
    const method = url.split('/').pop();
    const shardKey = headerOf(init.headers, 'x-shard-key') || '';
    const slash = shardKey.indexOf('/');
    const clientMatch = /"clientId"\s*:\s*"([0-9a-f]+)"/.exec(bodyText(init.body));
    const entry = {
      sentAt: Date.now(),
      at: null,
      method,
      url,
      document: DOCUMENT_METHODS.has(method),
      key: slash >= 0 ? shardKey.slice(slash + 1) : shardKey,
      clientId: clientMatch ? clientMatch[1] : undefined,
      status: 0,
      ok: false,
    };
    entries.push(entry);
    let res;
    try {
      res = await inner(input, init);
    } catch (err) {
      entry.at = Date.now();
      entry.networkError = String((err && (err.cause || err.message)) || err);
      throw err;
    }
    entry.at = Date.now();
    entry.status = res.status;
    const grpcStatus = res.headers.get('grpc-status');
    entry.ok = res.status === 200 && (!grpcStatus || grpcStatus === '0');
    entry.sessionKey = res.headers.get('x-session-key') || undefined;
    entry.lbServer = res.headers.get('x-lb-server') || undefined;
    entry.lbGeneration = Number(res.headers.get('x-lb-generation') || 0) || undefined;
    if (STREAM_METHODS.has(method) && res.status === 200 && res.body) return observeStream(res, entry);
    return res;
  };
  return module.exports;
}

/** Position to pass to `since()` to get only the calls made after now. */
function mark() {
  return entries.length;
}

/** Calls recorded since `position` (all when omitted), oldest first. */
function since(position = 0) {
  return entries.slice(position);
}

/** Forgets recorded calls (between tests of a long file). */
function clear() {
  entries.length = 0;
}

module.exports = { install, mark, since, clear, entries, DOCUMENT_METHODS, STREAM_METHODS };
