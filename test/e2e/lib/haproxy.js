'use strict';
// Starting haproxy in front of yorkie servers, routing by the x-shard-key
// header the SDK puts on every call (consistent hashing, as Yorkie's own
// deployments do).

const { spawn, execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { freePort, trackChild } = require('./server');
const { waitFor } = require('./wait');

function haproxyBinary() {
  if (process.env.HAPROXY_BIN) return process.env.HAPROXY_BIN;
  for (const dir of (process.env.PATH || '').split(path.delimiter).concat(['/usr/sbin', '/usr/local/sbin'])) {
    const candidate = path.join(dir, 'haproxy');
    if (dir && fs.existsSync(candidate)) return candidate;
  }
  return null;
}

/**
 * Config text: one HTTP frontend on `port`, one backend per address in
 * `servers` ('http://127.0.0.1:1234'), balanced by `hdr(x-shard-key)` with
 * consistent hashing. Timeouts are long enough for idle Watch streams.
 */
function haproxyConfig({ port, servers, extraBackendLines = [] }) {
  const lines = [
    'global',
    '  maxconn 2048',
    'defaults',
    '  mode http',
    '  timeout connect 2s',
    '  timeout client 120s',
    '  timeout server 120s',
    '  timeout tunnel 120s',
    '  option http-buffer-request',
    'frontend yorkie',
    `  bind 127.0.0.1:${port}`,
    '  default_backend nodes',
    'backend nodes',
    '  balance hdr(x-shard-key)',
    '  hash-type consistent',
    ...extraBackendLines.map((l) => `  ${l}`),
    ...servers.map((addr, i) => `  server node${i} ${addr.replace(/^https?:\/\//, '')} check inter 500ms`),
  ];
  return `${lines.join('\n')}\n`;
}

class HAProxyProcess {
  constructor({ child, port, configFile, logFile }) {
    this.child = child;
    this.pid = child.pid;
    this.port = port;
    this.addr = `http://127.0.0.1:${port}`;
    this.configFile = configFile;
    this.logFile = logFile;
    this.exitInfo = null;
    this.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        this.exitInfo = { code, signal };
        resolve(this.exitInfo);
      });
    });
  }

  logTail(maxBytes = 4000) {
    try {
      const buf = fs.readFileSync(this.logFile);
      return buf.subarray(Math.max(0, buf.length - maxBytes)).toString('utf8');
    } catch (err) {
      return `(log unavailable: ${err.message})`;
    }
  }

  async stop() {
    if (this.exitInfo) return this.exitInfo;
    try {
      process.kill(this.pid, 'SIGTERM');
    } catch {
      // already gone
    }
    return this.exited;
  }
}

/**
 * Starts haproxy in the foreground (-db) in front of `servers` and resolves
 * once GET /healthz through it answers 200.
 */
async function startHAProxy({ servers, bin = haproxyBinary(), extraBackendLines, readyTimeoutMs = 15000 }) {
  if (!bin) {
    const err = new Error('haproxy not found (install the haproxy package or set HAPROXY_BIN)');
    err.code = 'HAPROXY_MISSING';
    throw err;
  }
  const port = await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'yorkie-e2e-haproxy-'));
  const configFile = path.join(dir, 'haproxy.cfg');
  fs.writeFileSync(configFile, haproxyConfig({ port, servers, extraBackendLines }));
  execFileSync(bin, ['-c', '-q', '-f', configFile]);
  const logFile = path.join(dir, 'haproxy.log');
  const fd = fs.openSync(logFile, 'a');
  const child = spawn(bin, ['-db', '-f', configFile], { stdio: ['ignore', fd, fd] });
  fs.closeSync(fd);
  trackChild(child);
  const proxy = new HAProxyProcess({ child, port, configFile, logFile });
  try {
    await waitFor(
      async () => {
        if (proxy.exitInfo) throw new Error(`haproxy exited: ${JSON.stringify(proxy.exitInfo)}`);
        try {
          const res = await fetch(`${proxy.addr}/healthz`, {
            headers: { 'x-shard-key': 'health' },
            signal: AbortSignal.timeout(1000),
          });
          await res.arrayBuffer();
          return res.status === 200;
        } catch {
          return false;
        }
      },
      { timeoutMs: readyTimeoutMs, intervalMs: 50, what: `haproxy on ${proxy.addr} to pass /healthz through` },
    );
  } catch (err) {
    await proxy.stop();
    err.message += `\n--- haproxy log ---\n${proxy.logTail()}`;
    throw err;
  }
  return proxy;
}

module.exports = { startHAProxy, haproxyConfig, haproxyBinary };
