// Generates the golden files in ../sdk: scenarios of edits made with the real JS SDK by
// one or more clients, the changes in server order (as the SDK's binary encodings) and what
// a replica that applied them reports: toSortedJSON, document size, garbage length, version
// vector, the root's encoding, and the same after garbage collection.
//
// Run from the repository root after `npm ci` in test/e2e:
//   node server/document/testdata/sdkgen/generate.js
'use strict';

const path = require('path');
const fs = require('fs');
const yorkie = require(path.resolve(__dirname, '../../../../test/e2e/node_modules/@yorkie-js/sdk'));

const { converter, OpSource, Change } = yorkie;
const out = path.resolve(__dirname, '../sdk');

const hex = (b) => converter.bytesToHex(b);

// fresh reads hex into a view that starts 8 bytes into its buffer. The SDK reads a double
// through a DataView over the whole buffer its bytes sit in, writing them to the buffer's
// first 8 bytes on the way; with the Connect JSON wire format every bytes field has a buffer
// of its own, and this padding gives the same result for bytes decoded from one message.
const fresh = (h) => {
  const b = converter.hexToBytes(h);
  const padded = new Uint8Array(new ArrayBuffer(b.length + 8), 8);
  padded.set(b);
  return padded;
};

// session runs clients against an in-memory server log.
class Session {
  constructor() {
    this.log = []; // { actor, change }
    this.replica = new yorkie.Document('doc');
    this.clients = [];
  }

  client(actor) {
    const doc = new yorkie.Document('doc');
    doc.setActor(actor);
    const c = { actor, doc, taken: 0, pulled: 0 };
    this.clients.push(c);
    return c;
  }

  // push sends the client's new local changes to the server log.
  push(c) {
    const changes = c.doc.createChangePack().getChanges().slice(c.taken);
    c.taken += changes.length;
    for (const ch of changes) {
      const id = converter.changeIDToBinary(ch.getID());
      const ops = ch.getOperations().map((op) => converter.operationToBinary(op));
      const pc = ch.getPresenceChange();
      let presence;
      if (pc) {
        presence = pc.type === 'put' || pc.type === 0 || pc.presence
          ? { type: 'put', data: Object.fromEntries(Object.entries(pc.presence).map(([k, v]) => [k, JSON.stringify(v)])) }
          : { type: 'clear' };
      }
      const wire = { id: hex(id), ops: ops.map(hex), presence };
      this.log.push({ actor: c.actor, wire });
      // The replica applies every change in server order.
      this.replica.applyChanges([this.decode(wire)], OpSource.Remote);
    }
  }

  decode(wire) {
    const id = fresh(wire.id);
    const ops = wire.ops.map(fresh);
    const presence = wire.presence;
    let presenceChange;
    if (presence) {
      presenceChange = presence.type === 'put'
        ? { type: 'put', presence: Object.fromEntries(Object.entries(presence.data).map(([k, v]) => [k, JSON.parse(v)])) }
        : { type: 'clear' };
    }
    return Change.create({
      id: converter.bytesToChangeID(id),
      operations: ops.map((b) => converter.bytesToOperation(b)),
      presenceChange,
    });
  }

  // pull applies the log's changes of other clients the client has not seen.
  pull(c) {
    for (; c.pulled < this.log.length; c.pulled++) {
      const e = this.log[c.pulled];
      if (e.actor === c.actor) continue;
      c.doc.applyChanges([this.decode(e.wire)], OpSource.Remote);
    }
  }

  sync(...cs) {
    for (const c of cs) this.push(c);
    for (const c of cs) this.pull(c);
  }

  state() {
    const r = this.replica;
    return {
      json: r.toSortedJSON(),
      size: JSON.parse(JSON.stringify(r.getDocSize())),
      garbageLen: r.getGarbageLen(),
      versionVector: converter.versionVectorToHex(r.getVersionVector()),
      root: hex(converter.objectToBytes(r.getRootObject())),
    };
  }

