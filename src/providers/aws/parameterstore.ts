// AWS SSM Parameter Store (`service: ParameterStore`), with ESO v1 semantics:
// - key = parameter name (after the store's `prefix`), read with decryption; `version`
//   is a version number or label, appended as `name:version`; `property` is a JSON path;
//   `metadataPolicy: Fetch` reads the parameter's tags as a JSON object.
// - find by tags: DescribeParameters with `tag:<key>` filters, then GetParameters 10 at a
//   time; find by name and/or path: GetParametersByPath (recursive) on the hierarchy of
//   the path (`/` when none), filtered here; keys are names relative to the prefix.
// - push: PutParameter, created as SecureString tagged `managed-by: external-secrets`;
//   an existing parameter is overwritten (keeping its type) only when it carries that
//   tag and the value changed; a `property` is merged into the JSON object.
// - delete: DeleteParameter, only for parameters carrying the tag.
import {
  DeleteParameterCommand,
  DescribeParametersCommand,
  GetParameterCommand,
  GetParametersByPathCommand,
  GetParametersCommand,
  ListTagsForResourceCommand,
  PutParameterCommand,
  SSMClient,
  type DescribeParametersResult,
  type GetParameterResult,
  type GetParametersByPathResult,
  type GetParametersResult,
  type ListTagsForResourceResult,
  type Parameter,
  type ParameterStringFilter,
} from '@aws-sdk/client-ssm';
import { isUtf8 } from 'node:buffer';
import type { AWSProvider } from '../../api/types.js';
import { guard } from '../errors.js';
import { deleteProperty, hasProperty, setProperty } from '../json-path.js';
import { emptySecretMap, ProviderError, type FindRef, type ProviderContext, type PushOptions, type PushRemoteRef, type RemoteRef, type SecretMap } from '../types.js';
import type { Credentials } from './auth.js';
import { AwsClient, enc, isManaged, MANAGED_BY_KEY, MANAGED_BY_VALUE, PUSH_DESCRIPTION, PUSH_PROPERTY, serviceClient, utf8 } from './base.js';
import { tagsToJson } from './tags.js';

const BATCH = 10;

export class ParameterStoreClient extends AwsClient {
  constructor(ctx: ProviderContext, spec: AWSProvider, creds: Credentials) {
    super(ctx, spec, creds, serviceClient(SSMClient, 'ssm', { ctx, spec, creds }));
  }

  private tags(key: string): Promise<ListTagsForResourceResult> {
    return this.send<ListTagsForResourceResult>('ListTagsForResource', key, new ListTagsForResourceCommand({
      ResourceType: 'Parameter', ResourceId: this.remoteName(key),
    }));
  }

  protected async fetch(ref: RemoteRef): Promise<Uint8Array> {
    if (ref.metadataPolicy === 'Fetch') return tagsToJson((await this.tags(ref.key)).TagList);
    const name = this.remoteName(ref.key) + (ref.version ? `:${ref.version}` : '');
    const out = await this.send<GetParameterResult>('GetParameter', ref.key, new GetParameterCommand({ Name: name, WithDecryption: true }));
    if (out.Parameter?.Value === undefined) throw new ProviderError('NotFound', this.storeId, 'the parameter has no value', ref.key);
    return enc.encode(out.Parameter.Value);
  }

  /** Names of parameters matching `filters` (DescribeParameters). */
  private async describe(filters: ParameterStringFilter[]): Promise<string[]> {
    const found = await this.paginate(async (token) => {
      const page = await this.send<DescribeParametersResult>('DescribeParameters', undefined, new DescribeParametersCommand({ ParameterFilters: filters, MaxResults: 50, ...token }));
      return { items: page.Parameters, next: page.NextToken };
    });
    return found.flatMap((p) => (p.Name ? [p.Name] : []));
  }

  /** Names of parameters carrying every tag (and under `prefix`). */
  private async namesByTags(tags: Record<string, string>, prefix: string): Promise<string[]> {
    const filters: ParameterStringFilter[] = Object.entries(tags).map(([k, v]) => ({ Key: `tag:${k}`, Option: 'Equals', Values: [v] }));
    return (await this.describe(filters)).filter((n) => n.startsWith(prefix));
  }

  private async getMany(names: string[]): Promise<Parameter[]> {
    const out: Parameter[] = [];
    for (let i = 0; i < names.length; i += BATCH) {
      const res = await this.send<GetParametersResult>('GetParameters', undefined, new GetParametersCommand({ Names: names.slice(i, i + BATCH), WithDecryption: true }));
      out.push(...(res.Parameters ?? []));
    }
    return out;
  }

