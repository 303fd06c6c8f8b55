'use strict';
// haproxy in front of yorkie nodes, routing like a stateful-session proxy: a
// request whose x-session-key names a configured node goes to that node;
// every other request is placed by consistent hashing of x-shard-key. The
// header is only compared with the configured addresses, so a forged or
// stale key can never send a request anywhere else.

const fs = require('node:fs');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { spawnLogged, waitReady, makeTempDir, removeDir, binaries, missingBinary } = require('../lib/processes');
const { freePort } = require('../../lib/server');
const { waitFor } = require('../../lib/wait');

/** haproxy's name for node `addr` ('127.0.0.1:1234'). */
function serverName(addr) {
  return `n_${addr.replace(/[^0-9a-zA-Z]/g, '_')}`;
}

/**
 * Config text for a frontend on `port` and one backend holding `nodes`
 * (host:port strings). The response header x-served-by names the server that
 * answered, so tests can check where a request went.
 */
function routingConfig({ port, nodes, sessionHeader = 'x-session-key' }) {
  const lines = [
    'global',
    '  maxconn 4096',
    'defaults',
    '  mode http',
    '  timeout connect 1s',
    '  timeout client 120s',
    '  timeout server 120s',
    '  timeout tunnel 120s',
    // Keeps the body so a request whose node refused the connection can be
    // sent again, to another node.
    '  option http-buffer-request',
    // Sends each chunk of a stream at once: by default haproxy may hold a
    // small one back (up to about 200 ms) to merge it with the next, and a
    // channel's count announced after its Watch initialization then reaches
    // the SDK in the same read, before attach() returns and the caller can
    // subscribe to 'presence'.
    '  option http-no-delay',
    '  retries 2',
    '  retry-on conn-failure empty-response',
    '  option redispatch 1',
    'frontend yorkie',
    `  bind 127.0.0.1:${port}`,
    '  default_backend nodes',
    'backend nodes',
    '  balance hdr(x-shard-key)',
    '  hash-type consistent',
    '  option httpchk GET /healthz',
    '  http-response set-header x-served-by %s',
    // The decoded key is compared as a plain string with each configured
    // address. A key that does not decode, or names no configured node,
    // matches no rule. A rule naming a node that is down is ignored by
    // haproxy, so such requests fall back to the hash as well.
    `  http-request set-var(txn.session_addr) req.hdr(${sessionHeader}),b64dec`,
    ...nodes.map((addr) => `  use-server ${serverName(addr)} if { var(txn.session_addr) -m str ${addr} }`),
    ...nodes.map((addr) => `  server ${serverName(addr)} ${addr} check inter 300ms fall 2 rise 1`),
  ];
  return `${lines.join('\n')}\n`;
}

/**
 * Starts haproxy in master-worker mode (so `setNodes` can reload it without
 * dropping established streams) and waits until /healthz passes through.
 */
async function startRoutingHAProxy({ nodes, bin = binaries().haproxy, sessionHeader }) {
  if (!bin) throw missingBinary('haproxy', 'install haproxy or set HAPROXY_BIN');
  const dir = makeTempDir('haproxy');
  const port = await freePort();
  const configFile = path.join(dir, 'haproxy.cfg');
  const write = (list) => {
    const text = routingConfig({ port, nodes: list, sessionHeader });
    fs.writeFileSync(`${configFile}.new`, text);
    execFileSync(bin, ['-c', '-q', '-f', `${configFile}.new`]);
    fs.renameSync(`${configFile}.new`, configFile);
  };
  write(nodes);
  const proc = spawnLogged({ name: `haproxy:${port}`, bin, args: ['-W', '-db', '-f', configFile], logFile: path.join(dir, 'haproxy.log') });
  const addr = `http://127.0.0.1:${port}`;
  const lb = {
    addr,
    port,
    process: proc,
    configFile,
    nodes: [...nodes],
    /** Where a request with these headers is sent (the x-served-by name). */
    async servedBy(headers = {}) {
      const res = await fetch(`${addr}/healthz`, { headers: { 'x-shard-key': 'probe', ...headers }, signal: AbortSignal.timeout(15000) });
      await res.arrayBuffer();
      return { status: res.status, server: res.headers.get('x-served-by') };
    },
    /** Rewrites the config for `list` and reloads; resolves once a request can reach every node of it by key. */
    async setNodes(list) {
      write(list);
      lb.nodes = [...list];
      proc.signal('SIGUSR2');
      await waitFor(
        async () => {
          for (const n of list) {
            const r = await lb.servedBy({ 'x-session-key': Buffer.from(n).toString('base64') }).catch(() => null);
            if (!r || r.server !== serverName(n)) return false;
          }
          return true;
        },
        { what: `haproxy to route by key to every one of ${list.join(', ')} after a reload`, timeoutMs: 15000 },
      );
    },
    async stop() {
      await proc.stop({ graceMs: 3000 });
      removeDir(dir);
    },
  };
  await waitReady(
    proc,
    async () => {
      const r = await lb.servedBy().catch(() => null);
      return r && r.status === 200;
    },
    { what: `haproxy on ${addr} to pass /healthz through` },
  );
  return lb;
}

module.exports = { startRoutingHAProxy, routingConfig, serverName };
