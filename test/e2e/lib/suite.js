'use strict';
// Declares node:test suites that run every scenario once per transport
// against a target. The target comes from `setup()`, so a single server, an
// externally started server or a cluster behind a load balancer all reuse it.

const fs = require('node:fs');
const { describe, before, after, test } = require('node:test');
const { scenarios } = require('./scenarios');
const { runInSession, singleTarget, roundRobinTarget, TRANSPORTS } = require('./session');
const { startServer, yorkieBinary, serversRequired } = require('./server');

/**
 * defineScenarioSuite({ title, transports, setup, teardown, skip, list })
 *   setup(): Promise<target>   target = { name, addrFor(i), describe?() }
 *   teardown(target): Promise<void>
 *   skip: false | string (reason)
 *   list: the scenarios to run (default: all), each { name, run(session) }
 */
function defineScenarioSuite({ title, transports = Object.keys(TRANSPORTS), setup, teardown, skip = false, list = scenarios }) {
  describe(title, { skip }, () => {
    let target;
    before(async () => {
      target = await setup();
    });
    after(async () => {
      if (teardown && target) await teardown(target);
    });
    for (const transport of transports) {
      describe(`transport ${transport}`, () => {
        for (const scenario of list) {
          test(scenario.name, async () => {
            await runInSession({ target, transport }, scenario.run);
          });
        }
      });
    }
  });
}

/** Addresses from YORKIE_E2E_RPC_ADDR (comma-separated), if the user gave a running server. */
function externalAddrs() {
  return (process.env.YORKIE_E2E_RPC_ADDR || '')
    .split(',')
    .map((a) => a.trim())
    .filter(Boolean);
}

/** Why the single-server suite cannot run here, or false when it can. */
function singleServerSkipReason() {
  if (externalAddrs().length) return false;
  if (fs.existsSync(yorkieBinary()) || serversRequired()) return false;
  return `no yorkie binary at ${yorkieBinary()} (build it or set YORKIE_BIN; YORKIE_TEST_REQUIRE_SERVERS=1 makes this a failure)`;
}

/** Runs the scenarios (`list`, default all) against one freshly started server (or YORKIE_E2E_RPC_ADDR). */
function defineSingleServerSuite({ transports, title = 'single yorkie server', list } = {}) {
  defineScenarioSuite({
    title,
    transports,
    list,
    skip: singleServerSkipReason(),
    setup: async () => {
      const addrs = externalAddrs();
      if (addrs.length) return roundRobinTarget(addrs, { name: `external ${addrs.join(',')}` });
      const server = await startServer();
      const target = singleTarget(server.rpcAddr, {
        name: `server pid ${server.pid} at ${server.rpcAddr}`,
        describe: () =>
          `--- server pid ${server.pid} ${server.exitInfo ? `EXITED ${JSON.stringify(server.exitInfo)}` : 'running'}, log ${server.logFile} (tail) ---\n${server.logTail(6000)}`,
      });
      target.server = server;
      return target;
    },
    teardown: async (target) => {
      if (target.server) await target.server.stop();
    },
  });
}

module.exports = { defineScenarioSuite, defineSingleServerSuite, singleServerSkipReason, externalAddrs };
