'use strict';
// Every scenario through haproxy, with the SDK's gRPC-web transport.
require('../lib/proxied-suite').defineProxiedSuite('grpc-web');
