'use strict';
// Session-key affinity for the Yorkie JS SDK, with no dependencies.
//
// A Yorkie cluster in redirect mode answers every document call with the
// owner node's session key (header x-session-key) and refuses a call that
// reached another node with Connect code `unavailable` and ErrorInfo
// code=ErrWrongNode. The SDK retries `unavailable` by itself but has no way to
// send the key back. A load balancer that routes by the key (Envoy's
// header-based stateful session, or haproxy `use-server` on the decoded key)
// needs it on the request, so this module wraps globalThis.fetch, which the
// SDK looks up on every call: it remembers the key per document and adds it
// to that document's later requests.

const DEFAULT_HEADER = 'x-session-key';

// Calls the cluster routes by document, or by a channel's first key path
// (the SDK's x-shard-key of a channel call names it, so every channel of one
// group shares the owner's key). ActivateClient and DeactivateClient also
// carry x-shard-key, but with the client key in it: sending a document's
// session key there would pin a client to an unrelated node.
const DOCUMENT_METHODS = new Set([
  'AttachDocument',
  'DetachDocument',
  'PushPullChanges',
  'RemoveDocument',
  'Watch',
  'WatchDocument',
  'CreateRevision',
  'GetRevision',
  'ListRevisions',
  'RestoreRevision',
  'AttachChannel',
  'DetachChannel',
  'RefreshChannel',
  'Broadcast',
  'WatchChannel',
]);

const WRONG_NODE = 'ErrWrongNode';

// A session key is the padded standard base64 of host:port. Anything else is
// not stored: a value from the network is only ever echoed back as a routing
// hint, and a malformed one would make fetch throw on the next request.
const KEY_PATTERN = /^[A-Za-z0-9+/]{4,512}={0,2}$/;

function isSessionKey(value) {
  return typeof value === 'string' && KEY_PATTERN.test(value);
}

function methodOf(url) {
  const path = url.split('?')[0];
  return path.slice(path.lastIndexOf('/') + 1);
}

function originOf(url) {
  const m = /^[a-z][a-z0-9+.-]*:\/\/[^/]+/i.exec(url);
  return m ? m[0] : '';
}

function requestURL(input) {
  if (typeof input === 'string') return input;
  if (input && typeof input.href === 'string') return input.href; // URL
  if (input && typeof input.url === 'string') return input.url; // Request
  return String(input);
}

function getHeader(headers, name) {
  if (!headers) return null;
  if (typeof headers.get === 'function') return headers.get(name);
  const lower = name.toLowerCase();
  const entries = Array.isArray(headers) ? headers : Object.entries(headers);
  for (const [k, v] of entries) if (k.toLowerCase() === lower) return v;
  return null;
}

// Finds a session key in a decoded Connect/ErrorInfo error object: the
// ErrorInfo metadata first (it names the owner even when a proxy strips
// headers), then the trailer metadata of a Connect end-of-stream message.
function keyFromErrorJSON(obj, header) {
  const out = { key: null, wrongNode: false };
  if (!obj || typeof obj !== 'object') return out;
  const error = obj.error && typeof obj.error === 'object' ? obj.error : obj;
  const details = Array.isArray(error.details) ? error.details : [];
  for (const d of details) {
    // connect-go adds the decoded detail as `debug`; the `value` is binary
    // protobuf, which this module does not decode.
    const info = d && d.debug && typeof d.debug === 'object' ? d.debug : null;
    const meta = info && info.metadata;
    if (!meta) continue;
    if (meta.code === WRONG_NODE || info.reason === WRONG_NODE) out.wrongNode = true;
    if (isSessionKey(meta.session_key)) out.key = meta.session_key;
  }
  if (!out.key && obj.metadata && typeof obj.metadata === 'object') {
    const v = getHeader(obj.metadata, header);
    const first = Array.isArray(v) ? v[0] : v;
    if (isSessionKey(first)) out.key = first;
  }
  return out;
}

// Streaming answers (the Watch stream, and every gRPC-web answer) carry an
// error and its metadata at the end of the body, not in the HTTP headers.
// This scanner follows the length-prefixed frames as they pass and keeps only
// the bytes of the final frame, so a long-lived stream costs no memory.
class FrameScanner {
  constructor(onEnd) {
    this.onEnd = onEnd;
    this.head = new Uint8Array(5);
    this.headLen = 0;
    this.remaining = 0; // payload bytes still to pass in the current frame
    this.keep = null; // payload of a trailer frame being collected
    this.keepLen = 0;
  }

