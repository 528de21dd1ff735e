// The controller → agent channel (docs/fleet.md):
// two annotations the controller writes on an injected pod, which the kubelet projects into
// the agent container through a downwardAPI volume. The webhook builds the volume from
// CHANNEL_FILES, the agent reads the files back with channelValue, which parses them with the
// annotation table's own entries: what the webhook admits, the agent accepts.
import { ANNOTATIONS, CHANGE_GENERATION_ANNOTATION, REFRESH_FLOOR_ANNOTATION, type AnnotationSpec } from './annotations.js';

/** The agent's directory of the channel files (never shared with an app container). */
export const CHANNEL_DIR = '/var/run/esi/channel';
export const CHANNEL_VOLUME = 'esi-channel';

/** File name in CHANNEL_DIR → the annotation it projects. */
const CHANNEL_FILES = {
  'refresh-floor': REFRESH_FLOOR_ANNOTATION,
  'change-generation': CHANGE_GENERATION_ANNOTATION,
} as const;

export type ChannelFile = keyof typeof CHANNEL_FILES;

/** The downwardAPI items of the channel volume. */
export function channelItems(): { path: string; fieldRef: { fieldPath: string } }[] {
  return Object.entries(CHANNEL_FILES).map(([path, annotation]) => ({ path, fieldRef: { fieldPath: `metadata.annotations['${annotation}']` } }));
}

/** One file's content as its annotation's typed value; an empty file (the annotation is not
 *  set) is undefined. Throws the table's message for a value the webhook would refuse. */
export function channelValue<F extends ChannelFile>(file: F, raw: string): F extends 'refresh-floor' ? number | undefined : string | undefined {
  if (raw.trim() === '') return undefined as never;
  const spec = (ANNOTATIONS as readonly AnnotationSpec[]).find((a) => a.name === CHANNEL_FILES[file])!;
  return spec.parse(raw.trim()) as never;
}
