'use strict';
// Yorkie's own dashboard (the build in ../shared/dashboard/dist, see its
// BUILD.md) in headless Chromium against `yorkie server --dashboard-dir`:
// the dashboard and its session cookie share the server's origin. The walk
// logs in, creates a project, changes its settings, rotates its keys, sees
// a document the JS SDK wrote counted on the overview, finds it in the
// documents list, opens it (its JSON root is what the SDK wrote) and its
// history tab, where it restores the older of two revisions the SDK made,
// creates a schema, sees the channels list, invites a second
// user who accepts in a browser of their own, and logs out. Every step leaves a screenshot in artifacts/dashboard/; any
// failed request, HTTP error or console error fails the walk, except the
// dashboard's own probe of GET /auth/me while no one is logged in (401, as
// against upstream).

const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { describe, test, before, after } = require('node:test');
const { startServer, REPO_ROOT, serversRequired } = require('../lib/server');
const { externalAddrs } = require('../lib/suite');
const { withTimeout } = require('../lib/wait');
const { yorkie } = require('../lib/session');

const CHROMIUM = process.env.YORKIE_E2E_CHROMIUM || '/usr/bin/chromium';
const DIST = process.env.YORKIE_DASHBOARD_DIST || path.join(REPO_ROOT, '..', 'shared', 'dashboard', 'dist');
const ARTIFACTS = path.join(__dirname, '..', 'artifacts', 'dashboard');

function skipReason() {
  if (externalAddrs().length) return 'starts a server with its own flags';
  if (serversRequired()) return false; // missing pieces fail below
  if (!fs.existsSync(CHROMIUM)) return `no Chromium at ${CHROMIUM}`;
  return false;
}

let playwright;
try {
  playwright = require('playwright-core');
} catch {
  playwright = null;
}

