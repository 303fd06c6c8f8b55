// Drives the JS SDK through Tree scenarios and prints, for each, the changes in the order a
// server would have stored them and what an SDK replica that applied them in that order holds.
// Usage: node tree_sdk.js <seed> <randomRounds>
'use strict';
const yorkie = require('@yorkie-js/sdk');
const { converter } = yorkie;

const hex = (b) => Buffer.from(b).toString('hex');

// A seeded generator, so that a failing session can be replayed.
function rng(seed) {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13; s >>>= 0;
    s ^= s >> 17;
    s ^= s << 5; s >>>= 0;
    return s / 4294967296;
  };
}

// session: replicas exchanging changes through a log, and an observer that applies the log in
// order, as the server does.
function session(n) {
  const log = [];
  const docs = [];
  for (let i = 0; i < n; i++) {
    const d = new yorkie.Document('tree');
    d.setActor((i + 1).toString(16).padStart(24, '0'));
    docs.push({ doc: d, sent: 0, seen: 0 });
  }
  const observer = new yorkie.Document('tree');
  observer.setActor('ff'.padStart(24, '0'));
  // ChangePack is not exported: take its class from a pack.
  const Pack = observer.createChangePack().constructor;
  // wire sends changes through the protobuf encoding, as a server relays them.
  const wire = (changes) =>
    converter.fromChangePack(
      converter.toChangePack(Pack.create('tree', observer.getCheckpoint(), false, changes)),
    ).getChanges();
  return {
    docs: docs.map((d) => d.doc),
    // push sends a replica's new local changes to the log.
    push(i) {
      const r = docs[i];
      const local = r.doc.createChangePack().getChanges();
      for (const c of local.slice(r.sent)) {
        log.push({ from: i, change: c });
      }
      r.sent = local.length;
    },
    // pull applies the log's changes of others a replica has not applied yet.
    pull(i) {
      const r = docs[i];
      const fresh = log.slice(r.seen).filter((e) => e.change && e.from !== i).map((e) => e.change);
      r.seen = log.length;
      if (fresh.length) r.doc.applyChanges(wire(fresh), yorkie.OpSource.Remote);
    },
    // gc collects on every replica what all of them have seen, as a server's minimum synced
    // version vector allows, and logs it for the observer.
    gc() {
      const min = new Map();
      const vvs = docs.map((d) => d.doc.getVersionVector());
      for (const vv of vvs) {
        for (const [a] of vv) {
          min.set(a, vvs.reduce((m, v) => { const l = v.get(a) || 0n; return l < m ? l : m; }, vv.get(a)));
        }
      }
      const vv = new yorkie.VersionVector(min);
      for (const d of docs) d.doc.garbageCollect(vv);
      log.push({ gc: vv });
    },
    syncAll() {
      for (let i = 0; i < n; i++) this.push(i);
      for (let i = 0; i < n; i++) this.pull(i);
    },
    result(name, broken) {
      if (!broken) {
        try {
          this.syncAll();
        } catch (e) {
          broken = true;
        }
      }
      for (let i = 0; i < n; i++) this.push(i);
      // The observer applies the log one change at a time and notes where the SDK throws.
      let failedAt = -1;
      let failure;
      const entries = [];
      for (let k = 0; k < log.length; k++) {
        const e = log[k];
        if (e.gc) {
          let collected;
          try {
            collected = observer.garbageCollect(e.gc);
          } catch (err) {
            // The SDK's collection can throw on split links it broke itself: no reference.
            failedAt = -2;
            break;
          }
          entries.push({ gc: converter.versionVectorToHex(e.gc), collected });
          continue;
        }
        entries.push({
          id: hex(converter.changeIDToBinary(e.change.getID())),
          ops: e.change.getOperations().map((op) => hex(converter.operationToBinary(op))),
        });
        try {
          observer.applyChanges(wire([e.change]), yorkie.OpSource.Remote);
        } catch (err) {
          failedAt = entries.length - 1;
          failure = String(err && err.message);
          break;
        }
      }
      // state is what the observer holds: its encoding, what a replica reading that encoding
      // prints, sizes (copied: the SDK hands out its live counters) and garbage.
      const state = () => {
        const bytes = converter.objectToBytes(observer.getRootObject());
        // A Snapshot holding the root (field 1), loaded by a fresh replica.
        const len = [];
        for (let v = bytes.length; ; v >>>= 7) {
          if (v < 0x80) { len.push(v); break; }
          len.push((v & 0x7f) | 0x80);
        }
        const loaded = new yorkie.Document('tree');
        loaded.applySnapshot(0n, observer.getVersionVector(),
          Buffer.concat([Buffer.from([0x0a, ...len]), Buffer.from(bytes)]), -1);
        return {
          root: hex(bytes),
          readBack: loaded.toSortedJSON(),
          loadedGarbageLen: loaded.getGarbageLen(),
          loadedSize: JSON.parse(JSON.stringify(loaded.getDocSize())),
          garbageLen: observer.getGarbageLen(),
          size: JSON.parse(JSON.stringify(observer.getDocSize())),
        };
      };
      const out = {
        failedAt,
        failure,
        name,
        changes: entries,
        replicas: broken ? [] : docs.map((d) => d.doc.toSortedJSON()),
        json: observer.toSortedJSON(),
        ...state(),
      };
      const vv = observer.getVersionVector();
      out.vv = converter.versionVectorToHex(vv);
      try {
        out.gcCount = observer.garbageCollect(vv);
        out.afterGC = { json: observer.toSortedJSON(), ...state() };
      } catch (err) {
        out.gcCount = -1;
      }
      return out;
    },
  };
}

