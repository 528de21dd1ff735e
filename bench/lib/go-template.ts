// The one ESO-style Go template the agent benchmarks render (bench:peers' Go-template rows,
// bench:agent's Go-template rows): ESO's documented shape (a config file built from the
// fetched keys with quote, printf, b64enc, if, range, splitList, trim and upper, as
// bench/agent/gotemplate.ts's), over three keys k0, k1, k2: k0 as the user, k1 as the
// password, k2 as the region and the list.

export const ESO_TEMPLATE =
  'user: {{ .k0 | quote }}\npassword: {{ .k1 | quote }}\n' +
  'dsn: {{ printf "postgres://%s:%s@db:5432/app" .k0 .k1 | b64enc }}\n' +
  '{{- if .k2 }}\nregion: {{ .k2 | upper }}{{ end }}\n' +
  'hosts:{{ range $i, $h := splitList "-" .k2 }}\n  - {{ $i }}: {{ $h | trim }}{{ end }}\n';

/** ExternalSecret `target.template` rendering ESO_TEMPLATE into `file`. */
export const esoTarget = (file: string) => ({ template: { engineVersion: 'v2' as const, data: { [file]: ESO_TEMPLATE } }, templateEngine: 'go' as const });

/** What ESO_TEMPLATE renders from these values (ASCII values: JSON's quoting is Go's %q). */
export function expectedGoFile(k0: string, k1: string, k2: string): string {
  return `user: ${JSON.stringify(k0)}\npassword: ${JSON.stringify(k1)}\n` +
    `dsn: ${Buffer.from(`postgres://${k0}:${k1}@db:5432/app`).toString('base64')}` +
    (k2 ? `\nregion: ${k2.toUpperCase()}` : '') + '\nhosts:' +
    k2.split('-').map((h, i) => `\n  - ${i}: ${h.trim()}`).join('') + '\n';
}
