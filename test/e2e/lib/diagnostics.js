'use strict';
// Records what the SDK did on the wire and what it logged, so that a failing
// test can say which RPC failed, what the server answered and what the SDK
// printed. Installed once per process; the SDK looks up globalThis.fetch on
// every call, so wrapping it sees every request.

const MAX_ENTRIES = 400;
const entries = [];
let installed = false;
// Open Watch streams, for fault injection: { body: Buffer, drop(opts) }.
const openWatches = new Set();
// Answers to hold back, for fault injection: { method, clientID, held(), released }.
const holds = new Set();

function record(entry) {
  entries.push({ at: new Date().toISOString().slice(11, 23), ...entry });
  if (entries.length > MAX_ENTRIES) entries.splice(0, entries.length - MAX_ENTRIES);
}

/** The value of header `name` (lower case) in any form fetch takes headers in. */
function headerOf(headers, name) {
  if (!headers) return undefined;
  if (typeof headers.get === 'function') return headers.get(name) ?? undefined;
  if (Array.isArray(headers)) {
    const found = headers.find(([k]) => k.toLowerCase() === name);
    return found ? found[1] : undefined;
  }
  const key = Object.keys(headers).find((k) => k.toLowerCase() === name);
  return key ? headers[key] : undefined;
}

function short(text, max = 600) {
  if (typeof text !== 'string') return text;
  return text.length > max ? `${text.slice(0, max)}...(${text.length} chars)` : text;
}

function install() {
  if (installed) return;
  installed = true;

  const realFetch = globalThis.fetch;
  globalThis.fetch = async function recordingFetch(input, init = {}) {
    const url = typeof input === 'string' ? input : input.url;
    const rpc = url.replace(/^https?:\/\/[^/]+/, '');
    const method = rpc.split('/').pop();
    const contentType = headerOf(init.headers, 'content-type');
    const shardKey = headerOf(init.headers, 'x-shard-key');
    let requestText;
    if (typeof init.body === 'string') requestText = init.body;
    else if (init.body instanceof Uint8Array && contentType && contentType.includes('json')) {
      requestText = Buffer.from(init.body).toString('utf8');
    }
    const isWatch = method === 'Watch';
    let connection;
    const cut = { dropped: false };
    if (isWatch) {
      // Our own controller lets a test cut the connection; the SDK's signal
      // still aborts it as before.
      connection = new AbortController();
      const sdkSignal = init.signal;
      if (sdkSignal) {
        if (sdkSignal.aborted) connection.abort(sdkSignal.reason);
        else {
          sdkSignal.addEventListener(
            'abort',
            () => {
              // After a simulated drop the connection closes when the test says.
              if (cut.dropped) return;
              if (cut.closeDelayMs) {
                // Like a proxy that notices the client left only later.
                const reason = sdkSignal.reason;
                setTimeout(() => connection.abort(reason), cut.closeDelayMs);
                return;
              }
              connection.abort(sdkSignal.reason);
            },
            { once: true },
          );
        }
      }
      init = { ...init, signal: connection.signal };
    }
    let response;
    try {
      response = await realFetch(input, init);
    } catch (err) {
      if (err && err.name !== 'AbortError') {
        record({ rpc: method, url, contentType, shardKey, networkError: String(err && (err.cause || err.message || err)) });
      }
      throw err;
    }
    const entry = { rpc: method, url, contentType, shardKey, status: response.status };
    const grpcStatus = response.headers.get('grpc-status');
    if (grpcStatus && grpcStatus !== '0') {
      entry.grpcStatus = grpcStatus;
      entry.grpcMessage = response.headers.get('grpc-message') || undefined;
    }
    if (response.status !== 200) {
      try {
        entry.responseBody = short(await response.clone().text());
      } catch {
        // body not readable; status is enough
      }
    }
    if (entry.status !== 200 || entry.grpcStatus) {
      if (requestText) entry.request = short(requestText);
      entry.failed = true;
    }
    record(entry);
    if (isWatch && response.body) return trackWatch(response, init.body, connection, cut);
    const body = init.body ? Buffer.from(init.body) : undefined;
    const hold = body && [...holds].find((h) => h.method === method && body.includes(Buffer.from(h.clientID)));
    if (hold) {
      holds.delete(hold);
      hold.held();
      await hold.released;
    }
    return response;
  };

  for (const level of ['error', 'warn', 'log']) {
    const original = console[level].bind(console);
    console[level] = (...args) => {
      if (typeof args[0] === 'string' && args[0].startsWith('YORKIE')) {
        record({
          sdkLog: args
            .map((a) => (a instanceof Error ? `${a.name}: ${a.message}` : typeof a === 'string' ? a : safeJSON(a)))
            .join(' '),
        });
      }
      original(...args);
    };
  }
}

