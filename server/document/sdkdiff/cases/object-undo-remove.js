#!/usr/bin/env node
'use strict';
// Writes testdata/object-undo-remove.jsonl: client a sets {k: 1}, deletes k,
// undoes the deletion; b receives each change before anyone collects. Once
// everyone synced and collected, a counts no garbage (its undo dropped the old
// element from its garbage before putting it back) while b, which applied the
// same Set from the wire, still counts 1: the SDK disagrees with itself.
//
//   node cases/object-undo-remove.js > testdata/object-undo-remove.jsonl
const { load } = require('../lib/sdk');
const { Server } = require('../lib/server');

const sdk = load();
const { yorkie } = sdk;
yorkie.setLogLevel(yorkie.LogLevel.Error);
const lines = [];
const out = { line: (l) => lines.push(JSON.stringify(l)) };
const key = 'undo-remove';
const observer = new yorkie.Document(key);
const server = new Server(sdk, key, out);
server.onStored = (e) => {
  observer.applyChanges(yorkie.converter.fromChanges([e.pb]), yorkie.OpSource.Remote);
  out.line({ t: 'change', seq: e.seq, actor: e.actor, b64: Buffer.from(sdk.protobuf.toBinary(sdk.schemas.Change, e.pb)).toString('base64') });
};
const vectorModel = (vv) => yorkie.converter.fromChangePack(sdk.protobuf.create(sdk.schemas.ChangePack, {
  checkpoint: {}, versionVector: server.vectorToPb(vv),
})).getVersionVector();
const client = (n) => {
  const doc = new yorkie.Document(key);
  const hex = n.toString(16).padStart(24, '0');
  doc.setActor(hex);
  server.attach(hex);
  return { hex, doc };
};
const a = client(1);
const b = client(2);
const sync = (c, check) => {
  const { minvv } = server.pushPull(c.hex, c.doc);
  if (!check) return;
  observer.garbageCollect(vectorModel(minvv));
  const hexvv = Object.fromEntries(Object.entries(minvv).map(([k, v]) => [k, v.toString()]));
  out.line({
    t: 'check', seq: server.head(), client: c.hex, json: observer.toSortedJSON(), garbage: c.doc.getGarbageLen(), presences: {},
    minvv: hexvv, observer: { json: observer.toSortedJSON(), garbage: observer.getGarbageLen(), size: observer.getDocSize() },
  });
};
out.line({ t: 'start', seed: 0, sdk: sdk.version, kinds: ['object'], clients: [a.hex, b.hex], steps: 0 });
a.doc.update((root) => { root.k = 1; });
sync(a); sync(b);
a.doc.update((root) => { delete root.k; });
sync(a); sync(b);
a.doc.history.undo();
sync(a); sync(b);
for (let round = 0; round < 4; round++) { sync(a, round === 3); sync(b, round === 3); }
out.line({ t: 'settled', seq: server.head(), replicas: [a, b].map((c) => ({ client: c.hex, garbage: c.doc.getGarbageLen(), diverged: false, revived: c === a })) });
out.line({ t: 'end', seq: server.head(), changes: server.head(), ops: 3, refused: 0, labels: {}, fault: false });
process.stdout.write(lines.join('\n') + '\n');
