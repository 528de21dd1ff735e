// What `esi webhook` loads at start from the bundle (dist/bundle, `npm run build`): the entry
// and every chunk the webhook's chunk imports statically. The webhook uses no generated
// Kubernetes API client, so neither the generated models nor tr46's Unicode table (node-fetch's
// fallback URL parser) may be among them, and the certificate authority (selfsigned and the
// x509 library under it) loads only when a certificate is issued. These were 12 MiB of the
// webhook's private memory (docs/performance/webhook-memory.md);
// scripts/bundle.ts's stand-ins, KubeRest in webhook/cmd.ts and certs/, and the lazy import of
// certs/pki.ts keep them out. No cluster needed; reads the built bundle.
import t from 'tap';
import { existsSync } from 'node:fs';
import { BUNDLE, startClosure } from '../support/bundle-closure.js';

/** The files Node loads for `esi webhook` before any request. */
const webhookClosure = () => startClosure(BUNDLE, 'Serves the ESI mutating admission webhook');

t.test('the webhook loads neither generated API models nor tr46 nor the certificate authority at start', { skip: existsSync(BUNDLE) ? false : 'dist/bundle missing: npm run build' }, async (tt) => {
  const files = webhookClosure();
  const all = [...files.values()].join('\n');
  tt.ok(files.size > 2, 'the webhook chunk and its shared chunks are found');
  tt.notMatch(all, /getAttributeTypeMap/, 'no generated model class');
  tt.notMatch(all, /class (CoreV1Api|AdmissionregistrationV1Api|VersionApi)\b/, 'no generated API client');
  tt.notMatch(all, /mappingTable|xn--/, "no tr46 (whatwg-url's IDNA table)");
  tt.notMatch(all, /@peculiar|tsyringe/, 'no x509 generation library');
  const bytes = [...files.values()].reduce((n, s) => n + s.length, 0);
  // Was 3.9 MB (2026-11-28) before the stand-ins; V8 keeps each loaded chunk's source for life.
  tt.ok(bytes < 2_000_000, `the webhook loads ${bytes} bytes of bundled code at start (< 2 MB)`);
});
