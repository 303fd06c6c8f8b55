#!/usr/bin/env node
'use strict';
// Writes testdata/text-twostyles-size.jsonl: client a types "abc", styles
// 0..2 {size: 1}, then 1..3 {color: 'red'}, and undoes both styles (the
// undos remove the attributes); b receives every change from the wire. Each
// check records the sizes the SDK reports at that moment (getDocSize hands
// out the document's live counter, so it is copied at once), for the
// observer that applied the log and for both replicas.
//
//   node cases/text-twostyles-size.js > testdata/text-twostyles-size.jsonl
const { load } = require('../lib/sdk');
const { Server } = require('../lib/server');

const sdk = load();
const { yorkie } = sdk;
yorkie.setLogLevel(yorkie.LogLevel.Error);
const lines = [];
const out = { line: (l) => lines.push(JSON.stringify(l)) };
const key = 'twostyles';
const observer = new yorkie.Document(key);
const server = new Server(sdk, key, out);
server.onStored = (e) => {
  observer.applyChanges(yorkie.converter.fromChanges([e.pb]), yorkie.OpSource.Remote);
  out.line({ t: 'change', seq: e.seq, actor: e.actor, b64: Buffer.from(sdk.protobuf.toBinary(sdk.schemas.Change, e.pb)).toString('base64') });
};
const vectorModel = (vv) => yorkie.converter.fromChangePack(sdk.protobuf.create(sdk.schemas.ChangePack, {
  checkpoint: {}, versionVector: server.vectorToPb(vv),
})).getVersionVector();
const size = (doc) => JSON.parse(JSON.stringify(doc.getDocSize()));
const client = (n) => {
  const doc = new yorkie.Document(key);
  const hex = n.toString(16).padStart(24, '0');
  doc.setActor(hex);
  server.attach(hex);
  return { hex, doc };
};
const a = client(1);
const b = client(2);
const check = () => {
  sync(a); sync(b);
  const { minvv } = server.pushPull(a.hex, a.doc);
  observer.garbageCollect(vectorModel(minvv));
  const hexvv = Object.fromEntries(Object.entries(minvv).map(([k, v]) => [k, v.toString()]));
  out.line({
    t: 'check', seq: server.head(), client: a.hex, json: observer.toSortedJSON(), garbage: a.doc.getGarbageLen(), presences: {},
    minvv: hexvv, observer: { json: observer.toSortedJSON(), garbage: observer.getGarbageLen(), size: size(observer) },
    replicaSizes: { [a.hex]: size(a.doc), [b.hex]: size(b.doc) },
  });
};
const sync = (c) => server.pushPull(c.hex, c.doc);
out.line({ t: 'start', seed: 0, sdk: sdk.version, kinds: ['text'], clients: [a.hex, b.hex], steps: 0 });
a.doc.update((root) => { root.t = new yorkie.Text(); root.t.edit(0, 0, 'abc'); });
check();
a.doc.update((root) => { root.t.setStyle(0, 2, { size: 1 }); });
check();
a.doc.update((root) => { root.t.setStyle(1, 3, { color: 'red' }); });
check();
a.doc.history.undo();
check();
a.doc.history.undo();
check();
for (let round = 0; round < 3; round++) check();
out.line({ t: 'settled', seq: server.head(), replicas: [a, b].map((c) => ({ client: c.hex, garbage: c.doc.getGarbageLen(), diverged: false, revived: false })) });
out.line({ t: 'end', seq: server.head(), changes: server.head(), ops: 6, refused: 0, labels: {}, fault: false });
process.stdout.write(lines.join('\n') + '\n');
