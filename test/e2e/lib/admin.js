'use strict';
// Reads a server's operator view of a document (GET /admin/documents/{key}
// on the profiling port) and compares it with SDK replicas.

const assert = require('node:assert/strict');

/** The view of `key` from the profiling port at `base` (http://host:port); throws on a non-200 answer. */
async function documentView(base, key, { timeoutMs = 10000 } = {}) {
  const url = `${base}/admin/documents/${encodeURIComponent(key)}`;
  const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
  const text = await res.text();
  if (res.status !== 200) {
    const err = new Error(`GET ${url}: ${res.status} ${text.slice(0, 500)}`);
    err.status = res.status;
    try {
      err.body = JSON.parse(text);
    } catch {
      err.body = null;
    }
    throw err;
  }
  const view = JSON.parse(text);
  // The raw text keeps what JSON.parse would round (longs above 2^53).
  Object.defineProperty(view, 'text', { value: text, enumerable: false });
  return view;
}

/**
 * The SDK's toSortedJSON of `doc`, parsed and written again, so that it can be
 * compared as text (key order included) with a view's root.
 */
function sortedRoot(doc) {
  return JSON.stringify(JSON.parse(doc.toSortedJSON()));
}

/**
 * Asserts that the view's root is the replica's toSortedJSON: byte for byte
 * when the view was read by documentView (the server writes the root compact,
 * as the SDK does), else as parsed values in the same key order.
 */
function assertRootIs(view, doc, what) {
  if (view.text !== undefined) {
    const sdk = doc.toSortedJSON();
    assert.ok(view.text.includes(`"root":${sdk}`), `${what}: the admin view's root is the SDK's toSortedJSON\nview: ${view.text}\nsdk:  ${sdk}`);
    return;
  }
  assert.equal(JSON.stringify(view.root), sortedRoot(doc), `${what}: the admin view's root is the SDK's toSortedJSON`);
}

module.exports = { documentView, sortedRoot, assertRootIs };
