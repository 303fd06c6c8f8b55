'use strict';
// Every scenario against one server reached through haproxy (HTTP/1.1,
// balance by x-shard-key), with both transports: streams and unary calls
// must pass a proxy unchanged.

const { defineScenarioSuite, singleServerSkipReason, externalAddrs } = require('../lib/suite');
const { startServer, serversRequired } = require('../lib/server');
const { startHAProxy, haproxyBinary } = require('../lib/haproxy');
const { singleTarget } = require('../lib/session');

function skipReason() {
  if (externalAddrs().length) return 'uses YORKIE_E2E_RPC_ADDR instead of starting servers';
  const noServer = singleServerSkipReason();
  if (noServer) return noServer;
  if (!haproxyBinary() && !serversRequired()) return 'haproxy is not installed (YORKIE_TEST_REQUIRE_SERVERS=1 makes this a failure)';
  return false;
}

defineScenarioSuite({
  title: 'single server behind haproxy',
  skip: skipReason(),
  setup: async () => {
    const server = await startServer();
    let proxy;
    try {
      proxy = await startHAProxy({ servers: [server.rpcAddr] });
    } catch (err) {
      await server.stop();
      throw err;
    }
    const target = singleTarget(proxy.addr, {
      name: `haproxy ${proxy.addr} -> server pid ${server.pid}`,
      describe: () =>
        `--- server pid ${server.pid} ${server.exitInfo ? `EXITED ${JSON.stringify(server.exitInfo)}` : 'running'} (log tail) ---\n${server.logTail(5000)}\n--- haproxy pid ${proxy.pid} (log tail) ---\n${proxy.logTail(2000)}`,
    });
    target.stopAll = async () => {
      await proxy.stop();
      await server.stop();
    };
    return target;
  },
  teardown: async (target) => target.stopAll(),
});
