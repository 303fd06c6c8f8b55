'use strict';
// Webhook services for end-to-end tests (node http servers on loopback,
// answering in upstream Yorkie's formats) and the admin calls that point a
// project at them.

const crypto = require('node:crypto');
const http = require('node:http');

/** Calls an AdminService method with Connect JSON. */
async function adminCall(rpcAddr, method, body, token) {
  const headers = { 'content-type': 'application/json' };
  if (token) headers.authorization = `Bearer ${token}`;
  const res = await fetch(`${rpcAddr}/yorkie.v1.AdminService/${method}`, {
    method: 'POST',
    headers,
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(10000),
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`AdminService/${method}: ${res.status} ${text}`);
  return JSON.parse(text);
}

/**
 * Logs in as the default admin and updates the default project with
 * `fields` (UpdatableProjectFields in Connect JSON); resolves to the project.
 */
async function updateDefaultProject(rpcAddr, fields) {
  const { token } = await adminCall(rpcAddr, 'LogIn', { username: 'admin', password: 'admin' });
  const { project } = await adminCall(rpcAddr, 'GetProject', { name: 'default' }, token);
  const updated = await adminCall(rpcAddr, 'UpdateProject', { id: project.id, fields }, token);
  return updated.project;
}

function listen(server) {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${server.address().port}`));
  });
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/**
 * An auth webhook: `decide(request)` returns [status, body] for each
 * {token, method, attributes} it receives; every request is kept.
 */
async function startAuthHook(decide) {
  const requests = [];
  const server = http.createServer(async (req, res) => {
    const body = JSON.parse((await readBody(req)).toString('utf8'));
    requests.push(body);
    const [status, answer] = decide(body);
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(answer));
  });
  const url = await listen(server);
  return {
    url,
    requests,
    count: (method) => requests.filter((r) => r.method === method).length,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

/**
 * An event webhook checking each post's X-Signature-256 against
 * `secret()`, as a user's service would. `next(key)` resolves with the next
 * post about document `key` not yet taken.
 */
async function startEventHook(secret) {
  const posts = [];
  const taken = new Set();
  let waiting = [];
  const offer = () => {
    waiting = waiting.filter(({ key, resolve }) => {
      const post = posts.find((p) => !taken.has(p) && p.body.attributes.key === key);
      if (!post) return true;
      taken.add(post);
      resolve(post);
      return false;
    });
  };
  const server = http.createServer(async (req, res) => {
    const raw = await readBody(req);
    const want = 'sha256=' + crypto.createHmac('sha256', secret()).update(raw).digest('hex');
    const got = req.headers['x-signature-256'] || '';
    posts.push({
      body: JSON.parse(raw.toString('utf8')),
      signed: got.length === want.length && crypto.timingSafeEqual(Buffer.from(got), Buffer.from(want)),
    });
    res.writeHead(200);
    res.end();
    offer();
  });
  const url = await listen(server);
  return {
    url,
    posts,
    next: (key) =>
      new Promise((resolve) => {
        waiting.push({ key, resolve });
        offer();
      }),
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

/** A URL on which nothing listens: a webhook that is down. */
async function downURL() {
  const server = http.createServer();
  const url = await listen(server);
  await new Promise((resolve) => server.close(resolve));
  return url;
}

/** Flags that keep a failing auth webhook's retries short. */
// The test webhooks listen on loopback, which the server refuses by default.
const ALLOW_LOOPBACK_WEBHOOKS = ['--webhook-refuse-private-addresses=false'];

const QUICK_AUTH_FLAGS = [
  ...ALLOW_LOOPBACK_WEBHOOKS,
  '--auth-webhook-max-retries', '2',
  '--auth-webhook-min-wait-interval', '10ms',
  '--auth-webhook-max-wait-interval', '20ms',
];

module.exports = { adminCall, updateDefaultProject, startAuthHook, startEventHook, downURL, QUICK_AUTH_FLAGS, ALLOW_LOOPBACK_WEBHOOKS };