  // loaded is what a client reports after loading the replica's root as a snapshot.
  loaded() {
    const root = converter.objectToBytes(this.replica.getRootObject());
    // A Snapshot message holding only its root (field 1).
    const len = [];
    for (let n = root.length; ; n >>= 7) {
      if (n < 0x80) { len.push(n); break; }
      len.push((n & 0x7f) | 0x80);
    }
    const snap = new Uint8Array(1 + len.length + root.length);
    snap[0] = 0x0a;
    snap.set(len, 1);
    snap.set(root, 1 + len.length);
    const d = new yorkie.Document('doc');
    d.applySnapshot(1n, this.replica.getVersionVector(), snap, 0);
    return {
      json: d.toSortedJSON(),
      size: JSON.parse(JSON.stringify(d.getDocSize())),
      garbageLen: d.getGarbageLen(),
      root: hex(converter.objectToBytes(d.getRootObject())),
    };
  }

  // finish records the replica's state, then collects garbage with the replica's own vector
  // as the minimum synced one (every client has seen everything) and records it again.
  finish(name) {
    const before = this.state();
    const loaded = this.loaded();
    const vv = this.gcVector ? this.gcVector() : this.replica.getVersionVector();
    const purged = this.replica.garbageCollect(vv);
    const after = this.state();
    const golden = {
      name,
      changes: this.log.map((e) => e.wire),
      before,
      loaded,
      gc: { versionVector: converter.versionVectorToHex(vv), purged, after },
    };
    fs.writeFileSync(path.join(out, name + '.json'), JSON.stringify(golden, null, 1) + '\n');
    // Every client that pulled everything must agree with the replica.
    for (const c of this.clients) {
      this.push(c);
    }
  }
}

const A = '000000000000000000000001';
const B = '000000000000000000000002';
const C = '000000000000000000000003';

