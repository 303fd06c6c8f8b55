'use strict';
// Document schemas as the real SDK meets them: schemas created through the
// AdminService from a body that @yorkie-js/schema turns into rules (as the
// dashboard does), attach with the `schema` option, the SDK refusing a local
// update that breaks the rules, the server refusing a pushed change that
// breaks them when the SDK's check is skipped, and concurrent tree edits the
// SDK accepted one by one never refused, nor undo and redo, which the SDK
// does not check.

const assert = require('node:assert/strict');
const { describe, test, before, after } = require('node:test');
const { startServer } = require('../lib/server');
const { singleServerSkipReason, externalAddrs } = require('../lib/suite');
const { withTimeout } = require('../lib/wait');
const { newDocKey, yorkie } = require('../lib/session');
const { connectCall } = require('../lib/project-admin');
const { yorkieCode } = require('../lib/projects');

const skip = externalAddrs().length ? 'starts a server with its own flags' : singleServerSkipReason();

const NOTE_BODY = `type Document = {
  title: string;
  content: yorkie.Tree<{
    doc: { content: "paragraph+"; };
    paragraph: { content: "text*"; };
    text: {};
  }>;
};`;

/** The rules @yorkie-js/schema builds from a body, in the AdminService's form. */
async function rulesOf(body) {
  const { buildRuleset, validate } = await import('@yorkie-js/schema/dist/yorkie-js-schema.es.js');
  assert.deepEqual(validate(body).errors, [], 'the schema body is valid for @yorkie-js/schema');
  return buildRuleset(body).map((r) => ({
    path: r.path,
    type: r.type,
    ...(r.treeNodes ? { treeNodes: r.treeNodes.map((n) => ({ nodeType: n.nodeType, content: n.content, marks: n.marks, group: n.group })) } : {}),
  }));
}

/** One AdminService call with a project's secret key; resolves with { status, body }. */
function schemaCall(rpcAddr, secretKey, method, message) {
  return connectCall(rpcAddr, 'AdminService', method, message, null, `API-Key ${secretKey}`);
}

/** The rejection of a promise (fails when it resolves). */
async function rejection(promise, what) {
  try {
    await withTimeout(promise, 15000, what);
  } catch (err) {
    return err;
  }
  assert.fail(`${what} succeeded`);
}

function paragraph(text) {
  return { type: 'paragraph', children: [{ type: 'text', value: text }] };
}

