// Writes src/agent-config-validator.generated.ts: the Ajv validator of the agent
// configuration schema (src/agent-config-schema.ts), compiled ahead of time so neither
// the agent nor the webhook loads TypeBox or Ajv's compiler (docs/decisions/0011-agent-config-schema.md).
// A test fails when the committed file differs from what this script generates.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { agentConfigValidatorSource } from '../src/agent-config-codegen.js';

const target = fileURLToPath(new URL('../src/agent-config-validator.generated.ts', import.meta.url));
writeFileSync(target, agentConfigValidatorSource());
console.log(`wrote ${target}`);
