'use strict';
// Entry point for suites built on these helpers (e.g. a cluster suite).

module.exports = {
  ...require('./server'),
  ...require('./session'),
  ...require('./replicas'),
  ...require('./wait'),
  ...require('./scenarios'),
  ...require('./suite'),
  ...require('./admin'),
  diagnostics: require('./diagnostics'),
};
