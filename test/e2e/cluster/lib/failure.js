'use strict';
// What every cluster test does when it fails and when it ends: the error
// carries what the SDK saw on the wire and the recent output of the nodes and
// of haproxy, and whatever the test started is stopped, last first.

/**
 * Returns err with the SDK's wire log, the nodes' output and haproxy's added
 * to its message; each of session, cluster and lb may be unset.
 */
function explainFailure(err, { session, cluster, lb }) {
  const parts = [err.message];
  if (session) parts.push(`--- SDK wire ---\n${session.report()}`);
  if (cluster) parts.push(cluster.describe(2500));
  if (lb) parts.push(`--- haproxy ---\n${lb.logTail(1500)}`);
  err.message = parts.join('\n');
  return err;
}

/** Runs the cleanups, last first; one failing does not stop the others. */
async function runCleanups(cleanups) {
  for (const c of cleanups.reverse()) await c().catch(() => {});
}

module.exports = { explainFailure, runCleanups };
