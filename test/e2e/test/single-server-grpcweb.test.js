'use strict';
// Every scenario against one server, with the SDK's gRPC-web (binary) transport.
require('../lib/suite').defineSingleServerSuite({ title: 'single server, gRPC-web', transports: ['grpc-web'] });
