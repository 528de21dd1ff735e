// AWS Secrets Manager (`service: SecretsManager`), with ESO v1 semantics:
// - key = secret name or ARN (after the store's `prefix`); `version` is a staging label
//   (`AWSCURRENT` by default, `AWSPREVIOUS`, custom) or `uuid/<VersionId>`;
//   SecretString wins over SecretBinary; `property` is a JSON path into the value;
//   `metadataPolicy: Fetch` reads the secret's tags as a JSON object.
// - find: ListSecrets (name prefix and tag filters server-side, exact matching here),
//   then BatchGetSecretValue 20 at a time; keys are names relative to the prefix.
// - push: CreateSecret tagged `managed-by: external-secrets`, else PutSecretValue (only
//   when the value changed) on a secret carrying that tag; a secret scheduled for
//   deletion is restored first; a `property` is merged into the JSON object; push
//   metadata (push-metadata.ts) sets tags, description, KMS key and the value's format.
// - delete: only secrets carrying the tag; the store's `secretsManager` settings choose
//   a recovery window (AWS's 30 days by default) or forced deletion. A secret scheduled
//   for deletion reads as absent.
import { isUtf8 } from 'node:buffer';
import {
  BatchGetSecretValueCommand,
  CreateSecretCommand,
  DeleteSecretCommand,
  DescribeSecretCommand,
  GetSecretValueCommand,
  ListSecretsCommand,
  PutSecretValueCommand,
  RestoreSecretCommand,
  TagResourceCommand,
  UpdateSecretCommand,
  SecretsManagerClient,
  type BatchGetSecretValueResponse,
  type DescribeSecretResponse,
  type Filter,
  type GetSecretValueResponse,
  type ListSecretsResponse,
  type SecretListEntry,
} from '@aws-sdk/client-secrets-manager';
import type { AWSProvider } from '../../api/types.js';
import { guard } from '../errors.js';
import { deleteProperty, hasProperty, setProperty } from '../json-path.js';
import { emptySecretMap, ProviderError, type FindRef, type ProviderContext, type PushOptions, type PushRemoteRef, type RemoteRef, type SecretMap } from '../types.js';
import type { Credentials } from './auth.js';
import { AwsClient, enc, isManaged, MANAGED_BY_KEY, MANAGED_BY_VALUE, PUSH_DESCRIPTION, PUSH_PROPERTY, serviceClient, utf8 } from './base.js';
import { isInvalidRequest } from './errors.js';
import type { SecretsManagerPushMetadata } from './push-metadata.js';
import { callOptions } from './sdk.js';
import { tagsToJson } from './tags.js';

const BATCH = 20;

/** The payload of a GetSecretValue / batch entry as bytes. */
function payload(out: { SecretString?: string; SecretBinary?: Uint8Array }): Uint8Array | undefined {
  if (out.SecretString !== undefined) return enc.encode(out.SecretString);
  if (out.SecretBinary !== undefined) return new Uint8Array(out.SecretBinary);
  return undefined;
}

/** SecretString for UTF-8 text, SecretBinary otherwise (readers get the same bytes);
 *  push metadata `secretPushFormat` chooses. */
function valueFields(value: Uint8Array, format?: 'string' | 'binary'): { SecretString: string } | { SecretBinary: Uint8Array } {
  if (format === 'binary') return { SecretBinary: value };
  return format === 'string' || isUtf8(value) ? { SecretString: utf8(value) } : { SecretBinary: value };
}

function hasAllTags(entry: SecretListEntry, tags: Record<string, string>): boolean {
  return Object.entries(tags).every(([k, v]) => (entry.Tags ?? []).some((t) => t.Key === k && t.Value === v));
}

export class SecretsManagerStoreClient extends AwsClient {
  constructor(ctx: ProviderContext, spec: AWSProvider, creds: Credentials) {
    super(ctx, spec, creds, serviceClient(SecretsManagerClient, 'secretsmanager', { ctx, spec, creds }));
  }

  protected async fetch(ref: RemoteRef): Promise<Uint8Array> {
    const id = this.remoteName(ref.key);
    if (ref.metadataPolicy === 'Fetch') {
      const d = await this.send<DescribeSecretResponse>('DescribeSecret', ref.key, new DescribeSecretCommand({ SecretId: id }));
      return tagsToJson(d.Tags);
    }
    const version = ref.version?.startsWith('uuid/')
      ? { VersionId: ref.version.slice('uuid/'.length) }
      : ref.version ? { VersionStage: ref.version } : {};
    const out = await this.send<GetSecretValueResponse>('GetSecretValue', ref.key, new GetSecretValueCommand({ SecretId: id, ...version }));
    const value = payload(out);
    if (!value) throw new ProviderError('NotFound', this.storeId, 'the secret version has neither SecretString nor SecretBinary', ref.key);
    return value;
  }

