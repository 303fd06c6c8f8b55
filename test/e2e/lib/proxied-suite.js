'use strict';
// Every scenario against one server reached through haproxy (HTTP/1.1,
// balance by x-shard-key): streams and unary calls must pass a proxy
// unchanged. Test files call this once per transport, so they run in parallel.

const { defineScenarioSuite, singleServerSkipReason, externalAddrs } = require('./suite');
const { startServer, serversRequired } = require('./server');
const { startHAProxy, haproxyBinary } = require('./haproxy');
const { singleTarget } = require('./session');

function skipReason() {
  if (externalAddrs().length) return 'uses YORKIE_E2E_RPC_ADDR instead of starting servers';
  const noServer = singleServerSkipReason();
  if (noServer) return noServer;
  if (!haproxyBinary() && !serversRequired()) {
    return 'haproxy is not installed (YORKIE_TEST_REQUIRE_SERVERS=1 makes this a failure)';
  }
  return false;
}

async function setUpProxiedServer() {
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
      `--- server pid ${server.pid} ${server.exitInfo ? `EXITED ${JSON.stringify(server.exitInfo)}` : 'running'} (log tail) ---\n` +
      `${server.logTail(5000)}\n--- haproxy pid ${proxy.pid} (log tail) ---\n${proxy.logTail(2000)}`,
  });
  target.stopAll = async () => {
    await proxy.stop();
    await server.stop();
  };
  return target;
}

function defineProxiedSuite(transport) {
  defineScenarioSuite({
    title: `single server behind haproxy, ${transport}`,
    transports: [transport],
    skip: skipReason(),
    setup: setUpProxiedServer,
    teardown: async (target) => target.stopAll(),
  });
}

module.exports = { defineProxiedSuite, setUpProxiedServer };
