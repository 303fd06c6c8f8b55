'use strict';
// Projects as SDK clients meet them: two projects created through the admin
// API keep the same document key apart, an unknown API key is refused with
// the code the SDK acts on, and with the default project turned off a call
// without a key is refused while a project's key works.

const assert = require('node:assert/strict');
const { describe, test, before, after } = require('node:test');
const { startServer } = require('../lib/server');
const { singleServerSkipReason, externalAddrs } = require('../lib/suite');
const { waitFor, withTimeout } = require('../lib/wait');
const { Session, singleTarget, newDocKey, yorkie } = require('../lib/session');
const { waitConverged } = require('../lib/replicas');
const { projectDocumentView, documentView, logIn } = require('../lib/admin');
const { twoProjects, assertProjectsApart, yorkieCode } = require('../lib/projects');

const skip = externalAddrs().length ? 'starts servers with its own flags' : singleServerSkipReason();

/** Activates a client with the options and returns the error it was refused with. */
async function refusedActivation(rpcAddr, opts) {
  const client = new yorkie.Client({ rpcAddr, ...opts });
  try {
    await withTimeout(client.activate(), 15000, 'activate');
  } catch (err) {
    return err;
  }
  await client.deactivate();
  throw new Error(`activation with ${JSON.stringify(opts)} succeeded`);
}

describe('projects', { skip }, () => {
  let server;
  let closed;
  let projects;
  let closedProjects;
  before(async () => {
    [server, closed] = await Promise.all([
      startServer({ logLevel: 'info' }),
      startServer({ logLevel: 'info', extraArgs: ['--backend-use-default-project=false'] }),
    ]);
    [projects, closedProjects] = await Promise.all([twoProjects(server.rpcAddr), twoProjects(closed.rpcAddr)]);
  });
  after(async () => {
    await Promise.all([server && server.stop(), closed && closed.stop()]);
  });
  const viewBase = () => `http://127.0.0.1:${server.profilingPort}`;
  const target = (srv) => singleTarget(srv.rpcAddr, { describe: () => srv.logTail(3000) });

  for (const transport of ['json', 'grpc-web']) {
    test(`two projects with the same document key never see each other's data (${transport})`, async () => {
      await assertProjectsApart({
        target: target(server),
        transport,
        keyA: projects.a.publicKey,
        keyB: projects.b.publicKey,
        docKey: `shared-${transport}`,
      });
    });
  }

  test('the operators\' view reads a project\'s document by project name or ID, the default project without one', async () => {
    const key = newDocKey('viewed');
    const s = new Session({ target: target(server), clientOptions: { apiKey: projects.a.publicKey } });
    const plain = new Session({ target: target(server) });
    try {
      const doc = await s.attach(await s.activateClient(), key);
      doc.update((root) => {
        root.in = 'a';
      });
      const def = await plain.attach(await plain.activateClient(), key);
      def.update((root) => {
        root.in = 'default';
      });
      await waitConverged([doc], { expect: (j) => j.in === 'a' });
      const token = await logIn(server.rpcAddr);
      const byName = await waitFor(async () => {
        const v = await projectDocumentView(viewBase(), projects.a.name, key, { token });
        return v.root && v.root.in === 'a' ? v : null;
      });
      assert.equal(byName.project_id, projects.a.id);
      const byID = await projectDocumentView(viewBase(), projects.a.id, key, { token });
      assert.equal(byID.id, byName.id);
      const inDefault = await waitFor(async () => {
        const v = await documentView(viewBase(), key, { token });
        return v.root && v.root.in === 'default' ? v : null;
      });
      assert.notEqual(inDefault.id, byName.id, 'the default project has a document of its own');
      await assert.rejects(projectDocumentView(viewBase(), projects.b.name, key, { token }), (err) => err.status === 404);
    } finally {
      await Promise.all([s.close(), plain.close()]);
    }
  });

  test('an unknown API key is refused with ErrProjectNotFound, as upstream', async () => {
    const err = await refusedActivation(server.rpcAddr, { apiKey: 'not-a-project-key' });
    assert.equal(yorkieCode(err), 'ErrProjectNotFound', `refusal: ${err}`);
  });

  test('with the default project off, no key is refused and a project key works', async () => {
    const err = await refusedActivation(closed.rpcAddr, {});
    assert.equal(yorkieCode(err), 'ErrUnauthenticated', `refusal: ${err}`);
    const s = new Session({ target: target(closed), clientOptions: { apiKey: closedProjects.a.publicKey } });
    try {
      const [c1, c2] = await s.activateClients(2);
      const key = newDocKey('closed');
      const d1 = await s.attach(c1, key);
      const d2 = await s.attach(c2, key);
      d1.update((root) => {
        root.v = 1;
      });
      await waitConverged([d1, d2], { expect: (j) => j.v === 1 });
      s.assertTransportUsed();
    } finally {
      await s.close();
    }
  });
});