  /** AWS tells a secret scheduled for deletion only by an InvalidRequestException and
   *  prose; DescribeSecret's DeletedDate says it by data, so ask that instead. */
  protected override async scheduledForDeletion(err: unknown, key: string): Promise<boolean> {
    if (!isInvalidRequest(err)) return false;
    try {
      const d = (await this.sdk.send(new DescribeSecretCommand({ SecretId: this.remoteName(key) }), callOptions(this.ctx.timeoutMs))) as DescribeSecretResponse;
      return d.DeletedDate !== undefined;
    } catch {
      return false;
    }
  }

  /** ListSecrets, paginated, narrowed server-side by name prefix and tag filters. */
  private async list(find: FindRef, prefix: string): Promise<SecretListEntry[]> {
    const filters: Filter[] = [];
    if (prefix) filters.push({ Key: 'name', Values: [prefix] });
    const tags = Object.entries(find.tags ?? {});
    if (tags.length) {
      filters.push({ Key: 'tag-key', Values: tags.map(([k]) => k) }, { Key: 'tag-value', Values: tags.map(([, v]) => v) });
    }
    return this.paginate(async (token) => {
      const page = await this.send<ListSecretsResponse>('ListSecrets', undefined, new ListSecretsCommand({
        MaxResults: 100, ...(filters.length ? { Filters: filters } : {}), ...token,
      }));
      return { items: page.SecretList, next: page.NextToken };
    });
  }

  async getAllSecrets(find: FindRef): Promise<SecretMap> {
    const { matches, prefix } = this.findScope(find);
    const names = (await this.list(find, prefix))
      .filter((e) => e.Name !== undefined && e.Name.startsWith(prefix) && !e.DeletedDate)
      .filter((e) => !find.tags || hasAllTags(e, find.tags))
      .filter((e) => matches(this.relative(e.Name!)))
      .map((e) => e.Name!);
    const out = emptySecretMap();
    for (let i = 0; i < names.length; i += BATCH) {
      const chunk = names.slice(i, i + BATCH);
      const res = await this.send<BatchGetSecretValueResponse>('BatchGetSecretValue', undefined, new BatchGetSecretValueCommand({ SecretIdList: chunk }));
      for (const e of res.Errors ?? []) {
        // Deleted between the listing and the read: not part of the result.
        if (e.ErrorCode === 'ResourceNotFoundException') continue;
        const code = e.ErrorCode === 'AccessDeniedException' ? 'Forbidden' : 'Unknown';
        throw new ProviderError(code, this.storeId, `BatchGetSecretValue: ${e.ErrorCode ?? 'error'}`, e.SecretId ? this.relative(e.SecretId) : undefined);
      }
      for (const v of res.SecretValues ?? []) {
        const value = v.Name ? payload(v) : undefined;
        if (value) out[this.relative(v.Name!)] = value;
      }
    }
    return out;
  }

  private describe(key: string): Promise<DescribeSecretResponse | undefined> {
    return this.sendOrAbsent<DescribeSecretResponse>('DescribeSecret', key, new DescribeSecretCommand({ SecretId: this.remoteName(key) }));
  }

  private current(key: string): Promise<GetSecretValueResponse | undefined> {
    return this.sendOrAbsent<GetSecretValueResponse>('GetSecretValue', key, new GetSecretValueCommand({ SecretId: this.remoteName(key) }));
  }

  private newValue(value: Uint8Array, ref: PushRemoteRef, current: Uint8Array | undefined): Uint8Array {
    if (!ref.property) return value;
    try {
      return enc.encode(setProperty(current, ref.property, utf8(value), PUSH_PROPERTY));
    } catch (err) {
      return this.helperError(err, ref.remoteKey);
    }
  }