describe('document schemas', { skip }, () => {
  let server;
  let project;
  const clients = [];
  before(async () => {
    server = await startServer({ logLevel: 'info' });
    const login = await connectCall(server.rpcAddr, 'AdminService', 'LogIn', { username: 'admin', password: 'admin' });
    assert.equal(login.status, 200);
    const created = await connectCall(server.rpcAddr, 'AdminService', 'CreateProject', { name: 'schemas-e2e' }, login.body.token);
    assert.equal(created.status, 200, JSON.stringify(created.body));
    project = created.body.project;
    const res = await schemaCall(server.rpcAddr, project.secretKey, 'CreateSchema', {
      schemaName: 'note', schemaVersion: 1, schemaBody: NOTE_BODY, rules: await rulesOf(NOTE_BODY),
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
  });
  after(async () => {
    await Promise.all(clients.map((c) => c.deactivate().catch(() => {})));
    if (server) await server.stop();
  });

  async function newClient() {
    const client = new yorkie.Client({ rpcAddr: server.rpcAddr, apiKey: project.publicKey });
    await withTimeout(client.activate(), 15000, 'activate');
    clients.push(client);
    return client;
  }

  /** A document attached in manual sync mode with the options, holding a valid note. */
  async function attachedNote(client, key, opts = {}) {
    const doc = new yorkie.Document(key);
    await withTimeout(client.attach(doc, { syncMode: yorkie.SyncMode.Manual, ...opts }), 15000, 'attach');
    return doc;
  }

  test('attach with an unknown schema is refused as upstream refuses it', async () => {
    const client = await newClient();
    const err = await rejection(client.attach(new yorkie.Document(newDocKey('unknown')), { schema: 'nothing@1' }), 'attach');
    assert.equal(yorkieCode(err), 'ErrSchemaNotFound', String(err));
  });

  test('attach with a known schema gives the SDK the rules, and it refuses local updates that break them', async () => {
    const client = await newClient();
    const doc = await attachedNote(client, newDocKey('note'), { schema: 'note@1' });
    const rules = doc.getSchemaRules();
    assert.deepEqual(rules.map((r) => `${r.path}:${r.type}`), ['$:object', '$.title:string', '$.content:yorkie.Tree']);

    // An update that leaves the document without the required fields.
    assert.throws(() => doc.update((root) => { root.other = 1; }), (e) => e.code === 'ErrDocumentSchemaValidationFailed');
    doc.update((root) => {
      root.title = 'hello';
      root.content = new yorkie.Tree({ type: 'doc', children: [paragraph('a')] });
    });
    assert.throws(() => doc.update((root) => { root.title = 42; }), (e) => e.code === 'ErrDocumentSchemaValidationFailed');
    // Tree rules: an unknown node type, and a doc without paragraphs.
    assert.throws(() => doc.update((root) => {
      root.content.edit(0, 0, { type: 'heading', children: [{ type: 'text', value: 'h' }] });
    }), (e) => e.code === 'ErrDocumentSchemaValidationFailed');
    assert.throws(() => doc.update((root) => { root.content.edit(0, 3); }), (e) => e.code === 'ErrDocumentSchemaValidationFailed');
    await withTimeout(client.sync(doc), 15000, 'sync');
    assert.equal(doc.toSortedJSON(), '{"content":{"type":"doc","children":[{"type":"paragraph","children":[{"type":"text","value":"a"}]}]},"title":"hello"}');

    // In use: the schema cannot be removed.
    const removed = await schemaCall(server.rpcAddr, project.secretKey, 'RemoveSchema', { schemaName: 'note', version: 1 });
    assert.equal(removed.status, 400, JSON.stringify(removed.body));
    assert.equal(removed.body.code, 'failed_precondition');
  });

  test('the server refuses pushed changes that break the rules when the SDK check is skipped', async () => {
    const key = newDocKey('bypass');
    const a = await newClient();
    const docA = await attachedNote(a, key, { schema: 'note@1' });
    docA.update((root) => {
      root.title = 'ok';
      root.content = new yorkie.Tree({ type: 'doc', children: [paragraph('a')] });
    });
    await withTimeout(a.sync(docA), 15000, 'sync');

    // A second client without the schema option still gets the document's
    // rules; it drops them, as a client that skips the check would.
    const b = await newClient();
    const docB = await attachedNote(b, key);
    assert.equal(docB.getSchemaRules().length, 3, 'the document\'s rules come with the attach');
    docB.setSchemaRules([]);
    docB.update((root) => { root.title = 42; });
    let err = await rejection(b.sync(docB), 'sync of a change that breaks the rules');
    assert.equal(yorkieCode(err), 'ErrSchemaValidationFailed', String(err));

    const c = await newClient();
    const docC = await attachedNote(c, key);
    docC.setSchemaRules([]);
    docC.update((root) => {
      root.content.edit(3, 3, { type: 'heading', children: [{ type: 'text', value: 'h' }] });
    });
    err = await rejection(c.sync(docC), 'sync of a tree node the rules do not know');
    assert.equal(yorkieCode(err), 'ErrSchemaValidationFailed', String(err));

    // Nothing of the refused packs was stored.
    const d = await newClient();
    const docD = await attachedNote(d, key);
    assert.equal(docD.toSortedJSON(), docA.toSortedJSON());
    assert.equal(JSON.parse(docD.toSortedJSON()).title, 'ok');
  });

  test('concurrent tree edits the SDK accepted one by one are never refused', async () => {
    const key = newDocKey('concurrent');
    const a = await newClient();
    const docA = await attachedNote(a, key, { schema: 'note@1' });
    docA.update((root) => {
      root.title = 't';
      root.content = new yorkie.Tree({ type: 'doc', children: [paragraph('a'), paragraph('b')] });
    });
    await withTimeout(a.sync(docA), 15000, 'sync');
    const b = await newClient();
    const docB = await attachedNote(b, key, { schema: 'note@1' });
    assert.equal(docB.toSortedJSON(), docA.toSortedJSON());

    // Each removes a different paragraph: valid on each replica, none left
    // once merged.
    docA.update((root) => root.content.edit(0, 3));
    docB.update((root) => root.content.edit(3, 6));
    await withTimeout(a.sync(docA), 15000, 'sync a');
    await withTimeout(b.sync(docB), 15000, 'sync b');
    await withTimeout(a.sync(docA), 15000, 'sync a again');
    assert.equal(docA.toSortedJSON(), docB.toSortedJSON());
    assert.deepEqual(JSON.parse(docA.toSortedJSON()).content.children, []);
  });

  test('undo and redo, which the SDK applies without checking the rules, are never refused', async () => {
    const key = newDocKey('undo');
    const a = await newClient();
    const docA = await attachedNote(a, key, { schema: 'note@1' });
    docA.update((root) => {
      root.title = 'first';
      root.content = new yorkie.Tree({ type: 'doc', children: [paragraph('a')] });
    });
    docA.update((root) => { root.title = 'second'; });
    docA.update((root) => root.content.edit(3, 3, paragraph('b')));
    await withTimeout(a.sync(docA), 15000, 'sync');
    const full = docA.toSortedJSON();

    // Back to the empty document, which breaks the rules (title and
    // content are required): the SDK takes every undo, so must the server.
    docA.history.undo();
    docA.history.undo();
    assert.equal(JSON.parse(docA.toSortedJSON()).title, 'first');
    docA.history.undo();
    assert.equal(docA.toSortedJSON(), '{}');
    assert.throws(() => docA.update((root) => { root.other = 1; }), (e) => e.code === 'ErrDocumentSchemaValidationFailed',
      'a local update is still checked');
    await withTimeout(a.sync(docA), 15000, 'sync of the undos');
    const b = await newClient();
    const docB = await attachedNote(b, key);
    assert.equal(docB.toSortedJSON(), '{}', 'the undos were stored');

    docA.history.redo();
    docA.history.redo();
    docA.history.redo();
    assert.equal(docA.toSortedJSON(), full);
    await withTimeout(a.sync(docA), 15000, 'sync of the redos');
    await withTimeout(b.sync(docB), 15000, 'sync b');
    assert.equal(docB.toSortedJSON(), full);
  });

  test('UpdateDocument: the root from YSON reaches the SDK; schema changes refused while attached or when the root breaks them', async () => {
    const update = (documentKey, root, schemaKey) =>
      schemaCall(server.rpcAddr, project.secretKey, 'UpdateDocument', { documentKey, root, schemaKey });
    const key = newDocKey('update');
    const a = await newClient();
    const docA = await attachedNote(a, key);
    docA.update((root) => { root.seen = true; });
    await withTimeout(a.sync(docA), 15000, 'sync');

    // A root update is applied as a change the attached client pulls.
    let res = await update(key, '{"title":"from admin","n":Int(3)}', '');
    assert.equal(res.status, 200, JSON.stringify(res.body));
    await withTimeout(a.sync(docA), 15000, 'sync after the update');
    assert.equal(docA.toSortedJSON(), '{"n":3,"seen":true,"title":"from admin"}');

    // A schema change is refused while a client is attached.
    res = await update(key, '', 'note@1');
    assert.equal(res.body.code, 'failed_precondition', JSON.stringify(res.body));
    await withTimeout(a.detach(docA), 15000, 'detach');

    // The schema alone is refused: the root has no tree.
    res = await update(key, '', 'note@1');
    assert.equal(res.body.code, 'invalid_argument', JSON.stringify(res.body));
    // Bad YSON is refused.
    res = await update(key, '{"content":Tree(', 'note@1');
    assert.equal(res.body.code, 'invalid_argument', JSON.stringify(res.body));
    // A root that keeps the rules, with the schema.
    res = await update(key, '{"content":Tree({"type":"doc","children":[{"type":"paragraph","children":[{"type":"text","value":"hi"}]}]})}', 'note@1');
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.document.schemaKey, 'note@1');

    // A client attaching now gets the tree and the rules, and the SDK keeps them.
    const b = await newClient();
    const docB = await attachedNote(b, key);
    assert.equal(docB.getSchemaRules().length, 3);
    assert.equal(docB.getRoot().content.toXML(), '<doc><paragraph>hi</paragraph></doc>');
    assert.throws(() => docB.update((root) => { root.content.edit(0, 4); }), (e) => e.code === 'ErrDocumentSchemaValidationFailed');
    docB.update((root) => { root.content.edit(1, 1, { type: 'text', value: 'oh ' }); });
    await withTimeout(b.sync(docB), 15000, 'sync');
    assert.equal(docB.getRoot().content.toXML(), '<doc><paragraph>oh hi</paragraph></doc>');
    await withTimeout(b.detach(docB), 15000, 'detach');

    // An empty update detaches the schema.
    res = await update(key, '', '');
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.document.schemaKey || '', '');
  });

  test('schema calls: versions, list, bad input', async () => {
    const call = (m, msg) => schemaCall(server.rpcAddr, project.secretKey, m, msg);
    const v2 = await call('CreateSchema', { schemaName: 'note', schemaVersion: 2, schemaBody: 'type Document = { title: string; };', rules: await rulesOf('type Document = { title: string; };') });
    assert.equal(v2.status, 200, JSON.stringify(v2.body));
    const versions = await call('GetSchemas', { schemaName: 'note' });
    assert.deepEqual(versions.body.schemas.map((s) => s.version), [2, 1]);
    const list = await call('ListSchemas', {});
    assert.deepEqual(list.body.schemas.map((s) => `${s.name}@${s.version}`), ['note@2']);
    const unknownType = await call('CreateSchema', { schemaName: 'bad', schemaVersion: 1, schemaBody: 'type Document = {};', rules: [{ path: '$.a', type: 'yorkie.Map' }] });
    assert.equal(unknownType.body.code, 'invalid_argument', JSON.stringify(unknownType.body));
    const removed = await call('RemoveSchema', { schemaName: 'note', version: 2 });
    assert.equal(removed.status, 200, JSON.stringify(removed.body));
    const gone = await call('GetSchema', { schemaName: 'note', version: 2 });
    assert.equal(gone.body.code, 'not_found');
  });
});
