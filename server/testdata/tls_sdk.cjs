'use strict';
// The JS SDK over https, driven by tls_sdk_test.go: two realtime clients
// edit one document and converge; they keep syncing while the test
// replaces the server's certificate; a third client then connects (a new
// TLS connection, the new certificate) and all three converge. Any failed
// fetch is reported. Usage: node tls_sdk.cjs <rpcAddr> <docKey> [untrusted]
const yorkie = require('@yorkie-js/sdk');
const readline = require('node:readline');

const [rpcAddr, docKey, mode] = process.argv.slice(2);
const failures = [];
const realFetch = globalThis.fetch;
globalThis.fetch = async (input, init = {}) => {
  const url = typeof input === 'string' ? input : input.url;
  try {
    const res = await realFetch(input, init);
    if (!res.ok) failures.push(`${res.status} ${url}`);
    return res;
  } catch (err) {
    if (!init.signal || !init.signal.aborted) failures.push(`${url}: ${causes(err)}`);
    throw err;
  }
};

// causes lists the messages of an error and its causes.
function causes(err) {
  const out = [];
  for (let e = err; e && out.length < 8; e = e.cause) out.push(e.message || String(e));
  return out.join(': ');
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function converge(docs, what) {
  const deadline = Date.now() + 30000;
  for (;;) {
    const all = docs.map((d) => d.toSortedJSON());
    if (all.every((j) => j === all[0])) return all[0];
    if (Date.now() > deadline) throw new Error(`${what}: no convergence: ${all.join(' | ')}`);
    await sleep(20);
  }
}

async function client(name) {
  const c = new yorkie.Client({ rpcAddr });
  await c.activate();
  const doc = new yorkie.Document(docKey);
  await c.attach(doc, { initialPresence: { name } });
  return { c, doc };
}

async function main() {
  if (mode === 'untrusted') {
    const c = new yorkie.Client({ rpcAddr, retrySyncLoopDelay: 10 });
    try {
      await c.activate();
    } catch (err) {
      console.log(JSON.stringify({ refused: causes(err), failures }));
      return;
    }
    throw new Error('activation succeeded without trusting the CA');
  }
  const a = await client('a');
  const b = await client('b');
  a.doc.update((root) => { root.a = 0; });
  b.doc.update((root) => { root.b = 0; });
  await converge([a.doc, b.doc], 'first edits');
  console.log('ready');

  let rotated = false;
  const rl = readline.createInterface({ input: process.stdin });
  rl.on('line', (line) => {
    if (line.trim() === 'rotated') rotated = true;
  });
  let round = 0;
  while (!rotated) {
    round++;
    a.doc.update((root) => { root.a = round; });
    b.doc.update((root) => { root.b = round; });
    await Promise.all([a.c.sync(), b.c.sync()]);
    if (round % 10 === 0) console.log(`synced ${round}`);
    await sleep(5);
  }
  rl.close();
  process.stdin.destroy();
  const c = await client('c');
  c.doc.update((root) => { root.c = 'after rotation'; });
  const json = await converge([a.doc, b.doc, c.doc], 'after the rotation');
  for (const x of [a, b, c]) await x.c.deactivate();
  console.log(JSON.stringify({ rounds: round, json, failures }));
}

main().catch((err) => {
  console.log(JSON.stringify({ error: String(err && err.stack), failures }));
  process.exit(1);
});
