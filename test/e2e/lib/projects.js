'use strict';
// Two projects with the same document key, as SDK clients with different
// API keys meet them: each project has its own document, and neither its
// content, its presences nor its events reach the other.

const assert = require('node:assert/strict');
const { Session } = require('./session');
const { waitConverged, waitPresences } = require('./replicas');
const { logIn, createProject } = require('./admin');

/** Creates two projects through the admin API of the server at rpcAddr; returns them. */
async function twoProjects(rpcAddr, label = 'p') {
  const token = await logIn(rpcAddr);
  const suffix = `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
  const a = await createProject(rpcAddr, token, `${label}-a-${suffix}`);
  const b = await createProject(rpcAddr, token, `${label}-b-${suffix}`);
  assert.ok(a.publicKey && b.publicKey && a.publicKey !== b.publicKey, 'two projects with their own public keys');
  return { a, b };
}

/** The Yorkie error code (ErrorInfo metadata "code") a ConnectError carries, or ''. */
function yorkieCode(err) {
  for (const d of (err && err.details) || []) {
    if (d && d.debug && d.debug.metadata && d.debug.metadata.code) return d.debug.metadata.code;
    const bytes = d && d.value;
    if (bytes) {
      const text = Buffer.from(bytes).toString('latin1');
      const m = text.match(/Err[A-Za-z]+/);
      if (m) return m[0];
    }
  }
  return '';
}

/**
 * Runs the two-project check: clients of projects a and b (their public
 * keys), reaching the target, attach the same key and edit it. Each project's
 * replicas converge on their own content, see only their own project's
 * presences, and receive remote changes only from their own project.
 */
async function assertProjectsApart({ target, transport = 'json', keyA, keyB, docKey = 'shared' }) {
  const sa = new Session({ target, transport, clientOptions: { apiKey: keyA } });
  const sb = new Session({ target, transport, clientOptions: { apiKey: keyB } });
  try {
    const [a1, a2] = await sa.activateClients(2);
    const [b1, b2] = await sb.activateClients(2);
    const a1d = await sa.attach(a1, docKey, { initialPresence: { who: 'a1' } });
    const a2d = await sa.attach(a2, docKey, { initialPresence: { who: 'a2' } });
    const b1d = await sb.attach(b1, docKey, { initialPresence: { who: 'b1' } });
    const b2d = await sb.attach(b2, docKey, { initialPresence: { who: 'b2' } });

    const actorsOf = (docs) => {
      const seen = [];
      for (const d of docs) {
        d.subscribe((e) => {
          if (e.type === 'remote-change') seen.push(e.value.actor);
        });
      }
      return seen;
    };
    const seenInA = actorsOf([a1d, a2d]);
    const seenInB = actorsOf([b1d, b2d]);

    a1d.update((root) => {
      root.owner = 'a';
      root.items = ['a-1'];
    });
    b1d.update((root) => {
      root.owner = 'b';
    });
    a2d.update((root) => {
      root.second = 'a-2';
    });
    b2d.update((root) => {
      root.count = 1;
    });

    const inA = await waitConverged([a1d, a2d], {
      what: 'project a replicas',
      expect: (j) => j.owner === 'a' && j.second === 'a-2',
    });
    const inB = await waitConverged([b1d, b2d], { what: 'project b replicas', expect: (j) => j.owner === 'b' && j.count === 1 });
    assert.deepEqual(inA, { owner: 'a', items: ['a-1'], second: 'a-2' }, 'project a holds only its own edits');
    assert.deepEqual(inB, { owner: 'b', count: 1 }, 'project b holds only its own edits');

    await waitPresences([a1d, a2d], { [a1.getID()]: { who: 'a1' }, [a2.getID()]: { who: 'a2' } }, { what: 'project a presences' });
    await waitPresences([b1d, b2d], { [b1.getID()]: { who: 'b1' }, [b2.getID()]: { who: 'b2' } }, { what: 'project b presences' });
    const idsA = new Set([a1.getID(), a2.getID()]);
    const idsB = new Set([b1.getID(), b2.getID()]);
    for (const d of [a1d, a2d]) {
      for (const p of d.getPresences()) assert.ok(idsA.has(p.clientID), `project a sees client ${p.clientID} of another project`);
    }
    for (const d of [b1d, b2d]) {
      for (const p of d.getPresences()) assert.ok(idsB.has(p.clientID), `project b sees client ${p.clientID} of another project`);
    }
    for (const actor of seenInA) assert.ok(idsA.has(actor), `project a received a change of ${actor}`);
    for (const actor of seenInB) assert.ok(idsB.has(actor), `project b received a change of ${actor}`);
    assert.ok(seenInA.length > 0 && seenInB.length > 0, 'each project received its own remote changes');
    sa.assertTransportUsed();
    sb.assertTransportUsed();
  } finally {
    await Promise.all([sa.close(), sb.close()]);
  }
}

module.exports = { twoProjects, assertProjectsApart, yorkieCode };
