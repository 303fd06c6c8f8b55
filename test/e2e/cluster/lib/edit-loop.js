'use strict';
// The loop of a client that edits like a person typing, for the cluster
// scenarios: a subclass says what one edit is (editOnce), the loop runs it
// until stopped.

const { setTimeout: delay } = require('node:timers/promises');

/**
 * Calls this.editOnce() with a random pause of pauseMs[0] to pauseMs[1]
 * between edits until stop(). The first error ends the loop and stays in
 * `error`, for the scenario to assert on; nothing waits on the pace.
 */
class EditLoop {
  constructor(pauseMs) {
    this.pauseMs = pauseMs;
    this.stopped = false;
    this.error = null;
    this.loop = null;
  }

  start() {
    this.loop = (async () => {
      while (!this.stopped) {
        try {
          this.editOnce();
        } catch (err) {
          this.error = err;
          return;
        }
        const [lo, hi] = this.pauseMs;
        await delay(lo + Math.random() * (hi - lo));
      }
    })();
  }

  async stop() {
    this.stopped = true;
    await this.loop;
  }
}

module.exports = { EditLoop };