  async pushSecret(value: Uint8Array, ref: PushRemoteRef, opts: PushOptions = {}): Promise<void> {
    const key = ref.remoteKey;
    const name = this.remoteName(key);
    const md = (opts.metadata ?? {}) as SecretsManagerPushMetadata;
    const described = await this.describe(key);
    if (!described) {
      await this.send('CreateSecret', key, new CreateSecretCommand({
        Name: name,
        Description: md.description ?? PUSH_DESCRIPTION,
        ...(md.kmsKeyID ? { KmsKeyId: md.kmsKeyID } : {}),
        Tags: [...Object.entries(md.tags ?? {}).filter(([k]) => k !== MANAGED_BY_KEY).map(([Key, Value]) => ({ Key, Value })), { Key: MANAGED_BY_KEY, Value: MANAGED_BY_VALUE }],
        ...valueFields(this.newValue(value, ref, undefined), md.secretPushFormat),
      }));
      return;
    }
    if (!isManaged(described.Tags)) {
      throw new ProviderError('Forbidden', this.storeId, `refusing to write a secret PushSecret did not create (no tag ${MANAGED_BY_KEY}=${MANAGED_BY_VALUE})`, key);
    }
    if (described.DeletedDate) {
      await this.send('RestoreSecret', key, new RestoreSecretCommand({ SecretId: described.ARN ?? name }));
    }
    await this.applyMetadata(key, described, md);
    const hasVersions = Object.keys(described.VersionIdsToStages ?? {}).length > 0;
    const current = hasVersions ? await this.current(key) : undefined;
    const currentValue = current ? payload(current) : undefined;
    const next = this.newValue(value, ref, currentValue);
    if (currentValue && Buffer.compare(Buffer.from(currentValue), Buffer.from(next)) === 0) return;
    await this.send('PutSecretValue', key, new PutSecretValueCommand({ SecretId: described.ARN ?? name, ...valueFields(next, md.secretPushFormat) }));
  }

  /** Push metadata on an existing secret: missing or changed tags are added (others
   *  stay), description and KMS key updated when they differ. */
  private async applyMetadata(key: string, described: DescribeSecretResponse, md: SecretsManagerPushMetadata): Promise<void> {
    const id = described.ARN ?? this.remoteName(key);
    const have = new Map((described.Tags ?? []).map((t) => [t.Key, t.Value]));
    const tags = Object.entries(md.tags ?? {}).filter(([k, v]) => k !== MANAGED_BY_KEY && have.get(k) !== v).map(([Key, Value]) => ({ Key, Value }));
    if (tags.length) await this.send('TagResource', key, new TagResourceCommand({ SecretId: id, Tags: tags }));
    const update = {
      ...(md.description !== undefined && md.description !== described.Description ? { Description: md.description } : {}),
      ...(md.kmsKeyID !== undefined && md.kmsKeyID !== described.KmsKeyId ? { KmsKeyId: md.kmsKeyID } : {}),
    };
    if (Object.keys(update).length) await this.send('UpdateSecret', key, new UpdateSecretCommand({ SecretId: id, ...update }));
  }

  async deleteSecret(ref: PushRemoteRef): Promise<void> {
    const key = ref.remoteKey;
    const described = await this.describe(key);
    if (!described || described.DeletedDate) return;
    if (!isManaged(described.Tags)) {
      this.ctx.logger.info({ key }, `not deleting a secret PushSecret did not create (no tag ${MANAGED_BY_KEY}=${MANAGED_BY_VALUE})`);
      return;
    }
    const id = described.ARN ?? this.remoteName(key);
    if (ref.property) {
      const current = await this.current(key);
      const currentValue = current ? payload(current) : undefined;
      if (!currentValue) return;
      let result: { value: string | undefined; changed: boolean };
      try {
        result = deleteProperty(currentValue, ref.property, PUSH_PROPERTY);
      } catch (err) {
        return this.helperError(err, key);
      }
      if (!result.changed) return;
      if (result.value !== undefined) {
        await this.send('PutSecretValue', key, new PutSecretValueCommand({ SecretId: id, SecretString: result.value }));
        return;
      }
    }
    const cfg = this.spec.secretsManager;
    await this.sendOrAbsent('DeleteSecret', key, new DeleteSecretCommand({
      SecretId: id,
      ...(cfg?.forceDeleteWithoutRecovery ? { ForceDeleteWithoutRecovery: true } : {}),
      ...(cfg?.recoveryWindowInDays ? { RecoveryWindowInDays: cfg.recoveryWindowInDays } : {}),
    }));
  }

  async secretExists(ref: PushRemoteRef): Promise<boolean> {
    const current = await this.current(ref.remoteKey);
    const value = current ? payload(current) : undefined;
    if (!value) return false;
    return ref.property ? guard({ storeId: this.storeId, key: ref.remoteKey }, () => hasProperty(value, ref.property!, PUSH_PROPERTY)) : true;
  }
}
