'use strict';
// A set of yorkie server processes sharing one session store and database,
// plus reading their Prometheus metrics.

const { startServer } = require('../../lib/server');

/** Sum of the samples of metric `name` whose labels contain every pair in `labels`. */
function metricSum(text, name, labels = {}) {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
    if (!m || m[1] !== name) continue;
    const got = {};
    for (const [, k, v] of (m[2] || '').matchAll(/(\w+)="([^"]*)"/g)) got[k] = v;
    if (Object.entries(labels).every(([k, v]) => got[k] === v)) sum += Number(m[3]);
  }
  return sum;
}

class NodeSet {
  constructor({ args, logLevel = process.env.YORKIE_E2E_LOG_LEVEL || 'info' }) {
    this.args = args;
    this.logLevel = logLevel;
    this.nodes = [];
  }

  /** Starts one more node; resolves once its /healthz answers. */
  async add() {
    const node = await startServer({ logLevel: this.logLevel, extraArgs: this.args });
    node.hostPort = `127.0.0.1:${node.rpcPort}`;
    node.sessionKey = Buffer.from(node.hostPort).toString('base64');
    this.nodes.push(node);
    return node;
  }

  get live() {
    return this.nodes.filter((n) => !n.exitInfo);
  }

  byKey(sessionKey) {
    return this.nodes.find((n) => n.sessionKey === sessionKey);
  }

  /** SIGKILL, resolved once the process is gone. */
  async kill(node) {
    try {
      process.kill(node.pid, 'SIGKILL');
    } catch {
      // already gone
    }
    await node.exited;
  }

  async metrics(node) {
    const res = await fetch(node.metricsURL, { signal: AbortSignal.timeout(15000) });
    return res.text();
  }

  /** { port: value } of `name` (summed over matching labels) for every live node. */
  async metric(name, labels) {
    const out = {};
    for (const n of this.live) {
      try {
        out[n.rpcPort] = metricSum(await this.metrics(n), name, labels);
      } catch {
        out[n.rpcPort] = null;
      }
    }
    return out;
  }

  describe(maxBytes = 3000) {
    return this.nodes.map((n) => `--- node ${n.hostPort} (pid ${n.pid}${n.exitInfo ? `, exited ${JSON.stringify(n.exitInfo)}` : ''}) log ${n.logFile} ---\n${n.logTail(maxBytes)}`).join('\n');
  }

  async stopAll() {
    await Promise.all(this.nodes.map((n) => n.stop({ graceMs: 3000 })));
  }
}

module.exports = { NodeSet, metricSum };
