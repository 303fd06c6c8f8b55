#!/usr/bin/env node
'use strict';
// Differential-test generator: simulates K clients of the real JS SDK editing
// one document through a simulated server, and writes what happened as JSON
// lines (see README.md): every change in server order as the binary
// api.Change, checkpoints of the replicas after they synced, and SDK
// snapshots. The same seed always gives the same lines.
//
//   node gen.js --seed 7 [--steps 300] [--clients 3] [--kinds object,text]
//               [--joins 1] [--weights '{"join":2}'] [--op-weights '{"moveLast":5}']
//               [--trace] [--answer-snapshots]

const fs = require('fs');
const path = require('path');
const readline = require('readline');
const { load } = require('./lib/sdk');
const { Rng } = require('./lib/rng');
const { Values } = require('./lib/values');
const { Server, hexToB64 } = require('./lib/server');

const KIND_DIR = path.join(__dirname, 'kinds');

function parseArgs(argv) {
  const args = { steps: 300, kinds: undefined, trace: false, answer: false, joins: 1 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--seed') args.seed = Number(next());
    else if (a === '--steps') args.steps = Number(next());
    else if (a === '--clients') args.clients = Number(next());
    else if (a === '--joins') args.joins = Number(next());
    else if (a === '--kinds') args.kinds = next().split(',').filter(Boolean);
    else if (a === '--weights') args.weights = JSON.parse(next());
    else if (a === '--op-weights') args.opWeights = JSON.parse(next());
    else if (a === '--trace') args.trace = true;
    else if (a === '--answer-snapshots') args.answer = true;
    else throw new Error(`unknown argument ${a}`);
  }
  if (!Number.isInteger(args.seed) || args.seed < 0) throw new Error('--seed must be a non-negative integer');
  return args;
}

function loadKinds(names) {
  const all = fs.readdirSync(KIND_DIR).filter((f) => f.endsWith('.js')).map((f) => f.slice(0, -3)).sort();
  const chosen = names || all;
  return chosen.map((name) => {
    if (!all.includes(name)) throw new Error(`unknown kind ${name} (have ${all.join(', ')})`);
    const mod = require(path.join(KIND_DIR, `${name}.js`));
    if (mod.name !== name || typeof mod.init !== 'function' || typeof mod.step !== 'function') {
      throw new Error(`kinds/${name}.js must export {name: '${name}', init(root, ctx), step(root, ctx)}`);
    }
    return mod;
  });
}

class Output {
  constructor() {
    this.buf = [];
    this.size = 0;
  }
  line(obj) {
    const s = JSON.stringify(obj, (k, v) => (typeof v === 'bigint' ? v.toString() : v)) + '\n';
    this.buf.push(s);
    this.size += s.length;
    if (this.size > 1 << 16) this.flush();
  }
  flush() {
    if (this.buf.length) fs.writeSync(1, this.buf.join(''));
    this.buf = [];
    this.size = 0;
  }
}

// unsafeReverse tells the reverse operations of the history that would run
// into SDK 0.7.7 defects (README.md): reversing an index assignment removes
// the value it set, and a Set on a shared key re-inserts the old value with
// its old creation time, which a concurrent older Set then removes.
function unsafeReverse(op) {
  const name = op && op.constructor ? op.constructor.name : '';
  if (name === 'ArraySetOperation') return true;
  return name === 'SetOperation' && !op.getKey().includes('#');
}

// revivesElement tells whether op, a reverse operation about to run, puts back an object
// value its replica still holds as a removed element (undo of a removal): the replica then
// drops that element from its garbage, while the replicas that receive the change keep
// counting it (README.md).
function revivesElement(doc, op) {
  const name = op && op.constructor ? op.constructor.name : '';
  return name === 'SetOperation' && !!doc.root.findByCreatedAt(op.getValue().getCreatedAt());
}

function presencesOf(doc) {
  // The document's presence map is private in TypeScript only; it holds
  // every actor's presence the replica knows, as the server's would.
  const out = {};
  for (const [actor, p] of [...doc.presences.entries()].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const data = {};
    for (const [k, v] of Object.entries(p)) data[k] = JSON.stringify(v);
    out[actor] = data;
  }
  return out;
}

