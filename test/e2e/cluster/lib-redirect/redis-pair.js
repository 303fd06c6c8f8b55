'use strict';
// A Redis master and a replica of it, and a failover by hand: promote the
// replica, demote the old master to a replica of the new one.

const net = require('node:net');
const { startRedis } = require('../lib/processes');
const { waitFor } = require('../../lib/wait');

/**
 * Sends one command to the Redis server at `addr` on a new connection and
 * resolves with its reply as text (simple string, bulk string or integer);
 * an error reply rejects. Enough RESP for INFO and REPLICAOF, so the tests
 * need no redis-cli.
 */
function cli(addr, ...args) {
  const at = addr.lastIndexOf(':');
  return new Promise((resolve, reject) => {
    const sock = net.connect({ host: addr.slice(0, at), port: Number(addr.slice(at + 1)) });
    let buf = Buffer.alloc(0);
    const done = (err, value) => {
      sock.destroy();
      if (err) reject(err);
      else resolve(value);
    };
    sock.setTimeout(5000, () => done(new Error(`redis ${addr}: no reply to ${args.join(' ')}`)));
    sock.on('error', (err) => done(err));
    sock.on('data', (chunk) => {
      buf = Buffer.concat([buf, chunk]);
      const eol = buf.indexOf('\r\n');
      if (eol < 0) return;
      const line = buf.subarray(1, eol).toString('utf8');
      switch (String.fromCharCode(buf[0])) {
        case '+':
        case ':':
          return done(null, line);
        case '-':
          return done(new Error(`redis ${addr}: ${line}`));
        case '$': {
          const len = Number(line);
          if (len < 0) return done(null, null);
          if (buf.length < eol + 2 + len + 2) return undefined;
          return done(null, buf.subarray(eol + 2, eol + 2 + len).toString('utf8'));
        }
        default:
          return done(new Error(`redis ${addr}: unexpected reply ${JSON.stringify(buf.toString('utf8').slice(0, 80))}`));
      }
    });
    const parts = [`*${args.length}\r\n`];
    for (const a of args) parts.push(`$${Buffer.byteLength(String(a))}\r\n${a}\r\n`);
    sock.write(parts.join(''));
  });
}

/** INFO <section> parsed into { field: value }. */
async function info(addr, section) {
  const out = {};
  for (const line of ((await cli(addr, 'INFO', section)) || '').split(/\r?\n/)) {
    const at = line.indexOf(':');
    if (at > 0) out[line.slice(0, at)] = line.slice(at + 1);
  }
  return out;
}

async function startRedisPair() {
  const master = await startRedis();
  let replica;
  try {
    replica = await startRedis({ extraArgs: ['--replicaof', '127.0.0.1', String(master.port)] });
    await waitFor(async () => (await info(replica.addr, 'replication')).master_link_status === 'up', {
      what: `replica ${replica.addr} to sync from ${master.addr}`,
    });
  } catch (err) {
    await master.stop();
    throw err;
  }
  const pair = {
    master,
    replica,
    /**
     * Waits until the replica has what the master has at this moment, then
     * promotes the replica and makes the old master its replica (a planned
     * failover; writes that race with it may still be lost, as in any
     * asynchronous failover).
     */
    async failover() {
      const target = Number((await info(master.addr, 'replication')).master_repl_offset);
      await waitFor(async () => Number((await info(replica.addr, 'replication')).slave_repl_offset || 0) >= target, {
        what: 'the replica to catch up before the failover',
      });
      await cli(replica.addr, 'REPLICAOF', 'NO', 'ONE');
      await cli(master.addr, 'REPLICAOF', '127.0.0.1', String(replica.port));
      [pair.master, pair.replica] = [replica, master];
    },
    async stop() {
      await Promise.all([master.stop(), replica.stop()]);
    },
  };
  return pair;
}

module.exports = { startRedisPair, cli, info };
