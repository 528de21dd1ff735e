// The pod annotations reference, docs/annotations.md, rendered from the annotation table
// (src/pod-contract/annotations.ts), so the reference can never drift from what the webhook
// parses. Written by `npm run generate` (scripts/generate.ts); test/scripts/generate.test.ts
// fails when the committed page is stale.
import { ANNOTATIONS, DYNAMIC_ANNOTATION, INJECT_LABEL, INJECTED_ANNOTATION, TEMPLATE_ANNOTATION } from '../src/pod-contract/annotations.js';

const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');

function annotationReference(): string {
  const rows = ANNOTATIONS.map((a) => `| \`${a.name}\` | ${a.type} | ${a.default === undefined ? '—' : `\`${a.default}\``} | ${cell(a.description)} |`);
  rows.splice(1, 0, `| \`${TEMPLATE_ANNOTATION.name}\` | ${TEMPLATE_ANNOTATION.type} | — | ${cell(TEMPLATE_ANNOTATION.description)} |`,
    `| \`${DYNAMIC_ANNOTATION.name}\` | ${DYNAMIC_ANNOTATION.type} | — | ${cell(DYNAMIC_ANNOTATION.description)} |`);
  return `# Pod annotations reference

<!-- Generated from src/pod-contract/annotations.ts by \`npm run generate\`; do not edit by hand. -->

A pod opts in with the **label** \`${INJECT_LABEL}: "true"\` (the webhook's \`objectSelector\`
sends only such pods to ESI). What to inject is said in these annotations. Every value is
validated at admission; a bad value refuses the pod with a message naming the annotation.
Unknown \`esi.dev/\` annotations are refused too (typos would otherwise be silent).

| Annotation | Type | Default | Description |
|---|---|---|---|
${rows.join('\n')}

The webhook sets \`${INJECTED_ANNOTATION}: <mode>\` on pods it injected; a pod that carries it (or
an \`esi-agent\` container) is left unchanged on re-admission.

## Example

\`\`\`yaml
apiVersion: v1
kind: Pod
metadata:
  name: app
  labels:
    esi.dev/inject: "true"
  annotations:
    esi.dev/secrets: db,api-keys
    esi.dev/template-app.properties: |
      db.url=postgres://{{db.username}}:{{db.password}}@db:5432/app
    esi.dev/refresh-interval: 15m
    esi.dev/on-change: http://127.0.0.1:8080/-/reload
spec:
  containers:
    - name: app
      image: registry.example/app:1.4.2
\`\`\`

The app then reads \`/var/run/secrets/esi/db/username\`, \`/var/run/secrets/esi/db/password\`,
\`/var/run/secrets/esi/api-keys/<key>\` and \`/var/run/secrets/esi/app.properties\`.
`;
}

/** The generated file's text, by its path in the repository. */
export function files(): Map<string, string> {
  return new Map([['docs/annotations.md', annotationReference()]]);
}
