'use strict';
// Clients editing documents concurrently: every client of a document appends
// its own numbered entries to a shared list and publishes its count as
// presence, so a test can tell whether every written change reached every
// replica and whether presence still flows.

const { waitFor } = require('../../lib/wait');
const { waitPresences, describeReplicas } = require('../../lib/replicas');

/** The document's list of entries as plain JS (undefined before it exists). */
function logOf(doc) {
  return JSON.parse(doc.toSortedJSON()).log;
}

class Editor {
  constructor({ group, client, doc, tag }) {
    this.group = group;
    this.client = client;
    this.doc = doc;
    this.tag = tag;
    this.count = 0;
    this.entries = [];
  }

  write() {
    this.count += 1;
    const entry = `${this.tag}:${this.count}`;
    const n = this.count;
    this.doc.update((root, presence) => {
      root.log.push(entry);
      presence.set({ n });
    });
    this.entries.push(entry);
    return entry;
  }
}

/** One document and the clients that edit it. */
class DocGroup {
  constructor(key) {
    this.key = key;
    this.editors = [];
  }

  get docs() {
    return this.editors.map((e) => e.doc);
  }

  /**
   * Attaches `clients` to the document (the first creates the list). With
   * `retryUnavailable`, an attach refused with code unavailable is tried
   * again with a new Document, as an application must: the SDK retries its
   * sync loop by itself, but not attach(). Refusals are counted in
   * `this.attachRefusals`.
   */
  async attach(session, clients, { retryUnavailable = false } = {}) {
    this.attachRefusals = this.attachRefusals || [];
    for (const client of clients) {
      let doc;
      await waitFor(
        async () => {
          try {
            doc = await session.attach(client, this.key, { initialPresence: { n: 0 } });
            return true;
          } catch (err) {
            if (!retryUnavailable || !/\[unavailable\]/.test(String(err && err.message))) throw err;
            this.attachRefusals.push({ at: Date.now(), message: String(err.message).slice(0, 300) });
            return false;
          }
        },
        { what: `attach of ${this.key} by client ${client.e2eIndex}`, intervalMs: 1000 },
      );
      if (!this.editors.length) {
        doc.update((root) => {
          if (!root.log) root.log = [];
        });
      }
      const editor = new Editor({ group: this, client, doc, tag: `${this.editors.length}` });
      this.editors.push(editor);
    }
    // Later clients must have the list before they push to it.
    await waitFor(() => this.docs.every((d) => Array.isArray(logOf(d))), {
      what: `every replica of ${this.key} to hold the list`,
    });
  }

  /** Every entry any editor has written so far. */
  written() {
    return this.editors.flatMap((e) => e.entries);
  }

  /** Waits until no replica has unacknowledged changes. */
  async waitPushed(opts = {}) {
    await waitFor(() => this.docs.every((d) => !d.hasLocalChanges()), {
      what: `every replica of ${this.key} to have its changes acknowledged`,
      describe: () => describeReplicas(this.docs),
      ...opts,
    });
  }

  /**
   * Waits until every replica holds exactly the entries written so far (none
   * lost, none duplicated), and sees every editor's last count as presence.
   */
  async waitConverged(opts = {}) {
    const expected = this.written().slice().sort();
    await waitFor(
      () =>
        this.docs.every((d) => {
          const log = logOf(d) || [];
          return log.length === expected.length && log.slice().sort().every((v, i) => v === expected[i]);
        }),
      {
        what: `every replica of ${this.key} to hold all ${expected.length} written entries`,
        describe: () => {
          const lines = this.docs.map((d, i) => {
            const log = logOf(d) || [];
            const missing = expected.filter((e) => !log.includes(e));
            return `replica ${i} (${this.editors[i].client.getID()}): ${log.length} entries, missing ${JSON.stringify(missing.slice(0, 20))}${missing.length > 20 ? '...' : ''}, local changes ${d.hasLocalChanges()}`;
          });
          return lines.join('\n');
        },
        ...opts,
      },
    );
    const presences = {};
    for (const e of this.editors) presences[e.client.getID()] = { n: e.count };
    await waitPresences(this.docs, presences, { what: `presences in ${this.key}`, ...opts });
  }
}

/**
 * Runs every editor of `groups`, each writing one entry every `intervalMs`
 * (staggered), until `stop()` is called. `onWrite(editor, entry)` sees each.
 */
function runEditors(groups, { intervalMs = 500, onWrite } = {}) {
  const editors = groups.flatMap((g) => g.editors);
  const timers = editors.map((e, i) => {
    let timer;
    const tick = () => {
      try {
        const entry = e.write();
        if (onWrite) onWrite(e, entry);
      } catch (err) {
        e.error = err;
      }
      timer = setTimeout(tick, intervalMs);
    };
    timer = setTimeout(tick, Math.floor((intervalMs * i) / editors.length));
    return () => clearTimeout(timer);
  });
  return {
    stop() {
      for (const t of timers) t();
      const failed = editors.filter((e) => e.error);
      if (failed.length) throw new Error(`edits failed: ${failed.map((e) => `${e.group.key}/${e.tag}: ${e.error.message}`).join('; ')}`);
    },
  };
}

/**
 * Edits until every editor of `groups` has written `n` more entries, one edit
 * each every intervalMs, then stops and checks that each group converged.
 */
async function editRound(groups, n, what, { intervalMs }) {
  const editors = groups.flatMap((g) => g.editors);
  const start = new Map(editors.map((e) => [e, e.count]));
  const run = runEditors(groups, { intervalMs });
  try {
    await waitFor(() => editors.every((e) => e.count >= start.get(e) + n), { what: `${what}: ${n} edits by every client`, timeoutMs: 60000 });
  } finally {
    run.stop();
  }
  for (const g of groups) await g.waitConverged({ timeoutMs: 30000 });
}

module.exports = { DocGroup, Editor, runEditors, editRound, logOf };
