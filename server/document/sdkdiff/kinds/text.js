'use strict';
const { snap } = require('../lib/values');
// Text: insertions, deletions and replacements anywhere (with and without
// attributes), styles over ranges, content with escapes and surrogate
// pairs, and a text replaced while others edit it.

const CONTENTS = ['a', 'b', 'ab', 'xyz', ' ', 'Hello', '\n', 'é', '日本', '"q"', 'back\\', 'tab\t', '😀'];
const ATTR_KEYS = ['bold', 'italic', 'color', 'size', 'link'];

function attrs(rng) {
  const out = {};
  const n = rng.range(1, 2);
  for (let i = 0; i < n; i++) {
    const k = rng.pick(ATTR_KEYS);
    out[k] = rng.pick([true, false, 'red', '#00ff00', 12, 1.5, null, 'a"b', { nested: 1 }]);
  }
  return out;
}

module.exports = {
  name: 'text',

  init(root, ctx) {
    const { yorkie } = ctx;
    root.text = new yorkie.Text();
    root.text.edit(0, 0, 'Hello world');
  },

  step(root, ctx) {
    const { rng, yorkie } = ctx;
    const t = root.text;
    if (!(t instanceof yorkie.Text) || rng.chance(0.01)) {
      root.text = new yorkie.Text();
      root.text.edit(0, 0, 'new');
      return 'text.reset';
    }
    const str = t.toString();
    const len = t.length;
    const from = snap(str, rng.int(len + 1));
    let to = Math.min(len, from + rng.int(4));
    if (snap(str, to) !== to) to++;
    const op = rng.weighted({ insert: 5, delete: 3, replace: 2, style: 3, insertStyled: 1 });
    switch (op) {
      case 'insert':
        t.edit(from, from, rng.pick(CONTENTS));
        break;
      case 'delete':
        if (from === to) return '';
        t.delete(from, to);
        break;
      case 'replace':
        t.edit(from, to, rng.pick(CONTENTS));
        break;
      case 'style':
        if (from === to) return '';
        t.setStyle(from, to, attrs(rng));
        break;
      case 'insertStyled':
        t.edit(from, to, rng.pick(CONTENTS), attrs(rng));
        break;
    }
    return `text.${op}`;
  },
};
