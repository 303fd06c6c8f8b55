'use strict';
// haproxy in front of a cluster, balancing by the x-shard-key header the SDK
// sends (consistent hashing, as Yorkie deployments do), that can be reloaded
// with a new server list the way a real deployment is: master-worker mode and
// SIGUSR2, so the old worker finishes its established connections (Watch
// streams stay on the nodes they reached) while new connections follow the
// new configuration.
//
// Every answer carries two headers the tests read:
//   x-lb-generation: the configuration that routed the call (1, 2, ...)
//   x-lb-server:     the name of the server haproxy chose

const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
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
} = require('./processes');
const { waitFor } = require('../../lib/wait');

/**
 * Config text. `servers` are { name, id, hostPort } (or YorkieNode objects:
 * name, id, hostPort); the id fixes the server's place on haproxy's hash
 * ring, so adding a server moves only the keys the new one takes.
 * `backendLines` replace the default balancing lines; `check` (default true)
 * adds health checks so that a dead server leaves the ring.
 */
function balancerConfig({
  port,
  servers,
  generation = 1,
  check = true,
  backendLines = ['balance hdr(x-shard-key)', 'hash-type consistent'],
  extraBackendLines = [],
  timeouts = { connect: '2s', client: '120s', server: '120s', tunnel: '120s' },
}) {
  const lines = [
    'global',
    '  maxconn 4096',
    'defaults',
    '  mode http',
    `  timeout connect ${timeouts.connect}`,
    `  timeout client ${timeouts.client}`,
    `  timeout server ${timeouts.server}`,
    `  timeout tunnel ${timeouts.tunnel}`,
    '  option http-buffer-request',
    // Sends each chunk of a stream at once: by default haproxy may hold a
    // small one back (up to about 200 ms) to merge it with the next, which
    // delays a Watch event (and so a remote change) behind the proxy.
    '  option http-no-delay',
    '  retries 2',
    '  option redispatch',
    'frontend yorkie',
    `  bind 127.0.0.1:${port}`,
    '  default_backend nodes',
    'backend nodes',
    ...backendLines.map((l) => `  ${l}`),
    `  http-response set-header x-lb-generation ${generation}`,
    '  http-response set-header x-lb-server %[srv_name]',
    ...extraBackendLines.map((l) => `  ${l}`),
    ...servers.map(
      (s) => `  server ${s.name} ${s.hostPort} id ${s.id}${check ? ' check inter 300ms fall 2 rise 2' : ''}`,
    ),
  ];
  return `${lines.join('\n')}\n`;
}

class Balancer {
  constructor({ bin, port, dir, configOptions }) {
    this.bin = bin;
    this.port = port;
    this.addr = `http://127.0.0.1:${port}`;
    this.dir = dir;
    this.configFile = path.join(dir, 'haproxy.cfg');
    this.logFile = path.join(dir, 'haproxy.log');
    this.configOptions = configOptions;
    this.generation = 0;
    this.servers = [];
    this.process = null;
  }

  get pid() {
    return this.process && this.process.pid;
  }

  writeConfig(servers) {
    this.generation += 1;
    this.servers = servers.map((s) => ({ name: s.name, id: s.id, hostPort: s.hostPort }));
    fs.writeFileSync(
      this.configFile,
      balancerConfig({ ...this.configOptions, port: this.port, servers: this.servers, generation: this.generation }),
    );
    execFileSync(this.bin, ['-c', '-q', '-f', this.configFile]);
  }

  /** Generation of the configuration that answers a new connection now, or 0. */
  async answeringGeneration() {
    try {
      const res = await fetch(`${this.addr}/healthz`, {
        headers: { 'x-shard-key': `lb-probe/${Math.random()}`, connection: 'close' },
        signal: AbortSignal.timeout(1000),
      });
      await res.arrayBuffer();
      return res.status === 200 ? Number(res.headers.get('x-lb-generation') || 0) : 0;
    } catch {
      return 0;
    }
  }

  async start(servers, { readyTimeoutMs = 15000 } = {}) {
    this.writeConfig(servers);
    // -W: master-worker, so SIGUSR2 reloads; -db: stay in the foreground.
    this.process = spawnLogged({
      name: `haproxy :${this.port}`,
      bin: this.bin,
      args: ['-W', '-db', '-f', this.configFile],
      logFile: this.logFile,
    });
    await waitReady(this.process, async () => (await this.answeringGeneration()) === this.generation, {
      timeoutMs: readyTimeoutMs,
      what: `haproxy on ${this.addr} to pass /healthz through`,
    });
  }

  /**
   * Reloads with a new server list: new connections use it, established
   * ones stay with the old worker until they close. Resolves once a new
   * connection is answered by the new configuration.
   */
  async reload(servers, { timeoutMs = 15000 } = {}) {
    this.writeConfig(servers);
    this.process.signal('SIGUSR2');
    const want = this.generation;
    await waitFor(
      async () => {
        if (!this.process.alive) throw new Error(`haproxy exited during reload: ${JSON.stringify(this.process.exitInfo)}`);
        return (await this.answeringGeneration()) === want;
      },
      { timeoutMs, intervalMs: 50, what: `haproxy to answer with configuration ${want}`, describe: () => this.logTail() },
    );
  }

  logTail(maxBytes = 3000) {
    return this.process ? this.process.logTail(maxBytes) : '(not started)';
  }

  async stop() {
    if (this.process) await this.process.stop({ graceMs: 3000 });
    removeDir(this.dir);
  }
}

/**
 * Starts haproxy on a free loopback port in front of `servers` (see
 * balancerConfig) and resolves once /healthz passes through it.
 */
async function startBalancer({ servers, bin = binaries().haproxy, ...configOptions }) {
  if (!bin) throw missingBinary('haproxy', 'install haproxy or set HAPROXY_BIN');
  return retryOnEarlyExit(async () => {
    const lb = new Balancer({ bin, port: await freePort(), dir: makeTempDir('haproxy'), configOptions });
    try {
      await lb.start(servers);
    } catch (err) {
      removeDir(lb.dir);
      throw err;
    }
    return lb;
  });
}

/**
 * Which server a balancer with `servers` (same names and ids) would choose for
 * each shard key, found by asking a throw-away haproxy whose servers all
 * point at `liveHostPort` (the hash depends on the ids, not the addresses).
 * Resolves with { shardKey: serverName }.
 */
async function probePlacement({ servers, shardKeys, liveHostPort, bin = binaries().haproxy, backendLines }) {
  const probeServers = servers.map((s) => ({ name: s.name, id: s.id, hostPort: liveHostPort }));
  const lb = new Balancer({
    bin,
    port: await freePort(),
    dir: makeTempDir('haproxy-probe'),
    configOptions: { check: false, ...(backendLines ? { backendLines } : {}) },
  });
  try {
    await lb.start(probeServers);
    const out = {};
    for (const key of shardKeys) {
      const res = await fetch(`${lb.addr}/healthz`, { headers: { 'x-shard-key': key }, signal: AbortSignal.timeout(15000) });
      await res.arrayBuffer();
      out[key] = res.headers.get('x-lb-server');
    }
    return out;
  } finally {
    await lb.stop();
  }
}

module.exports = { startBalancer, probePlacement, balancerConfig, Balancer };