const scenarios = {
  primitives(s) {
    const a = s.client(A);
    a.doc.update((r) => {
      r.nul = null;
      r.t = true;
      r.f = false;
      r.i = 42;
      r.neg = -7;
      r.imax = 2147483647;
      r.imin = -2147483648;
      r.big = 1e21;
      r.bigint = 123456789012;
      r.d = 3.5;
      r.tiny = 1e-7;
      r.small = 0.000001;
      r.frac = -0.1;
      r.third = 1 / 3;
      r.huge = 1.7976931348623157e308;
      r.negzero = -0;
      r.nan = NaN;
      r.inf = Infinity;
      r.ninf = -Infinity;
      r.long = 9007199254740993n;
      r.nlong = -9223372036854775808n;
      r.s = 'plain';
      r.esc = 'q"b\\s/\n\r\t\b\f\u2028\u2029\u0001\u007f\'';
      r.uni = 'é中😀\uffff';
      r.empty = '';
      r.bytes = new Uint8Array([0, 1, 2, 250, 255]);
      r.nobytes = new Uint8Array([]);
      r.date = new Date(1700000000123);
      r.epoch = new Date(0);
      r.far = new Date(253402300800000);
    });
    s.sync(a);
  },

  keys(s) {
    const a = s.client(A);
    a.doc.update((r) => {
      r['b'] = 1;
      r['a'] = 2;
      r['B'] = 3;
      r[''] = 4;
      r['é'] = 5;
      r['😀'] = 6;
      r['\uffff'] = 7;
      r['a\"b'] = 8;
      r['10'] = 9;
      r['9'] = 10;
      r.nested = { z: 1, y: { x: [1, { q: 1, c: 2, a: { z: 1, b: 2 } }], a: 2 }, b: [] };
      r.arr = [{ z: 1, a: 2 }, [{ y: 1, b: 2 }]];
    });
    s.sync(a);
  },

  objects(s) {
    const a = s.client(A);
    a.doc.update((r) => {
      r.k = 1;
      r.k = 2;
      r.o = { x: 1, y: { z: 'deep' } };
      r.gone = 'soon';
    });
    s.sync(a);
    a.doc.update((r) => {
      delete r.gone;
      r.o.x = 'replaced';
      delete r.o.y;
      r.k = { now: 'object' };
    });
    s.sync(a);
    a.doc.update((r) => {
      r.gone = 'back';
      delete r.o;
    });
    s.sync(a);
  },

  concurrentObjects(s) {
    const a = s.client(A);
    const b = s.client(B);
    a.doc.update((r) => { r.shared = { v: 0 }; r.x = 'a'; });
    s.sync(a, b);
    a.doc.update((r) => { r.x = 'from a'; r.shared.v = 1; r.onlyA = true; });
    b.doc.update((r) => { r.x = 'from b'; delete r.shared; r.onlyB = true; });
    s.sync(a, b);
    s.sync(a, b);
    b.doc.update((r) => { r.x = 'b again'; });
    a.doc.update((r) => { delete r.x; });
    s.sync(b, a);
    s.sync(b, a);
  },

  arrays(s) {
    const a = s.client(A);
    a.doc.update((r) => {
      r.list = [1, 2, 3];
      r.list.push('four');
      r.list.push({ five: 5 });
      r.list.push([6]);
    });
    s.sync(a);
    a.doc.update((r) => {
      r.list.delete(1);
      const first = r.list.getElementByIndex(0);
      r.list.insertAfter(first.getID(), 'after first');
      r.list.setValue(0, 'set zero');
    });
    s.sync(a);
    a.doc.update((r) => {
      const last = r.list.getElementByIndex(r.list.length - 1);
      const first = r.list.getElementByIndex(0);
      r.list.moveFront(last.getID());
      r.list.moveLast(first.getID());
      const x = r.list.getElementByIndex(2);
      const y = r.list.getElementByIndex(0);
      r.list.moveAfter(y.getID(), x.getID());
      r.list.moveBefore(y.getID(), r.list.getElementByIndex(3).getID());
    });
    s.sync(a);
    a.doc.update((r) => {
      r.list.splice(1, 2, 'spliced', 'in');
    });
    s.sync(a);
  },

  concurrentArrays(s) {
    const a = s.client(A);
    const b = s.client(B);
    const c = s.client(C);
    a.doc.update((r) => { r.l = ['x', 'y', 'z']; });
    s.sync(a, b, c);
    a.doc.update((r) => {
      const x = r.l.getElementByIndex(0);
      r.l.insertAfter(x.getID(), 'a1');
      r.l.insertAfter(x.getID(), 'a2');
      r.l.moveLast(r.l.getElementByIndex(0).getID());
    });
    b.doc.update((r) => {
      const x = r.l.getElementByIndex(0);
      r.l.insertAfter(x.getID(), 'b1');
      r.l.moveFront(r.l.getElementByIndex(3).getID());
      r.l.delete(1);
    });
    c.doc.update((r) => {
      r.l.moveFront(r.l.getElementByIndex(2).getID());
      r.l.moveAfter(r.l.getElementByIndex(1).getID(), r.l.getElementByIndex(0).getID());
      r.l.setValue(2, 'c set');
    });
    s.sync(a, b, c);
    s.sync(a, b, c);
    a.doc.update((r) => { r.l.moveFront(r.l.getElementByIndex(2).getID()); });
    b.doc.update((r) => { r.l.moveLast(r.l.getElementByIndex(2).getID()); });
    c.doc.update((r) => { r.l.moveAfter(r.l.getElementByIndex(0).getID(), r.l.getElementByIndex(2).getID()); });
    s.sync(c, b, a);
    s.sync(c, b, a);
  },

  counters(s) {
    const a = s.client(A);
    const b = s.client(B);
    a.doc.update((r) => {
      r.ci = new yorkie.Counter(2147483640);
      r.cl = new yorkie.Counter(9223372036854775800n);
      r.cs = new yorkie.Counter(0);
    });
    s.sync(a, b);
    a.doc.update((r) => {
      r.ci.increase(5);
      r.ci.increase(10);
      r.cl.increase(10);
      r.cs.increase(1.9);
      r.cs.increase(-0.5);
      r.cs.increase(3000000000n);
    });
    b.doc.update((r) => {
      r.ci.increase(-3);
      r.cl.increase(-9223372036854775807n);
      r.cl.increase(2.7);
      r.cs.increase(-1);
    });
    s.sync(a, b);
    s.sync(a, b);
  },

  dedup(s) {
    const a = s.client(A);
    const b = s.client(B);
    a.doc.update((r) => { r.views = new yorkie.DedupCounter(); r.plain = new yorkie.Counter(1); });
    s.sync(a, b);
    a.doc.update((r) => { r.views.add('user-a'); r.views.add('user-a'); r.views.add('user-b'); });
    b.doc.update((r) => { r.views.add('user-a'); r.views.add('user-c-' + 'x'.repeat(40)); });
    s.sync(a, b);
    s.sync(a, b);
  },

  undo(s) {
    const a = s.client(A);
    a.doc.update((r) => { r.o = { v: 1 }; r.l = [1, 2, 3]; r.s = 'keep'; });
    s.sync(a);
    a.doc.update((r) => { delete r.o; r.l.delete(1); });
    s.sync(a);
    a.doc.history.undo();
    s.sync(a);
    a.doc.update((r) => { r.l.moveFront(r.l.getElementByIndex(2).getID()); });
    s.sync(a);
    a.doc.history.undo();
    s.sync(a);
    a.doc.history.redo();
    s.sync(a);
  },

  presence(s) {
    const a = s.client(A);
    const b = s.client(B);
    a.doc.update((r, p) => { p.set({ name: 'a', cursor: { x: 1, y: 2 } }); r.x = 1; });
    b.doc.update((r, p) => { p.set({ name: 'b"q' }); });
    s.sync(a, b);
    b.doc.update((r, p) => { p.set({ name: 'b2', list: [1, 'two', null] }); });
    s.sync(a, b);
  },
};