const p = (text, attrs) => {
  const n = { type: 'p', children: text === undefined ? [] : [{ type: 'text', value: text }] };
  if (attrs) n.attributes = attrs;
  return n;
};
const t = (value) => ({ type: 'text', value });

function create(s, root) {
  s.docs[0].update((r) => { r.t = new yorkie.Tree(root); });
  s.syncAll();
}

const scenarios = {
  basic(s) {
    create(s, { type: 'doc', children: [p('hello')] });
    const d = s.docs[0];
    d.update((r) => r.t.edit(1, 1, t('A')));
    d.update((r) => r.t.edit(3, 5));
    d.update((r) => r.t.edit(0, 0, p('x', { a: 'b' })));
    d.update((r) => r.t.style(0, 1, { bold: true }));
    d.update((r) => r.t.style(3, 4, { n: 1.5, o: { y: [1, 'a\n"'], x: null }, '2': 'z', '10': false }));
    d.update((r) => r.t.removeStyle(0, 1, ['a']));
    d.update((r) => r.t.edit(4, 4, t('😀 é\t\u2028')));
    d.update((r) => r.t.edit(5, 6));
  },
  splitMerge(s) {
    create(s, { type: 'doc', children: [p('abcd'), p('ef')] });
    const d = s.docs[0];
    d.update((r) => r.t.edit(3, 3, undefined, 1));
    d.update((r) => r.t.edit(3, 5));
    d.update((r) => r.t.edit(5, 7));
    d.update((r) => r.t.edit(2, 2, undefined, 1));
  },
  splitLevel2(s) {
    create(s, { type: 'doc', children: [{ type: 'div', children: [p('abcd')] }] });
    const d = s.docs[0];
    d.update((r) => r.t.edit(4, 4, undefined, 2));
    d.update((r) => r.t.edit(1, 1, t('z')));
  },
  concurrentInsert(s) {
    create(s, { type: 'doc', children: [p('ab')] });
    s.docs[0].update((r) => r.t.edit(2, 2, t('1')));
    s.docs[1].update((r) => r.t.edit(2, 2, t('2')));
    s.docs[1].update((r) => r.t.edit(1, 3));
  },
  concurrentDeleteInsert(s) {
    create(s, { type: 'doc', children: [p('ab'), p('cd')] });
    s.docs[0].update((r) => r.t.edit(0, 4));
    s.docs[1].update((r) => r.t.edit(2, 2, t('x')));
    s.docs[1].update((r) => r.t.edit(5, 5, p('new')));
  },
  concurrentSplitInsert(s) {
    create(s, { type: 'doc', children: [p('abcd')] });
    s.docs[0].update((r) => r.t.edit(3, 3, undefined, 1));
    s.docs[1].update((r) => r.t.edit(3, 3, t('X')));
    s.docs[1].update((r) => r.t.style(0, 1, { k: 'v' }));
  },
  concurrentMergeInsert(s) {
    create(s, { type: 'doc', children: [p('ab'), p('cd')] });
    s.docs[0].update((r) => r.t.edit(3, 5));
    s.docs[1].update((r) => r.t.edit(6, 6, t('Y')));
    s.docs[1].update((r) => r.t.edit(0, 0, t('Z')));
  },
  concurrentDeletes(s) {
    create(s, { type: 'doc', children: [p('abcdef')] });
    s.docs[0].update((r) => r.t.edit(2, 5));
    s.docs[1].update((r) => r.t.edit(3, 6));
    s.docs[2].update((r) => r.t.edit(0, 8));
  },
  concurrentStyles(s) {
    create(s, { type: 'doc', children: [p('ab'), p('cd')] });
    s.docs[0].update((r) => r.t.style(0, 1, { c: 'red' }));
    s.docs[1].update((r) => r.t.style(0, 1, { c: 'blue' }));
    s.docs[2].update((r) => r.t.removeStyle(0, 5, ['c']));
    s.push(0); s.pull(1);
    s.docs[1].update((r) => r.t.style(4, 5, { c: 'green' }));
  },
};

