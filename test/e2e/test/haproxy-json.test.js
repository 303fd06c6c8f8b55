'use strict';
// Every scenario through haproxy, with the SDK's default Connect JSON transport.
require('../lib/proxied-suite').defineProxiedSuite('json');
