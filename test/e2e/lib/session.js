'use strict';
// A test session: the clients and documents of one test against one target,
// with cleanup and failure diagnostics.

const crypto = require('node:crypto');
const yorkie = require('@yorkie-js/sdk');
const diagnostics = require('./diagnostics');
const { withTimeout } = require('./wait');

/** Transports the SDK offers; every scenario runs with each of them. */
const TRANSPORTS = {
  json: { useGrpcWebTransport: false },
  'grpc-web': { useGrpcWebTransport: true },
};

/** Content types each transport must put on its requests. */
const TRANSPORT_CONTENT_TYPES = {
  json: /^application\/(connect\+)?json\b/,
  'grpc-web': /^application\/grpc-web(\+proto)?\b/,
};

/**
 * A target says where client number i connects. A single server gives every
 * client the same address; a cluster can spread clients over several.
 *   { name, addrFor(i) => 'http://host:port', describe?() => string }
 */
function singleTarget(rpcAddr, { name = rpcAddr, describe } = {}) {
  return { name, addrFor: () => rpcAddr, describe };
}

function roundRobinTarget(rpcAddrs, { name = rpcAddrs.join(','), describe } = {}) {
  if (!rpcAddrs.length) throw new Error('roundRobinTarget needs at least one address');
  return { name, addrFor: (i) => rpcAddrs[i % rpcAddrs.length], describe };
}

/** A fresh document key, valid for Yorkie (lowercase, digits, '-', at most 120 chars). */
function newDocKey(label = 'doc') {
  const clean = label.toLowerCase().replace(/[^a-z0-9-]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 60) || 'doc';
  return `e2e-${clean}-${crypto.randomBytes(6).toString('hex')}`;
}

class Session {
  constructor({ target, transport = 'json', clientOptions = {} }) {
    if (!TRANSPORTS[transport]) throw new Error(`unknown transport ${transport}`);
    diagnostics.install();
    this.target = target;
    this.transport = transport;
    this.clientOptions = clientOptions;
    this.clients = [];
    this.mark = diagnostics.mark();
  }

  /** Creates (not activates) client number `index` (default: the next one). */
  newClient({ index = this.clients.length, ...opts } = {}) {
    const client = new yorkie.Client({
      rpcAddr: this.target.addrFor(index),
      ...TRANSPORTS[this.transport],
      ...this.clientOptions,
      ...opts,
    });
    client.e2eIndex = index;
    this.clients.push(client);
    return client;
  }

  /** Creates and activates one client. */
  async activateClient(opts = {}) {
    const client = this.newClient(opts);
    await withTimeout(client.activate(), 15000, `activate of client ${client.e2eIndex} (${client.getKey()})`);
    return client;
  }

  /** Creates and activates `n` clients, in order. */
  async activateClients(n, opts = {}) {
    const out = [];
    for (let i = 0; i < n; i++) out.push(await this.activateClient(opts));
    return out;
  }

  /** Attaches a new Document for `key` to `client` in realtime mode. */
  async attach(client, key, { initialPresence, initialRoot } = {}) {
    const doc = new yorkie.Document(key);
    const opts = {};
    if (initialPresence !== undefined) opts.initialPresence = initialPresence;
    if (initialRoot !== undefined) opts.initialRoot = initialRoot;
    await withTimeout(client.attach(doc, opts), 15000, `attach of ${key} by client ${client.e2eIndex}`);
    return doc;
  }

  /** Deactivates every client that is still active; never hangs longer than the deadline. */
  async close() {
    await Promise.all(
      this.clients
        .filter((c) => c.isActive())
        .map((c) => withTimeout(c.deactivate(), 5000, `deactivate of client ${c.e2eIndex}`).catch(() => {})),
    );
  }

  /** Throws unless every request of this session used the session's transport. */
  assertTransportUsed() {
    const calls = diagnostics.since(this.mark).filter((e) => e.rpc);
    if (!calls.length) throw new Error('no RPC was recorded for this session');
    const wrong = calls.filter((e) => !TRANSPORT_CONTENT_TYPES[this.transport].test(e.contentType || ''));
    if (wrong.length) {
      throw new Error(`requests not sent with the ${this.transport} transport: ${JSON.stringify(wrong.slice(0, 3))}`);
    }
  }

  /** What happened on the wire during this session. */
  report() {
    return diagnostics.summarize(diagnostics.since(this.mark));
  }
}

/**
 * Runs `fn(session)` and always closes the session. On failure the error
 * message is extended with the session's RPC/SDK log and, when the target
 * can describe itself (e.g. a server log tail), with that too.
 */
async function runInSession(options, fn) {
  const session = new Session(options);
  try {
    await fn(session);
    session.assertTransportUsed();
  } catch (err) {
    let extra = `\n--- transport ${session.transport}, target ${session.target.name} ---\n${session.report()}`;
    if (session.target.describe) {
      try {
        extra += `\n${session.target.describe()}`;
      } catch {
        // best effort
      }
    }
    if (err && typeof err === 'object') {
      try {
        err.message = `${err.message}${extra}`;
        if (typeof err.stack === 'string') err.stack = `${err.stack}${extra}`;
      } catch {
        // read-only fields
      }
    }
    throw err;
  } finally {
    await session.close();
  }
}

module.exports = { Session, runInSession, singleTarget, roundRobinTarget, newDocKey, TRANSPORTS, yorkie };
