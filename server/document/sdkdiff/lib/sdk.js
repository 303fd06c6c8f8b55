'use strict';
// Loads the JS SDK from the end-to-end suite's node_modules (installed by
// `npm ci` in test/e2e) and the protobuf schemas the SDK itself was built
// with, so that changes and snapshots are encoded exactly as the SDK's own
// converter would put them on the wire.
const fs = require('fs');
const path = require('path');

const repoRoot = path.resolve(__dirname, '..', '..', '..', '..');
const e2eDir = path.join(repoRoot, 'test', 'e2e');

function load() {
  let main;
  try {
    main = require.resolve('@yorkie-js/sdk', { paths: [e2eDir] });
  } catch (err) {
    throw new Error(
      `cannot find @yorkie-js/sdk under ${e2eDir}: run "npm ci" there (${err.message})`,
    );
  }
  const yorkie = require(main);
  const from = { paths: [path.dirname(main)] };
  const protobuf = require(require.resolve('@bufbuild/protobuf', from));
  const codegen = require(require.resolve('@bufbuild/protobuf/codegenv2', from));
  const wkt = require(require.resolve('@bufbuild/protobuf/wkt', from));

  // The SDK bundles its generated descriptor of resources.proto; reuse it
  // rather than a copy of ours, so the schema is the one the SDK encodes with.
  const bundle = fs.readFileSync(main, 'utf8');
  const m =
    /file_src_api_yorkie_v1_resources = \/\* @__PURE__ \*\/ fileDesc\("([^"]+)", \[([^\]]*)\]\)/.exec(
      bundle,
    );
  if (!m) {
    throw new Error(`no resources.proto descriptor found in ${main}`);
  }
  const deps = m[2].split(',').map((s) => {
    const name = s.trim();
    if (!wkt[name]) throw new Error(`unknown descriptor dependency ${name}`);
    return wkt[name];
  });
  const file = codegen.fileDesc(m[1], deps);
  const schema = (name) => {
    const desc = file.messages.find((d) => d.typeName === `yorkie.v1.${name}`);
    if (!desc) throw new Error(`no message yorkie.v1.${name}`);
    return desc;
  };

  const version = JSON.parse(
    fs.readFileSync(path.join(path.dirname(main), '..', 'package.json'), 'utf8'),
  ).version;

  return {
    yorkie,
    version,
    protobuf,
    schemas: {
      ChangePack: schema('ChangePack'),
      Change: schema('Change'),
      Snapshot: schema('Snapshot'),
      JSONElement: schema('JSONElement'),
      Presence: schema('Presence'),
      VersionVector: schema('VersionVector'),
    },
  };
}

module.exports = { load, repoRoot };
