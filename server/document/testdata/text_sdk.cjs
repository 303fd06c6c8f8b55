// Drives the Yorkie JS SDK to produce text changes for the Go differential tests.
//
// Input (argv[2], JSON): {seeds, clients, steps}, one run per seed; or {load: [snapshot]},
// to report the state of documents that load those snapshots (base64 api.Snapshot). Several SDK documents edit one text
// concurrently (typing, deleting, replacing, styling, undo and redo), exchanging changes
// through a simulated server log: a sync pushes the client's pending changes to the log and
// pulls the others'. A further document applies the log in order, as the server does, and
// is collected at random points with the minimum of the clients' version vectors.
//
// Output (stdout, JSON): per seed {seed, events: [{change: {id, ops}} | {gc: {vv, collected}} ], final,
// clients}, where id and ops are base64 api.ChangeID and api.Operation bytes, and final
// holds the server-model document's toSortedJSON, root JSONElement bytes, garbage length
// and size.
'use strict';

const yorkie = require('@yorkie-js/sdk');
const { converter } = yorkie;

function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const b64 = (u8) => Buffer.from(u8).toString('base64');

// serverRoot encodes the root as the server's snapshots hold it: the SDK's encoding without
// removed text attributes, which the SDK's reader would revive as live values.
function serverRoot(doc) {
  const root = doc.getRootObject().deepcopy();
  const text = root.get('t');
  if (text) {
    for (const node of text.getRGATreeSplit()) {
      const value = node.getValue();
      const copy = value.substring(0, value.length);
      for (const attr of [...copy.getAttrs()]) {
        if (attr.isRemoved()) copy.getAttrs().getNodeMapByKey().delete(attr.getKey());
      }
      node.value = copy;
    }
  }
  return b64(converter.objectToBytes(root));
}

function state(doc) {
  const size = doc.getDocSize();
  return {
    json: doc.toSortedJSON(),
    root: serverRoot(doc),
    garbageLen: doc.getGarbageLen(),
    size: { live: { ...size.live }, gc: { ...size.gc } },
  };
}

const words = ['a', 'b', 'xy', 'hello', ' ', '\n', '😀', 'é', 'q"\\', '\u2028'];
const attrValues = [true, false, 1, 2.5, 'red', 'blue', null, [1, 'x'], { k: 1 }];

class Refused extends Error {}