Object.assign(scenarios, {
  // Two clients remove the same element concurrently: the SDK registers both removals.
  removeTwice(s) {
    const a = s.client(A);
    const b = s.client(B);
    a.doc.update((r) => { r.o = { deep: { v: [1, 2] } }; r.l = ['a', 'b', { c: 1 }]; });
    s.sync(a, b);
    a.doc.update((r) => { delete r.o; r.l.delete(2); r.l.delete(0); });
    b.doc.update((r) => { delete r.o; r.l.delete(2); r.l.delete(1); });
    s.sync(a, b);
    s.sync(a, b);
  },

  // Edits inside an object and an array another client removed at the same time.
  editRemoved(s) {
    const a = s.client(A);
    const b = s.client(B);
    a.doc.update((r) => { r.o = { x: 1 }; r.l = [[1, 2], { k: 'v' }]; r.c = new yorkie.Counter(1); });
    s.sync(a, b);
    a.doc.update((r) => { delete r.o; r.l.delete(0); delete r.c; });
    b.doc.update((r) => {
      r.o.y = 'new';
      r.o.x = 2;
      r.l.getElementByIndex(0).push(3);
      r.l.getElementByIndex(0).moveFront(r.l.getElementByIndex(0).getElementByIndex(1).getID());
      r.c.increase(5);
    });
    s.sync(a, b);
    s.sync(a, b);
  },

  // Collection with a vector that has not seen everything: only what it covers goes.
  partialGC(s) {
    const a = s.client(A);
    const b = s.client(B);
    a.doc.update((r) => { r.l = [1, 2, 3, 4]; r.o = { p: 1, q: 2 }; });
    s.sync(a, b);
    a.doc.update((r) => { r.l.delete(0); delete r.o.p; r.l.moveFront(r.l.getElementByIndex(2).getID()); });
    s.sync(a, b);
    const seen = b.doc.getVersionVector();
    b.doc.update((r) => { r.l.delete(0); delete r.o.q; r.l.moveLast(r.l.getElementByIndex(0).getID()); });
    a.doc.update((r) => { r.l.moveFront(r.l.getElementByIndex(1).getID()); });
    s.sync(b, a);
    s.gcVector = () => seen;
  },

  // Many concurrent moves of one element: losing moves leave dead positions that later
  // operations anchor to.
  moveStorm(s) {
    const a = s.client(A);
    const b = s.client(B);
    const c = s.client(C);
    a.doc.update((r) => { r.l = ['p', 'q', 'r', 's', 't']; });
    s.sync(a, b, c);
    for (let round = 0; round < 3; round++) {
      a.doc.update((r) => { r.l.moveFront(r.l.getElementByIndex(2).getID()); r.l.moveLast(r.l.getElementByIndex(0).getID()); });
      b.doc.update((r) => { r.l.moveAfter(r.l.getElementByIndex(3).getID(), r.l.getElementByIndex(1).getID()); });
      c.doc.update((r) => {
        r.l.moveFront(r.l.getElementByIndex(1).getID());
        r.l.insertAfter(r.l.getElementByIndex(0).getID(), 'c' + round);
      });
      s.sync(b, c, a);
      s.sync(b, c, a);
    }
  },

  // Arrays and counters nested in arrays.
  nested(s) {
    const a = s.client(A);
    a.doc.update((r) => {
      r.m = [[1, [2, [3]]], { a: [{ b: new yorkie.Counter(10n) }] }];
      r.m.push(new yorkie.Counter(7));
    });
    s.sync(a);
    a.doc.update((r) => {
      r.m.getElementByIndex(2).increase(3);
      r.m.getElementByIndex(1).a.getElementByIndex(0).b.increase(-20);
      r.m.getElementByIndex(0).getElementByIndex(1).setValue(0, 'two');
      r.m.moveFront(r.m.getElementByIndex(2).getID());
    });
    s.sync(a);
  },
});

