// Messages between the render pool (pool.ts) and its threads (worker.ts). Structured clone
// carries them; maps travel as entry lists so that a key such as `__proto__` stays a key.
import type { ExternalSecretTemplate } from '../../api/types.js';
import type { TemplateEngineChoice, TemplateSources } from '../eso.js';

export type WorkerRequest =
  | {
      id: number;
      kind: 'render';
      target: { name: string; template: ExternalSecretTemplate | undefined; choice: TemplateEngineChoice };
      data: [string, Uint8Array][];
      opts: { metadata: boolean; sources?: TemplateSources };
    }
  | { id: number; kind: 'transform'; name: string; template: string; keys: string[] };

export type WorkerResult =
  | { kind: 'render'; data: [string, Uint8Array][]; labels: Record<string, string>; annotations: Record<string, string> }
  | { kind: 'transform'; pairs: [string, string][] };

export type WorkerReply =
  | { id: number; ok: true; result: WorkerResult }
  /** `timedOut`: the render used its whole deadline (the Go-template engine's or handlebars' own). */
  | { id: number; ok: false; message: string; timedOut: boolean };

/** Sent once the thread is ready for a request (started, or done with the last one). */
export interface IdleMessage {
  idle: true;
}