function run(seed, n, steps) {
  const rand = rng(seed);
  const pick = (xs) => xs[Math.floor(rand() * xs.length)];
  const int = (k) => Math.floor(rand() * k);

  const server = new yorkie.Document('text-diff');
  const log = []; // {id, ops} in server order
  const events = [];
  const clients = [];
  let undoFailures = 0;
  for (let i = 0; i < n; i++) {
    const doc = new yorkie.Document('text-diff');
    doc.setActor((i + 1).toString(16).padStart(24, '0'));
    clients.push({ doc, pushed: 0, pulled: 0, synced: doc.getVersionVector() });
  }

  const encode = (change) => ({
    id: b64(converter.changeIDToBinary(change.getID())),
    ops: change.getOperations().map((op) => b64(converter.operationToBinary(op))),
  });
  const decode = (c) =>
    yorkie.Change.create({
      id: converter.bytesToChangeID(Buffer.from(c.id, 'base64')),
      operations: c.ops.map((o) =>
        converter.bytesToOperation(Buffer.from(o, 'base64')),
      ),
    });

  const sync = (c) => {
    const local = c.doc.createChangePack().getChanges();
    for (const ch of local.slice(c.pushed)) {
      const e = encode(ch);
      e.from = clients.indexOf(c);
      log.push(e);
      try {
        server.applyChanges([decode(e)], yorkie.OpSource.Remote);
      } catch (err) {
        // An undone or redone style may still name nodes the server collected after the
        // client last synced; the SDK refuses such a change, and the run ends there.
        events.push({ change: { id: e.id, ops: e.ops }, refused: String(err.message) });
        throw new Refused();
      }
      events.push({ change: { id: e.id, ops: e.ops } });
    }
    c.pushed = local.length;
    for (; c.pulled < log.length; c.pulled++) {
      const e = log[c.pulled];
      if (e.from === clients.indexOf(c)) continue;
      c.doc.applyChanges([decode(e)], yorkie.OpSource.Remote);
    }
    // As after a push-pull: the server knows what the client has seen, and the client
    // collects what every client had seen at the server's last collection.
    c.synced = c.doc.getVersionVector().deepcopy();
    if (lastMin) c.doc.garbageCollect(lastMin);
  };

  let lastMin;
  const gc = () => {
    const min = new Map();
    const vvs = clients.map((c) => c.synced);
    const actors = new Set();
    for (const vv of vvs) for (const [a] of vv) actors.add(a);
    for (const a of actors) {
      let m = null;
      for (const vv of vvs) {
        const l = vv.get(a) ?? 0n;
        if (m === null || l < m) m = l;
      }
      if (m > 0n) min.set(a, m);
    }
    lastMin = new yorkie.VersionVector(min);
    const collected = server.garbageCollect(lastMin);
    const vv = {};
    for (const [a, l] of min) vv[a] = l.toString();
    events.push({ gc: { vv, collected, after: state(server) } });
  };

  clients[0].doc.update((root) => {
    root.t = new yorkie.Text();
  });
  // The text's creation is not for undoing.
  clients[0].doc.internalHistory.clearUndo();
  sync(clients[0]);
  for (const c of clients.slice(1)) sync(c);

  const step = () => {
    const c = pick(clients);
    const r = rand();
    if (r < 0.15) {
      sync(c);
      return;
    }
    if (r < 0.2) {
      gc();
      return;
    }
    const len = c.doc.getRoot().t.length;
    const from = int(len + 1);
    const to = from + int(Math.min(len - from, 4) + 1);
    if (r < 0.6) {
      c.doc.update((root) => {
        const attrs = rand() < 0.2 ? { b: pick(attrValues) } : undefined;
        root.t.edit(from, r < 0.45 ? from : to, pick(words), attrs);
      });
    } else if (r < 0.72) {
      c.doc.update((root) => root.t.edit(from, to, ''));
    } else if (r < 0.86) {
      c.doc.update((root) => {
        const attrs = {};
        attrs[pick(['b', 'i', 'c', 'a!'])] = pick(attrValues);
        if (rand() < 0.3) attrs[pick(['u', 's'])] = pick(attrValues);
        root.t.setStyle(from, to, attrs);
      });
    } else {
      // The SDK's undo fails on some positions whose nodes were collected; such an undo
      // changes nothing and makes no change.
      try {
        if (r < 0.95) {
          if (c.doc.history.canUndo()) c.doc.history.undo();
        } else if (c.doc.history.canRedo()) {
          c.doc.history.redo();
        }
      } catch (e) {
        undoFailures++;
      }
    }
  };

  try {
    for (let s = 0; s < steps; s++) step();
    for (let round = 0; round < 2; round++) for (const c of clients) sync(c);
  } catch (e) {
    if (!(e instanceof Refused)) throw e;
    return { seed, events, refused: true };
  }
  gc();

  return {
    seed,
    events,
    final: state(server),
    clients: clients.map((c) => c.doc.toSortedJSON()),
    undoFailures,
  };
}

// load reads snapshots (base64 api.Snapshot bytes) as a client does on attaching.
function load(snapshots) {
  return snapshots.map((b) => {
    const doc = new yorkie.Document('text-diff');
    doc.applySnapshot(0n, new yorkie.VersionVector(), Buffer.from(b, 'base64'));
    return state(doc);
  });
}

const input = JSON.parse(process.argv[2]);
const output = input.load
  ? load(input.load)
  : input.seeds.map((s) => run(s, input.clients, input.steps));
process.stdout.write(JSON.stringify(output));
