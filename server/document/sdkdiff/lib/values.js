'use strict';
// Random values for the kinds: primitives of every type the SDK stores, and
// object keys, including the awkward ones (escapes, surrogate pairs, keys
// whose UTF-16 and UTF-8 orders differ).

const KEYS = [
  'a', 'b', 'c', 'k1', 'k10', 'k2', 'A', 'Z', '_', '$x', 'with space', 'é',
  'ключ', '日本', 'ｱ', '😀', '"q"', "it's", 'back\\slash', 'tab\t', 'nl\n', '', '0',
];

const STRINGS = [
  '', 'x', 'hello', 'Hello, world', 'ünïcödé', '日本語', '😀🎉', 'a😀b',
  'quote"in', "apos'in", 'back\\slash', 'line\nbreak', 'cr\rlf', 'tab\tin',
  '\b\f', '\u2028\u2029', '\u0001ctl', '<tag>&amp;', '{"json":1}', ' lead', 'trail ',
];

// Integral numbers outside int32 are left out: the SDK types any integral
// number as INTEGER and wraps it to 32 bits on the wire while its own replica
// keeps the exact value, so its replicas disagree (README.md). Large doubles
// are all integral, hence only small exponents here.
const SPECIAL_NUMBERS = [
  0, -0, 1, -1, 2147483647, -2147483648, 0.5, -0.25, 0.1, 1 / 3, 1e-7,
  123456789.125, 2147483647.5, -2147483648.5, 9007199254740.5, 1.5e-10,
  Number.MIN_VALUE, Number.EPSILON, NaN, Infinity, -Infinity, 5e-324, 0.000001, 1e-6 / 3,
];

const SPECIAL_LONGS = [
  0n, 1n, -1n, 2147483648n, -2147483649n, 9007199254740993n,
  9223372036854775807n, -9223372036854775808n,
];

class Values {
  constructor(rng) {
    this.rng = rng;
  }

  key() {
    return this.rng.pick(KEYS);
  }

  string() {
    const r = this.rng;
    if (r.chance(0.6)) return r.pick(STRINGS);
    let s = '';
    const n = r.int(6);
    for (let i = 0; i < n; i++) s += String.fromCharCode(97 + r.int(26));
    return s;
  }

  integer() {
    const r = this.rng;
    if (r.chance(0.2)) {
      const n = r.pick(SPECIAL_NUMBERS);
      if (Number.isInteger(n) && n >= -2147483648 && n <= 2147483647) return n;
    }
    return r.range(-1000, 1000);
  }

  double() {
    const r = this.rng;
    if (r.chance(0.4)) return r.pick(SPECIAL_NUMBERS);
    return (r.int(200000) - 100000) / 64;
  }

  long() {
    const r = this.rng;
    if (r.chance(0.4)) return r.pick(SPECIAL_LONGS);
    return BigInt(r.range(-100000, 100000)) * 65537n;
  }

  bytes() {
    const r = this.rng;
    const b = new Uint8Array(r.int(6));
    for (let i = 0; i < b.length; i++) b[i] = r.int(256);
    return b;
  }

  date() {
    const r = this.rng;
    if (r.chance(0.2)) return new Date(r.pick([0, 1, 951782400000, 4102444800000]));
    return new Date(1700000000000 + r.int(1e9) * 1000 + r.int(1000));
  }

  // primitive returns a value of a random primitive type.
  primitive() {
    switch (this.rng.int(8)) {
      case 0: return null;
      case 1: return this.rng.chance(0.5);
      case 2: return this.integer();
      case 3: return this.double();
      case 4: return this.string();
      case 5: return this.long();
      case 6: return this.bytes();
      default: return this.date();
    }
  }

  // plain returns a primitive, or with decreasing probability by depth a
  // small nested plain object or array of such values.
  plain(depth = 0) {
    const r = this.rng;
    const nest = depth < 2 ? 0.25 : 0;
    if (r.chance(nest)) {
      if (r.chance(0.5)) {
        const arr = [];
        const n = r.int(4);
        for (let i = 0; i < n; i++) arr.push(this.plain(depth + 1));
        return arr;
      }
      const obj = {};
      const n = r.int(4);
      for (let i = 0; i < n; i++) obj[this.key()] = this.plain(depth + 1);
      return obj;
    }
    return this.primitive();
  }
}

// Keys of objects follow a discipline that keeps the sessions clear of an
// SDK 0.7.7 defect (see README.md, "SDK defects the generator avoids"):
// a shared key (no '#') is only ever set while it exists, never deleted;
// a key ending in '#<client>' is set and deleted by that client alone.
function keyToSet(rng, values, target, me) {
  if (rng.chance(0.4)) {
    const shared = Object.keys(target).filter((k) => !k.includes('#'));
    if (shared.length) return rng.pick(shared);
  }
  return `${values.key()}#${me}`;
}

function keyToDelete(rng, target, me) {
  const owned = Object.keys(target).filter((k) => k.endsWith(`#${me}`));
  return owned.length ? rng.pick(owned) : undefined;
}

// Array elements that an index assignment (ArraySet) created are never
// removed again: SDK 0.7.7 registers them without a parent on remote
// replicas, and collecting their tombstone throws there.
function removable(ctx, arr, i) {
  return !ctx.pinned.has(arr.getElementByIndex(i).getID().toIDString());
}

function setAt(ctx, arr, i, value) {
  const ids = () => {
    const out = [];
    for (let k = 0; k < arr.length; k++) out.push(arr.getElementByIndex(k).getID().toIDString());
    return out;
  };
  // The new value need not land at i: the RGA puts it after any neighbour
  // positioned later than the assignment.
  const before = new Set(ids());
  arr[i] = value;
  for (const id of ids()) if (!before.has(id)) ctx.pinned.add(id);
}

// snap moves an index of str off the middle of a surrogate pair. The SDK
// counts UTF-16 units; an edit between the two halves would leave lone
// surrogates, which no UTF-8 document (the server's) can hold.
function snap(str, i) {
  if (i > 0 && i < str.length) {
    const c = str.charCodeAt(i);
    if (c >= 0xdc00 && c <= 0xdfff) return i - 1;
  }
  return i;
}

// Helpers that tell the SDK's JSON proxies apart (they are Proxies over the
// CRDT elements, so instanceof and Array.isArray do not work on them).
function isArrayProxy(v) {
  return v !== null && typeof v === 'object' &&
    typeof v.getElementByIndex === 'function' && typeof v.insertAfter === 'function';
}

function isObjectProxy(v, yorkie) {
  return v !== null && typeof v === 'object' && !isArrayProxy(v) &&
    typeof v.getID === 'function' && typeof v.toJS === 'function' &&
    !(v instanceof yorkie.Text) && !(v instanceof yorkie.Tree) &&
    !(v instanceof yorkie.Counter) && !(v instanceof yorkie.DedupCounter) &&
    !(v instanceof Uint8Array) && !(v instanceof Date);
}

module.exports = { snap, Values, isArrayProxy, isObjectProxy, keyToSet, keyToDelete, removable, setAt };