  push(chunk) {
    let i = 0;
    while (i < chunk.length) {
      if (this.remaining === 0 && this.keep === null) {
        const take = Math.min(5 - this.headLen, chunk.length - i);
        this.head.set(chunk.subarray(i, i + take), this.headLen);
        this.headLen += take;
        i += take;
        if (this.headLen < 5) return;
        this.headLen = 0;
        const flags = this.head[0];
        const len = ((this.head[1] << 24) >>> 0) + (this.head[2] << 16) + (this.head[3] << 8) + this.head[4];
        // 0x02: Connect end-of-stream; 0x80: gRPC-web trailers.
        if ((flags & 0x02 || flags & 0x80) && len <= 1 << 20) {
          this.keep = new Uint8Array(len);
          this.keepLen = 0;
          if (len === 0) this.finish(flags);
          else this.keepFlags = flags;
        } else {
          this.remaining = len;
        }
        continue;
      }
      if (this.keep !== null) {
        const take = Math.min(this.keep.length - this.keepLen, chunk.length - i);
        this.keep.set(chunk.subarray(i, i + take), this.keepLen);
        this.keepLen += take;
        i += take;
        if (this.keepLen === this.keep.length) this.finish(this.keepFlags);
        continue;
      }
      const skip = Math.min(this.remaining, chunk.length - i);
      this.remaining -= skip;
      i += skip;
    }
  }

  finish(flags) {
    const text = new TextDecoder().decode(this.keep);
    this.keep = null;
    this.keepLen = 0;
    this.onEnd(flags, text);
  }
}

// grpc-status-details-bin is a base64 google.rpc.Status. Its ErrorInfo holds
// the code as a plain protobuf string, so finding the bytes of the name is
// enough without a protobuf decoder.
function detailsNameWrongNode(b64) {
  try {
    const padded = b64 + '='.repeat((4 - (b64.length % 4)) % 4);
    return atob(padded).includes(WRONG_NODE);
  } catch {
    return false;
  }
}

function parseTrailerFrame(flags, text, header) {
  if (flags & 0x80) {
    // gRPC-web trailers are HTTP/1-style lines.
    const found = { key: null, wrongNode: false };
    for (const line of text.split(/\r?\n/)) {
      const at = line.indexOf(':');
      if (at < 0) continue;
      const name = line.slice(0, at).trim().toLowerCase();
      const value = line.slice(at + 1).trim();
      if (name === header && isSessionKey(value)) found.key = value;
      if (name === 'grpc-status-details-bin' && detailsNameWrongNode(value)) found.wrongNode = true;
    }
    return found;
  }
  try {
    return keyFromErrorJSON(JSON.parse(text), header);
  } catch {
    return { key: null, wrongNode: false };
  }
}

/**
 * Returns a fetch function that wraps `baseFetch` with session-key affinity.
 * See installSessionKeyFetch for the options. The returned function has
 * `sessionKeys` (Map of "<origin> <apiKey>/<docKey>" -> key), `stats`, and
 * `forget(shardKey?)`.
 */
