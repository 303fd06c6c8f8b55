'use strict';
// What a cluster test checks after the fact: who served each document over
// time (from the x-session-key of successful answers), how long clients took
// to sync again after a failure, and whether a document's stored change log
// is gapless, read by a fresh client from server_seq 0.

// Streams answer 200 with their headers before the owner is reached (a failed
// relay ends the stream with an error frame), so a stream counts as served
// only once its first message arrived (wire-log's firstMessageAt), at that time.
const STREAM_METHODS = new Set(['Watch', 'WatchDocument']);

/**
 * Calls for document `key` that an owner answered: successful unary calls
 * and streams that delivered a message, in the order the answers arrived.
 */
function servedCalls(entries, key) {
  return entries
    .filter((e) => e.document && e.key === key && e.ok && e.sessionKey)
    .map((e) => {
      if (!STREAM_METHODS.has(e.method)) return e;
      return e.firstMessageAt ? { ...e, at: e.firstMessageAt } : null;
    })
    .filter(Boolean)
    .sort((a, b) => a.at - b.at);
}

/**
 * The owners of document `key` over time: consecutive successful answers
 * with the same x-session-key collapsed into one segment
 * { sessionKey, from, to, calls }.
 */
function ownerTimeline(entries, key) {
  const segments = [];
  for (const e of servedCalls(entries, key)) {
    const last = segments[segments.length - 1];
    if (last && last.sessionKey === e.sessionKey) {
      last.to = e.at;
      last.calls += 1;
    } else {
      segments.push({ sessionKey: e.sessionKey, from: e.at, to: e.at, calls: 1 });
    }
  }
  return segments;
}

/**
 * Problems with the ownership of `keys` seen in `entries` (empty when none):
 * - an answer naming a session key that is no node of the cluster;
 * - an owner that comes back after another one answered (two live owners
 *   alternating: split brain);
 * - a change of owner while the old owner had not died (`ended`: session
 *   key -> Date.now() when the test began to kill or stop that node);
 * - an answer from a node to a call sent after that node's process had
 *   exited (`exited`: session key -> Date.now() once the test saw the exit).
 *   When an answer arrived does not count: on a loaded machine an answer the
 *   node sent before it died may be read any time later.
 * `nodeName(sessionKey)` names nodes in the messages.
 */
function ownershipProblems(entries, keys, { knownKeys, ended = {}, exited = {}, nodeName = (k) => k }) {
  const problems = [];
  for (const key of keys) {
    const timeline = ownerTimeline(entries, key);
    const describe = () =>
      timeline.map((s) => `${nodeName(s.sessionKey)} x${s.calls} [${s.from}..${s.to}]`).join(' -> ');
    const seen = new Set();
    for (let i = 0; i < timeline.length; i++) {
      const seg = timeline[i];
      if (!knownKeys.has(seg.sessionKey)) {
        problems.push(`${key}: answered with unknown session key ${seg.sessionKey}: ${describe()}`);
      }
      if (seen.has(seg.sessionKey)) {
        problems.push(`${key}: ${nodeName(seg.sessionKey)} served the document again after another owner had: ${describe()}`);
      }
      seen.add(seg.sessionKey);
      if (i > 0) {
        const prev = timeline[i - 1];
        const endedAt = ended[prev.sessionKey];
        if (endedAt === undefined || endedAt > seg.from) {
          problems.push(
            `${key}: owner changed from ${nodeName(prev.sessionKey)} to ${nodeName(seg.sessionKey)} at ${seg.from} ` +
              `while ${nodeName(prev.sessionKey)} was alive: ${describe()}`,
          );
        }
      }
    }
    for (const e of servedCalls(entries, key)) {
      const exitedAt = exited[e.sessionKey];
      if (exitedAt !== undefined && e.sentAt > exitedAt) {
        problems.push(
          `${key}: ${nodeName(e.sessionKey)} answered ${e.method} sent at ${e.sentAt}, after it exited at ${exitedAt}: ${describe()}`,
        );
      }
    }
  }
  return problems;
}

/**
 * For each (clientId, key) in `pairs`: the time from `from` (e.g. a SIGKILL)
 * to the first successful `method` call that followed a failed one. A pair
 * that never failed gets { failed: false } with syncedMs the time to its
 * first successful call sent at or after `from` (null if none yet): with
 * failover within the call, a client may never see an error.
 */
