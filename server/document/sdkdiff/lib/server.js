'use strict';
// A simulated Yorkie server for one document: it orders pushed changes in a
// log (server_seq), skips re-sent ones, answers pulls with the changes the
// requester has not seen (never its own), and sends the minimum synced
// version vector (element-wise minimum over the attached clients' last
// pushed vectors, a missing actor counting as 0) so replicas collect
// garbage as they do against a real server. Every request and answer goes
// through the binary protobuf encoding, as on the wire.

const b64ToHex = (b64) => Buffer.from(b64, 'base64').toString('hex');
const hexToB64 = (hex) => Buffer.from(hex, 'hex').toString('base64');

class Server {
  constructor(sdk, docKey, emit) {
    this.sdk = sdk;
    this.docKey = docKey;
    this.emit = emit;
    this.log = []; // {seq, actor, pb}
    this.clients = new Map(); // actor hex -> {clientSeq, vv: {hex: bigint} | undefined}
    this.onStored = () => {};
  }

  head() {
    return this.log.length;
  }

  roundTrip(schema, msg) {
    const { protobuf } = this.sdk;
    return protobuf.fromBinary(schema, protobuf.toBinary(schema, msg));
  }

  // minVector returns the minimum synced version vector as {hex: bigint}.
  minVector() {
    const vectors = [...this.clients.values()].filter((c) => c.vv).map((c) => c.vv);
    const keys = new Set();
    for (const v of vectors) for (const k of Object.keys(v)) keys.add(k);
    const out = {};
    for (const k of [...keys].sort()) {
      let m;
      for (const v of vectors) {
        const x = v[k] === undefined ? 0n : v[k];
        m = m === undefined || x < m ? x : m;
      }
      out[k] = m;
    }
    return out;
  }

  vectorToPb(vv) {
    const { protobuf, schemas } = this.sdk;
    const vector = {};
    for (const [hex, n] of Object.entries(vv)) vector[hexToB64(hex)] = BigInt(n);
    return protobuf.create(schemas.VersionVector, { vector });
  }

  static vectorFromPb(pb) {
    const out = {};
    if (!pb) return out;
    for (const [k, n] of Object.entries(pb.vector)) out[b64ToHex(k)] = BigInt(n);
    return out;
  }

  // store appends the pushed changes the server has not seen yet.
  store(actor, pack) {
    const st = this.clients.get(actor);
    for (const ch of pack.changes) {
      if (ch.id.clientSeq <= st.clientSeq) continue;
      if (ch.id.clientSeq !== st.clientSeq + 1) {
        throw new Error(`client ${actor} skipped from ${st.clientSeq} to ${ch.id.clientSeq}`);
      }
      st.clientSeq = ch.id.clientSeq;
      const seq = this.log.length + 1;
      ch.id.serverSeq = BigInt(seq);
      const entry = { seq, actor, pb: ch };
      this.log.push(entry);
      this.onStored(entry);
    }
  }

  attach(actor) {
    this.clients.set(actor, { clientSeq: 0, vv: undefined });
  }

  detach(actor) {
    this.clients.delete(actor);
  }

  // pushPull runs one PushPullChanges of the client's document.
  pushPull(actor, doc) {
    const { yorkie, protobuf, schemas } = this.sdk;
    const req = this.roundTrip(schemas.ChangePack, yorkie.converter.toChangePack(doc.createChangePack()));
    this.store(actor, req);
    const st = this.clients.get(actor);
    st.vv = Server.vectorFromPb(req.versionVector);

    const from = Number(req.checkpoint.serverSeq);
    const changes = this.log.filter((e) => e.seq > from && e.actor !== actor).map((e) => e.pb);
    const minvv = this.minVector();
    const resp = this.roundTrip(schemas.ChangePack, protobuf.create(schemas.ChangePack, {
      documentKey: this.docKey,
      checkpoint: { serverSeq: BigInt(this.head()), clientSeq: st.clientSeq },
      changes,
      versionVector: this.vectorToPb(minvv),
    }));
    doc.applyChangePack(yorkie.converter.fromChangePack(resp));
    return { pulled: changes.length, minvv };
  }

  // attachWithSnapshot runs the attach of a new client whose answer carries
  // a snapshot (bytes and vector from answer) instead of changes.
  attachWithSnapshot(actor, doc, answer) {
    const { yorkie, protobuf, schemas } = this.sdk;
    const st = this.clients.get(actor);
    const resp = this.roundTrip(schemas.ChangePack, protobuf.create(schemas.ChangePack, {
      documentKey: this.docKey,
      checkpoint: { serverSeq: BigInt(this.head()), clientSeq: st.clientSeq },
      snapshot: answer.snapshot,
      versionVector: this.vectorToPb(answer.vv),
    }));
    doc.applyChangePack(yorkie.converter.fromChangePack(resp));
  }

  // pushOnly stores the client's changes and vector without answering with
  // changes (the first half of an attach).
  pushOnly(actor, doc) {
    const { yorkie, schemas } = this.sdk;
    const req = this.roundTrip(schemas.ChangePack, yorkie.converter.toChangePack(doc.createChangePack()));
    this.store(actor, req);
    this.clients.get(actor).vv = Server.vectorFromPb(req.versionVector);
  }
}

module.exports = { Server, b64ToHex, hexToB64 };
