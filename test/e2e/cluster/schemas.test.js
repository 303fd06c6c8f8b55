'use strict';
// Schemas in a 3-node cluster (one MongoDB-wire database, an etcd session
// store), in forward and redirect mode: a schema created through one node's
// admin API binds a document on attach wherever the client arrives, the
// rules come back with every attach, an unknown schema is refused, and the
// owner refuses a change that breaks the rules sent by a client that skips
// the SDK's check, whichever node it reached; tree rules likewise. The
// admin's UpdateDocument, sent to any node, is applied by the owner and
// reaches the SDK clients.

const test = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const { installSessionKeyFetch } = require('../../../clients/js/session-key');
const { skipUnlessPresent, startSessionStore, startFerretDB } = require('./lib/processes');
const { NodeSet } = require('./lib-redirect/nodes');
const { startRoutingHAProxy } = require('./lib-redirect/haproxy');
const { yorkie } = require('../lib/session');
const { withTimeout } = require('../lib/wait');
const { connectCall } = require('../lib/project-admin');
const { yorkieCode } = require('../lib/projects');

const BODY = 'type Document = { title: string; };';

for (const mode of ['forward', 'redirect']) {
  test(
    `schemas bind, answer their rules and are enforced by the owner in a 3-node cluster (${mode} mode)`,
    { skip: skipUnlessPresent(['yorkie', 'ferretdb', 'etcd', 'haproxy']), timeout: 170000 },
    async () => {
      const cleanups = [];
      const clients = [];
      try {
        const store = await startSessionStore('etcd');
        cleanups.push(() => store.stop());
        const db = await startFerretDB();
        cleanups.push(() => db.stop());
        const nodes = new NodeSet({
          args: [
            '--affinity-mode', mode, ...store.args, '--node-ttl', '2s',
            '--mongo-connection-uri', db.uri, '--mongo-database', `schemas-${mode}-${crypto.randomBytes(4).toString('hex')}`,
          ],
        });
        cleanups.push(() => nodes.stopAll());
        for (let i = 0; i < 3; i++) await nodes.add();
        let addrs;
        if (mode === 'forward') {
          addrs = nodes.nodes.map((n) => n.rpcAddr);
        } else {
          const lb = await startRoutingHAProxy({ nodes: nodes.nodes.map((n) => n.hostPort) });
          cleanups.push(() => lb.stop());
          const uninstall = installSessionKeyFetch();
          cleanups.push(() => uninstall());
          addrs = [lb.addr, lb.addr, lb.addr];
        }

        const admin = nodes.nodes[1].rpcAddr;
        const login = await connectCall(admin, 'AdminService', 'LogIn', { username: 'admin', password: 'admin' });
        const created = await connectCall(admin, 'AdminService', 'CreateProject', { name: `schemas-${mode}` }, login.body.token);
        assert.equal(created.status, 200, JSON.stringify(created.body));
        const project = created.body.project;
        const schema = await connectCall(admin, 'AdminService', 'CreateSchema', {
          schemaName: 'note', schemaVersion: 1, schemaBody: BODY, rules: [{ path: '$.title', type: 'string' }],
        }, null, `API-Key ${project.secretKey}`);
        assert.equal(schema.status, 200, JSON.stringify(schema.body));

        const client = async (i) => {
          const c = new yorkie.Client({ rpcAddr: addrs[i], apiKey: project.publicKey });
          await withTimeout(c.activate(), 15000, 'activate');
          clients.push(c);
          return c;
        };
        const attach = async (c, opts = {}) => {
          const doc = new yorkie.Document('note-doc');
          await withTimeout(c.attach(doc, { syncMode: yorkie.SyncMode.Manual, ...opts }), 20000, 'attach');
          return doc;
        };

        const unknown = await client(2);
        const err = await withTimeout(unknown.attach(new yorkie.Document('other-doc'), { schema: 'nothing@1' }), 20000, 'attach')
          .then(() => assert.fail('attach with an unknown schema succeeded'), (e) => e);
        assert.equal(yorkieCode(err), 'ErrSchemaNotFound', String(err));

        const a = await client(0);
        const docA = await attach(a, { schema: 'note@1' });
        assert.deepEqual(docA.getSchemaRules().map((r) => r.path), ['$.title']);
        assert.throws(() => docA.update((root) => { root.title = 1; }), (e) => e.code === 'ErrDocumentSchemaValidationFailed');
        docA.update((root) => { root.title = 'ok'; });
        await withTimeout(a.sync(docA), 20000, 'sync');

        const b = await client(2);
        const docB = await attach(b);
        assert.deepEqual(docB.getSchemaRules().map((r) => r.path), ['$.title'], 'the rules come with an attach at any node');
        docB.setSchemaRules([]);
        docB.update((root) => { root.title = 2; });
        const refused = await withTimeout(b.sync(docB), 20000, 'sync').then(() => assert.fail('the owner stored a change that breaks the rules'), (e) => e);
        assert.equal(yorkieCode(refused), 'ErrSchemaValidationFailed', String(refused));

        const c = await client(1);
        const docC = await attach(c);
        assert.equal(docC.toSortedJSON(), '{"title":"ok"}');

        // UpdateDocument through a node the clients may not use: the owner
        // applies it (ClusterService), the SDK pulls the new root, and the
        // refusals change nothing.
        const update = (body) => connectCall(nodes.nodes[0].rpcAddr, 'AdminService', 'UpdateDocument',
          { documentKey: 'note-doc', ...body }, null, `API-Key ${project.secretKey}`);
        let res = await update({ schemaKey: 'note@1' });
        assert.equal(res.status, 400, JSON.stringify(res.body));
        assert.match(JSON.stringify(res.body), /ErrDocumentAttached/);
        res = await update({ root: '{"title":Int(1)}' });
        assert.equal(res.status, 400, JSON.stringify(res.body));
        assert.match(JSON.stringify(res.body), /ErrSchemaValidationFailed/);
        res = await update({ root: '{"title":"from the admin"}' });
        assert.equal(res.status, 200, JSON.stringify(res.body));
        assert.equal(JSON.parse(res.body.document.root).title, 'from the admin');
        await withTimeout(c.sync(docC), 20000, 'sync after UpdateDocument');
        assert.equal(docC.toSortedJSON(), '{"title":"from the admin"}');
        await withTimeout(a.sync(docA), 20000, 'sync a after UpdateDocument');
        assert.equal(docA.toSortedJSON(), '{"title":"from the admin"}');

        // Tree rules: the SDK refuses a local edit that breaks them, and the
        // owner refuses one pushed without the SDK's check.
        const treeRules = [
          { path: '$', type: 'object' },
          {
            path: '$.content', type: 'yorkie.Tree', treeNodes: [
              { nodeType: 'doc', content: 'paragraph+' }, { nodeType: 'paragraph', content: 'text*' }, { nodeType: 'text' },
            ],
          },
        ];
        const treeSchema = await connectCall(admin, 'AdminService', 'CreateSchema', {
          schemaName: 'page', schemaVersion: 1, rules: treeRules,
          schemaBody: 'type Document = { content: yorkie.Tree<{ doc: { content: "paragraph+"; }; paragraph: { content: "text*"; }; text: {}; }>; };',
        }, null, `API-Key ${project.secretKey}`);
        assert.equal(treeSchema.status, 200, JSON.stringify(treeSchema.body));
        const paragraph = (text) => ({ type: 'paragraph', children: [{ type: 'text', value: text }] });
        const pageOf = async (c, opts = {}) => {
          const doc = new yorkie.Document('page-doc');
          await withTimeout(c.attach(doc, { syncMode: yorkie.SyncMode.Manual, ...opts }), 20000, 'attach page');
          return doc;
        };
        const p1 = await pageOf(a, { schema: 'page@1' });
        p1.update((root) => {
          root.content = new yorkie.Tree({ type: 'doc', children: [paragraph('a')] });
        });
        assert.throws(() => p1.update((root) => {
          root.content.edit(0, 0, { type: 'heading', children: [{ type: 'text', value: 'h' }] });
        }), (e) => e.code === 'ErrDocumentSchemaValidationFailed');
        await withTimeout(a.sync(p1), 20000, 'sync page');
        const p2 = await pageOf(c);
        assert.equal(p2.getSchemaRules().length, 2, 'the tree rules come with an attach at any node');
        p2.setSchemaRules([]);
        p2.update((root) => {
          root.content.edit(3, 3, { type: 'heading', children: [{ type: 'text', value: 'h' }] });
        });
        const treeRefused = await withTimeout(c.sync(p2), 20000, 'sync page 2').then(() => assert.fail('the owner stored a tree node the rules do not know'), (e) => e);
        assert.equal(yorkieCode(treeRefused), 'ErrSchemaValidationFailed', String(treeRefused));
      } finally {
        await Promise.all(clients.map((cl) => cl.deactivate().catch(() => {})));
        for (const c of cleanups.reverse()) {
          try {
            await c();
          } catch {
            // best effort
          }
        }
      }
    },
  );
}
