'use strict';
const { snap } = require('../lib/values');
// Tree: text insertions, deletions and replacements inside blocks, block
// insertions (single and bulk) and deletions, splits by index with split
// levels and by path, merges by deleting block boundaries and by path,
// deletions across blocks, styles and style removals on elements, and a
// tree replaced while others edit it.

const TEXTS = ['a', 'b', 'cd', 'xyz', ' ', 'é', '日本', '"q"', '😀'];
const ATTR_KEYS = ['bold', 'align', 'level', 'id'];

function attrs(rng) {
  const out = {};
  const n = rng.range(1, 2);
  for (let i = 0; i < n; i++) {
    out[rng.pick(ATTR_KEYS)] = rng.pick([true, 'left', 'center', 1, 2.5, 'a"b', { x: 1 }]);
  }
  return out;
}

function initial() {
  return {
    type: 'doc',
    children: [
      { type: 'p', children: [{ type: 'text', value: 'ab' }] },
      { type: 'blockquote', children: [{ type: 'p', children: [{ type: 'text', value: 'cd' }] }] },
      { type: 'h', attributes: { level: '1' }, children: [{ type: 'text', value: 'title' }] },
    ],
  };
}

// layout walks the tree's JSON form and returns the blocks (elements that
// hold text or nothing: {start, cstart, cend, end, depth, path}) and gaps
// (indexes between the children of container elements, where a new block
// can go: {pos, depth}) in index order.
function layout(rootNode) {
  const blocks = [];
  const gaps = [];
  const size = (n) => (n.type === 'text' ? n.value.length : 2 + (n.children || []).reduce((s, c) => s + size(c), 0));
  const walk = (node, start, depth, path) => {
    const children = node.children || [];
    const isBlock = children.length === 0 || children.some((c) => c.type === 'text');
    if (isBlock && depth > 0) {
      const text = children.map((c) => (c.type === 'text' ? c.value : '')).join('');
      blocks.push({ start: start - 1, cstart: start, cend: start + size(node) - 2, end: start + size(node) - 1, depth, path, text });
      return;
    }
    let pos = start;
    children.forEach((c, i) => {
      gaps.push({ pos, depth });
      if (c.type !== 'text') walk(c, pos + 1, depth + 1, path.concat(i));
      pos += size(c);
    });
    gaps.push({ pos, depth });
  };
  walk(rootNode, 0, 0, []);
  return { blocks, gaps };
}

function block(rng) {
  const type = rng.pick(['p', 'p', 'h']);
  const node = { type, children: rng.chance(0.8) ? [{ type: 'text', value: rng.pick(TEXTS) }] : [] };
  if (rng.chance(0.3)) node.attributes = attrs(rng);
  return node;
}

module.exports = {
  name: 'tree',

  init(root, ctx) {
    root.tree = new ctx.yorkie.Tree(initial());
  },

  step(root, ctx) {
    const { rng, yorkie } = ctx;
    const t = root.tree;
    if (!(t instanceof yorkie.Tree) || rng.chance(0.01)) {
      root.tree = new yorkie.Tree(initial());
      return 'tree.reset';
    }
    const { blocks, gaps } = layout(t.getRootTreeNode());
    const op = blocks.length === 0 ? 'insertBlock' : rng.weighted({
      insertText: 6, deleteText: 3, replaceText: 2, insertBlock: 2, insertBlocks: 1,
      deleteBlock: 1, split: 2, splitByPath: 1, merge: 2, mergeByPath: 1,
      deleteAcross: 1, style: 2, removeStyle: 1,
    });
    const b = blocks.length ? rng.pick(blocks) : undefined;
    // A position inside b's text, never between the halves of a surrogate pair.
    const at = (blk, off) => blk.cstart + snap(blk.text, off);
    const inside = () => at(b, rng.int(b.cend - b.cstart + 1));
    switch (op) {
      case 'insertText': {
        const at = inside();
        t.edit(at, at, { type: 'text', value: rng.pick(TEXTS) });
        break;
      }
      case 'deleteText':
      case 'replaceText': {
        if (b.cend === b.cstart) return '';
        const from = at(b, rng.int(b.cend - b.cstart));
        let to = Math.min(b.cend, from + rng.range(1, 3));
        if (at(b, to - b.cstart) !== to) to++;
        if (to <= from) return '';
        if (op === 'deleteText') t.edit(from, to);
        else t.edit(from, to, { type: 'text', value: rng.pick(TEXTS) });
        break;
      }
      case 'insertBlock': {
        const g = rng.pick(gaps);
        t.edit(g.pos, g.pos, block(rng));
        break;
      }
      case 'insertBlocks': {
        const g = rng.pick(gaps);
        t.editBulk(g.pos, g.pos, [block(rng), block(rng)]);
        break;
      }
      case 'deleteBlock':
        t.edit(b.start, b.end);
        break;
      case 'split': {
        const at = inside();
        t.edit(at, at, undefined, rng.range(1, b.depth));
        break;
      }
      case 'splitByPath': {
        const path = t.indexToPath(inside());
        if (path.length < 2) return '';
        t.splitByPath(path);
        break;
      }
      case 'merge': {
        // Delete the boundary between a block and the next block of the
        // same container, which merges them.
        const i = blocks.indexOf(b);
        const next = blocks[i + 1];
        if (!next || next.start !== b.end || next.depth !== b.depth) return '';
        t.edit(b.cend, next.cstart);
        break;
      }
      case 'mergeByPath': {
        const last = b.path[b.path.length - 1];
        if (last === 0) return '';
        t.mergeByPath(b.path);
        break;
      }
      case 'deleteAcross': {
        const other = rng.pick(blocks);
        const a = inside();
        const c = at(other, rng.int(other.cend - other.cstart + 1));
        if (a === c) return '';
        t.edit(Math.min(a, c), Math.max(a, c));
        break;
      }
      case 'style':
        if (rng.chance(0.7)) t.style(b.start, b.start + 1, attrs(rng));
        else {
          const o = rng.pick(blocks);
          t.style(Math.min(b.start, o.start), Math.max(b.end, o.end), attrs(rng));
        }
        break;
      case 'removeStyle':
        t.removeStyle(b.start, b.start + 1, [rng.pick(ATTR_KEYS), rng.pick(ATTR_KEYS)]);
        break;
    }
    return `tree.${op}`;
  },
};
