'use strict';
// Reads a server's operator view of a document (GET /admin/documents/{key}
// on the profiling port, with an admin token) and compares it with SDK
// replicas.

const assert = require('node:assert/strict');

/**
 * The view of `key` from the profiling port at `base` (http://host:port), read
 * with the admin `token` (see logIn); throws on a non-200 answer.
 */
async function documentView(base, key, { timeoutMs = 10000, token } = {}) {
  const [name, query] = key.split('?');
  const url = `${base}/admin/documents/${encodeURIComponent(name)}${query ? `?${query}` : ''}`;
  const headers = token ? { authorization: `Bearer ${token}` } : {};
  const res = await fetch(url, { headers, signal: AbortSignal.timeout(timeoutMs) });
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

/** One AdminService call in Connect JSON; throws on a non-200 answer. */
async function adminCall(rpcAddr, method, body, token) {
  const headers = { 'Content-Type': 'application/json', 'Connect-Protocol-Version': '1' };
  if (token) headers.authorization = `Bearer ${token}`;
  const res = await fetch(`${rpcAddr}/yorkie.v1.AdminService/${method}`, {
    method: 'POST',
    headers,
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(10000),
  });
  const json = await res.json();
  if (res.status !== 200) throw new Error(`AdminService/${method}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

/** Logs in to the admin API (the server's default admin/admin unless told) and returns the token. */
async function logIn(rpcAddr, { username = 'admin', password = 'admin' } = {}) {
  return (await adminCall(rpcAddr, 'LogIn', { username, password })).token;
}

/** Creates a project through the admin API and returns it ({ id, name, publicKey, secretKey, ... }). */
async function createProject(rpcAddr, token, name) {
  return (await adminCall(rpcAddr, 'CreateProject', { name }, token)).project;
}

/** The view of `key` in a project (name or ID) from the profiling port at `base`. */
async function projectDocumentView(base, project, key, opts) {
  return documentView(base, `${key}?project=${encodeURIComponent(project)}`, opts);
}

module.exports = { documentView, projectDocumentView, sortedRoot, assertRootIs, adminCall, logIn, createProject };
