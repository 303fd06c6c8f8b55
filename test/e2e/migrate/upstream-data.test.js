'use strict';
// A server running on a database imported from upstream Yorkie
// (yorkie migrate upstream) serves what upstream served: every document of
// the data set reads, for a fresh SDK client, as expected.json says; the
// projects' API keys pick their projects and keep them apart; the admin
// account logs in with its upstream password.
//
// Run by test/multiprocess (TestMigrateUpstreamDataSet), which loads the
// data set, imports it with the yorkie binary and starts the server:
//   YORKIE_MIGRATE_RPC_ADDR   the server's RPC address (http://host:port)
//   YORKIE_MIGRATE_EXPECTED   the data set's expected.json
//   YORKIE_MIGRATE_EXTRA      JSON {docKey: {key: value}}: root keys written
//                             after the import by the recorded clients

const assert = require('node:assert/strict');
const fs = require('node:fs');
const { describe, test, before } = require('node:test');
const yorkie = require('@yorkie-js/sdk');
const { withTimeout } = require('../lib/wait');
const { connectCall } = require('../lib/project-admin');

const rpcAddr = process.env.YORKIE_MIGRATE_RPC_ADDR;
const expectedPath = process.env.YORKIE_MIGRATE_EXPECTED;
const skip = rpcAddr && expectedPath ? false : 'run by test/multiprocess TestMigrateUpstreamDataSet';
const STEP_MS = 20000;

/** Attaches key with a fresh client of the API key and returns its sorted JSON, parsed. */
async function readFresh(apiKey, key) {
  const client = new yorkie.Client({ rpcAddr, apiKey });
  await withTimeout(client.activate(), STEP_MS, `activate for ${key}`);
  try {
    const doc = new yorkie.Document(key);
    await withTimeout(client.attach(doc, { syncMode: yorkie.SyncMode.Manual }), STEP_MS, `attach ${key}`);
    const json = JSON.parse(doc.toSortedJSON());
    await withTimeout(client.detach(doc), STEP_MS, `detach ${key}`);
    return json;
  } finally {
    await client.deactivate();
  }
}

describe('an imported upstream database', { skip }, () => {
  let expected;
  let keyOf;
  let extra;
  before(() => {
    expected = JSON.parse(fs.readFileSync(expectedPath, 'utf8'));
    keyOf = Object.fromEntries(expected.projects.map((p) => [p.name, p.public_key]));
    extra = JSON.parse(process.env.YORKIE_MIGRATE_EXTRA || '{}');
  });

  test('every document reads as upstream served it, removed ones empty', async () => {
    for (const d of expected.documents) {
      const got = await readFresh(keyOf[d.project], d.key);
      const want = d.removed ? {} : { ...JSON.parse(d.expected_json), ...(extra[d.key] || {}) };
      assert.deepEqual(got, want, `document ${d.project}/${d.key}`);
    }
  });

  test("the projects' API keys pick their own projects and keep them apart", async () => {
    const inDefault = expected.documents.find((d) => d.project === 'default' && !d.removed);
    const other = expected.projects.find((p) => p.name !== 'default');
    assert.deepEqual(await readFresh(other.public_key, inDefault.key), {}, `${inDefault.key} seen from ${other.name}`);
    const client = new yorkie.Client({ rpcAddr, apiKey: 'not-a-project-key' });
    await assert.rejects(withTimeout(client.activate(), STEP_MS, 'activate with an unknown key'));
  });

  test('the admin account logs in with its upstream password and lists its projects', async () => {
    const user = expected.users[0];
    const bad = await connectCall(rpcAddr, 'AdminService', 'LogIn', { username: user.username, password: `${user.password}-wrong` });
    assert.notEqual(bad.status, 200, 'a wrong password is refused');
    const { status, body } = await connectCall(rpcAddr, 'AdminService', 'LogIn', { username: user.username, password: user.password });
    assert.equal(status, 200, JSON.stringify(body));
    const list = await connectCall(rpcAddr, 'AdminService', 'ListProjects', {}, body.token);
    assert.equal(list.status, 200, JSON.stringify(list.body));
    const got = Object.fromEntries(list.body.projects.map((p) => [p.name, [p.id, p.publicKey, p.secretKey]]));
    for (const p of expected.projects) {
      assert.deepEqual(got[p.name], [p.id, p.public_key, p.secret_key], `project ${p.name}`);
    }
  });
});
