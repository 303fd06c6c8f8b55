'use strict';
// A Redis master and a replica of it, and a failover by hand: promote the
// replica, demote the old master to a replica of the new one.

const { execFile } = require('node:child_process');
const { promisify } = require('node:util');
const { startRedis, findBinary } = require('../lib/processes');
const { waitFor } = require('../../lib/wait');

const run = promisify(execFile);

function redisCli() {
  return findBinary('redis-cli', 'REDIS_CLI_BIN');
}

async function cli(addr, ...args) {
  const bin = redisCli();
  if (!bin) throw new Error('redis-cli not found (install redis-tools or set REDIS_CLI_BIN)');
  const port = addr.slice(addr.lastIndexOf(':') + 1);
  const { stdout } = await run(bin, ['-h', '127.0.0.1', '-p', port, ...args], { timeout: 5000 });
  return stdout.trim();
}

/** INFO <section> parsed into { field: value }. */
async function info(addr, section) {
  const out = {};
  for (const line of (await cli(addr, 'INFO', section)).split(/\r?\n/)) {
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

module.exports = { startRedisPair, cli, info, redisCli };
