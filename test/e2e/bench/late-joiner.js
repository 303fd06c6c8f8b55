'use strict';
// Measures, with the real SDK, what a late joiner's attach costs on a
// document with a long history: a writer types N changes into a text, then a
// fresh client attaches; the attach's wall time and the bytes of its answer
// are printed. "small" keeps the text near 100 characters (each change types
// one character and, past 100, deletes the first), "growing" only types.
//
//   node bench/late-joiner.js [small|growing] [changes...]
//   (default: both shapes at 1000 10000 100000)
//
// It starts its own server (YORKIE_BIN or bin/yorkie); YORKIE_E2E_RPC_ADDR
// points it at a running one instead.

const yorkie = require('@yorkie-js/sdk');
const { startServer } = require('../lib/server');

const realFetch = globalThis.fetch;
let attachBytes = 0;
globalThis.fetch = async (input, init) => {
  const res = await realFetch(input, init);
  const url = typeof input === 'string' ? input : input.url;
  if (url.endsWith('/AttachDocument')) {
    attachBytes = (await res.clone().arrayBuffer()).byteLength;
  }
  return res;
};

async function measure(rpcAddr, shape, n) {
  const key = `bench-${shape}-${n}-${Date.now()}`;
  const writer = new yorkie.Client({ rpcAddr });
  await writer.activate();
  const doc = new yorkie.Document(key);
  await writer.attach(doc, { syncMode: yorkie.SyncMode.Manual });
  doc.update((root) => {
    root.text = new yorkie.Text();
  });
  for (let i = 0; i < n; i++) {
    doc.update((root) => {
      const len = root.text.length;
      root.text.edit(len, len, String.fromCharCode(97 + (i % 26)));
      if (shape === 'small' && len >= 100) root.text.edit(0, 1, '');
    });
    if (i % 1000 === 999) await writer.sync(doc);
  }
  // Until everything is pushed (a pack holds at most 1000 changes).
  while (doc.hasLocalChanges()) await writer.sync(doc);

  const late = new yorkie.Client({ rpcAddr });
  await late.activate();
  const lateDoc = new yorkie.Document(key);
  const start = process.hrtime.bigint();
  await late.attach(lateDoc, { syncMode: yorkie.SyncMode.Manual });
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  if (lateDoc.toSortedJSON() !== doc.toSortedJSON()) throw new Error(`${shape} ${n}: the late joiner differs`);
  console.log(`${shape}\tchanges=${n}\tattach-ms=${ms.toFixed(1)}\tattach-bytes=${attachBytes}\ttext-length=${lateDoc.getRoot().text.length}`);
  await Promise.all([writer.deactivate(), late.deactivate()]);
}

async function main() {
  const args = process.argv.slice(2);
  const sizes = args.map(Number).filter(Boolean);
  const counts = sizes.length ? sizes : [1000, 10000, 100000];
  const named = args.filter((a) => a === 'small' || a === 'growing');
  const shapes = named.length ? named : ['small', 'growing'];
  let server = null;
  let rpcAddr = process.env.YORKIE_E2E_RPC_ADDR;
  if (!rpcAddr) {
    server = await startServer({ logLevel: 'warn' });
    rpcAddr = server.rpcAddr;
  }
  try {
    for (const shape of shapes) {
      for (const n of counts) await measure(rpcAddr, shape, n);
    }
  } finally {
    if (server) await server.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
