// Pure tests of the rotation decisions: a simulated clock drives decide/applyPlan through
// several serving-cert and CA rotations, with a simulated "published caBundle" standing in
// for the webhook configuration, and checks at every step that a client trusting only the
// published bundle accepts the certificate being served.
import { X509Certificate } from 'node:crypto';
import t from 'tap';
import { applyPlan, caBundle, decide, type CertState } from '../../certs/plan.js';
import { isSignedBy, parseCert, servingIdentity, splitPemBundle } from '../../certs/pki.js';

const identity = servingIdentity('esi-webhook', 'esi-system', ['localhost'], ['127.0.0.1']);
const S = 1000;
const life = { caLifetimeMs: 100 * S, certLifetimeMs: 30 * S };
const EMPTY: CertState = { previousCas: [], bundleVersion: 0, caRotatedAt: 0 };

function acceptedBy(bundlePem: string, certPem: string | undefined, nowMs: number): boolean {
  const cert = parseCert(certPem);
  if (!cert || nowMs < cert.notBefore || nowMs >= cert.notAfter) return false;
  return splitPemBundle(bundlePem).map((p) => parseCert(p)).some((ca) =>
    ca !== undefined && nowMs >= ca.notBefore && nowMs < ca.notAfter && isSignedBy(cert, ca));
}

t.test('servingIdentity lists the service names and extras', async (t) => {
  t.same(identity.dnsNames, ['esi-webhook', 'esi-webhook.esi-system', 'esi-webhook.esi-system.svc',
    'esi-webhook.esi-system.svc.cluster.local', 'localhost']);
  t.same(identity.ips, ['127.0.0.1']);
  t.throws(() => servingIdentity('a', 'b', [], ['not-an-ip']), /not an IP/);
});

t.test('an empty state gets a CA and a serving certificate at once', async (t) => {
  const now = Date.now();
  const plan = decide({ state: EMPTY, nowMs: now, identity, renewBeforeRatio: 2 / 3, propagationDelayMs: 2 * S, activeCaPublished: false });
  t.same(plan.actions, ['new-ca', 'new-serving']);
  const st = await applyPlan(EMPTY, plan, identity, now, life);
  t.ok(acceptedBy(caBundle(st), st.serving?.certPem, now));
  t.ok(st.bundleVersion >= now, 'bundle version set');
  const again = decide({ state: st, nowMs: now + S, identity, renewBeforeRatio: 2 / 3, propagationDelayMs: 2 * S, activeCaPublished: true });
  t.same(again.actions, [], 'nothing to do right after');
});

t.test('SAN change reissues the serving cert without a new CA', async (t) => {
  const now = Date.now();
  const st = await applyPlan(EMPTY, { actions: ['new-ca', 'new-serving'], reasons: [] }, identity, now, life);
  const other = servingIdentity('renamed', 'esi-system');
  const plan = decide({ state: st, nowMs: now, identity: other, renewBeforeRatio: 2 / 3, propagationDelayMs: 0, activeCaPublished: true });
  t.same(plan.actions, ['new-serving']);
});

t.test('simulated lifetime: rotations keep the published bundle valid', async (t) => {
  const start = Date.now();
  let st = EMPTY;
  const servingSerials = new Set<string>();
  const caSerials = new Set<string>();
  let sawOverlap = false;
  for (let now = start; now < start + 260 * S; now += S) {
    let published = caBundle(st); // every tick publishes what the Secret holds first
    const activeFp = parseCert(st.ca?.certPem)?.x509.fingerprint256;
    const trusted = splitPemBundle(published).some((p) => parseCert(p)?.x509.fingerprint256 === activeFp);
    const plan = decide({ state: st, nowMs: now, identity, renewBeforeRatio: 2 / 3, propagationDelayMs: 2 * S, activeCaPublished: trusted });
    if (plan.actions.length) st = await applyPlan(st, plan, identity, now, life);
    // The apiserver still holds `published` until the next publish: the cert must pass it.
    if (now > start) t.ok(acceptedBy(published, st.serving?.certPem, now), `accepted at +${(now - start) / S}s`);
    published = caBundle(st);
    t.ok(acceptedBy(published, st.serving?.certPem, now), `accepted after publish at +${(now - start) / S}s`);
    servingSerials.add(parseCert(st.serving?.certPem)?.serial ?? '');
    caSerials.add(parseCert(st.ca?.certPem)?.serial ?? '');
    if (st.previousCas.length > 0) sawOverlap = true;
  }
  t.ok(servingSerials.size >= 8, `serving cert rotated (${servingSerials.size} serials)`);
  t.ok(caSerials.size >= 3, `CA rotated (${caSerials.size} CAs)`);
  t.ok(sawOverlap, 'the old CA stayed in the bundle during the overlap');
});

t.test('the serving cert waits for the new CA to be published', async (t) => {
  const t0 = Date.now();
  const fresh = await applyPlan(EMPTY, { actions: ['new-ca', 'new-serving'], reasons: [] }, identity, t0, life);
  // A serving cert renewed at +60 s is still fresh when the CA falls due at +70 s.
  const st0 = await applyPlan(fresh, { actions: ['new-serving'], reasons: [] }, identity, t0 + 60 * S, life);
  const due = t0 + 70 * S; // CA past 2/3 of 100 s
  const p1 = decide({ state: st0, nowMs: due, identity, renewBeforeRatio: 2 / 3, propagationDelayMs: 2 * S, activeCaPublished: true });
  t.same(p1.actions, ['new-ca'], 'new CA first, serving cert untouched');
  const st1 = await applyPlan(st0, p1, identity, due, life);
  t.equal(st1.previousCas.length, 1, 'old CA kept');
  t.equal(splitPemBundle(caBundle(st1)).length, 2, 'bundle has both CAs');
  t.match(caBundle(st1), /-----END CERTIFICATE-----\n-----BEGIN CERTIFICATE-----/, 'each CA starts on its own line (OpenSSL needs it)');
  t.equal(new X509Certificate(caBundle(st1)).fingerprint256, parseCert(st1.ca?.certPem)?.x509.fingerprint256, 'active CA first');
  t.ok(st1.bundleVersion > st0.bundleVersion);
  const notYet = decide({ state: st1, nowMs: due + 3 * S, identity, renewBeforeRatio: 2 / 3, propagationDelayMs: 2 * S, activeCaPublished: false });
  t.notOk(notYet.actions.includes('new-serving'), 'not before the webhook trusts the new CA');
  const tooSoon = decide({ state: st1, nowMs: due + S, identity, renewBeforeRatio: 2 / 3, propagationDelayMs: 2 * S, activeCaPublished: true });
  t.notOk(tooSoon.actions.includes('new-serving'), 'not before the propagation delay');
  const now = decide({ state: st1, nowMs: due + 3 * S, identity, renewBeforeRatio: 2 / 3, propagationDelayMs: 2 * S, activeCaPublished: true });
  t.same(now.actions, ['new-serving']);
  const st2 = await applyPlan(st1, now, identity, due + 3 * S, life);
  const cert = parseCert(st2.serving?.certPem);
  const newCa = parseCert(st2.ca?.certPem);
  t.ok(cert && newCa && isSignedBy(cert, newCa), 'serving cert now from the new CA');
  const later = decide({ state: st2, nowMs: t0 + 101 * S, identity, renewBeforeRatio: 2 / 3, propagationDelayMs: 2 * S, activeCaPublished: true });
  t.ok(later.actions.includes('drop-expired-cas'), 'expired old CA is dropped');
});
