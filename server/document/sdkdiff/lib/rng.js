'use strict';
// A small seeded PRNG (sfc32, seeded through splitmix32) so that a seed
// always replays the same session: Math.random is never used.

function splitmix32(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x9e3779b9) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  };
}

class Rng {
  constructor(seed) {
    const mix = splitmix32(seed);
    this.a = mix();
    this.b = mix();
    this.c = mix();
    this.d = mix();
    for (let i = 0; i < 12; i++) this.u32();
  }

  // u32 returns the next 32 random bits as an unsigned integer.
  u32() {
    const t = (((this.a + this.b) >>> 0) + this.d) >>> 0;
    this.d = (this.d + 1) >>> 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) >>> 0;
    this.c = ((this.c << 21) | (this.c >>> 11)) >>> 0;
    this.c = (this.c + t) >>> 0;
    return t;
  }

  // float returns a number in [0, 1).
  float() {
    return this.u32() / 4294967296;
  }

  // int returns an integer in [0, n).
  int(n) {
    if (n <= 0) return 0;
    return Math.floor(this.float() * n);
  }

  // range returns an integer in [lo, hi].
  range(lo, hi) {
    return lo + this.int(hi - lo + 1);
  }

  // chance returns true with probability p.
  chance(p) {
    return this.float() < p;
  }

  // pick returns a random element of a non-empty array.
  pick(arr) {
    return arr[this.int(arr.length)];
  }

  // weighted picks a key of an object {key: weight}.
  weighted(weights) {
    const entries = Object.entries(weights).filter(([, w]) => w > 0);
    let total = 0;
    for (const [, w] of entries) total += w;
    let r = this.float() * total;
    for (const [k, w] of entries) {
      r -= w;
      if (r < 0) return k;
    }
    return entries[entries.length - 1][0];
  }

  // fork returns an independent generator derived from this one, so that a
  // sub-task can draw numbers without shifting the main sequence.
  fork() {
    return new Rng(this.u32());
  }
}

module.exports = { Rng };
