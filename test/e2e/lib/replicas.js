'use strict';
// Comparing replicas of one document: sorted JSON and presences.

const assert = require('node:assert/strict');
const { waitFor } = require('./wait');

function describeReplicas(docs) {
  return docs.map((d, i) => `replica ${i} [${d.getStatus()}]: ${d.toSortedJSON()}`).join('\n');
}

/**
 * Waits until every document in `docs` has the same toSortedJSON() and returns
 * that JSON parsed. `expect(json)` (optional) is a further condition the
 * converged value must meet before the wait ends.
 */
async function waitConverged(docs, { what = 'replicas to converge', timeoutMs, expect } = {}) {
  let last;
  await waitFor(
    () => {
      const jsons = docs.map((d) => d.toSortedJSON());
      if (!jsons.every((j) => j === jsons[0])) return false;
      last = JSON.parse(jsons[0]);
      return expect ? expect(last) : true;
    },
    { what, timeoutMs, describe: () => describeReplicas(docs) },
  );
  return last;
}

/** Presence of `clientID` as `doc` sees it among online clients, or undefined. */
function presenceSeen(doc, clientID) {
  const entry = doc.getPresences().find((p) => p.clientID === clientID);
  return entry ? entry.presence : undefined;
}

function describePresences(docs) {
  return docs
    .map((d, i) => `replica ${i}: ${JSON.stringify(d.getPresences())}`)
    .join('\n');
}

/**
 * Waits until every doc sees each client of `expected` (clientID -> presence)
 * online with exactly that presence (a doc's own client included).
 */
async function waitPresences(docs, expected, { what = 'presences to be seen by every replica', timeoutMs, events } = {}) {
  await waitFor(
    () =>
      docs.every((d) =>
        Object.entries(expected).every(([id, presence]) => {
          const seen = presenceSeen(d, id);
          try {
            assert.deepEqual(seen, presence);
            return true;
          } catch {
            return false;
          }
        }),
      ),
    {
      what: `${what}: ${JSON.stringify(expected)}`,
      timeoutMs,
      describe: () => describePresences(docs) + (events ? `\nevents seen: ${JSON.stringify(events.events)}` : ''),
    },
  );
}

/** Waits until no doc lists `clientID` among its online clients. */
async function waitPresenceGone(docs, clientID, { timeoutMs } = {}) {
  await waitFor(() => docs.every((d) => !d.getPresences().some((p) => p.clientID === clientID)), {
    what: `client ${clientID} to disappear from every replica's online presences`,
    timeoutMs,
    describe: () => describePresences(docs),
  });
}

/** Records events of `type` ('others', 'presence', ...) on `doc`; returns { events, stop }. */
function recordEvents(doc, type) {
  const events = [];
  const stop = doc.subscribe(type, (e) => {
    events.push({ type: e.type, value: e.value });
  });
  return { events, stop };
}

/** Waits until `recorder.events` holds an event of `eventType` for `clientID`; returns it. */
async function waitRecorded(recorder, eventType, clientID, { timeoutMs, what } = {}) {
  return waitFor(
    () => recorder.events.find((e) => e.type === eventType && e.value && e.value.clientID === clientID),
    {
      what: what || `a '${eventType}' event for client ${clientID}`,
      timeoutMs,
      describe: () => `events seen: ${JSON.stringify(recorder.events)}`,
    },
  );
}

/** Waits until `doc` has pushed all its local changes. */
async function waitPushed(doc, { timeoutMs } = {}) {
  await waitFor(() => !doc.hasLocalChanges(), { what: `local changes of ${doc.getKey()} to be acknowledged`, timeoutMs });
}

module.exports = {
  waitConverged,
  waitPresences,
  waitPresenceGone,
  presenceSeen,
  recordEvents,
  waitRecorded,
  waitPushed,
  describeReplicas,
};