/** A browser of its own (fresh profile) whose page records every failure. */
async function openBrowser(name) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `yorkie-dashboard-${name}-`));
  const context = await playwright.chromium.launchPersistentContext(dir, {
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1280, height: 900 },
  });
  // The dashboard links to yorkie.dev (and goes there after logging out):
  // a stand-in page answers, the tests run offline.
  await context.route(/^https:\/\/yorkie\.dev\//, (route) => route.fulfill({ status: 200, contentType: 'text/html', body: '<html><body>yorkie.dev</body></html>' }));
  const page = context.pages()[0] || (await context.newPage());
  const problems = [];
  let loggedIn = false;
  // The dashboard asks /auth/me on every start; logged out, 401 is its answer.
  const expected = (url, status) => !loggedIn && status === 401 && new URL(url).pathname === '/auth/me';
  page.on('requestfailed', (r) => {
    const err = r.failure()?.errorText || '';
    if (err !== 'net::ERR_ABORTED') problems.push(`request failed: ${r.method()} ${r.url()}: ${err}`);
  });
  page.on('response', (r) => {
    if (r.status() >= 400 && !expected(r.url(), r.status())) problems.push(`HTTP ${r.status()}: ${r.request().method()} ${r.url()}`);
  });
  page.on('console', (m) => {
    if (m.type() !== 'error') return;
    const url = m.location()?.url || '';
    if (url && /status of 401/.test(m.text()) && expected(url, 401)) return;
    problems.push(`console error: ${m.text()} (${url})`);
  });
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  let step = 0;
  return {
    name,
    page,
    problems,
    setLoggedIn(v) {
      loggedIn = v;
    },
    /** Saves a screenshot of the step and fails on anything recorded so far. */
    async shot(what) {
      step += 1;
      await page.screenshot({ path: path.join(ARTIFACTS, `${name}-${String(step).padStart(2, '0')}-${what}.png`), fullPage: true });
      assert.deepEqual(problems, [], `${name}: ${what}: failed requests or console errors`);
    },
    async close() {
      await context.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function adminCall(server, method, body, headers = {}) {
  const res = await fetch(`${server.rpcAddr}/yorkie.v1.AdminService/${method}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(10000),
  });
  const json = await res.json();
  if (res.status !== 200) throw new Error(`${method}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

async function logIn(b, base, username, password) {
  const { page } = b;
  await page.goto(`${base}/dashboard/`);
  await page.getByText('Sign in with Username').click();
  await page.fill('input[name=username]', username);
  await page.fill('input[name=password]', password);
  b.setLoggedIn(true);
  await page.click('button[type=submit]');
  await page.waitForURL('**/dashboard/projects');
  await page.getByRole('link', { name: 'New Project', exact: true }).waitFor();
}

describe('dashboard in a browser', { skip: skipReason() }, () => {
  let server;
  let owner;
  let guest;
  before(async () => {
    assert.ok(playwright, 'playwright-core is not installed: run npm ci in test/e2e');
    assert.ok(fs.existsSync(CHROMIUM), `no Chromium at ${CHROMIUM} (apt-get install chromium, or set YORKIE_E2E_CHROMIUM)`);
    assert.ok(fs.existsSync(path.join(DIST, 'index.html')),
      `no dashboard build at ${DIST}: CI keeps it at ../shared/dashboard/dist beside the repository (or set YORKIE_DASHBOARD_DIST)`);
    fs.rmSync(ARTIFACTS, { recursive: true, force: true });
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    server = await startServer({ logLevel: 'info', extraArgs: ['--dashboard-dir', DIST] });
  });
  after(async () => {
    if (guest) await guest.close();
    if (owner) await owner.close();
    if (server) await server.stop();
  });

  test('walk through the dashboard', { timeout: 240000 }, async () => {
    try {
      await walk();
    } catch (err) {
      for (const b of [owner, guest].filter(Boolean)) {
        await b.page.screenshot({ path: path.join(ARTIFACTS, `${b.name}-failed.png`), fullPage: true }).catch(() => {});
        if (b.problems.length) err.message += `\n${b.name}: ${b.problems.join('\n')}`;
      }
      err.message += `\n--- server log ---\n${server.logTail(3000)}`;
      throw err;
    }
  });

  async function walk() {
    const base = server.rpcAddr;
    owner = await openBrowser('owner');
    const { page } = owner;

    // Log in.
    await logIn(owner, base, 'admin', 'admin');
    await owner.shot('logged-in');

    // Create a project.
    await page.goto(`${base}/dashboard/projects/new`);
    await page.fill('#projectName', 'walk');
    await page.click('button[type=submit]:has-text("Create")');
    await page.waitForURL('**/dashboard/projects/walk');
    await page.getByText('Active Users').first().waitFor();
    await owner.shot('project-overview');

    // Change its settings.
    await page.goto(`${base}/dashboard/projects/walk/settings`);
    // A text field: this dashboard build sends an edited number field as a
    // string, which its own client refuses to encode (against upstream too).
    await page.click('#clientDeactivateThreshold');
    await page.keyboard.press('Control+A');
    await page.keyboard.type('12h');
    await page.click('button[type=submit]:has-text("Save")');
    const token = (await adminCall(server, 'LogIn', { username: 'admin', password: 'admin' })).token;
    const bearer = { authorization: `Bearer ${token}` };
    await withTimeout((async () => {
      for (;;) {
        const { project } = await adminCall(server, 'GetProject', { name: 'walk' }, bearer);
        if (project.clientDeactivateThreshold === '12h') return;
        await new Promise((r) => setTimeout(r, 100));
      }
    })(), 15000, 'the settings change to be stored');
    await owner.shot('settings-saved');

    // Rotate its keys.
    const before = (await adminCall(server, 'GetProject', { name: 'walk' }, bearer)).project;
    await page.goto(`${base}/dashboard/projects/walk/apikeys`);
    await page.getByText(before.publicKey).first().waitFor();
    await owner.shot('api-keys');
    // This dashboard build has no rotate button: rotate as the CLI does,
    // with the session's own credentials, and see the page show the new keys.
    const cookies = await page.context().cookies(base);
    const session = cookies.find((c) => c.name === 'yorkie_session');
    assert.ok(session, 'the session cookie is set');
    assert.equal(session.httpOnly, true);
    assert.equal(session.sameSite, 'Strict');
    const rotated = (await adminCall(server, 'RotateProjectKeys', { id: before.id }, { cookie: `yorkie_session=${session.value}` })).project;
    assert.notEqual(rotated.publicKey, before.publicKey);
    await page.reload();
    await page.getByText(rotated.publicKey).first().waitFor();
    await owner.shot('keys-rotated');

    // A document written by the JS SDK with the new key.
    const client = new yorkie.Client({ rpcAddr: base, apiKey: rotated.publicKey });
    await withTimeout(client.activate(), 15000, 'activate');
    const doc = new yorkie.Document('walk-doc');
    await withTimeout(client.attach(doc, { syncMode: yorkie.SyncMode.Manual }), 15000, 'attach');
    doc.update((root) => {
      root.title = 'written by the SDK';
      root.count = 1;
    });
    await withTimeout(client.sync(), 15000, 'sync');
    // Two revisions (the dashboard restores any but the newest).
    await withTimeout(client.createRevision(doc, 'v1', 'count 1'), 15000, 'createRevision v1');
    doc.update((root) => {
      root.count = 2;
    });
    await withTimeout(client.sync(), 15000, 'sync');
    await withTimeout(client.createRevision(doc, 'v2', 'count 2'), 15000, 'createRevision v2');
    const written = JSON.parse(doc.toSortedJSON());
    assert.deepEqual(written, { count: 2, title: 'written by the SDK' });
    await withTimeout(client.detach(doc), 15000, 'detach');
    await withTimeout(client.deactivate(), 15000, 'deactivate');

    // The overview counts it (GetProjectStats).
    await page.goto(`${base}/dashboard/projects/walk`);
    await page.getByText('Active Users').first().waitFor();
    await withTimeout((async () => {
      while (!/Documents\s+1\s/.test(await page.innerText('body'))) await new Promise((r) => setTimeout(r, 100));
    })(), 15000, 'the overview to count the document');
    await owner.shot('overview-counts-document');

    // The documents list shows it.
    await page.goto(`${base}/dashboard/projects/walk/documents`);
    const listed = page.locator('a[href="/dashboard/projects/walk/documents/walk-doc"]').first();
    await listed.waitFor();
    await owner.shot('documents');

    // Opened, it shows the JSON root the SDK wrote.
    await listed.click();
    await page.waitForURL('**/dashboard/projects/walk/documents/walk-doc');
    await page.getByText('written by the SDK').first().waitFor();
    // The code block numbers its lines ("1\t{"): strip the numbers, parse.
    const shown = (await page.locator('.detail_content').first().innerText()).split('\n')
      .filter((line) => /^\d+\t/.test(line)).map((line) => line.replace(/^\d+\t/, '')).join('\n');
    assert.deepEqual(JSON.parse(shown), written, "the document's JSON root is what the SDK wrote");
    await owner.shot('document-root');

    // Its history tab: the SDK's two revisions, newest first and selected.
    await page.getByRole('link', { name: 'History' }).click();
    await page.waitForURL('**/dashboard/projects/walk/documents/walk-doc/history');
    await page.getByText('walk-doc - History').waitFor();
    await page.getByText('Revision - v2').waitFor();
    await page.getByText('1 of 2').waitFor();
    await owner.shot('document-history');

    // Restore the older one from there.
    await page.locator('input.revision_slider').fill('1');
    await page.getByText('Revision - v1').waitFor();
    await page.getByText('count 1', { exact: true }).waitFor();
    await owner.shot('revision-selected');
    await page.getByTitle('Restore to this revision').click();
    await page.getByText('Are you sure you want to restore this document to this revision?').waitFor();
    await owner.shot('restore-confirm');
    const alerted = new Promise((resolve) => {
      page.once('dialog', async (d) => {
        const text = d.message();
        await d.accept();
        resolve(text);
      });
    });
    await page.getByRole('button', { name: 'Restore', exact: true }).click();
    assert.equal(await withTimeout(alerted, 15000, "the dashboard's answer to the restore"), 'Successfully restored to revision v1');
    // Back on the document, its root is the revision's.
    await page.waitForURL('**/dashboard/projects/walk/documents/walk-doc');
    await withTimeout((async () => {
      for (;;) {
        const { document } = await adminCall(server, 'GetDocument', { projectName: 'walk', documentKey: 'walk-doc' },
          { authorization: `API-Key ${rotated.secretKey}` });
        if (JSON.parse(document.root).count === 1) return;
        await new Promise((r) => setTimeout(r, 100));
      }
    })(), 15000, 'the restore to be applied');
    await page.reload();
    await page.getByText('written by the SDK').first().waitFor();
    const restored = (await page.locator('.detail_content').first().innerText()).split('\n')
      .filter((line) => /^\d+\t/.test(line)).map((line) => line.replace(/^\d+\t/, '')).join('\n');
    assert.deepEqual(JSON.parse(restored), { count: 1, title: 'written by the SDK' }, 'the restored root');
    await owner.shot('revision-restored');

    // A schema, created with the editor's starting body.
    await page.goto(`${base}/dashboard/projects/walk/schemas/new`);
    // The form resets itself once the (empty) schema list has loaded: fill
    // it after that, or the name is wiped.
    await page.getByText('No Schema Found').waitFor();
    await page.getByText('type Document').first().waitFor();
    await page.waitForLoadState('networkidle');
    await page.fill('#name', 'walk-schema');
    await page.click('button[type=submit]:has-text("Create")');
    await page.waitForURL('**/dashboard/projects/walk/schemas/walk-schema');
    await page.locator('a[href="/dashboard/projects/walk/schemas/walk-schema"]').first().waitFor();
    const { schemas } = await adminCall(server, 'GetSchemas', { projectName: 'walk', schemaName: 'walk-schema' },
      { authorization: `API-Key ${rotated.secretKey}` });
    assert.deepEqual(schemas.map((s) => `${s.name}@${s.version}`), ['walk-schema@1']);
    assert.match(schemas[0].body, /type Document = \{/);
    await owner.shot('schema-created');

    // The channels list.
    await page.goto(`${base}/dashboard/projects/walk/channels`);
    await page.waitForLoadState('networkidle');
    await owner.shot('channels');

    // Invite a member, who accepts in a browser of their own.
    await adminCall(server, 'SignUp', { username: 'guest', password: 'gu3st-pass!' });
    await page.goto(`${base}/dashboard/projects/walk/settings`);
    await page.getByRole('button', { name: 'Invite Member' }).click();
    await page.getByRole('button', { name: 'Generate' }).click();
    const link = await page.getByText(/\/dashboard\/invite\?token=/).first().innerText();
    await owner.shot('invite-link');
    guest = await openBrowser('guest');
    await logIn(guest, base, 'guest', 'gu3st-pass!');
    await guest.page.goto(link.trim());
    await guest.page.getByRole('button', { name: 'Go to Projects' }).click();
    await guest.page.locator('a[href="/dashboard/projects/walk"]:visible').first().waitFor();
    await guest.shot('member-sees-project');
    const { members } = await adminCall(server, 'ListMembers', { projectName: 'walk' }, bearer);
    assert.deepEqual(members.map((m) => `${m.username}:${m.role}`), ['admin:owner', 'guest:member']);
    await page.reload();
    await page.getByText('guest').first().waitFor();
    await owner.shot('members');

    // Log out.
    await page.getByRole('button', { name: 'User profile' }).click();
    owner.setLoggedIn(false);
    await page.getByText(/log ?out|sign ?out/i).first().click();
    await page.waitForURL(/\/dashboard\/login|yorkie\.dev/);
    const left = await page.context().cookies(base);
    assert.equal(left.find((c) => c.name === 'yorkie_session'), undefined, 'logged out, the session cookie is gone');
    await page.goto(`${base}/dashboard/projects`);
    await page.waitForURL('**/dashboard/login');
    await owner.shot('logged-out');
  }
});