function recoveryTimes(entries, pairs, { from, method = 'PushPullChanges' }) {
  return pairs.map(({ clientId, key, label }) => {
    const calls = entries
      .filter((e) => e.method === method && e.clientId === clientId && e.key === key && e.at !== null && e.at >= from)
      .sort((a, b) => a.at - b.at);
    const firstFailure = calls.findIndex((e) => !e.ok);
    if (firstFailure < 0) {
      const next = calls.find((e) => e.ok && e.sentAt >= from);
      return { clientId, key, label, failed: false, failures: 0, syncedMs: next ? next.at - from : null };
    }
    const recovered = calls.slice(firstFailure).find((e) => e.ok);
    return {
      clientId,
      key,
      label,
      failed: true,
      failures: calls.filter((e) => !e.ok).length,
      firstFailureMs: calls[firstFailure].at - from,
      syncedMs: recovered ? recovered.at - from : null,
    };
  });
}

/** Nearest-rank percentile of numbers (p in 0..100). */
function percentile(values, p) {
  if (!values.length) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[rank - 1];
}

async function connectCall(addr, method, body, shardKey, apiKey) {
  const headers = { 'content-type': 'application/json', 'x-shard-key': `/${shardKey}` };
  if (apiKey) headers['x-api-key'] = apiKey;
  const res = await fetch(`${addr}/yorkie.v1.YorkieService/${method}`, {
    method: 'POST',
    headers,
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(15000),
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${method} answered ${res.status}: ${text}`);
  return JSON.parse(text);
}

/**
 * Reads the whole change log of document `key` as a fresh client sees it:
 * ActivateClient, AttachDocument from server_seq 0, then PushPullChanges
 * until the checkpoint is reached, then DeactivateClient; raw Connect JSON
 * calls to `addr`. Resolves with { changes: [{ serverSeq, actor, clientSeq,
 * hasOperations, hasPresence }], serverSeq } (serverSeq: the server's last).
 * `apiKey` names the project (default: the default project).
 */
async function readChangeLog(addr, key, { apiKey } = {}) {
  const call = (method, body, shardKey) => connectCall(addr, method, body, shardKey, apiKey);
  const clientKey = `log-reader-${Math.random().toString(16).slice(2)}`;
  const { clientId } = await call('ActivateClient', { clientKey }, clientKey);
  const changes = [];
  const take = (pack) => {
    for (const c of (pack && pack.changes) || []) {
      changes.push({
        serverSeq: Number(c.id.serverSeq || 0),
        actor: Buffer.from(c.id.actorId || '', 'base64').toString('hex'),
        clientSeq: Number(c.id.clientSeq || 0),
        hasOperations: Boolean(c.operations && c.operations.length),
        hasPresence: Boolean(c.presenceChange),
      });
    }
    return Number((pack && pack.checkpoint && pack.checkpoint.serverSeq) || 0);
  };
  try {
    const attached = await call(
      'AttachDocument',
      { clientId, changePack: { documentKey: key, checkpoint: { serverSeq: '0', clientSeq: 0 } } },
      key,
    );
    let serverSeq = take(attached.changePack);
    for (let round = 0; round < 1000; round++) {
      const pulled = changes.length ? changes[changes.length - 1].serverSeq : 0;
      if (pulled >= serverSeq) break;
      const before = changes.length;
      const res = await call(
        'PushPullChanges',
        {
          clientId,
          documentId: attached.documentId,
          changePack: { documentKey: key, checkpoint: { serverSeq: String(pulled), clientSeq: 0 } },
        },
        key,
      );
      serverSeq = Math.max(serverSeq, take(res.changePack));
      if (changes.length === before) break;
    }
    return { changes, serverSeq };
  } finally {
    await call('DeactivateClient', { clientId, synchronous: true }, clientKey).catch(() => {});
  }
}

/**
 * Problems with a change log (empty when none): server_seq must run 1..N
 * without a gap or a repeat, N must be the server's checkpoint, and each
 * actor's client_seq must run 1..M without a gap or a repeat.
 */
function changeLogProblems({ changes, serverSeq }) {
  const problems = [];
  changes.forEach((c, i) => {
    if (c.serverSeq !== i + 1) problems.push(`change #${i + 1} has server_seq ${c.serverSeq}`);
  });
  if (changes.length !== serverSeq) problems.push(`${changes.length} changes read, checkpoint server_seq ${serverSeq}`);
  const byActor = new Map();
  for (const c of changes) {
    if (!byActor.has(c.actor)) byActor.set(c.actor, []);
    byActor.get(c.actor).push(c.clientSeq);
  }
  for (const [actor, seqs] of byActor) {
    const sorted = [...seqs].sort((a, b) => a - b);
    sorted.forEach((s, i) => {
      if (s !== i + 1) problems.push(`actor ${actor}: client_seq ${s} at position ${i + 1} of ${sorted.join(',')}`);
    });
  }
  return problems.slice(0, 20);
}

module.exports = {
  servedCalls,
  ownerTimeline,
  ownershipProblems,
  recoveryTimes,
  percentile,
  readChangeLog,
  changeLogProblems,
};
