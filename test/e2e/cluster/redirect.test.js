'use strict';
// Redirect mode end to end: three (then four) yorkie processes with the etcd
// session store on the MongoDB-wire test server, behind haproxy that routes
// by x-session-key, and real SDK clients whose fetch echoes the key.

const test = require('node:test');
const { skipUnlessPresent } = require('./lib/processes');
const { runRedirectScenario } = require('./lib-redirect/redirect-scenario');

test(
  'redirect mode with etcd: clients follow session keys through a node join and an owner kill',
  { skip: skipUnlessPresent(['yorkie', 'ferretdb', 'etcd', 'haproxy']), timeout: 170000 },
  async (t) => {
    await runRedirectScenario({ store: 'etcd', log: (line) => t.diagnostic(line) });
  },
);
