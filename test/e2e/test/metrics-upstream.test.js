'use strict';
// Upstream Yorkie's Prometheus series after a real SDK workload: every one of
// the 19 yorkie_* series of upstream 0.7.17 is on /metrics, and the SDK's own
// user agent and calls show in them (the errors series aside: no call fails).

const assert = require('node:assert/strict');
const { describe, test } = require('node:test');
const yorkie = require('@yorkie-js/sdk');
const { startServer } = require('../lib/server');
const { singleServerSkipReason, externalAddrs } = require('../lib/suite');
const { waitFor, withTimeout } = require('../lib/wait');
const { httpGet } = require('../lib/metrics');
const { Session, singleTarget, newDocKey } = require('../lib/session');

const skip = externalAddrs().length ? 'uses YORKIE_E2E_RPC_ADDR instead of starting a server' : singleServerSkipReason();

const UPSTREAM_SERIES = [
  'yorkie_server_version',
  'yorkie_rpc_server_handled_total',
  'yorkie_rpc_server_handled_response_seconds',
  'yorkie_pushpull_response_seconds',
  'yorkie_pushpull_received_changes_total',
  'yorkie_pushpull_sent_changes_total',
  'yorkie_pushpull_received_operations_total',
  'yorkie_pushpull_sent_operations_total',
  // yorkie_pushpull_errors_total appears with the first failed exchange, as
  // upstream's does; TestUpstreamMetrics (Go) provokes one.
  'yorkie_pushpull_snapshot_duration_seconds',
  'yorkie_pushpull_snapshot_bytes_total',
  'yorkie_background_goroutines_total',
  'yorkie_stream_watch_document_stream_connections_total',
  'yorkie_stream_watch_document_events_total',
  'yorkie_stream_watch_document_event_payload_bytes_total',
  'yorkie_channel_total',
  'yorkie_channel_sessions_total',
  'yorkie_channel_sessions_top_n',
  'yorkie_user_agent_total',
];

describe("upstream's metric series", { skip }, () => {
  test('the SDK workload shows in every upstream series', async () => {
    // A late joiner far behind is answered with a snapshot, and snapshots
    // are taken in the background.
    const server = await startServer({
      logLevel: 'info',
      extraArgs: ['--snapshot-threshold', '3', '--snapshot-interval', '3'],
    });
    const session = new Session({ target: singleTarget(server.rpcAddr), transport: 'json' });
    try {
      const key = newDocKey('metrics');
      const [a, b, late] = await session.activateClients(3);
      const docA = await session.attach(a, key);
      const docB = await session.attach(b, key);
      for (let i = 0; i < 6; i++) {
        docA.update((root) => {
          root[`k${i}`] = i;
        });
      }
      await waitFor(() => docB.toSortedJSON() === docA.toSortedJSON() && docB.toSortedJSON().includes('k5'), {
        what: "b to see a's edits",
      });
      const docLate = await session.attach(late, key);
      assert.equal(docLate.toSortedJSON(), docA.toSortedJSON());
      await withTimeout(a.attach(new yorkie.Channel(`${key}.room`)), 15000, 'attach of the channel');

      const text = await httpGet(server.metricsURL);
      const names = new Set(
        text
          .split('\n')
          .filter((l) => l.startsWith('# TYPE '))
          .map((l) => l.split(' ')[2]),
      );
      const missing = UPSTREAM_SERIES.filter((n) => !names.has(n));
      assert.deepEqual(missing, [], `every upstream series is on /metrics`);
      const sample = (re) => text.split('\n').find((l) => re.test(l));
      assert.ok(sample(/^yorkie_user_agent_total\{.*grpc_method="\/yorkie\.v1\.YorkieService\/PushPullChanges".*sdk_type="@yorkie-js\/sdk".* [1-9]/),
        'the SDK is counted by its user agent');
      assert.ok(sample(/^yorkie_pushpull_received_operations_total\{.* [1-9]/), 'operations were pushed');
      assert.ok(sample(/^yorkie_pushpull_snapshot_bytes_total\{.* [1-9]/), 'the late joiner got a snapshot');
      assert.ok(sample(/^yorkie_stream_watch_document_stream_connections_total\{.* [1-9]/), 'Watch streams are open');
      assert.ok(sample(/^yorkie_channel_sessions_top_n\{channel_key=".*\.room".* 1$/), 'the channel is listed');
    } finally {
      await session.close();
      await server.stop();
    }
  });
});
