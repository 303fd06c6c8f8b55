// Generates sdk.json: how JavaScript and the real SDK print numbers, escape strings, decode
// UTF-8, print dates and count distinct actors, for the crdt package's tests.
//
// Run from the repository root after `npm ci` in test/e2e:
//   node server/document/crdt/testdata/generate.js
'use strict';

const path = require('path');
const fs = require('fs');
const yorkie = require(path.resolve(__dirname, '../../../../test/e2e/node_modules/@yorkie-js/sdk'));

// A small deterministic generator, so the file changes only when the cases do.
let seed = 0x9e3779b9;
const rand = () => {
  seed ^= seed << 13; seed >>>= 0;
  seed ^= seed >>> 17;
  seed ^= seed << 5; seed >>>= 0;
  return seed;
};

const f64 = new Float64Array(1);
const u32 = new Uint32Array(f64.buffer);
const bitsHex = (x) => { f64[0] = x; return u32[1].toString(16).padStart(8, '0') + u32[0].toString(16).padStart(8, '0'); };

const numbers = [];
const special = [0, -0, 1, -1, 0.1, 0.5, 1.5, 1e21, 1e20, 123456789012345680000, 1e-6, 1e-7, 1.5e-7, 2 ** 53, 2 ** 53 + 2,
  2 ** 31, -(2 ** 31), 2 ** 32, 2 ** 63, 2 ** 64, 1e300, -1e-300, 5e-324, 1.7976931348623157e308, NaN, Infinity, -Infinity,
  4294967295.5, -4294967297, 0.000001234, 123e-20, 1 / 3, 100, 1e6, 12345.678];
for (const x of special) numbers.push(x);
for (let i = 0; i < 400; i++) {
  u32[1] = rand(); u32[0] = rand();
  numbers.push(f64[0]);
}
for (let i = 0; i < 200; i++) {
  // Numbers of ordinary sizes, integral and not.
  const x = (rand() - 2 ** 31) * Math.pow(10, (rand() % 40) - 20);
  numbers.push(x, Math.trunc(x));
}
const numberCases = numbers.map((x) => ({ bits: bitsHex(x), str: String(x), int32: x | 0 }));

const strings = ['', 'plain', 'q"b\\s/', '\n\r\t\b\f\v\u0000\u001f\u007f', '\u2028\u2029', "'", 'é中😀\uffff\ufeff', '<script>'];
for (let i = 0; i < 100; i++) {
  let s = '';
  const n = rand() % 12;
  for (let j = 0; j < n; j++) {
    const r = rand() % 6;
    if (r === 0) s += String.fromCharCode(rand() % 0x80);
    else if (r === 1) s += String.fromCharCode(rand() % 0x20);
    else if (r === 2) s += String.fromCodePoint(0x80 + (rand() % 0x780));
    else if (r === 3) s += String.fromCodePoint(0x10000 + (rand() % 0xfffff));
    else if (r === 4) s += String.fromCharCode(0xe000 + (rand() % 0x2000));
    else s += '"\\\u2028'[rand() % 3];
  }
  strings.push(s);
}
const stringCases = strings.map((s) => {
  const d = new yorkie.Document('k');
  d.update((r) => { r.s = s; });
  const json = d.toSortedJSON();
  return { hex: Buffer.from(s, 'utf8').toString('hex'), json: Buffer.from(json.slice(5, -1), 'utf8').toString('hex'), len: s.length };
});

// Keys sort by UTF-16 code units.
const keys = strings.slice(0, 60);
const sortedKeys = Array.from(new Set(keys)).sort().map((s) => Buffer.from(s, 'utf8').toString('hex'));

const dec = new TextDecoder('utf-8');
const byteCases = [];
const interesting = ['efbbbf41', 'efbbbfefbbbf', 'e282', 'e282ac', 'f09f98', 'ed a080'.replace(' ', ''), 'c0af', 'f4908080', 'e0808041', 'ff', 'c2', 'f0', 'fe41'];
for (const h of interesting) byteCases.push(h);
for (let i = 0; i < 300; i++) {
  const n = rand() % 10;
  const b = Buffer.alloc(n);
  for (let j = 0; j < n; j++) {
    const r = rand() % 4;
    b[j] = r === 0 ? rand() % 0x80 : r === 1 ? 0x80 + (rand() % 0x40) : 0xc0 + (rand() % 0x40);
  }
  byteCases.push(b.toString('hex'));
}
const utf8Cases = byteCases.map((h) => ({ in: h, out: Buffer.from(dec.decode(Buffer.from(h, 'hex')), 'utf8').toString('hex') }));

const dates = [0, 1, 999, 1700000000123, 253402300799999, 253402300800000, 8.64e15, 951782400000, 4102444800000];
for (let i = 0; i < 50; i++) dates.push((rand() * 2 ** 21 + rand()) % 8.64e15);
const dateCases = dates.map((ms) => ({ ms, iso: new Date(ms).toISOString() }));

// Distinct-actor counting: the dedup counter's value after each add, and its registers.
const actors = [];
for (let i = 0; i < 300; i++) {
  const n = rand() % 50;
  let s = '';
  for (let j = 0; j < n; j++) s += String.fromCharCode(0x20 + (rand() % 0x5f));
  actors.push(i % 7 === 0 && i > 0 ? actors[i - 3] : s || 'x');
}
actors.push('é中😀', 'a'.repeat(31), 'a'.repeat(32), 'a'.repeat(33), 'b'.repeat(64));
const doc = new yorkie.Document('k');
doc.update((r) => { r.c = new yorkie.DedupCounter(); });
const counts = [];
for (const a of actors) {
  doc.update((r) => { r.c.add(a); });
  counts.push(JSON.parse(doc.toSortedJSON()).c);
}
const registers = doc.getRootObject().get('c').hllBytes();

fs.writeFileSync(path.join(__dirname, 'sdk.json'), JSON.stringify({
  numbers: numberCases,
  strings: stringCases,
  sortedKeys,
  utf8: utf8Cases,
  dates: dateCases,
  dedup: { actors, counts, registers: Buffer.from(registers).toString('hex') },
}) + '\n');