  /** Every parameter whose name starts with `prefix`: GetParametersByPath on the
   *  enclosing hierarchy, or DescribeParameters BeginsWith for names without `/`. */
  private async byPrefix(prefix: string): Promise<Parameter[]> {
    const slash = prefix.lastIndexOf('/');
    if (slash < 0) return this.getMany(await this.describe([{ Key: 'Name', Option: 'BeginsWith', Values: [prefix] }]));
    const Path = slash === 0 ? '/' : prefix.slice(0, slash);
    return this.paginate(async (token) => {
      const page = await this.send<GetParametersByPathResult>('GetParametersByPath', undefined, new GetParametersByPathCommand({
        Path, Recursive: true, WithDecryption: true, MaxResults: 10, ...token,
      }));
      return { items: page.Parameters, next: page.NextToken };
    });
  }

  async getAllSecrets(find: FindRef): Promise<SecretMap> {
    const { matches, prefix } = this.findScope(find);
    const params = find.tags && Object.keys(find.tags).length > 0
      ? await this.getMany(await this.namesByTags(find.tags, prefix))
      : await this.byPrefix(prefix || '/');
    const out = emptySecretMap();
    for (const p of params) {
      if (p.Name === undefined || p.Value === undefined || !p.Name.startsWith(prefix)) continue;
      const key = this.relative(p.Name);
      if (!matches(key)) continue;
      out[key] = enc.encode(p.Value);
    }
    return out;
  }

  private current(key: string): Promise<GetParameterResult | undefined> {
    return this.sendOrAbsent<GetParameterResult>('GetParameter', key, new GetParameterCommand({ Name: this.remoteName(key), WithDecryption: true }));
  }

  private text(value: Uint8Array, key: string): string {
    if (!isUtf8(value)) {
      throw new ProviderError('Unsupported', this.storeId, 'Parameter Store holds text and the value is not UTF-8 (push it base64-encoded)', key);
    }
    return utf8(value);
  }

  private newValue(value: Uint8Array, ref: PushRemoteRef, current: string | undefined): string {
    const text = this.text(value, ref.remoteKey);
    if (!ref.property) return text;
    try {
      return setProperty(current, ref.property, text, PUSH_PROPERTY);
    } catch (err) {
      return this.helperError(err, ref.remoteKey);
    }
  }

  async pushSecret(value: Uint8Array, ref: PushRemoteRef, opts: PushOptions = {}): Promise<void> {
    const key = ref.remoteKey;
    const fields = Object.keys(opts.metadata ?? {});
    if (fields.length) {
      throw new ProviderError('Unsupported', this.storeId, `push metadata (${fields.map((f) => `metadata.spec.${f}`).join(', ')}) is applied by the SecretsManager service only; remove it for ParameterStore`, key);
    }
    const name = this.remoteName(key);
    const existing = (await this.current(key))?.Parameter;
    if (!existing) {
      // Tags and Overwrite cannot be combined: a new parameter is created with its tag.
      await this.send('PutParameter', key, new PutParameterCommand({
        Name: name, Value: this.newValue(value, ref, undefined), Type: 'SecureString', Overwrite: false,
        Description: PUSH_DESCRIPTION, Tags: [{ Key: MANAGED_BY_KEY, Value: MANAGED_BY_VALUE }],
      }));
      return;
    }
    if (!isManaged((await this.tags(key)).TagList)) {
      throw new ProviderError('Forbidden', this.storeId, `refusing to write a parameter PushSecret did not create (no tag ${MANAGED_BY_KEY}=${MANAGED_BY_VALUE})`, key);
    }
    const next = this.newValue(value, ref, existing.Value);
    if (existing.Value === next) return;
    await this.send('PutParameter', key, new PutParameterCommand({ Name: name, Value: next, Type: existing.Type ?? 'SecureString', Overwrite: true }));
  }

  async deleteSecret(ref: PushRemoteRef): Promise<void> {
    const key = ref.remoteKey;
    const existing = (await this.current(key))?.Parameter;
    if (!existing) return;
    if (!isManaged((await this.tags(key)).TagList)) {
      this.ctx.logger.info({ key }, `not deleting a parameter PushSecret did not create (no tag ${MANAGED_BY_KEY}=${MANAGED_BY_VALUE})`);
      return;
    }
    if (ref.property) {
      let result: { value: string | undefined; changed: boolean };
      try {
        result = deleteProperty(existing.Value ?? '', ref.property, PUSH_PROPERTY);
      } catch (err) {
        return this.helperError(err, key);
      }
      if (!result.changed) return;
      if (result.value !== undefined) {
        await this.send('PutParameter', key, new PutParameterCommand({
          Name: this.remoteName(key), Value: result.value, Type: existing.Type ?? 'SecureString', Overwrite: true,
        }));
        return;
      }
    }
    await this.sendOrAbsent('DeleteParameter', key, new DeleteParameterCommand({ Name: this.remoteName(key) }));
  }

  async secretExists(ref: PushRemoteRef): Promise<boolean> {
    const existing = (await this.current(ref.remoteKey))?.Parameter;
    if (existing?.Value === undefined) return false;
    return ref.property ? guard({ storeId: this.storeId, key: ref.remoteKey }, () => hasProperty(existing.Value!, ref.property!, PUSH_PROPERTY)) : true;
  }
}
