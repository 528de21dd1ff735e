// The agent-config validator, src/agent-config/validator.generated.ts: Ajv's standalone
// code for the agent configuration schema (src/agent-config/schema.ts), compiled ahead of
// time so neither the agent nor the webhook loads TypeBox or Ajv's compiler
// (docs/decisions/0011-agent-config-schema.md). Written by `npm run generate`
// (scripts/generate.ts); test/unit/generated.test.ts fails when the committed file is stale.
import { agentConfigValidatorSource } from '../src/agent-config/codegen.js';

/** The generated file's text, by its path in the repository. */
export function files(): Map<string, string> {
  return new Map([['src/agent-config/validator.generated.ts', agentConfigValidatorSource()]]);
}
