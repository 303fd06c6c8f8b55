'use strict';
// Starting the real servers a cluster test needs (etcd, Redis, the
// MongoDB-wire test server) as child processes on free loopback ports, and
// stopping every one of them by PID, also when a test fails or the test
// process exits early.

const { spawn } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const { freePort, serversRequired, REPO_ROOT } = require('../../lib/server');
const { waitFor } = require('../../lib/wait');

// Every process started through this module that has not exited yet.
const running = new Set();

process.on('exit', () => {
  // Last resort for a test process that ends without its cleanup: nothing we
  // started may outlive it.
  for (const p of running) {
    try {
      process.kill(p.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
});

/** A directory for one test's files, removed by `removeDir`. */
function makeTempDir(prefix) {
  return fs.mkdtempSync(path.join(os.tmpdir(), `yorkie-cluster-${prefix}-`));
}

function removeDir(dir) {
  if (!dir) return;
  try {
    fs.rmSync(dir, { recursive: true, force: true });
  } catch {
    // best effort
  }
}

/**
 * Waits until proc, a server whose data lives in dir, passes ready, and
 * returns its handle: `fields`, the process, dir and stop(), which removes
 * dir too. A server that never gets ready has its dir removed at once.
 */
async function serverInDir(proc, dir, ready, { timeoutMs, what }, fields) {
  await waitReady(proc, ready, { timeoutMs, what }).catch((err) => {
    removeDir(dir);
    throw err;
  });
  return {
    ...fields,
    process: proc,
    dir,
    async stop() {
      await proc.stop({ graceMs: 3000 });
      removeDir(dir);
    },
  };
}

/**
 * Path of a binary: the environment variable `envVar` if set, else `name` on
 * PATH or in the sbin directories, else null.
 */
function findBinary(name, envVar) {
  if (envVar && process.env[envVar]) {
    const p = path.resolve(process.env[envVar]);
    return fs.existsSync(p) ? p : null;
  }
  const dirs = (process.env.PATH || '').split(path.delimiter).concat(['/usr/sbin', '/usr/local/sbin', '/usr/local/bin']);
  for (const dir of dirs) {
    if (!dir) continue;
    const candidate = path.join(dir, name);
    if (fs.existsSync(candidate)) return candidate;
  }
  return null;
}

/** Binaries of the servers the cluster suites use; null when missing. */
function binaries() {
  const yorkie = process.env.YORKIE_BIN ? path.resolve(process.env.YORKIE_BIN) : path.join(REPO_ROOT, 'bin', 'yorkie');
  const ferret = process.env.FERRETDB_BIN
    ? path.resolve(process.env.FERRETDB_BIN)
    : path.join(REPO_ROOT, 'bin', 'ferretdb');
  return {
    yorkie: fs.existsSync(yorkie) ? yorkie : null,
    ferretdb: fs.existsSync(ferret) ? ferret : null,
    etcd: findBinary('etcd', 'ETCD_BIN'),
    redis: findBinary('redis-server', 'REDIS_SERVER_BIN'),
    haproxy: findBinary('haproxy', 'HAPROXY_BIN'),
  };
}

/**
 * Skip reason for a suite that needs the named binaries ('yorkie', 'etcd',
 * ...), or false when all are present. When servers are required
 * (YORKIE_TEST_REQUIRE_SERVERS=1) a missing binary is not a reason to skip:
 * false is returned and the start itself fails, naming what is missing.
 */
function skipUnlessPresent(names) {
  const bins = binaries();
  const missing = names.filter((n) => !bins[n]);
  if (!missing.length || serversRequired()) return false;
  return `missing ${missing.join(', ')} (YORKIE_TEST_REQUIRE_SERVERS=1 makes this a failure)`;
}

function missingBinary(what, hint) {
  const err = new Error(`${what} not found (${hint})`);
  err.code = 'BINARY_MISSING';
  return err;
}

/** A child process with its output in a log file, stopped by its PID. */
class ManagedProcess {
  constructor({ name, child, logFile, args }) {
    this.name = name;
    this.child = child;
    this.pid = child.pid;
    this.logFile = logFile;
    this.args = args;
    this.exitInfo = null;
    this.spawnError = null;
    child.once('error', (err) => {
      this.spawnError = err;
    });
    this.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        this.exitInfo = { code, signal };
        running.delete(this);
        resolve(this.exitInfo);
      });
    });
    running.add(this);
  }

  get alive() {
    return this.exitInfo === null && this.spawnError === null;
  }

  /** Last `maxBytes` of what the process printed. */
  logTail(maxBytes = 6000) {
    try {
      const buf = fs.readFileSync(this.logFile);
      return buf.subarray(Math.max(0, buf.length - maxBytes)).toString('utf8');
    } catch (err) {
      return `(log unavailable: ${err.message})`;
    }
  }

  /** Sends `signal` to the process if it still runs. */
  signal(signal) {
    if (!this.alive) return false;
    try {
      process.kill(this.pid, signal);
      return true;
    } catch {
      return false;
    }
  }

  /** SIGKILL, resolved once the process has exited. */
  async kill() {
    this.signal('SIGKILL');
    return this.exited;
  }

  /** SIGTERM, then SIGKILL after `graceMs`; resolved once the process has exited. */
  async stop({ graceMs = 5000 } = {}) {
    if (!this.alive) return this.exitInfo;
    this.signal('SIGTERM');
    let timer;
    const escalate = new Promise((resolve) => {
      timer = setTimeout(() => {
        this.signal('SIGKILL');
        resolve();
      }, graceMs);
    });
    await Promise.race([this.exited, escalate]);
    clearTimeout(timer);
    return this.exited;
  }
}

