'use strict';
// Counters: integer and long counters increased by integers, doubles and
// longs (including wrap-around at the type's bounds), dedup counters fed
// with actors, and counters replaced while others increase them.

function fresh(yorkie, n) {
  return {
    int: new yorkie.Counter(n),
    long: new yorkie.Counter(BigInt(n)),
    big: new yorkie.Counter(2147483600),
    dedup: new yorkie.DedupCounter(),
  };
}

module.exports = {
  name: 'counter',

  init(root, ctx) {
    root.counter = fresh(ctx.yorkie, 0);
  },

  step(root, ctx) {
    const { rng, yorkie, values } = ctx;
    const c = root.counter;
    if (c === undefined || c === null || typeof c !== 'object' || rng.chance(0.01)) {
      root.counter = fresh(yorkie, rng.int(5));
      return 'counter.reset';
    }
    const which = rng.pick(['int', 'long', 'big', 'dedup', 'new']);
    const cur = c[which];
    if (which === 'new' || rng.chance(0.03)) {
      const name = which === 'new' ? rng.pick(['int', 'long', 'big', 'dedup']) : which;
      switch (name) {
        case 'int': c.int = new yorkie.Counter(values.integer()); break;
        case 'big': c.big = new yorkie.Counter(2147483000 + rng.int(600)); break;
        case 'long': c.long = new yorkie.Counter(values.long()); break;
        default: c.dedup = new yorkie.DedupCounter();
      }
      return `counter.set.${name}`;
    }
    if (cur === undefined) return '';
    if (cur instanceof yorkie.DedupCounter) {
      cur.add(`user-${rng.int(40)}`);
      return 'counter.dedup.add';
    }
    if (!(cur instanceof yorkie.Counter)) return '';
    const by = rng.weighted({ int: 5, neg: 2, double: 1, long: 2, huge: 1 });
    switch (by) {
      case 'int': cur.increase(rng.range(1, 100)); break;
      case 'neg': cur.increase(-rng.range(1, 100)); break;
      case 'double': cur.increase(rng.pick([0.5, -1.5, 2.75, 1e-3])); break;
      case 'long': cur.increase(BigInt(rng.range(-50, 50)) * 1000000007n); break;
      default: cur.increase(rng.pick([2147483647, -2147483648, 9223372036854775807n, -9223372036854775808n]));
    }
    return `counter.increase.${by}`;
  },
};