function createSessionKeyFetch(baseFetch, { header = DEFAULT_HEADER, onEvent } = {}) {
  if (typeof baseFetch !== 'function') throw new TypeError('createSessionKeyFetch needs a fetch function');
  const name = header.toLowerCase();
  const sessionKeys = new Map();
  const stats = { sent: 0, learned: 0, changed: 0, wrongNode: 0, forgotten: 0 };
  const emit = (event) => {
    if (onEvent) {
      try {
        onEvent(event);
      } catch {
        // an observer must never break the client's calls
      }
    }
  };

  function remember(mapKey, shardKey, method, key, wrongNode) {
    if (wrongNode) {
      stats.wrongNode += 1;
      emit({ type: 'wrong-node', shardKey, method, sessionKey: key });
    }
    if (!key) return;
    const before = sessionKeys.get(mapKey);
    if (before === key) return;
    sessionKeys.set(mapKey, key);
    if (before === undefined) stats.learned += 1;
    else stats.changed += 1;
    emit({ type: before === undefined ? 'learned' : 'changed', shardKey, method, sessionKey: key, previous: before });
  }

  async function sessionKeyFetch(input, init) {
    const url = requestURL(input);
    const method = methodOf(url);
    const reqHeaders = (init && init.headers) || (input && typeof input === 'object' && input.headers);
    const shardKey = DOCUMENT_METHODS.has(method) ? getHeader(reqHeaders, 'x-shard-key') : null;
    if (!shardKey) return baseFetch(input, init);

    // Keys are scoped by the cluster's address too: one page may talk to two
    // clusters that hold documents with the same key.
    const mapKey = `${originOf(url)} ${shardKey}`;
    const known = sessionKeys.get(mapKey);
    if (known) {
      const headers = new Headers(reqHeaders || undefined);
      headers.set(name, known);
      init = { ...(init || {}), headers };
      stats.sent += 1;
    }

    // A network error says nothing about the owner: it propagates untouched.
    const response = await baseFetch(input, init);

    const fromHeader = response.headers.get(name);
    const headerKey = isSessionKey(fromHeader) ? fromHeader : null;
    const type = response.headers.get('content-type') || '';

    if (response.status !== 200) {
      let parsed = { key: null, wrongNode: false };
      if (/json/.test(type)) {
        // A unary Connect error: the body is a small JSON object holding the
        // ErrorInfo, the only place that says whether this was ErrWrongNode.
        try {
          parsed = keyFromErrorJSON(JSON.parse(await response.clone().text()), name);
        } catch {
          // not JSON after all; the header alone decides
        }
      }
      const key = headerKey || parsed.key;
      remember(mapKey, shardKey, method, key, parsed.wrongNode);
      if (!key && response.status >= 502 && response.status <= 504) {
        // A gateway error without a key: the proxy could not reach a node
        // (the one the key names may have died). Forget the hint, so the next
        // call is placed by the proxy's hash and whichever node answers names
        // the current owner.
        if (sessionKeys.delete(mapKey)) {
          stats.forgotten += 1;
          emit({ type: 'forgotten', shardKey, method });
        }
      }
      return response;
    }

    // A gRPC-web error without a body puts its status in the headers.
    const details = response.headers.get('grpc-status-details-bin');
    const headerWrongNode = details ? detailsNameWrongNode(details) : false;
    if (headerKey || headerWrongNode) remember(mapKey, shardKey, method, headerKey, headerWrongNode);
    if (!response.body || !/^application\/(connect\+|grpc-web)/.test(type)) return response;

    // Streams: look at the end-of-stream frame as it goes by. The SDK reads
    // the same bytes unchanged.
    const scanner = new FrameScanner((flags, text) => {
      const found = parseTrailerFrame(flags, text, name);
      remember(mapKey, shardKey, method, found.key, found.wrongNode);
    });
    const reader = response.body.getReader();
    const body = new ReadableStream({
      async pull(controller) {
        try {
          const { done, value } = await reader.read();
          if (done) {
            controller.close();
            return;
          }
          try {
            scanner.push(value);
          } catch {
            // inspecting must never break the stream
          }
          controller.enqueue(value);
        } catch (err) {
          controller.error(err);
        }
      },
      cancel(reason) {
        return reader.cancel(reason);
      },
    });
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  }

  sessionKeyFetch.sessionKeys = sessionKeys;
  sessionKeyFetch.stats = stats;
  sessionKeyFetch.forget = (shardKey) => {
    if (shardKey === undefined) sessionKeys.clear();
    else for (const k of [...sessionKeys.keys()]) if (k.endsWith(` ${shardKey}`)) sessionKeys.delete(k);
  };
  return sessionKeyFetch;
}

/**
 * Replaces globalThis.fetch with a wrapper that keeps each document's calls
 * on its owner node (see the file comment). Options:
 *   header  - name of the session-key header (default 'x-session-key'),
 *   onEvent - called with { type: 'learned'|'changed'|'wrong-node'|'forgotten',
 *             shardKey, method, sessionKey?, previous? }.
 * Returns an uninstall function; it also exposes `sessionKeys`, `stats` and
 * `forget` of the wrapper. Uninstalling restores the previous fetch if
 * nothing replaced the wrapper since; otherwise the wrapper stays in the chain
 * but stops touching requests.
 */
function installSessionKeyFetch(options = {}) {
  const previous = globalThis.fetch;
  if (typeof previous !== 'function') throw new Error('globalThis.fetch is not available');
  let active = true;
  const wrapped = createSessionKeyFetch(previous, options);
  const installed = function sessionKeyFetchInstalled(input, init) {
    return active ? wrapped(input, init) : previous(input, init);
  };
  globalThis.fetch = installed;
  const uninstall = () => {
    active = false;
    if (globalThis.fetch === installed) globalThis.fetch = previous;
  };
  uninstall.sessionKeys = wrapped.sessionKeys;
  uninstall.stats = wrapped.stats;
  uninstall.forget = wrapped.forget;
  return uninstall;
}

const api = { installSessionKeyFetch, createSessionKeyFetch, DOCUMENT_METHODS, DEFAULT_HEADER };
if (typeof module === 'object' && module.exports) module.exports = api;
else globalThis.YorkieSessionKey = api;