/** Spawns `bin args` with stdout and stderr appended to `logFile`. */
function spawnLogged({ name, bin, args, logFile, cwd, env }) {
  const fd = fs.openSync(logFile, 'a');
  let child;
  try {
    child = spawn(bin, args, { stdio: ['ignore', fd, fd], cwd, env: { ...process.env, ...env } });
  } finally {
    fs.closeSync(fd);
  }
  return new ManagedProcess({ name, child, logFile, args });
}

function tcpOpen(port, host = '127.0.0.1') {
  return new Promise((resolve) => {
    const sock = net.connect({ port, host });
    const done = (ok) => {
      sock.destroy();
      resolve(ok);
    };
    sock.setTimeout(1000, () => done(false));
    sock.once('connect', () => done(true));
    sock.once('error', () => done(false));
  });
}

/**
 * Waits until `ready()` is true, failing early when `proc` exits; on failure
 * the process is stopped and its log tail is added to the error.
 */
async function waitReady(proc, ready, { timeoutMs = 20000, what }) {
  try {
    await waitFor(
      async () => {
        if (proc.spawnError) throw proc.spawnError;
        if (proc.exitInfo) {
          const err = new Error(`${proc.name} exited before it was ready: ${JSON.stringify(proc.exitInfo)}`);
          err.code = 'EXITED_BEFORE_READY';
          throw err;
        }
        return ready();
      },
      { timeoutMs, intervalMs: 50, what },
    );
  } catch (err) {
    await proc.stop({ graceMs: 1000 });
    err.message += `\n--- ${proc.name} log (${proc.logFile}) ---\n${proc.logTail()}`;
    throw err;
  }
}

/**
 * Runs `start()` again (up to `attempts` times) when the process it starts
 * exits before it is ready, as it does when a free port was taken by someone
 * else between choosing it and binding it.
 */
async function retryOnEarlyExit(start, attempts = 3) {
  for (let i = 1; ; i++) {
    try {
      return await start();
    } catch (err) {
      if (err.code !== 'EXITED_BEFORE_READY' || i >= attempts) throw err;
    }
  }
}

/**
 * A single-member etcd on free loopback ports with a new data directory.
 * Resolves with { endpoint, process, stop() } once a client port answers
 * /health with health true.
 */
async function startEtcdOnce({ bin = binaries().etcd, readyTimeoutMs = 20000 } = {}) {
  if (!bin) throw missingBinary('etcd', 'install etcd-server or set ETCD_BIN');
  const dir = makeTempDir('etcd');
  const clientPort = await freePort();
  let peerPort = await freePort();
  while (peerPort === clientPort) peerPort = await freePort();
  const client = `http://127.0.0.1:${clientPort}`;
  const peer = `http://127.0.0.1:${peerPort}`;
  const proc = spawnLogged({
    name: `etcd:${clientPort}`,
    bin,
    args: [
      '--name', 'n1',
      '--data-dir', path.join(dir, 'data'),
      '--listen-client-urls', client,
      '--advertise-client-urls', client,
      '--listen-peer-urls', peer,
      '--initial-advertise-peer-urls', peer,
      '--initial-cluster', `n1=${peer}`,
      '--initial-cluster-state', 'new',
      '--log-level', 'warn',
    ],
    logFile: path.join(dir, 'etcd.log'),
  });
  const healthy = async () => {
    try {
      const res = await fetch(`${client}/health`, { signal: AbortSignal.timeout(1000) });
      const body = await res.json();
      return res.status === 200 && String(body.health) === 'true';
    } catch {
      return false;
    }
  };
  return serverInDir(proc, dir, healthy, { timeoutMs: readyTimeoutMs, what: `etcd on ${client} to report healthy` }, { endpoint: client });
}

