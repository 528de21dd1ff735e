// The `aws` provider (ESO's `spec.provider.aws`): AWS Secrets Manager and SSM Parameter
// Store, with static keys or the pod's own identity (STS web identity), role chaining,
// and the endpoint overrides of docs/providers/aws.md. Each service's SDK is imported
// only when a store uses it, STS only when a role is assumed.
import type { AWSProvider } from '../../api/types.js';
import { defineProvider } from '../define.js';
import { buildCredentials } from './auth.js';
import { quietNodeVersionWarning } from './sdk.js';
import { meta } from './meta.js';
import { validateSpec } from './spec.js';

export { validateSpec };

export const provider = defineProvider<AWSProvider>(meta, async (ctx, spec) => {
  quietNodeVersionWarning(ctx.logger);
  const creds = await buildCredentials(ctx, spec);
  try {
    if (spec.service === 'ParameterStore') {
      const { ParameterStoreClient } = await import('./parameterstore.js');
      return new ParameterStoreClient(ctx, spec, creds);
    }
    const { SecretsManagerStoreClient } = await import('./secretsmanager.js');
    return new SecretsManagerStoreClient(ctx, spec, creds);
  } catch (err) {
    creds.close();
    throw err;
  }
});

export default provider;