/**
 * Wraps a Watch response so that a test can make the SDK see the stream fail
 * as on a network drop, while the TCP connection itself is closed at once or
 * only later (a half-open connection the server has not noticed yet).
 */
function trackWatch(response, requestBody, connection, cut) {
  const reader = response.body.getReader();
  let controller;
  let finished = false;
  const watch = {
    body: requestBody ? Buffer.from(requestBody) : Buffer.alloc(0),
    cut,
    drop({ closeConnectionAfterMs = 0 } = {}) {
      if (finished) return Promise.resolve();
      finished = true;
      cut.dropped = true;
      openWatches.delete(watch);
      controller.error(new TypeError('terminated (connection dropped by the test)'));
      return new Promise((resolve) => {
        setTimeout(() => {
          connection.abort(new Error('connection dropped by the test'));
          resolve();
        }, closeConnectionAfterMs);
      });
    },
  };
  const body = new ReadableStream({
    start(c) {
      controller = c;
    },
    async pull(c) {
      try {
        const { done, value } = await reader.read();
        if (finished) return;
        if (done) {
          finished = true;
          openWatches.delete(watch);
          c.close();
        } else {
          c.enqueue(value);
        }
      } catch (err) {
        if (finished) return;
        finished = true;
        openWatches.delete(watch);
        c.error(err);
      }
    },
    cancel(reason) {
      finished = true;
      openWatches.delete(watch);
      if (cut.closeDelayMs) {
        setTimeout(() => reader.cancel(reason).catch(() => {}), cut.closeDelayMs);
        return undefined;
      }
      return reader.cancel(reason);
    },
  });
  openWatches.add(watch);
  return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
}

/**
 * Makes every open Watch stream of `clientID` fail on the SDK side as if the
 * network dropped it. Resolves with the number of streams dropped once their
 * connections are closed (after `closeConnectionAfterMs`).
 */
async function dropWatchStreams(clientID, opts = {}) {
  const matching = [...openWatches].filter((w) => w.body.includes(Buffer.from(clientID)));
  await Promise.all(matching.map((w) => w.drop(opts)));
  return matching.length;
}

/**
 * From now on, when the SDK itself closes a Watch stream of `clientID` (detach,
 * deactivate), keep the connection open for `ms` more, as a proxy between the
 * client and the server does until it notices. Returns how many open streams
 * were marked.
 */
function delayWatchClose(clientID, ms) {
  const matching = [...openWatches].filter((w) => w.body.includes(Buffer.from(clientID)));
  for (const w of matching) w.cut.closeDelayMs = ms;
  return matching.length;
}

/**
 * Holds back the answer to the next `method` call of `clientID` (a unary
 * call): the server has answered, the SDK does not see the answer until
 * release() is called. `answered` resolves once the answer is held.
 */
function holdNextAnswer(method, clientID) {
  let release;
  const hold = { method, clientID, released: new Promise((resolve) => (release = resolve)) };
  const answered = new Promise((resolve) => (hold.held = resolve));
  holds.add(hold);
  return {
    answered,
    release() {
      holds.delete(hold);
      release();
    },
  };
}

function safeJSON(value) {
  try {
    return short(JSON.stringify(value, (_, v) => (typeof v === 'bigint' ? v.toString() : v)), 300);
  } catch {
    return String(value);
  }
}

/** Index to pass to `since()` to get only the entries recorded after now. */
function mark() {
  return entries.length ? entries[entries.length - 1] : null;
}

/** Entries recorded after `markEntry` (or all that are kept). */
function since(markEntry) {
  if (!markEntry) return entries.slice();
  const idx = entries.lastIndexOf(markEntry);
  return idx < 0 ? entries.slice() : entries.slice(idx + 1);
}

/**
 * Human-readable summary: failed calls and SDK log lines in full, plus a
 * count of successful calls per RPC.
 */
function summarize(list) {
  const lines = [];
  const ok = {};
  for (const e of list) {
    if (e.sdkLog) lines.push(`${e.at} SDK: ${e.sdkLog}`);
    else if (e.failed || e.networkError) lines.push(`${e.at} RPC ${e.rpc} FAILED ${safeJSON({ ...e, at: undefined })}`);
    else ok[e.rpc] = (ok[e.rpc] || 0) + 1;
  }
  lines.push(`successful calls: ${safeJSON(ok)}`);
  return lines.join('\n');
}

module.exports = { install, mark, since, summarize, entries, dropWatchStreams, delayWatchClose, holdNextAnswer, headerOf };
