'use strict';
// The operator's flow against a running server: the `yorkie` command logs
// in, creates a project, lists it and updates its webhook and a limit; the
// real SDK then uses the project's public key.

const assert = require('node:assert/strict');
const { execFile } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const { describe, test } = require('node:test');
const { startServer, yorkieBinary } = require('../lib/server');
const { singleServerSkipReason, externalAddrs } = require('../lib/suite');
const { withTimeout } = require('../lib/wait');
const { runInSession, singleTarget, newDocKey, yorkie } = require('../lib/session');
const { waitConverged } = require('../lib/replicas');
const { ProjectAdmin } = require('../lib/project-admin');

const skip = externalAddrs().length ? 'starts its own server' : singleServerSkipReason();
const STOP_GRACE_MS = 10000;


/** Runs the yorkie command with its own config directory; resolves with stdout, rejects with stderr. */
function yorkieCLI(configDir, args) {
  return new Promise((resolve, reject) => {
    execFile(
      yorkieBinary(),
      args,
      { env: { ...process.env, XDG_CONFIG_HOME: configDir, HOME: configDir }, timeout: 60000 },
      (err, stdout, stderr) => (err ? reject(new Error(`yorkie ${args.join(' ')}: ${err.message}\n${stderr}`)) : resolve(stdout)),
    );
  });
}

