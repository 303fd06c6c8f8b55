'use strict';
// A cluster of `yorkie server` processes sharing one session store and one
// MongoDB database: start N nodes, add one, SIGKILL or SIGTERM one, read a
// node's metrics, stop them all by PID.

const crypto = require('node:crypto');
const path = require('node:path');
const {
  binaries,
  missingBinary,
  spawnLogged,
  waitReady,
  retryOnEarlyExit,
  makeTempDir,
  removeDir,
  freePort,
  startFerretDB,
  startSessionStore,
} = require('./processes');
const { httpStatus } = require('../../lib/server');

/** The session key of an advertised host:port: padded standard base64. */
function sessionKeyOf(hostPort) {
  return Buffer.from(hostPort, 'utf8').toString('base64');
}

/** host:port named by a session key, or null when it is not one. */
function decodeSessionKey(key) {
  if (!key) return null;
  try {
    const text = Buffer.from(key, 'base64').toString('utf8');
    return /^[^\s:]+:\d+$/.test(text) ? text : null;
  } catch {
    return null;
  }
}

/** Whether GET `url` answers 200, on a connection that is not kept (see httpStatus). */
async function httpOK(url) {
  return (await httpStatus(url)) === 200;
}

/** Parses Prometheus text: { 'name{labels}': value, ... } for samples. */
function parseMetrics(text) {
  const out = {};
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const i = line.lastIndexOf(' ');
    if (i < 0) continue;
    out[line.slice(0, i)] = Number(line.slice(i + 1));
  }
  return out;
}

/** One yorkie server process of a cluster. */
class YorkieNode {
  constructor({ name, id, rpcPort, profilingPort, process }) {
    this.name = name;
    this.id = id; // stable small integer: the node's slot in a load balancer
    this.rpcPort = rpcPort;
    this.profilingPort = profilingPort;
    this.hostPort = `127.0.0.1:${rpcPort}`;
    this.rpcAddr = `http://${this.hostPort}`;
    this.metricsURL = `http://127.0.0.1:${profilingPort}/metrics`;
    this.sessionKey = sessionKeyOf(this.hostPort);
    this.process = process;
    this.pid = process.pid;
    this.killedAt = null; // Date.now() of a SIGKILL sent by the test
    this.terminatedAt = null; // Date.now() of a SIGTERM sent by the test
    this.exitedAt = null; // Date.now() once the test saw the process of a kill or stop exit
  }

  get alive() {
    return this.process.alive;
  }

  logTail(maxBytes) {
    return this.process.logTail(maxBytes);
  }

  /**
   * Metric samples of this node, or null if it does not answer. A dead node
   * refuses at once; the timeout only guards against a hang, so it is long
   * enough for a live node on a loaded machine.
   */
  async metrics() {
    try {
      const res = await fetch(this.metricsURL, { signal: AbortSignal.timeout(15000) });
      if (res.status !== 200) return null;
      return parseMetrics(await res.text());
    } catch {
      return null;
    }
  }

  /** Value of one unlabelled metric (e.g. yorkie_affinity_bindings_owned), or null. */
  async metric(name) {
    const m = await this.metrics();
    return m && name in m ? m[name] : null;
  }
}

/**
 * N yorkie processes that form one cluster.
 *
 *   const cluster = new YorkieCluster({ storeArgs, mongoURI, database, extraArgs: ['--affinity-mode', 'forward'] });
 *   await cluster.start(3);
 *   const n4 = await cluster.addNode();
 *   await cluster.kill(cluster.nodes[0]);
 *   await cluster.stop();
 *
 * `storeArgs` select the session store (see processes.startSessionStore);
 * without `mongoURI` every node keeps its data in memory, which is only
 * meaningful for a single node.
 */
class YorkieCluster {
  constructor({
    bin = binaries().yorkie,
    storeArgs = [],
    mongoURI,
    database = `cluster-${crypto.randomBytes(5).toString('hex')}`,
    nodeTTL = '2s',
    logLevel = process.env.YORKIE_E2E_LOG_LEVEL || 'info',
    extraArgs = [],
    logDir,
  } = {}) {
    this.bin = bin;
    this.storeArgs = storeArgs;
    this.mongoURI = mongoURI;
    this.database = database;
    this.nodeTTL = nodeTTL;
    this.logLevel = logLevel;
    this.extraArgs = extraArgs;
    this.keepLogs = Boolean(logDir || process.env.YORKIE_E2E_LOG_DIR);
    this.logDir = logDir || process.env.YORKIE_E2E_LOG_DIR || makeTempDir('yorkie');
    this.nodes = [];
    this.retired = [];
    this.nextId = 1;
  }

  /** Starts `n` nodes one after the other. */
  async start(n, opts = {}) {
    for (let i = 0; i < n; i++) await this.addNode(opts);
    return this.nodes;
  }

  /** Flags of a node on the given ports. */
  argsFor({ rpcPort, profilingPort, extraArgs = [] }) {
    const args = [
      'server',
      '--rpc-port', String(rpcPort),
      '--profiling-port', String(profilingPort),
      '--log-level', this.logLevel,
      '--node-ttl', this.nodeTTL,
      ...this.storeArgs,
    ];
    if (this.mongoURI) args.push('--mongo-connection-uri', this.mongoURI, '--mongo-database', this.database);
    return args.concat(this.extraArgs, extraArgs);
  }