// Counter arithmetic as the server sees it: each counter gets one delta, encoded and
// decoded on the way (an integral number travels as a 32-bit integer).
scenarios.counterArithmetic = (s) => {
  const a = s.client(A);
  const cases = [
    [0, 1], [2147483647, 1], [-2147483648, -1], [5, 1.9], [5, -1.9], [0, -0.5], [1, 2 ** 40], [1, 2 ** 40 + 0.5],
    [7, 3000000000n], [2147483647, 2147483647n], [-5, -9007199254740993n], [0, 1e300], [3, -1e-300],
    [0n, 1], [0n, -1.5], [9223372036854775807n, 1n], [-9223372036854775808n, -1n], [10n, 2 ** 40 + 0.5],
    [10n, 123456789012345678n], [0n, 1e20], [0n, -1e30],
  ];
  a.doc.update((r) => {
    cases.forEach(([init], i) => { r['c' + String(i).padStart(2, '0')] = new yorkie.Counter(init); });
  });
  s.sync(a);
  a.doc.update((r) => {
    cases.forEach(([, delta], i) => { r['c' + String(i).padStart(2, '0')].increase(delta); });
  });
  s.sync(a);
  a.doc.update((r) => {
    cases.forEach(([, delta], i) => { r['c' + String(i).padStart(2, '0')].increase(delta); });
  });
  s.sync(a);
};

// An element moved behind later ones, with its old position not collected yet: the SDK's
// snapshot reader inserts the element after it at the old position (it looks the moved
// element's ticket up first among positions), so a loaded client sees another order.
scenarios.snapshotReorder = (s) => {
  const a = s.client(A);
  a.doc.update((r) => { r.l = ['a', 'b', 'c', 'd']; });
  s.sync(a);
  a.doc.update((r) => { r.l.moveAfter(r.l.getElementByIndex(2).getID(), r.l.getElementByIndex(0).getID()); });
  s.sync(a);
};

fs.mkdirSync(out, { recursive: true });
for (const [name, run] of Object.entries(scenarios)) {
  const s = new Session();
  run(s);
  s.finish(name);
}
