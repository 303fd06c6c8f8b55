'use strict';
// The redirect-mode scenario of redirect.test.js with the Redis session store.

const test = require('node:test');
const { skipUnlessPresent } = require('./lib/processes');
const { runRedirectScenario } = require('./lib-redirect/redirect-scenario');

test(
  'redirect mode with redis: clients follow session keys through a node join and an owner kill',
  { skip: skipUnlessPresent(['yorkie', 'ferretdb', 'redis', 'haproxy']), timeout: 170000 },
  async (t) => {
    await runRedirectScenario({ store: 'redis', log: (line) => t.diagnostic(line) });
  },
);
