// The parts of a Pod the webhook reads, checked for shape before anything reads them.
// The apiserver validates pods only AFTER mutating admission, and `esi inject` reads
// hand-written YAML: either can hand us `containers: "app"` or an annotation that is a
// number. Each problem names the field, so the denial (or exit code 2) says what to fix.
import { isObject } from '../src/json-object.js';

function stringMap(v: unknown, field: string, problems: string[]): void {
  if (v === undefined) return;
  if (!isObject(v)) return void problems.push(`${field}: must be a map of names to strings`);
  for (const [k, val] of Object.entries(v)) {
    if (typeof val !== 'string' && !k.startsWith('esi.dev/')) {
      // esi.dev/ values are reported by the annotation parser, naming the annotation.
      problems.push(`${field}: the value of ${JSON.stringify(k.slice(0, 64))} must be a string`);
      return;
    }
  }
}

function containers(v: unknown, field: string, problems: string[]): void {
  if (v === undefined) return;
  if (!Array.isArray(v)) return void problems.push(`${field}: must be a list of containers`);
  v.forEach((c, i) => {
    const f = `${field}[${i}]`;
    if (!isObject(c)) return void problems.push(`${f}: must be a container object`);
    if (typeof c.name !== 'string') problems.push(`${f}.name: must be a string`);
    if (c.volumeMounts !== undefined) {
      if (!Array.isArray(c.volumeMounts)) problems.push(`${f}.volumeMounts: must be a list`);
      else if (c.volumeMounts.some((m) => !isObject(m) || typeof m.mountPath !== 'string')) problems.push(`${f}.volumeMounts: every entry needs a string mountPath`);
    }
    if (c.restartPolicy !== undefined && typeof c.restartPolicy !== 'string') problems.push(`${f}.restartPolicy: must be a string`);
  });
}

/** Problems with the pod's shape (metadata and the spec fields ESI reads), or []. */
export function podShapeProblems(pod: unknown): string[] {
  const problems: string[] = [];
  if (!isObject(pod)) return ['the object is not a Pod'];
  const meta = pod.metadata;
  if (meta !== undefined && !isObject(meta)) return ['metadata: must be an object'];
  if (meta) {
    for (const k of ['name', 'generateName', 'namespace'] as const) {
      if (meta[k] !== undefined && typeof meta[k] !== 'string') problems.push(`metadata.${k}: must be a string`);
    }
    stringMap(meta.labels, 'metadata.labels', problems);
    stringMap(meta.annotations, 'metadata.annotations', problems);
    if (meta.ownerReferences !== undefined && !Array.isArray(meta.ownerReferences)) problems.push('metadata.ownerReferences: must be a list');
  }
  const spec = pod.spec;
  if (spec === undefined) return problems;
  if (!isObject(spec)) return [...problems, 'spec: must be an object'];
  containers(spec.containers, 'spec.containers', problems);
  containers(spec.initContainers, 'spec.initContainers', problems);
  if (spec.volumes !== undefined && (!Array.isArray(spec.volumes) || spec.volumes.some((v) => !isObject(v)))) problems.push('spec.volumes: must be a list of volumes');
  if (spec.serviceAccountName !== undefined && typeof spec.serviceAccountName !== 'string') problems.push('spec.serviceAccountName: must be a string');
  return problems;
}