  /**
   * Starts one more node (free ports, or the given ones to restart a node in
   * place) and resolves once its /healthz answers 200. `extraArgs` are added
   * after the cluster's own.
   */
  async addNode(opts = {}) {
    if (!this.bin) throw missingBinary('bin/yorkie', 'go build -o bin/yorkie ./cmd/yorkie, or set YORKIE_BIN');
    const id = this.nextId++;
    // Fixed ports (a restart in place) are not retried: they will not free up.
    const attempts = opts.rpcPort || opts.profilingPort ? 1 : 3;
    const node = await retryOnEarlyExit(() => this.startNode(id, opts), attempts);
    this.nodes.push(node);
    return node;
  }

  async startNode(id, { extraArgs = [], rpcPort, profilingPort, readyTimeoutMs = 20000 }) {
    rpcPort = rpcPort || (await freePort());
    profilingPort = profilingPort || (await freePort());
    while (profilingPort === rpcPort) profilingPort = await freePort();
    const name = `node${id}`;
    const proc = spawnLogged({
      name: `yorkie ${name} (:${rpcPort})`,
      bin: this.bin,
      args: this.argsFor({ rpcPort, profilingPort, extraArgs }),
      logFile: path.join(this.logDir, `${name}-${rpcPort}.log`),
    });
    const node = new YorkieNode({ name, id, rpcPort, profilingPort, process: proc });
    await waitReady(proc, () => httpOK(`${node.rpcAddr}/healthz`), {
      timeoutMs: readyTimeoutMs,
      what: `GET ${node.rpcAddr}/healthz of ${name} to answer 200`,
    });
    return node;
  }

  /**
   * Starts `node` again on the same ports with the same name (SIGKILL first
   * if it still runs). The new YorkieNode takes its place in `nodes`; the old
   * one is kept in `retired`.
   */
  async restart(node, { extraArgs = [], readyTimeoutMs } = {}) {
    if (node.alive) await this.kill(node);
    const fresh = await this.startNode(node.id, {
      rpcPort: node.rpcPort,
      profilingPort: node.profilingPort,
      extraArgs,
      readyTimeoutMs,
    });
    this.nodes[this.nodes.indexOf(node)] = fresh;
    this.retired.push(node);
    return fresh;
  }

  /** Nodes whose process still runs. */
  live() {
    return this.nodes.filter((n) => n.alive);
  }

  /** The node advertising `sessionKey`, or undefined. */
  nodeBySessionKey(sessionKey) {
    return this.nodes.find((n) => n.sessionKey === sessionKey);
  }

  /** SIGKILL: the node dies without releasing anything. Resolves once it has exited. */
  async kill(node) {
    node.killedAt = Date.now();
    await node.process.kill();
    node.exitedAt = Date.now();
    return node;
  }

  /** SIGTERM: a graceful shutdown. Resolves once it has exited (SIGKILL after `graceMs`). */
  async terminate(node, { graceMs = 15000 } = {}) {
    node.terminatedAt = Date.now();
    await node.process.stop({ graceMs });
    node.exitedAt = Date.now();
    return node;
  }

  /** Sum of a metric over the live nodes that answer, with each node's value. */
  async metricByNode(name) {
    const values = await Promise.all(this.live().map(async (n) => [n.name, await n.metric(name)]));
    return Object.fromEntries(values);
  }

  /** Status and log tail of every node, for failure messages. */
  describe(maxBytes = 3000) {
    return this.nodes
      .map((n) => {
        const state = n.alive ? 'running' : `exited ${JSON.stringify(n.process.exitInfo)}`;
        return `--- ${n.name} ${n.hostPort} pid ${n.pid} ${state} (log ${n.process.logFile}) ---\n${n.logTail(maxBytes)}`;
      })
      .join('\n');
  }

  /** Stops every node by PID (SIGTERM, then SIGKILL) and removes a temporary log dir. */
  async stop({ graceMs = 5000, keepLogs = this.keepLogs } = {}) {
    await Promise.all(this.nodes.map((n) => n.process.stop({ graceMs })));
    if (!keepLogs) removeDir(this.logDir);
  }
}

/**
 * Starts what most scenarios run on: FerretDB, an etcd session store and
 * `nodes` servers on a fresh database named after `name`, with a node TTL of
 * 2s and `extraArgs`. Each stop is pushed on `cleanups` as soon as its
 * process runs, so that a failure half way stops what did start; a failed
 * start carries the nodes' logs in its message.
 */
async function startEtcdCluster({ cleanups, name, extraArgs, nodes = 3 }) {
  const ferret = await startFerretDB();
  cleanups.push(() => ferret.stop());
  const store = await startSessionStore('etcd');
  cleanups.push(() => store.stop());
  const cluster = new YorkieCluster({
    storeArgs: store.args,
    mongoURI: ferret.uri,
    database: `${name}-${crypto.randomBytes(4).toString('hex')}`,
    nodeTTL: '2s',
    extraArgs,
  });
  cleanups.push(() => cluster.stop());
  try {
    await cluster.start(nodes);
  } catch (err) {
    // The caller holds no cluster yet to describe: say here what its nodes logged.
    err.message += `\n${cluster.describe(2500)}`;
    throw err;
  }
  return cluster;
}

module.exports = { YorkieCluster, YorkieNode, startEtcdCluster, sessionKeyOf, decodeSessionKey, parseMetrics };
