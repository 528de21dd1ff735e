// What a GCP Secret Manager change notification says, read from one Pub/Sub message (docs/
// fleet.md, "GCP"): Secret Manager publishes to the topics set on a secret (`topics`) a
// message whose attributes name the event (`eventType`), the secret (`secretId`: its full
// resource name, `projects/<p>/secrets/<s>` or `projects/<p>/locations/<l>/secrets/<s>`) and
// the data's format (`dataFormat`); the data is the Secret or SecretVersion resource as JSON,
// never a payload. This module reads the attributes alone, not the data, and quotes nothing
// of a message in its errors.
import { SECRET_ID } from '../../providers/gcpsm/names.js';
import { MalformedEvent } from './aws-events.js';

export { MalformedEvent };

export interface GcpChange {
  /** A region of regional secrets, `global` otherwise. */
  location: string;
  /** The secret's id (the last segment of its name). */
  secret: string;
}

/** A message larger than this (data and attributes) is not a Secret Manager notification:
 *  a Secret's JSON is a few KiB (labels, at most 16 KiB of annotations, topics). */
export const MAX_MESSAGE_BYTES = 64 * 1024;

/** Events that change what a read returns: a version's value or state, the secret's
 *  existence, its labels and annotations (find by labels, metadata reads). SECRET_ROTATE is
 *  only a reminder to rotate, TOPIC_CONFIGURED a test message; unknown types are ignored. */
const CHANGES = new Set([
  'SECRET_CREATE', 'SECRET_UPDATE', 'SECRET_DELETE', 'SECRET_VERSION_ADD', 'SECRET_VERSION_ENABLE',
  'SECRET_VERSION_DISABLE', 'SECRET_VERSION_DESTROY', 'SECRET_VERSION_DESTROY_SCHEDULED',
]);

const SECRET_NAME = /^projects\/[a-z0-9][a-z0-9.:-]{0,99}\/(?:locations\/([a-z0-9-]{1,63})\/)?secrets\/([A-Za-z0-9_-]{1,255})$/;

/**
 * The location and secret id a key names as the gcpsm provider reads it: a full name
 * (`projects/…/secrets/<s>[/versions/<v>]`) gives its own; a bare id the store's location.
 * The project is not compared: events name it by number where the store may name it by id.
 */
export function gcpKey(storeLocation: string | undefined, key: string): GcpChange | undefined {
  const m = SECRET_NAME.exec(key.replace(/\/versions\/[^/]+$/, ''));
  if (m) return { location: m[1] ?? 'global', secret: m[2]! };
  // A key of another form reads nothing the events name: no source.
  return SECRET_ID.test(key) ? { location: storeLocation || 'global', secret: key } : undefined;
}

export interface PubsubMessage {
  messageId?: string;
  data?: string;
  attributes?: Record<string, string>;
}

/**
 * One message → the change it reports; undefined for an event that changes nothing.
 * Throws MalformedEvent, with a message that quotes nothing of it, for anything else.
 */
export function parseGcpMessage(m: PubsubMessage): GcpChange | undefined {
  const attrs = m.attributes;
  let size = m.data?.length ?? 0;
  for (const [k, v] of Object.entries(attrs ?? {})) size += k.length + (typeof v === 'string' ? v.length : 0);
  if (size > MAX_MESSAGE_BYTES) throw new MalformedEvent(`larger than ${MAX_MESSAGE_BYTES} bytes`);
  if (!attrs || typeof attrs !== 'object' || typeof attrs.eventType !== 'string') {
    throw new MalformedEvent('not a Secret Manager notification (the eventType attribute is required)');
  }
  if (!CHANGES.has(attrs.eventType)) return undefined;
  const id = typeof attrs.secretId === 'string' ? SECRET_NAME.exec(attrs.secretId) : null;
  if (!id) throw new MalformedEvent(`a ${attrs.eventType} notification without a secretId of the form projects/<p>/secrets/<s>`);
  return { location: id[1] ?? 'global', secret: id[2]! };
}
