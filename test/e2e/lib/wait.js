'use strict';
// Waiting for conditions and events with deadlines, never for fixed delays.

const { setTimeout: delay } = require('node:timers/promises');

const DEFAULT_TIMEOUT_MS = Number(process.env.YORKIE_E2E_WAIT_MS || 15000);

class WaitTimeoutError extends Error {}

/**
 * Polls `predicate` until it returns a truthy value, which is returned.
 * A predicate that throws ends the wait with that error.
 * On timeout, throws with `what` and, if given, the text of `describe()`.
 */
async function waitFor(predicate, { timeoutMs = DEFAULT_TIMEOUT_MS, intervalMs = 25, what = 'condition', describe } = {}) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await predicate();
    if (value) return value;
    if (Date.now() >= deadline) {
      let detail = '';
      if (describe) {
        try {
          detail = `\n${await describe()}`;
        } catch (err) {
          detail = `\n(describe failed: ${err.message})`;
        }
      }
      throw new WaitTimeoutError(`timed out after ${timeoutMs} ms waiting for ${what}${detail}`);
    }
    await delay(intervalMs);
  }
}

/**
 * Resolves with the first value passed to a subscription callback that
 * satisfies `match`, or rejects after `timeoutMs`.
 * `subscribe(cb)` must register cb and return an unsubscribe function.
 */
function waitForEvent(subscribe, match = () => true, { timeoutMs = DEFAULT_TIMEOUT_MS, what = 'event', seen } = {}) {
  return new Promise((resolve, reject) => {
    let unsubscribe = null;
    let done = false;
    const timer = setTimeout(() => {
      finish();
      const log = seen ? `\nevents seen: ${JSON.stringify(seen)}` : '';
      reject(new WaitTimeoutError(`timed out after ${timeoutMs} ms waiting for ${what}${log}`));
    }, timeoutMs);
    function finish() {
      done = true;
      clearTimeout(timer);
      if (unsubscribe) unsubscribe();
    }
    unsubscribe = subscribe((event) => {
      if (done) return;
      let ok = false;
      try {
        ok = match(event);
      } catch (err) {
        finish();
        reject(err);
        return;
      }
      if (ok) {
        finish();
        resolve(event);
      }
    });
    if (done && unsubscribe) unsubscribe();
  });
}

/** Runs `promise` with a deadline; rejects with a message naming `what`. */
async function withTimeout(promise, timeoutMs, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new WaitTimeoutError(`${what} did not finish within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

module.exports = { waitFor, waitForEvent, withTimeout, WaitTimeoutError, DEFAULT_TIMEOUT_MS };
