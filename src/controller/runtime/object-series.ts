// ESO's per-object series (externalsecret_sync_calls_total, externalsecret_sync_calls_error,
// externalsecret_status_condition; docs/metrics.md), kept as one small record per
// ExternalSecret and written out as exposition text at scrape time. Through prom-client's
// labelled metrics each object cost four series objects with their label sets and hash keys
// (about 1 KiB per ExternalSecret, 10 MiB at 10 000), and every scrape formatted 40 000
// label sets generically; the text is the same (docs/controller.md, "Memory").

interface ObjectRecord {
  calls: number;
  /** Undefined until the first error: ESO's error series appears with its first error. */
  errors?: number;
  /** The Ready condition as last written: 1 True, 0 False; undefined before one was. */
  ready?: 0 | 1;
}

export interface Family {
  name: string;
  type: 'counter' | 'gauge';
  help: string;
}

/** The three families (defined with the other metrics, src/controller/runtime/metrics.ts). */
export interface ObjectFamilies {
  calls: Family;
  errors: Family;
  condition: Family;
}

/** A label value as the exposition format quotes it (object names never need it; kept exact). */
const quote = (v: string) => (/[\\"\n]/.test(v) ? v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n') : v);

export class ObjectSeries {
  /** namespace → name → record: the keys are the objects' own strings, no composite key. */
  private readonly byNs = new Map<string, Map<string, ObjectRecord>>();

  constructor(private readonly families: ObjectFamilies) {}

  /** One reconcile's outcome (metrics.ts recordExternalSecret says what each argument means). */
  record(namespace: string, name: string, ready: boolean | 'gone' | undefined, error: boolean): void {
    let names = this.byNs.get(namespace);
    if (ready === 'gone') {
      names?.delete(name);
      if (names && !names.size) this.byNs.delete(namespace);
      return;
    }
    if (!names) this.byNs.set(namespace, (names = new Map()));
    let r = names.get(name);
    if (!r) names.set(name, (r = { calls: 0 }));
    r.calls++;
    if (error) r.errors = (r.errors ?? 0) + 1;
    if (ready !== undefined) r.ready = ready ? 1 : 0;
  }

  /** Objects with series (tests, bounds). */
  get size(): number {
    let n = 0;
    for (const names of this.byNs.values()) n += names.size;
    return n;
  }

  /** The three families in Prometheus text format (0.0.4), HELP and TYPE always present.
   *  One pass, each family one string built by appending (no per-line array to spread and
   *  join): a scrape at 10 000 objects is 30 000 lines, and the bench's once-a-second scrape
   *  of the first sync spent more of the controller's CPU here than in any reconcile step. */
  text(): string {
    const f = this.families;
    const head = (fam: Family) => `# HELP ${fam.name} ${fam.help}\n# TYPE ${fam.name} ${fam.type}`;
    let calls = head(f.calls);
    let errors = head(f.errors);
    let condition = head(f.condition);
    const cond = `\n${f.condition.name}{`;
    for (const [ns, names] of this.byNs) {
      const nsLabel = `",namespace="${quote(ns)}"`;
      for (const [name, r] of names) {
        const labels = `name="${quote(name)}${nsLabel}`;
        calls += `\n${f.calls.name}{${labels}} ${r.calls}`;
        if (r.errors !== undefined) errors += `\n${f.errors.name}{${labels}} ${r.errors}`;
        if (r.ready !== undefined) {
          condition += `${cond}${labels},condition="Ready",status="True"} ${r.ready}${cond}${labels},condition="Ready",status="False"} ${1 - r.ready}`;
        }
      }
    }
    return `${calls}\n\n${errors}\n\n${condition}\n`;
  }
}