/**
 * A redis-server in the foreground on a free loopback port, without
 * persistence. Resolves with { addr: 'host:port', process, stop() } once it
 * accepts connections.
 */
async function startRedisOnce({ bin = binaries().redis, readyTimeoutMs = 15000, extraArgs = [] } = {}) {
  if (!bin) throw missingBinary('redis-server', 'install redis-server or set REDIS_SERVER_BIN');
  const dir = makeTempDir('redis');
  const port = await freePort();
  const proc = spawnLogged({
    name: `redis:${port}`,
    bin,
    args: [
      '--port', String(port),
      '--bind', '127.0.0.1',
      '--daemonize', 'no',
      '--dir', dir,
      '--save', '',
      '--appendonly', 'no',
      '--repl-diskless-sync-delay', '0',
      ...extraArgs,
    ],
    logFile: path.join(dir, 'redis.log'),
  });
  const what = `redis on 127.0.0.1:${port}`;
  return serverInDir(proc, dir, () => tcpOpen(port), { timeoutMs: readyTimeoutMs, what }, { addr: `127.0.0.1:${port}`, port });
}

/**
 * The MongoDB-wire test server (bin/ferretdb, SQLite) on a free port with a
 * new state directory. Resolves with { uri, process, stop() }.
 */
async function startFerretDBOnce({ bin = binaries().ferretdb, readyTimeoutMs = 20000 } = {}) {
  if (!bin) {
    throw missingBinary('bin/ferretdb', 'cd test/ferretdb && go build -o ../../bin/ferretdb . , or set FERRETDB_BIN');
  }
  const dir = makeTempDir('ferretdb');
  const port = await freePort();
  const proc = spawnLogged({
    name: `ferretdb:${port}`,
    bin,
    args: ['-listen-addr', `127.0.0.1:${port}`, '-state-dir', dir],
    logFile: path.join(dir, 'ferretdb.log'),
  });
  const what = `ferretdb on 127.0.0.1:${port}`;
  return serverInDir(proc, dir, () => tcpOpen(port), { timeoutMs: readyTimeoutMs, what }, { uri: `mongodb://127.0.0.1:${port}`, port });
}

const startEtcd = (opts) => retryOnEarlyExit(() => startEtcdOnce(opts));
const startRedis = (opts) => retryOnEarlyExit(() => startRedisOnce(opts));
const startFerretDB = (opts) => retryOnEarlyExit(() => startFerretDBOnce(opts));

/**
 * Starts the session store a cluster uses: 'etcd' or 'redis' (or 'memory',
 * which needs no server). Resolves with { kind, args, stop() } where `args`
 * are the yorkie server flags that select it.
 */
async function startSessionStore(kind) {
  if (kind === 'etcd') {
    const etcd = await startEtcd();
    return { kind, args: ['--session-store', 'etcd', '--etcd-endpoints', etcd.endpoint], server: etcd, stop: () => etcd.stop() };
  }
  if (kind === 'redis') {
    const redis = await startRedis();
    return { kind, args: ['--session-store', 'redis', '--redis-addr', redis.addr], server: redis, stop: () => redis.stop() };
  }
  if (kind === 'memory') return { kind, args: ['--session-store', 'memory'], server: null, stop: async () => {} };
  throw new Error(`unknown session store ${kind}`);
}

/** Stops every process this module started that still runs. */
async function stopAllStarted() {
  await Promise.all([...running].map((p) => p.stop({ graceMs: 2000 })));
}

module.exports = {
  ManagedProcess,
  spawnLogged,
  waitReady,
  retryOnEarlyExit,
  tcpOpen,
  findBinary,
  binaries,
  skipUnlessPresent,
  missingBinary,
  makeTempDir,
  removeDir,
  startEtcd,
  startRedis,
  startFerretDB,
  startSessionStore,
  stopAllStarted,
  freePort,
  serversRequired,
};
