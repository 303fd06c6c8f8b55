'use strict';
// Arrays: push, insertAfter/insertBefore, every kind of move, set by index,
// delete by index and by ID, splice, on the top array and nested ones.
const { isArrayProxy, removable, setAt } = require('../lib/values');

function arrays(v, depth = 0, out = []) {
  if (!isArrayProxy(v)) return out;
  out.push(v);
  if (depth < 2) for (let i = 0; i < v.length; i++) arrays(v[i], depth + 1, out);
  return out;
}

// Only the client that created an element moves it: SDK 0.7.7 gives the
// dead position a losing concurrent move leaves behind that move's own time
// as removal time, so replicas collect it while others still insert after it
// (README.md).
function movable(ctx, arr, i) {
  return arr.getElementByIndex(i).getID().getActorID() === ctx.actor;
}

function idAt(arr, i) {
  return arr.getElementByIndex(i).getID();
}

module.exports = {
  name: 'array',

  init(root, ctx) {
    root.array = [0, 1, 2, 'three', [4, 5], { six: 6 }];
  },

  step(root, ctx) {
    const { rng, values } = ctx;
    if (!isArrayProxy(root.array) || rng.chance(0.01)) {
      root.array = [rng.int(10)];
      return 'array.reset';
    }
    const arr = rng.pick(arrays(root.array));
    const n = arr.length;
    const value = () => (rng.chance(0.15) ? [values.primitive(), values.primitive()] : values.plain(2));
    const op = n === 0 ? 'push' : rng.weighted({
      push: 3, insertAfter: 3, insertBefore: 2, moveBefore: 2, moveAfter: 2,
      moveFront: 1, moveLast: 1, moveAfterByIndex: 1, set: 3, delete: 2,
      deleteByID: 1, splice: 1, ...ctx.opWeights,
    });
    switch (op) {
      case 'push':
        arr.push(value());
        break;
      case 'insertAfter':
        arr.insertAfter(idAt(arr, rng.int(n)), value());
        break;
      case 'insertBefore':
        arr.insertBefore(idAt(arr, rng.int(n)), value());
        break;
      case 'moveBefore':
      case 'moveAfter': {
        if (n < 2) return '';
        const i = rng.int(n);
        if (!movable(ctx, arr, i)) return '';
        let j = rng.int(n - 1);
        if (j >= i) j++;
        if (op === 'moveBefore') arr.moveBefore(idAt(arr, j), idAt(arr, i));
        else arr.moveAfter(idAt(arr, j), idAt(arr, i));
        break;
      }
      case 'moveFront':
      case 'moveLast': {
        const i = rng.int(n);
        if (!movable(ctx, arr, i)) return '';
        if (op === 'moveFront') arr.moveFront(idAt(arr, i));
        else arr.moveLast(idAt(arr, i));
        break;
      }
      case 'moveAfterByIndex': {
        if (n < 2) return '';
        const i = rng.int(n);
        if (!movable(ctx, arr, i)) return '';
        let j = rng.int(n - 1);
        if (j >= i) j++;
        arr.moveAfterByIndex(j, i);
        break;
      }
      case 'set':
      case 'delete':
      case 'deleteByID': {
        const i = rng.int(n);
        if (!removable(ctx, arr, i)) return '';
        if (op === 'set') setAt(ctx, arr, i, value());
        else if (op === 'delete') arr.delete(i);
        else arr.deleteByID(idAt(arr, i));
        break;
      }
      case 'splice': {
        const start = rng.int(n + 1);
        const count = Math.min(rng.int(3), n - start);
        for (let k = start; k < start + count; k++) if (!removable(ctx, arr, k)) return '';
        const items = [];
        for (let k = rng.int(3); k > 0; k--) items.push(values.primitive());
        arr.splice(start, count, ...items);
        break;
      }
    }
    return `array.${op}`;
  },
};
