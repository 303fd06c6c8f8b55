'use strict';
// Every scenario against one server, with the SDK's default Connect JSON transport.
require('../lib/suite').defineSingleServerSuite({ title: 'single server, Connect JSON', transports: ['json'] });
