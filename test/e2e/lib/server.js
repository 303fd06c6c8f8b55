'use strict';
// Starting and stopping a `yorkie server` process for end-to-end tests.

const { spawn } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const { waitFor } = require('./wait');

const REPO_ROOT = path.resolve(__dirname, '..', '..', '..');

// Ports that fetch() refuses to connect to (the WHATWG "bad ports" list).
const FETCH_BAD_PORTS = new Set([
  1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79,
  87, 95, 101, 102, 103, 104, 109, 110, 111, 113, 115, 117, 119, 123, 135, 137,
  139, 143, 161, 179, 389, 427, 465, 512, 513, 514, 515, 526, 530, 531, 532,
  540, 548, 554, 556, 563, 587, 601, 636, 989, 990, 993, 995, 1719, 1720, 1723,
  2049, 3659, 4045, 4190, 5060, 5061, 6000, 6566, 6665, 6666, 6667, 6668, 6669,
  6679, 6697, 10080,
]);

// Child processes started by these helpers. If this test process ends
// without stopping them (a file timeout, --test-force-exit, Ctrl-C), they are
// killed on the way out so that no server outlives its test.
const children = new Set();
let exitHooksInstalled = false;

function killChildren() {
  for (const child of children) {
    try {
      process.kill(child.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  children.clear();
}

/** Registers a spawned child for killing when this process exits. */
function trackChild(child) {
  children.add(child);
  child.once('exit', () => children.delete(child));
  if (exitHooksInstalled) return;
  exitHooksInstalled = true;
  process.on('exit', killChildren);
  for (const signal of ['SIGINT', 'SIGTERM']) {
    process.once(signal, () => {
      killChildren();
      process.kill(process.pid, signal);
    });
  }
}

/** Path of the server binary: $YORKIE_BIN, else bin/yorkie at the repository root. */
function yorkieBinary() {
  const fromEnv = process.env.YORKIE_BIN;
  if (fromEnv) return path.resolve(fromEnv);
  return path.join(REPO_ROOT, 'bin', 'yorkie');
}

/** True when a missing server must fail the suite instead of skipping it. */
function serversRequired() {
  const v = process.env.YORKIE_TEST_REQUIRE_SERVERS || '';
  return v !== '' && v !== '0' && v !== 'false';
}

/** Returns a loopback TCP port that is free right now and usable by fetch. */
async function freePort() {
  for (;;) {
    const port = await new Promise((resolve, reject) => {
      const srv = net.createServer();
      srv.unref();
      srv.on('error', reject);
      // Every address, as the server binds its ports: a port free on
      // 127.0.0.1 alone may be another loopback address's connection's.
      srv.listen(0, () => {
        const { port: p } = srv.address();
        srv.close(() => resolve(p));
      });
    });
    if (!FETCH_BAD_PORTS.has(port)) return port;
  }
}

/**
 * Status of a GET of `url`, 0 if it fails. It goes on a connection of its
 * own that closes after the answer: fetch() would keep it for the SDK's
 * calls, and a connection that carried a GET is served by net/http for good,
 * so the SDK would never reach the server's HTTP/1.1 fast loop.
 */
function httpStatus(url) {
  return new Promise((resolve) => {
    const req = http.get(url, { agent: false, timeout: 1000 }, (res) => {
      res.resume();
      res.once('end', () => resolve(res.statusCode));
      res.once('error', () => resolve(0));
    });
    req.once('timeout', () => req.destroy(new Error('timeout')));
    req.once('error', () => resolve(0));
  });
}

/**
 * A running server process. `rpcAddr` is what SDK clients are given.
 */
class ServerProcess {
  constructor({ child, rpcPort, profilingPort, logFile, args }) {
    this.child = child;
    this.pid = child.pid;
    this.rpcPort = rpcPort;
    this.profilingPort = profilingPort;
    this.rpcAddr = `http://127.0.0.1:${rpcPort}`;
    this.metricsURL = `http://127.0.0.1:${profilingPort}/metrics`;
    this.logFile = logFile;
    this.args = args;
    this.exitInfo = null;
    this.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        this.exitInfo = { code, signal };
        resolve(this.exitInfo);
      });
    });
  }

  /** Last `maxBytes` of the server's combined stdout/stderr. */
  logTail(maxBytes = 8000) {
    try {
      const buf = fs.readFileSync(this.logFile);
      return buf.subarray(Math.max(0, buf.length - maxBytes)).toString('utf8');
    } catch (err) {
      return `(log unavailable: ${err.message})`;
    }
  }

  /** Stops the process by its PID: SIGTERM, then SIGKILL after `graceMs`. */
  async stop({ graceMs = 5000 } = {}) {
    if (this.exitInfo) return this.exitInfo;
    try {
      process.kill(this.pid, 'SIGTERM');
    } catch {
      // already gone
    }
    let timer;
    const killed = new Promise((resolve) => {
      timer = setTimeout(() => {
        try {
          process.kill(this.pid, 'SIGKILL');
        } catch {
          // already gone
        }
        resolve();
      }, graceMs);
    });
    await Promise.race([this.exited, killed]);
    clearTimeout(timer);
    return this.exited;
  }
}