/** An auth webhook that allows every call, counting them. */
async function allowingWebhook() {
  const calls = [];
  const srv = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      calls.push(body);
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ allowed: true, reason: '' }));
    });
  });
  await new Promise((resolve) => srv.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${srv.address().port}/auth`, calls, close: () => new Promise((r) => srv.close(r)) };
}

describe('the yorkie command against a running server, and the SDK with the project it made', { skip }, () => {
  test('log in, create a project, list it, update its webhook and a limit, use its public key', async () => {
    // The test's webhook listens on loopback, which the server refuses by default.
    const server = await startServer({ logLevel: 'info', extraArgs: ['--webhook-refuse-private-addresses=false'] });
    const configDir = fs.mkdtempSync(path.join(os.tmpdir(), 'yorkie-cli-'));
    const webhook = await allowingWebhook();
    const target = singleTarget(server.rpcAddr, { describe: () => `--- server log ---\n${server.logTail(3000)}` });
    try {
      const addr = new URL(server.rpcAddr).host;
      await yorkieCLI(configDir, ['login', '--username', 'admin', '--password', 'admin', '--rpc-addr', addr, '--insecure']);
      const name = `app-${process.pid}`;
      const created = JSON.parse(await yorkieCLI(configDir, ['project', 'create', name]));
      assert.equal(created.name, name);
      assert.ok(created.public_key && created.secret_key, 'the project has its keys');
      const listed = JSON.parse(await yorkieCLI(configDir, ['project', 'ls', '--output', 'json']));
      assert.deepEqual(
        listed.map((p) => p.name),
        ['default', name],
      );
      const table = await yorkieCLI(configDir, ['project', 'ls']);
      assert.match(table, new RegExp(`^\\s*${name}\\s+${created.public_key}`, 'm'), `the table lists the project:\n${table}`);

      await runInSession({ target, transport: 'json' }, async (session) => {
        // Two clients with the project's public key share its documents.
        const key = newDocKey('shared');
        const [a, b] = await session.activateClients(2, { apiKey: created.public_key });
        const docA = await session.attach(a, key);
        const docB = await session.attach(b, key);
        docA.update((root) => {
          root.project = name;
        });
        await waitConverged([docA, docB], { expect: (json) => json.project === name });

        // The webhook and a limit, as an operator changes them later.
        const updated = JSON.parse(
          await yorkieCLI(configDir, [
            'project', 'update', name,
            '--auth-webhook-url', webhook.url,
            '--auth-webhook-method-add', 'AttachDocument',
            '--max-subscribers-per-document', '10',
          ]),
        );
        assert.equal(updated.auth_webhook_url, webhook.url);
        assert.deepEqual(updated.auth_webhook_methods, ['AttachDocument']);
        // Upstream's CLI prints the fields its project type has no JSON name for under their Go names.
        assert.equal(updated.MaxSubscribersPerDocument, 10);
        const admin = await ProjectAdmin.logIn(server.rpcAddr);
        const stored = await admin.project(name);
        assert.equal(stored.authWebhookUrl, webhook.url, 'the admin API reads the update back');
        assert.equal(stored.publicKey, created.public_key, 'the keys stay');

        // With a webhook that allows everything, the project's clients go on.
        const c = await session.activateClient({ apiKey: created.public_key });
        const docC = await session.attach(c, key);
        await waitConverged([docA, docC], { expect: (json) => json.project === name });
      });
    } finally {
      await webhook.close();
      fs.rmSync(configDir, { recursive: true, force: true });
      await withTimeout(server.stop({ graceMs: STOP_GRACE_MS }), STOP_GRACE_MS + 5000, 'server stop');
    }
  });

  test('a client with an unknown API key is refused, not found', async () => {
    const server = await startServer({ logLevel: 'info' });
    const target = singleTarget(server.rpcAddr, { describe: () => `--- server log ---\n${server.logTail(3000)}` });
    try {
      await runInSession({ target, transport: 'json' }, async (session) => {
        const unknown = session.newClient({ apiKey: 'not-a-project-key' });
        const err = await unknown.activate().then(
          () => assert.fail('a client with an unknown key was activated'),
          (e) => e,
        );
        assert.equal(err.code, 5 /* not_found */, `code of ${err}`);
        assert.ok(!unknown.isActive(), 'the client stays inactive');
      });
    } finally {
      await withTimeout(server.stop({ graceMs: STOP_GRACE_MS }), STOP_GRACE_MS + 5000, 'server stop');
    }
  });

  test("a project's documents are its own: the same key without the project's key is another document", async () => {
    const server = await startServer({ logLevel: 'info' });
    const target = singleTarget(server.rpcAddr, { describe: () => `--- server log ---\n${server.logTail(3000)}` });
    try {
      const admin = await ProjectAdmin.logIn(server.rpcAddr);
      const { project } = await admin.call('CreateProject', { name: `keys-${process.pid}` });
      await runInSession({ target, transport: 'json' }, async (session) => {
        const key = newDocKey('shared');
        const inProject = await session.activateClient({ apiKey: project.publicKey });
        const doc = await session.attach(inProject, key);
        doc.update((root) => {
          root.secret = 'of the project';
        });
        await waitConverged([doc], { expect: (json) => json.secret !== undefined });
        const outside = await session.activateClient();
        const other = await session.attach(outside, key);
        assert.equal(other.toSortedJSON(), '{}', "the default project's document of the same key is another one");
      });
    } finally {
      await withTimeout(server.stop({ graceMs: STOP_GRACE_MS }), STOP_GRACE_MS + 5000, 'server stop');
    }
  });

  test('an update through the CLI takes effect: a limit on the default project holds for its clients', async () => {
    const server = await startServer({ logLevel: 'info' });
    const configDir = fs.mkdtempSync(path.join(os.tmpdir(), 'yorkie-cli-'));
    const target = singleTarget(server.rpcAddr, { describe: () => `--- server log ---\n${server.logTail(3000)}` });
    try {
      const addr = new URL(server.rpcAddr).host;
      await yorkieCLI(configDir, ['login', '--username', 'admin', '--password', 'admin', '--rpc-addr', addr, '--insecure']);
      await yorkieCLI(configDir, ['project', 'update', 'default', '--max-attachments-per-document', '1']);
      await runInSession({ target, transport: 'json' }, async (session) => {
        const [a, b] = await session.activateClients(2);
        const key = newDocKey('cli-limit');
        await session.attach(a, key);
        const err = await b.attach(new yorkie.Document(key)).then(
          () => assert.fail('the second attach passed the limit set through the CLI'),
          (e) => e,
        );
        assert.equal(err.code, 8 /* resource_exhausted */, `code of ${err}`);
      });
    } finally {
      fs.rmSync(configDir, { recursive: true, force: true });
      await withTimeout(server.stop({ graceMs: STOP_GRACE_MS }), STOP_GRACE_MS + 5000, 'server stop');
    }
  });
});
