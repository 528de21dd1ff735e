// The `webhook` provider (ESO's `spec.provider.webhook`): one templated HTTP request per
// reference, the answer (or the node at `result.jsonPath`) as the value. As ESO: the
// remoteRef fields are URL-escaped in the url and raw in headers, body and jsonPath; each
// `secrets[]` entry exposes its Secret's keys as `.<name>.<key>`. The request goes through
// src/providers/http-store.ts (address policy, deadline, size cap, no redirects); errors
// carry the status and never the answer's body. docs/providers/webhook.md.
import type { WebhookProvider } from '../../api/types.js';
import { parseGoDuration } from '../../duration.js';
import { defineProvider, ReadOnlyClient } from '../define.js';
import { guard, RemoteRefError, toProviderError, unsupportedBy } from '../errors.js';
import { classifyHttp, statusCode, storeCa } from '../http-store.js';
import { checkAddress } from '../../egress/connect.js';
import { httpCall } from '../../egress/http.js';
import { isJsonObject } from '../json-text.js';
import { jsonNodeToBytes, objectToSecretMap, parseJson } from '../json-path.js';
import { ProviderError, type CallOptions, type ProviderContext, type RemoteRef, type SecretMap, type SecretsClient } from '../types.js';
import { parseJsonPath, selectJsonPath } from './jsonpath.js';
import { meta } from './meta.js';
import { parsedTemplates, REMOTE_REF, secretKeysRead, validateSpec } from './spec.js';
import { render, TemplateUseError, type Template, type TemplateData } from './template.js';

export { validateSpec };

const unsupported = (storeId: string, what: string) => unsupportedBy('webhook', storeId, what);

class WebhookClient extends ReadOnlyClient implements SecretsClient {
  private readonly templates: Map<string, Template>;
  private readonly timeoutMs: number;

  constructor(
    private readonly ctx: ProviderContext,
    private readonly spec: WebhookProvider,
    private readonly ca: string | undefined,
  ) {
    super({ storeId: ctx.storeId, provider: 'webhook' });
    this.templates = parsedTemplates(spec);
    this.timeoutMs = Math.min(ctx.timeoutMs, spec.timeout ? parseGoDuration(spec.timeout) : ctx.timeoutMs);
  }

  /** ESO's template data: the remote reference and, per `secrets[]` entry, the keys read. */
  private async data(ref: RemoteRef | undefined, urlEncode: boolean): Promise<TemplateData> {
    const data: TemplateData = Object.create(null) as TemplateData;
    const esc = (s: string | undefined) => (urlEncode ? encodeURIComponent(s ?? '').replace(/%20/g, '+') : (s ?? ''));
    data[REMOTE_REF] = { key: esc(ref?.key), version: esc(ref?.version), property: esc(ref?.property), namespace: this.ctx.namespace };
    for (const { name, index, keys } of secretKeysRead(this.spec)) {
      const sel = this.spec.secrets![index]!.secretRef;
      const values: Record<string, string> = Object.create(null) as Record<string, string>;
      for (const key of keys) {
        values[key] = Buffer.from(await this.ctx.readCredential({ name: sel.name, key, ...(sel.namespace ? { namespace: sel.namespace } : {}) })).toString('utf8');
      }
      data[name] = values;
    }
    return data;
  }

  private fill(field: string, data: TemplateData, key?: string): string {
    const t = this.templates.get(field);
    if (!t) return '';
    return guard({ storeId: this.ctx.storeId, key }, () => {
      try {
        return render(t, data);
      } catch (err) {
        if (err instanceof TemplateUseError) throw new RemoteRefError(`${field}: ${err.message}`, 'InvalidSpec');
        throw err;
      }
    });
  }

