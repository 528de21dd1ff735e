// What ESI knows about the `fake` provider without loading its client: capabilities and
// spec validation. Its values travel in the store spec itself (docs/providers/fake.md).
import type { FakeProvider, FakeProviderData } from '../../api/types.js';
import { NO_REFERENCES } from '../refs.js';
import { capabilities } from '../define.js';
import type { ProviderMeta } from '../types.js';

export function validateSpec(spec: unknown): string[] {
  const problems: string[] = [];
  const data = (spec as FakeProvider | undefined)?.data;
  if (!Array.isArray(data)) return ['fake.data must be a list'];
  const result = (spec as FakeProvider).validationResult;
  if (result !== undefined && !(Number.isInteger(result) && result >= 0 && result <= 2)) {
    problems.push('fake.validationResult must be 0 (Ready), 1 (Unknown) or 2 (Error)');
  }
  data.forEach((d: Partial<FakeProviderData>, i) => {
    if (typeof d?.key !== 'string' || d.key === '') problems.push(`fake.data[${i}].key must be a non-empty string`);
    if (d?.value !== undefined && typeof d.value !== 'string') problems.push(`fake.data[${i}].value must be a string`);
    if (d?.version !== undefined && typeof d.version !== 'string') problems.push(`fake.data[${i}].version must be a string`);
    if (d?.valueMap !== undefined && (typeof d.valueMap !== 'object' || d.valueMap === null)) {
      problems.push(`fake.data[${i}].valueMap must be a map of strings`);
    }
  });
  return problems;
}

export const meta: ProviderMeta = {
  name: 'fake',
  // A pushed property is one flat key of the JSON object value.
  capabilities: capabilities(['name', 'path'], { versions: true, pushProperty: 'key' }),
  validateSpec,
  references: NO_REFERENCES,
  admissionWarning: 'uses the fake provider: its values are part of the store spec and travel in the agent configuration; use it for tests only',
};