/**
 * The flags that pick the server's database. YORKIE_E2E_DATABASE=mongo runs
 * the suite on the MongoDB backend: one MongoDB-wire test server
 * (bin/ferretdb) per test process, and a database of its own for every server
 * started, so no two servers share state unless a test says so.
 */
let ferretdb = null;
async function databaseArgs(rpcPort) {
  const kind = process.env.YORKIE_E2E_DATABASE || 'memory';
  if (kind === 'memory') return [];
  if (kind !== 'mongo') throw new Error(`YORKIE_E2E_DATABASE=${kind}: want memory or mongo`);
  if (!ferretdb) {
    // Required here, not at the top: the cluster library requires this file.
    const { startFerretDB } = require('../cluster/lib/processes');
    ferretdb = startFerretDB();
  }
  const { uri } = await ferretdb;
  return ['--mongo-connection-uri', uri, '--mongo-database', `e2e-${rpcPort}-${Date.now()}`];
}

/**
 * Flags every server of the suite gets: YORKIE_E2E_SERVER_ARGS, split on
 * whitespace, e.g. "--rpc-fast-http1=false --rpc-fast-json=false" to run the
 * suite on the stock HTTP/1.1 server and JSON codec.
 */
function suiteArgs() {
  return (process.env.YORKIE_E2E_SERVER_ARGS || '').split(/\s+/).filter(Boolean);
}

/**
 * Starts `yorkie server` on free loopback ports (or the given `rpcPort` /
 * `profilingPort`, e.g. to restart a server in place) and resolves once GET /healthz
 * on the RPC port answers 200. Rejects (with the log tail) if the process
 * exits first or the deadline passes. A port freePort() chose can be taken
 * by another process's outgoing connection before the server binds it; a
 * server that exits for that reason is started again on other free ports.
 */
async function startServer(opts = {}) {
  const fixed = Boolean(opts.rpcPort || opts.profilingPort);
  for (let attempt = 1; ; attempt++) {
    try {
      return await startServerOnce(opts);
    } catch (err) {
      if (fixed || err.code !== 'PORT_TAKEN' || attempt >= 3) throw err;
    }
  }
}

async function startServerOnce({
  bin = yorkieBinary(),
  logLevel = process.env.YORKIE_E2E_LOG_LEVEL || 'debug',
  extraArgs = [],
  env = {},
  readyTimeoutMs = 20000,
  rpcPort: fixedRpcPort,
  profilingPort: fixedProfilingPort,
} = {}) {
  if (!fs.existsSync(bin)) {
    const err = new Error(`yorkie binary not found at ${bin} (set YORKIE_BIN or build bin/yorkie)`);
    err.code = 'YORKIE_BIN_MISSING';
    throw err;
  }
  const rpcPort = fixedRpcPort || (await freePort());
  let profilingPort = fixedProfilingPort || (await freePort());
  while (profilingPort === rpcPort) profilingPort = await freePort();

  const args = [
    'server',
    '--rpc-port', String(rpcPort),
    '--profiling-port', String(profilingPort),
    '--log-level', logLevel,
    ...(await databaseArgs(rpcPort)),
    ...suiteArgs(),
    ...extraArgs,
  ];
  const logDir = process.env.YORKIE_E2E_LOG_DIR || fs.mkdtempSync(path.join(os.tmpdir(), 'yorkie-e2e-'));
  fs.mkdirSync(logDir, { recursive: true });
  const logFile = path.join(logDir, `server-${rpcPort}.log`);
  const fd = fs.openSync(logFile, 'a');
  const child = spawn(bin, args, {
    stdio: ['ignore', fd, fd],
    env: { ...process.env, ...env },
  });
  fs.closeSync(fd);
  trackChild(child);
  const server = new ServerProcess({ child, rpcPort, profilingPort, logFile, args });
  let spawnError = null;
  child.once('error', (err) => {
    spawnError = err;
  });

  try {
    await waitFor(async () => {
      if (spawnError) throw spawnError;
      if (server.exitInfo) {
        throw new Error(`server exited before it was ready: ${JSON.stringify(server.exitInfo)}`);
      }
      return (await httpStatus(`${server.rpcAddr}/healthz`)) === 200;
    }, { timeoutMs: readyTimeoutMs, intervalMs: 50, what: `GET ${server.rpcAddr}/healthz to answer 200` });
  } catch (err) {
    await server.stop({ graceMs: 1000 });
    const tail = server.logTail();
    if (server.exitInfo && /bind: address already in use/.test(tail)) err.code = 'PORT_TAKEN';
    err.message += `\n--- server log (${logFile}) ---\n${tail}`;
    throw err;
  }
  return server;
}

module.exports = { startServer, httpStatus, freePort, yorkieBinary, serversRequired, ServerProcess, REPO_ROOT, trackChild };
