'use strict';
// Objects: set and delete members, nested objects and arrays, values of
// every primitive type, and replacement of whole subtrees.
const { isArrayProxy, isObjectProxy, keyToSet, keyToDelete, removable } = require('../lib/values');

// containers lists the objects and arrays under v (v included), to depth 3.
function containers(v, yorkie, depth = 0, out = []) {
  if (isObjectProxy(v, yorkie)) {
    out.push(v);
    if (depth < 3) for (const k of Object.keys(v)) containers(v[k], yorkie, depth + 1, out);
  } else if (isArrayProxy(v)) {
    out.push(v);
    if (depth < 3) for (let i = 0; i < v.length; i++) containers(v[i], yorkie, depth + 1, out);
  }
  return out;
}

module.exports = {
  name: 'object',

  init(root, ctx) {
    root.object = { title: 'doc', meta: { n: 1, tags: ['x', 'y'] } };
  },

  step(root, ctx) {
    const { rng, values, yorkie, me } = ctx;
    if (!isObjectProxy(root.object, yorkie) || rng.chance(0.02)) {
      root.object = { title: values.string(), meta: values.plain(1) };
      return 'object.reset';
    }
    const target = rng.pick(containers(root.object, yorkie));
    if (isArrayProxy(target)) {
      if (target.length > 0 && rng.chance(0.4)) {
        const i = rng.int(target.length);
        if (!removable(ctx, target, i)) return '';
        target.delete(i);
        return 'object.array.delete';
      }
      target.push(values.plain(1));
      return 'object.array.push';
    }
    if (rng.chance(0.3)) {
      const key = keyToDelete(rng, target, me);
      if (key === undefined) return '';
      delete target[key];
      return 'object.delete';
    }
    target[keyToSet(rng, values, target, me)] = values.plain();
    return 'object.set';
  },
};
