'use strict';
// Reads a server's Prometheus metrics page with node:http, so the session's
// record of SDK calls stays the SDK's.

const http = require('node:http');

/** GETs url; resolves with the body. */
function httpGet(url) {
  return new Promise((resolve, reject) => {
    http
      .get(url, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => (body += chunk));
        res.on('end', () => resolve(body));
      })
      .on('error', reject);
  });
}

/** The value of an unlabelled counter on the server's metrics page (0 when absent). */
async function counter(server, name) {
  const text = await httpGet(server.metricsURL);
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.split(' ')[1]) : 0;
}

/** How many Watch calls the server refused with resource_exhausted. */
async function refusedWatches(server) {
  const text = await httpGet(server.metricsURL);
  const line = text
    .split('\n')
    .find((l) => l.startsWith('yorkie_rpc_handled_total{') && l.includes('Watch"') && l.includes('code="resource_exhausted"'));
  return line ? Number(line.split(' ').pop()) : 0;
}

module.exports = { httpGet, counter, refusedWatches };
