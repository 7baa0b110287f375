/**
 * The runtime guard's screens in Chromium, against a replica with the runtime guard on and its cluster side
 * talking to the fake Kubernetes API. First the API server cannot list anything, so cluster facts are
 * unavailable and the network detector stands down: the page must show the disabledReason next to the
 * numbers, never the count alone, unknown capabilities as unknown, and attribution unconfirmed. Then the
 * facts arrive and a workload with a mesh sidecar shows the sidecar note and its suppressed destinations.
 * Evidence comes in through the sensor ingest route with a sensor token.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startRuntimeCluster } from '../../src/runtime-guard/kube/runtime-cluster.js';
import type { Replica } from '../../src/app/server.js';
import { kube, startFakeKubeApi, type FakeKubeApi } from '../fakes/fake-kube-api.js';
import { ADMIN_TOKEN, Client, openTestStore, waitFor, type TestStore } from '../helpers/harness.js';
import { item, mintSensorToken, report, startGuardReplica } from '../integration/runtime-guard/helpers.js';
import { FAST, seedCluster } from '../integration/runtime-guard/kube-helpers.js';
import { browserStoreKind, ensureConsoleBuilt, launchBrowser, openConsole, screenshot, signIn, skipWithoutBrowser } from './browser.js';

const OPENAI_IP = '162.159.140.245';

const kind = await browserStoreKind();

describe(`runtime guard screens in the browser [${kind}]`, { skip: skipWithoutBrowser }, () => {
  let store: TestStore;
  let api: FakeKubeApi;
  let replica: Replica;
  let admin: Client;
  let sensor: Client;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let problems: string[] = [];

  before(async () => {
    await ensureConsoleBuilt();
    store = await openTestStore(kind);
    api = await startFakeKubeApi();
    // The API server answers discovery but no list: cluster facts stay unavailable.
    api.failLists(true);
    replica = await startGuardReplica(store, {
      env: { KUBECONFIG: api.kubeconfigPath },
      tailEveryMs: 100,
      cluster: (input) => startRuntimeCluster({ ...input, ...FAST }),
    });
    admin = new Client(replica.url, ADMIN_TOKEN);
    sensor = new Client(replica.url, await mintSensorToken(admin));
    browser = await launchBrowser();
    ({ context, page, problems } = await openConsole(browser, replica.url));
    await signIn(page, ADMIN_TOKEN);
  });

  after(async () => {
    await context?.close().catch(() => {});
    await browser?.close();
    await replica?.close();
    await api?.close();
    await store?.close();
    assert.deepEqual(problems, [], 'no page errors, console errors or CSP violations');
  });

  async function ingest(node: string, items: ReturnType<typeof item>[]): Promise<void> {
    const sent = await sensor.post('/api/v1/runtime/sensor/reports', report(node, items));
    assert.ok(sent.status >= 200 && sent.status < 300, JSON.stringify(sent.body));
  }

  test('with cluster facts unavailable the detector stands down: the reason is shown with the numbers, never the count alone', async () => {
    const now = Math.floor(Date.now() / 1000);
    assert.equal((await sensor.post('/api/v1/runtime/sensor/status', { node: 'node-a', sensorAlive: true, bpfLsm: 'unknown', reason: 'no positive BPF-LSM evidence source' })).status < 300, true);
    await ingest('node-a', [
      item({ family: 'dns', rule: 'reins-monitor-dns', behavior: 'dns-query', destName: 'api.openai.com', destIP: OPENAI_IP, podName: 'agent-7d4-aaaaa', podIP: '10.244.1.1', observedAt: now - 30 }),
      item({ family: 'network', destIP: OPENAI_IP, podName: 'agent-7d4-aaaaa', podIP: '10.244.1.1', count: 3, observedAt: now - 20 }),
    ]);
    let recon: any;
    await waitFor(async () => {
      recon = (await admin.get('/api/v1/runtime/reconciliation')).body;
      return recon.rows?.length > 0;
    }, 10_000, 100);
    assert.equal(recon.enabled, true, JSON.stringify(recon));
    assert.equal(recon.networkDetectorDisabled, true);
    const row = recon.rows[0];

    await page.goto('/runtime');
    const banner = page.getByTestId('detector-down');
    await banner.waitFor();
    assert.ok(((await banner.textContent()) ?? '').includes(recon.disabledReason), 'the disabledReason, verbatim');
    assert.match((await banner.textContent()) ?? '', /thinner, not cleaner/);

    // Every headline count carries the qualifier: the summary and each row.
    const summary = page.locator('.summary .headline');
    assert.match((await summary.textContent()) ?? '', /^\d+ DNS evidence only: network detector stood down$/);
    const tr = page.locator(`tr[data-workload="${row.workloadKey}"]`);
    const headline = (await tr.locator('.headline').textContent()) ?? '';
    assert.equal(headline, `${row.bypassedDestinations} DNS evidence only: network detector stood down`);
    // m and n in their own columns, under the note that they are different populations.
    assert.equal(await tr.locator('.population-m').textContent(), String(row.m));
    assert.equal(await tr.locator('.population-n').textContent(), String(row.n));
    await page.getByText('They are different populations and are not comparable: m − n is not a quantity.').waitFor();
    // The pod could not be resolved to its workload without cluster facts.
    assert.equal(row.attributionConfirmed, false);
    await tr.getByText('attribution unconfirmed').waitFor();

    // The destinations, the suppressed network evidence included, with its reason.
    await tr.getByRole('button', { name: /Show \d+ destination/ }).click();
    const detail = page.locator('tr.detail-row');
    await detail.getByText('api.openai.com').first().waitFor();
    await detail.getByText('suppressed: cluster-facts-unavailable').first().waitFor();

    // Capabilities: unknown is shown as unknown with its reason, never as clean.
    const fleet = page.locator('[data-capability="BPF-LSM (fleet)"]');
    assert.equal((await fleet.locator('.badge').textContent())?.trim(), 'unknown');
    assert.match((await fleet.locator('.badge').getAttribute('class')) ?? '', /capability-unknown/);
    await fleet.getByText('neither clean nor absent').waitFor();
    // The leader's first lag scrape can land after the page read the status: read it, then show the page anew, so
    // that the page is at least as new as what it is compared with (a scrape error, once set, stays).
    const status = (await admin.get('/api/v1/runtime/status')).body;
    await page.reload();
    await page.getByTestId('runtime-status').getByText('node-a').first().waitFor();
    if (status.ingestLag.scrapedAtUnix === 0) await page.getByTestId('ingest-lag').first().getByText('never scraped (unknown)').waitFor();
    if (status.ingestLag.scrapeError) {
      await page.getByTestId('ingest-lag').first().getByText(status.ingestLag.scrapeError).waitFor();
      await page.getByTestId('ingest-lag').first().getByText('untrustworthy: completeness is unknown').waitFor();
    }
    if (status.probedAtUnix === 0) await page.getByText('never probed (unknown)').waitFor();
    await screenshot(page, 'runtime-detector-stood-down');

    // The window picker: the choice is in the URL and the server's clamped window is shown.
    await page.getByLabel('Window').first().selectOption('6h');
    await page.waitForURL('**/runtime?window=6h');
    await page.getByTestId('detector-down').waitFor();

    // The workload page: observations by family under the spec's headings.
    await page.getByRole('link', { name: row.workloadKey }).click();
    await page.waitForURL(`**/runtime/workloads/${encodeURIComponent(row.workloadKey)}?window=6h`);
    for (const heading of ['Names resolved (DNS)', 'Destinations reached (network)', 'Paths opened (file)', 'Binaries executed (exec)', 'Other observations']) {
      await page.getByRole('heading', { name: heading }).waitFor();
    }
    await page.locator('[data-family="dns"]').getByText('api.openai.com').waitFor();
    await page.locator('[data-family="network"]').getByText(OPENAI_IP).waitFor();
    await screenshot(page, 'runtime-workload');
  });

  test('with cluster facts back: a workload with a mesh sidecar shows the sidecar note, and suppressed destinations stay listed', async () => {
    seedCluster(api);
    api.upsert('replicasets', kube.replicaSet({ namespace: 'eng', name: 'meshed-5c8', owner: { kind: 'Deployment', name: 'meshed' } }));
    api.upsert(
      'pods',
      kube.pod({ namespace: 'eng', name: 'meshed-5c8-ddddd', ip: '10.244.1.7', owner: { kind: 'ReplicaSet', name: 'meshed-5c8' }, containers: [{ name: 'app' }, { name: 'istio-proxy', image: 'docker.io/istio/proxyv2:1.24.0' }] }),
    );
    api.failLists(false);
    await waitFor(async () => (await admin.get('/api/v1/runtime/reconciliation')).body.networkDetectorDisabled === false, 20_000, 200);

    const now = Math.floor(Date.now() / 1000);
    await ingest('node-a', [
      item({ family: 'network', destIP: OPENAI_IP, podName: 'meshed-5c8-ddddd', podIP: '10.244.1.7', count: 2, observedAt: now - 5 }),
      item({ family: 'dns', rule: 'reins-monitor-dns', behavior: 'dns-query', destName: 'api.openai.com', destIP: OPENAI_IP, podName: 'meshed-5c8-ddddd', podIP: '10.244.1.7', observedAt: now - 6 }),
      item({ family: 'dns', rule: 'reins-monitor-dns', behavior: 'dns-query', destName: 'api.openai.com.eng.svc.cluster.local', destIP: '', podName: 'meshed-5c8-ddddd', podIP: '10.244.1.7', observedAt: now - 7 }),
    ]);
    let row: any;
    await waitFor(async () => {
      row = (await admin.get('/api/v1/runtime/reconciliation')).body.rows.find((r: any) => r.workloadKey === 'eng/Deployment/meshed');
      return row !== undefined;
    }, 10_000, 100);
    assert.ok(row, 'the meshed workload has a row');

    await page.goto('/runtime');
    await page.getByTestId('reconciliation').waitFor();
    assert.equal(await page.getByTestId('detector-down').count(), 0);
    const tr = page.locator('tr[data-workload="eng/Deployment/meshed"]');
    assert.equal((await tr.locator('.headline').textContent())?.trim(), String(row.bypassedDestinations), 'with the detector up the count stands alone');
    if (row.attributionNote) await tr.getByText(`${row.attributionNote}: a mesh or telemetry sidecar was detected`).waitFor();
    assert.equal(row.attributionNote, 'pod-level (multi-container)');
    await tr.getByRole('button', { name: /Show \d+ destination/ }).click();
    const detail = page.locator('tr.detail-row');
    const suppressed = row.destinations.filter((d: any) => d.suppressed);
    assert.ok(suppressed.length > 0, JSON.stringify(row.destinations));
    for (const d of suppressed) await detail.getByText(`suppressed: ${d.suppressReason}`).first().waitFor();
    await screenshot(page, 'runtime-reconciliation');
  });

  test('one evidence label per row (IMDS is IMDS evidence), the window actually used, search, findings only and pages for many rows', async () => {
    // 120 quiet workloads (bare pods): every workload has a row, so the table starts on "with findings only".
    for (let i = 0; i < 120; i++) {
      api.upsert('pods', kube.pod({ namespace: 'load', name: `quiet-${String(i).padStart(3, '0')}`, ip: `10.244.50.${i + 1}` }));
    }
    api.upsert('pods', kube.pod({ namespace: 'load', name: 'imds-only', ip: '10.244.51.1' }));
    const now = Math.floor(Date.now() / 1000);
    await ingest('node-a', [item({ family: 'network', destIP: '169.254.169.254', podName: 'imds-only', podIP: '10.244.51.1', namespace: 'load', observedAt: now - 5 })]);
    let recon: any;
    await waitFor(async () => {
      recon = (await admin.get('/api/v1/runtime/reconciliation')).body;
      return recon.rows.length > 120 && recon.rows.some((r: any) => r.workloadKey === 'load/Pod/imds-only' && r.destinations.length > 0);
    }, 20_000, 200);
    const withFindings = recon.rows.filter((r: any) => r.destinations.some((d: any) => !d.suppressed)).length;

    await page.goto('/runtime');
    await page.getByTestId('reconciliation').waitFor();
    // The window the server used, not "clamped" when it was not.
    const used = (await page.getByTestId('window-used').textContent()) ?? '';
    assert.match(used, /\(1 h\)\.$/);
    assert.doesNotMatch(used, /clamped/);
    // Findings only is on (more than 50 rows): only rows with an unsuppressed destination.
    assert.equal(await page.locator('input[name="findings-only"]').isChecked(), true);
    await page.getByTestId('rows-shown').getByText(`${withFindings} of ${recon.rows.length} workloads`).waitFor();
    assert.equal(await page.locator('tr[data-workload="load/Pod/quiet-000"]').count(), 0);
    // The IMDS connection is IMDS evidence, never "no evidence".
    const imds = page.locator('tr[data-workload="load/Pod/imds-only"]');
    await imds.getByText('IMDS connections').waitFor();
    // Search by namespace/name, findings off: one quiet workload, "no evidence".
    await page.locator('input[name="findings-only"]').uncheck();
    await page.locator('input[name="workload-search"]').fill('load/quiet-007');
    await page.getByTestId('rows-shown').getByText(`1 of ${recon.rows.length} workloads`).waitFor();
    await page.locator('tr[data-workload="load/Pod/quiet-007"]').getByText('no evidence').waitFor();
    // Everything, in pages of 100.
    await page.locator('input[name="workload-search"]').fill('');
    await page.getByTestId('pager').getByText(`Page 1 of ${Math.ceil(recon.rows.length / 100)}`).waitFor();
    assert.equal(await page.locator('table.reconciliation > tbody > tr[data-workload]').count(), 100);
    await page.getByTestId('pager').getByRole('button', { name: 'Next' }).click();
    await page.getByTestId('pager').getByText(`Page 2 of ${Math.ceil(recon.rows.length / 100)}`).waitFor();
    await screenshot(page, 'runtime-many-rows');

    // A window the server clamps: the page says so, with the window used.
    await page.goto('/runtime?window=48h');
    await page.getByTestId('window-used').getByText(/\(24 h\); clamped from 48 h/).waitFor();
  });
});
