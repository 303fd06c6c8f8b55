'use strict';
const { keyToSet, keyToDelete, removable, setAt } = require('../lib/values');
// Primitives: every value type with the edge cases of its encoding and of
// its JSON form (int32 bounds, -0, NaN, infinities, exponents, 64-bit longs,
// empty bytes, escapes and surrogate pairs in strings, dates), set as object
// members and as array elements.

module.exports = {
  name: 'primitive',

  init(root, ctx) {
    root.primitive = { list: [] };
  },

  step(root, ctx) {
    const { rng, values, me } = ctx;
    const p = root.primitive;
    if (p === undefined || p === null || typeof p !== 'object' || rng.chance(0.01)) {
      root.primitive = { list: [] };
      return 'primitive.reset';
    }
    const list = p.list;
    if (list && typeof list.push === 'function' && rng.chance(0.3)) {
      if (list.length > 6 && rng.chance(0.5)) {
        const i = rng.int(list.length);
        if (!removable(ctx, list, i)) return '';
        list.delete(i);
        return 'primitive.list.delete';
      }
      if (list.length > 0 && rng.chance(0.3)) {
        const i = rng.int(list.length);
        if (!removable(ctx, list, i)) return '';
        setAt(ctx, list, i, values.primitive());
        return 'primitive.list.set';
      }
      list.push(values.primitive());
      return 'primitive.list.push';
    }
    if (rng.chance(0.1)) {
      const key = keyToDelete(rng, p, me);
      if (key === undefined) return '';
      delete p[key];
      return 'primitive.delete';
    }
    p[keyToSet(rng, values, p, me)] = values.primitive();
    return 'primitive.set';
  },
};
