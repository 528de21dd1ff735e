// The render pool as its callers use it (the reconciler: src/controller/): the same inputs and
// outputs as renderExternalSecretTemplate and transformKeys, asynchronous, per tenant.
import type { SecretMap } from '../../providers/types.js';
import { describeTemplates, untemplated, type RenderedTemplate, type TemplateEngineChoice, type TemplateSources } from '../eso.js';
import type { ExternalSecretTemplate } from '../../api/types.js';
import { RenderPool, type RenderPoolOptions } from './pool.js';

export { RenderBusy, RenderFailed, RenderPool, type RenderPoolOptions } from './pool.js';

export class PooledRenderer {
  readonly pool: RenderPool;

  constructor(opts: RenderPoolOptions) {
    this.pool = new RenderPool(opts);
  }

  /** renderExternalSecretTemplate in the pool for object `at.key` of namespace `at.tenant`. */
  async render(
    at: { tenant: string; key: string },
    target: { name: string; template: ExternalSecretTemplate | undefined; choice: TemplateEngineChoice },
    data: Record<string, Uint8Array>,
    opts: { metadata: boolean; sources?: TemplateSources },
  ): Promise<RenderedTemplate> {
    // Nothing to render: no thread (none may have started) and no copy of the values to it.
    const plain = untemplated(target, data, opts);
    if (plain) return { ...plain, data: Object.assign(Object.create(null) as Record<string, Uint8Array>, plain.data) };
    const res = await this.pool.run(at, describeTemplates(target.name, target.template), { kind: 'render', target, data: Object.entries(data), opts });
    if (res.kind !== 'render') throw new Error('render pool: unexpected reply');
    const out = Object.create(null) as Record<string, Uint8Array>;
    for (const [k, v] of res.data) out[k] = v;
    return { data: out, labels: res.labels, annotations: res.annotations };
  }

  /** transformKeys (a `rewrite[].transform`) in the pool: only the keys leave this thread. */
  async transformKeys(at: { tenant: string; key: string }, name: string, template: string, map: SecretMap): Promise<SecretMap> {
    const res = await this.pool.run(at, `template ${name}`, { kind: 'transform', name, template, keys: Object.keys(map) });
    if (res.kind !== 'transform') throw new Error('render pool: unexpected reply');
    const out = Object.create(null) as SecretMap;
    for (const [to, from] of res.pairs) out[to] = map[from]!;
    return out;
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}