function randomScenario(seed, rounds) {
  return (s) => {
    const rand = rng(seed);
    const pick = (n) => Math.floor(rand() * n);
    create(s, { type: 'doc', children: [p('abc'), p('de'), { type: 'div', children: [p('fg')] }] });
    const words = ['x', 'yz', 'ü', '12'];
    for (let round = 0; round < rounds; round++) {
      const i = pick(s.docs.length);
      const d = s.docs[i];
      try {
        const h = pick(20);
        if (h === 0 && d.history.canUndo()) d.history.undo();
        else if (h === 1 && d.history.canRedo()) d.history.redo();
        else d.update((r) => {
          const size = r.t.getSize();
          const from = pick(size + 1);
          const to = from + pick(Math.min(8, size - from) + 1);
          const w = () => words[pick(words.length)];
          const k = pick(18);
          if (k < 3) r.t.edit(from, from, t(w()));
          else if (k < 5) r.t.edit(from, to);
          else if (k === 5) r.t.edit(from, from, p(w()));
          else if (k === 6) r.t.edit(from, from, undefined, 1);
          else if (k === 7) r.t.style(from, to, { s: pick(3) });
          else if (k === 8) r.t.removeStyle(from, to, ['s']);
          else if (k === 9) r.t.edit(from, from, undefined, 2);
          else if (k === 10) r.t.edit(from, from, { type: 'div', children: [p(w()), p()] });
          else if (k === 11) r.t.style(from, to, { a: w(), s: { n: pick(5) } });
          else if (k === 12) r.t.edit(from, to, p(w()));
          else if (k === 13) r.t.editBulk(from, to, [p(w(), { id: w() }), p(w())]);
          else if (k === 14) r.t.splitByPath(r.t.indexToPath(from));
          else if (k === 15) r.t.mergeByPath(r.t.indexToPath(from).slice(0, -1));
          else if (k === 16 && pick(8) === 0) r.t = new yorkie.Tree({ type: 'doc', children: [p('new')] });
          else r.t.edit(from, to, t(w()));
        });
      } catch (e) {
        // The SDK refuses some ranges locally; such an edit makes no change.
      }
      const sync = pick(4);
      if (pick(12) === 0) { s.syncAll(); s.gc(); }
      if (sync === 0) s.push(i);
      else if (sync === 1) s.pull(i);
      else if (sync === 2) { s.push(i); s.pull(pick(s.docs.length)); }
    }
  };
}

const seed = Number(process.argv[2] || 1);
const rounds = Number(process.argv[3] || 0);
const sessions = Number(process.argv[4] || 0);
const out = [];
for (const [name, fn] of Object.entries(scenarios)) {
  const s = session(3);
  fn(s);
  out.push(s.result(name));
}
for (let k = 0; k < sessions; k++) {
  const s = session(3);
  let broken = false;
  try {
    randomScenario(seed + k, rounds)(s);
  } catch (e) {
    // A replica threw applying a change: the session ends there.
    broken = true;
  }
  out.push(s.result(`random-${seed + k}`, broken));
}
process.stdout.write(JSON.stringify(out));