function hexVector(vv) {
  const out = {};
  for (const [k, v] of Object.entries(vv)) out[k] = v.toString();
  return out;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  // The SDK logs through console; keep stdout for our lines only.
  for (const m of ['log', 'info', 'warn', 'debug', 'error']) console[m] = (...a) => process.stderr.write(a.join(' ') + '\n');

  const sdk = load();
  const { yorkie, protobuf, schemas } = sdk;
  yorkie.setLogLevel(yorkie.LogLevel.Error);
  const kinds = loadKinds(args.kinds);
  const rng = new Rng(args.seed);
  const values = new Values(rng);
  const out = new Output();
  output = out;
  const K = args.clients || 2 + (args.seed % 3);
  const docKey = `sdkdiff-${args.seed}`;
  const stats = { ops: 0, changes: 0, refused: 0, labels: {} };

  let stdin;
  const answerLine = async () => {
    if (!stdin) stdin = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();
    const { value, done } = await stdin.next();
    if (done) throw new Error('stdin closed before a snapshot answer');
    return JSON.parse(value);
  };

  // The observer applies every stored change at once, in server order: it is
  // the SDK's model of what the server's document must be.
  const observer = new yorkie.Document(docKey);
  // restored is an SDK document loaded from the last SDK snapshot that keeps
  // applying the later changes: what the server restored from that snapshot
  // must match, whether or not the snapshot kept everything.
  let restored;
  const pendingLines = [];
  const server = new Server(sdk, docKey, out);
  server.onStored = (entry) => {
    stats.changes++;
    stats.ops += entry.pb.operations.length;
    observer.applyChanges(yorkie.converter.fromChanges([entry.pb]), yorkie.OpSource.Remote);
    if (restored) {
      try {
        restored.applyChanges(yorkie.converter.fromChanges([entry.pb]), yorkie.OpSource.Remote);
      } catch (err) {
        // The SDK cannot go on from its own snapshot: stop comparing with it.
        restored = undefined;
        pendingLines.push({ t: 'unrestore', seq: entry.seq, error: String(err) });
      }
    }
    const line = {
      t: 'change', seq: entry.seq, actor: entry.actor,
      b64: Buffer.from(protobuf.toBinary(schemas.Change, entry.pb)).toString('base64'),
    };
    if (args.trace) line.json = observer.toSortedJSON();
    // An unrestore goes first: the test must stop applying to its own restored
    // document before it sees the change the SDK's could not take.
    for (const l of pendingLines.splice(0)) out.line(l);
    out.line(line);
  };
  const vectorModel = (vv) => yorkie.converter.fromChangePack(protobuf.create(schemas.ChangePack, {
    checkpoint: {}, versionVector: server.vectorToPb(vv),
  })).getVersionVector();

  let nextActor = 1;
  const newClient = (i) => {
    const hex = (nextActor++).toString(16).padStart(24, '0');
    const doc = new yorkie.Document(docKey);
    doc.setActor(hex);
    return { hex, doc, offline: false, name: `c${i}`, index: i };
  };
  const clients = [];
  for (let i = 0; i < K; i++) clients.push(newClient(i));
  out.line({ t: 'start', seed: args.seed, sdk: sdk.version, kinds: kinds.map((k) => k.name), clients: clients.map((c) => c.hex), steps: args.steps });

  const pinned = new Set();
  const ctxFor = (c) => ({ rng, values, yorkie, actor: c.hex, me: c.index, pinned, opWeights: args.opWeights || {} });
  const attempt = (label, fn) => {
    try {
      fn();
      return true;
    } catch (err) {
      stats.refused++;
      stats.labels[`refused:${label}`] = (stats.labels[`refused:${label}`] || 0) + 1;
      return false;
    }
  };
  const count = (label) => {
    if (label) stats.labels[label] = (stats.labels[label] || 0) + 1;
  };

  const check = (c, minvv) => {
    observer.garbageCollect(vectorModel(minvv));
    // The server applies the log in server order, as the observer does: that
    // is its reference. A replica that applied the same changes in another
    // order and holds another document shows the SDK not converging; say so
    // once per client and go on with the log's document.
    const replica = c.doc.toSortedJSON();
    const json = observer.toSortedJSON();
    if (replica !== json && !c.diverged) {
      c.diverged = true;
      out.line({ t: 'sdkdiverge', seq: server.head(), client: c.hex, replicaJSON: replica, logJSON: json });
    }
    if (restored) {
      try {
        restored.garbageCollect(vectorModel(minvv));
      } catch (err) {
        restored = undefined;
        out.line({ t: 'unrestore', seq: server.head(), error: String(err) });
      }
    }
    out.line({
      t: 'check', seq: server.head(), client: c.hex,
      restored: restored ? { json: restored.toSortedJSON(), garbage: restored.getGarbageLen(), size: restored.getDocSize() } : undefined,
      json, garbage: c.doc.getGarbageLen(), presences: presencesOf(c.doc),
      minvv: hexVector(minvv),
      observer: { json: observer.toSortedJSON(), garbage: observer.getGarbageLen(), size: observer.getDocSize() },
    });
  };
  const sync = (c, withCheck) => {
    const { minvv } = server.pushPull(c.hex, c.doc);
    if (withCheck) check(c, minvv);
  };
  const fullSync = () => {
    for (const c of clients) c.offline = false;
    for (let round = 0; round < 4; round++) for (const c of clients) sync(c, round === 3);
  };
  // sdkSnapshotBytes is the api.Snapshot of doc as the SDK's converter encodes it.
  const sdkSnapshotBytes = (doc) => {
    const root = protobuf.fromBinary(schemas.JSONElement, yorkie.converter.objectToBytes(doc.getRootObject()));
    const presences = {};
    for (const [actor, data] of Object.entries(presencesOf(doc))) presences[actor] = protobuf.create(schemas.Presence, { data });
    return protobuf.toBinary(schemas.Snapshot, protobuf.create(schemas.Snapshot, { root, presences }));
  };
  const sdkSnapshot = (c) => {
    const bytes = sdkSnapshotBytes(c.doc);
    const b64 = Buffer.from(bytes).toString('base64');
    // What a fresh SDK document loaded from these bytes holds. The SDK
    // decodes doubles through a DataView over the whole underlying buffer,
    // overwriting its first bytes: hand it a copy.
    const fresh = new yorkie.Document(docKey);
    fresh.applySnapshot(BigInt(server.head()), c.doc.getVersionVector(), bytes.slice());
    if (c.doc !== observer) restored = fresh;
    out.line({
      t: 'snap', seq: server.head(), client: c.hex, b64,
      json: c.doc.toSortedJSON(), garbage: fresh.getGarbageLen(), freshJSON: fresh.toSortedJSON(), size: fresh.getDocSize(),
      presences: presencesOf(c.doc),
    });
    return bytes.slice();
  };

  // Attach every client (the initial presence rides in the first change),
  // then let the first one create the kinds' values.
  for (const c of clients) {
    server.attach(c.hex);
    c.doc.update((_, p) => p.set({ name: c.name, cursor: 0 }));
    sync(c, false);
  }
  clients[0].doc.update((root) => {
    for (const k of kinds) k.init(root, ctxFor(clients[0]));
  });
  // Undoing the creation would delete shared root keys (see values.js).
  clients[0].doc.clearHistory();
  fullSync();

  // joins counts the clients that attached late, through a snapshot (at most args.joins).
  let joins = 0;
  let detached = false;
  let fault;
  for (let step = 0; step < args.steps && !fault; step++) {
   try {
    const c = rng.pick(clients);
    const weights = {
      edit: 50, presence: 6, undo: 7, redo: 3, sync: 20, offline: 3, full: 1.5, snap: 1,
      join: 0.5, detach: 0.3, ...(args.weights || {}),
    };
    // --weights changes how likely a join or a detach is, not whether one may happen.
    if (joins >= args.joins) weights.join = 0;
    if (detached || clients.length < 3) weights.detach = 0;
    const action = rng.weighted(weights);
    switch (action) {
      case 'edit': {
        const n = rng.range(1, 3);
        const withPresence = rng.chance(0.1);
        const labels = [];
        attempt('edit', () => c.doc.update((root, p) => {
          for (let i = 0; i < n; i++) labels.push(rng.pick(kinds).step(root, ctxFor(c)));
          if (withPresence) p.set({ cursor: rng.int(100) }, { addToHistory: rng.chance(0.5) });
        })) && labels.forEach(count);
        break;
      }
      case 'presence':
        attempt('presence', () => c.doc.update((_, p) => p.set(
          rng.chance(0.7) ? { cursor: rng.int(100) } : { cursor: rng.int(100), sel: [rng.int(9), rng.int(9)], mood: rng.pick(['ok', '"q"', 'ü', null]) },
          { addToHistory: rng.chance(0.3) },
        ))) && count('presence');
        break;
      case 'undo':
      case 'redo': {
        const h = c.doc.history;
        if (action === 'undo' ? !h.canUndo() : !h.canRedo()) break;
        const stack = action === 'undo' ? c.doc.getUndoStackForTest() : c.doc.getRedoStackForTest();
        if (stack[stack.length - 1].some(unsafeReverse)) break;
        const revives = stack[stack.length - 1].some((op) => revivesElement(c.doc, op));
        if (attempt(action, () => (action === 'undo' ? h.undo() : h.redo()))) {
          count(action);
          if (revives) c.revived = true;
        }
        // A failed undo may leave the clone half-applied: drop it.
        else c.doc.clone = undefined;
        break;
      }
      case 'sync':
        if (!c.offline) sync(c, rng.chance(0.5));
        break;
      case 'offline':
        c.offline = !c.offline;
        break;
      case 'full':
        fullSync();
        break;
      case 'snap':
        if (!c.offline) {
          sync(c, false);
          sdkSnapshot(c);
        }
        break;
      case 'join': {
        // A new client attaches and gets the document as a snapshot: from the
        // server under test when asked to, else from the observer.
        joins++;
        const n = newClient(clients.length);
        server.attach(n.hex);
        n.doc.update((_, p) => p.set({ name: n.name, cursor: 0 }));
        server.pushOnly(n.hex, n.doc);
        const own = sdkSnapshotBytes(observer);
        // What the SDK reads from its own snapshot here: its reader does not
        // always give back the document it was written from.
        const ownLoaded = new yorkie.Document(docKey);
        ownLoaded.applySnapshot(BigInt(server.head()), observer.getVersionVector(), own.slice());
        out.line({
          t: 'snapreq', seq: server.head(), client: n.hex, answered: args.answer,
          sdkB64: Buffer.from(own).toString('base64'), sdkLoadJSON: ownLoaded.toSortedJSON(),
        });
        let answer;
        if (args.answer) {
          out.flush();
          const a = await answerLine();
          if (a.error) throw new Error(`snapshot answer: ${a.error}`);
          const vv = {};
          for (const [k, v] of Object.entries(a.vv || {})) vv[k] = BigInt(v);
          answer = { snapshot: new Uint8Array(Buffer.from(a.b64, 'base64')), vv };
        } else {
          const vv = {};
          for (const [k, v] of observer.getVersionVector()) vv[k] = BigInt(v);
          answer = { snapshot: own, vv };
        }
        server.attachWithSnapshot(n.hex, n.doc, answer);
        out.line({
          t: 'snapload', seq: server.head(), client: n.hex, json: n.doc.toSortedJSON(), garbage: n.doc.getGarbageLen(),
          size: n.doc.getDocSize(), presences: presencesOf(n.doc),
        });
        clients.push(n);
        break;
      }
      case 'detach': {
        // Only a client whose changes everyone has seen may leave: the
        // server stops counting its vector, so the others could otherwise
        // collect tombstones its unseen changes still refer to.
        detached = true;
        fullSync();
        c.doc.update((_, p) => p.clear());
        server.pushPull(c.hex, c.doc);
        server.detach(c.hex);
        clients.splice(clients.indexOf(c), 1);
        out.line({ t: 'detach', seq: server.head(), client: c.hex });
        break;
      }
    }
   } catch (err) {
    // The SDK itself failed outside an updater: a defect of the SDK the
    // generator does not avoid yet. Stop here; what came before stays valid.
    if (process.env.SDKDIFF_RETHROW) throw err;
    fault = { step, error: String(err) };
    process.stderr.write(`sdkdiff generator: the SDK failed at step ${step}: ${err && err.stack ? err.stack : err}\n`);
   }
  }

  if (!fault) {
    try {
      fullSync();
      // Everyone has synced twice past the last change and collected garbage
      // with the same vector: the replicas' garbage is what the server must hold.
      out.line({
        t: 'settled', seq: server.head(),
        replicas: clients.map((c) => ({ client: c.hex, garbage: c.doc.getGarbageLen(), diverged: !!c.diverged, revived: !!c.revived })),
      });
      sdkSnapshot(clients[rng.int(clients.length)]);
    } catch (err) {
      fault = { step: args.steps, error: String(err) };
      process.stderr.write(`sdkdiff generator: the SDK failed at the end: ${err && err.stack ? err.stack : err}\n`);
    }
  }
  if (fault) out.line({ t: 'fault', seq: server.head(), ...fault });
  out.line({ t: 'end', seq: server.head(), changes: stats.changes, ops: stats.ops, refused: stats.refused, labels: stats.labels, fault: !!fault });
  out.flush();
}

let output;
main().then(
  () => process.exit(0),
  (err) => {
    if (output) output.flush();
    process.stderr.write(`sdkdiff generator: ${err && err.stack ? err.stack : err}\n`);
    process.exit(1);
  },
);
