#!/usr/bin/env node
'use strict';
// Prints a generator's JSON lines with every change decoded to protobuf JSON,
// to read a failing case: node dump.js < case.jsonl
const readline = require('readline');
const { load } = require('./lib/sdk');

const { protobuf, schemas } = load();
const rl = readline.createInterface({ input: process.stdin });
rl.on('line', (line) => {
  if (!line.trim()) return;
  const obj = JSON.parse(line);
  if (obj.t === 'change') {
    const ch = protobuf.fromBinary(schemas.Change, Buffer.from(obj.b64, 'base64'));
    delete obj.b64;
    obj.change = protobuf.toJson(schemas.Change, ch);
  }
  if (obj.b64) obj.b64 = `${obj.b64.length} base64 chars`;
  process.stdout.write(JSON.stringify(obj) + '\n');
});