  /** The rendered request for `ref` (undefined = validate: the url only). */
  private async request(ref: RemoteRef | undefined): Promise<{ url: URL; headers: Record<string, string>; body?: string; jsonPath?: string }> {
    const key = ref?.key;
    const [urlData, rawData] = [await this.data(ref, true), await this.data(ref, false)];
    let url: URL;
    try {
      url = new URL(this.fill('webhook.url', urlData, key));
    } catch (err) {
      if (err instanceof ProviderError) throw err;
      throw new ProviderError('InvalidSpec', this.ctx.storeId, 'webhook.url does not render to a valid URL', key);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ProviderError('InvalidSpec', this.ctx.storeId, 'webhook.url must render to an http:// or https:// URL', key);
    const headers: Record<string, string> = {};
    for (const k of Object.keys(this.spec.headers ?? {})) {
      headers[this.fill(`webhook.headers (key ${k})`, rawData, key)] = this.fill(`webhook.headers.${k}`, rawData, key);
    }
    const body = this.spec.body !== undefined ? this.fill('webhook.body', rawData, key) : undefined;
    const jsonPath = this.spec.result?.jsonPath ? this.fill('webhook.result.jsonPath', rawData, key) : undefined;
    return { url, headers, ...(body !== undefined ? { body } : {}), ...(jsonPath ? { jsonPath } : {}) };
  }

  /** The node the answer holds for `ref`: the whole answer, or the node at result.jsonPath. */
  private async fetch(ref: RemoteRef, opts?: CallOptions): Promise<{ raw: Buffer; node?: unknown }> {
    const scope = { storeId: this.ctx.storeId, op: 'webhook request', key: ref.key };
    try {
      const req = await this.request(ref);
      const res = await httpCall({
        url: req.url, method: (this.spec.method ?? 'GET').toUpperCase(), headers: req.headers, body: req.body,
        ca: this.ca, timeoutMs: this.timeoutMs, policy: this.ctx.addresses, signal: opts?.signal,
      });
      if (res.status < 200 || res.status > 299) throw new ProviderError(statusCode(res.status), this.ctx.storeId, `webhook answered HTTP ${res.status}`, ref.key);
      if (!req.jsonPath) return { raw: res.body };
      const path = req.jsonPath;
      const steps = guard(scope, () => {
        try {
          return parseJsonPath(path);
        } catch (err) {
          throw new RemoteRefError(`webhook.result.jsonPath: ${(err as Error).message}`, 'InvalidSpec');
        }
      });
      return { raw: res.body, node: guard(scope, () => selectJsonPath(parseJson(res.body), steps, path)) };
    } catch (err) {
      throw toProviderError(err, scope, classifyHttp);
    }
  }

  async getSecret(ref: RemoteRef, opts?: CallOptions): Promise<Uint8Array> {
    if (ref.metadataPolicy === 'Fetch') throw unsupported(this.ctx.storeId, 'metadataPolicy Fetch');
    const { raw, node } = await this.fetch(ref, opts);
    return node === undefined ? new Uint8Array(raw) : jsonNodeToBytes(node);
  }

  async getSecretMap(ref: RemoteRef, opts?: CallOptions): Promise<SecretMap> {
    if (ref.metadataPolicy === 'Fetch') throw unsupported(this.ctx.storeId, 'metadataPolicy Fetch');
    const { raw, node } = await this.fetch(ref, opts);
    return guard({ storeId: this.ctx.storeId, key: ref.key }, () => {
      let value = node === undefined ? parseJson(raw) : node;
      // ESO: a string node is itself read as JSON (an API answering JSON inside a string).
      if (typeof value === 'string') value = parseJson(value);
      if (!isJsonObject(value)) throw new RemoteRefError('the answer is not a JSON object');
      return objectToSecretMap(value, 'the answer');
    });
  }

  async getAllSecrets(): Promise<SecretMap> {
    throw unsupported(this.ctx.storeId, 'dataFrom.find');
  }

  /** No request (a webhook has no side-effect-free call): the credentials are readable and
   *  the templates render to a URL whose host the address policy allows. */
  async validate(): Promise<void> {
    try {
      await checkAddress((await this.request(undefined)).url, this.ctx.addresses);
    } catch (err) {
      throw toProviderError(err, { storeId: this.ctx.storeId, op: 'validate' }, classifyHttp);
    }
  }

  async close(): Promise<void> {}
}

export const provider = defineProvider<WebhookProvider>(meta, async (ctx, spec) => {
  const ca = await storeCa(ctx, 'webhook', spec.caBundle, spec.caProvider);
  return new WebhookClient(ctx, spec, ca);
});

export default provider;
