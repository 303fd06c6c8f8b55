'use strict';
// A TCP proxy that behaves like a Kubernetes Service in front of a Redis
// master: connections already established stay with the backend they were
// opened to, and only new connections go to the current backend. Repointing
// it is how a failover looks to a client that dialled the Service address.

const net = require('node:net');

async function startTcpSwitch({ backend }) {
  let current = backend;
  const open = new Set(); // { client, upstream, backend }
  const opened = new Map(); // backend -> connections ever opened to it

  const server = net.createServer((client) => {
    const target = current;
    const [host, port] = [target.slice(0, target.lastIndexOf(':')), Number(target.slice(target.lastIndexOf(':') + 1))];
    const upstream = net.connect({ host, port });
    const conn = { client, upstream, backend: target };
    open.add(conn);
    opened.set(target, (opened.get(target) || 0) + 1);
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    client.pipe(upstream);
    upstream.pipe(client);
    const close = () => {
      open.delete(conn);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', close);
    upstream.on('error', close);
    client.on('close', close);
    upstream.on('close', close);
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address();
  return {
    addr: `127.0.0.1:${port}`,
    /** New connections go to `addr` from now on; open ones stay where they are. */
    repoint(addr) {
      current = addr;
    },
    get backend() {
      return current;
    },
    /** Open connections per backend. */
    openCounts() {
      const out = {};
      for (const c of open) out[c.backend] = (out[c.backend] || 0) + 1;
      return out;
    },
    openedCounts() {
      return Object.fromEntries(opened);
    },
    async stop() {
      for (const c of open) {
        c.client.destroy();
        c.upstream.destroy();
      }
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

module.exports = { startTcpSwitch };
