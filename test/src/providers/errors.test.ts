// The HTTP stores (doppler, onepassword, bitwardensecretsmanager, infisical) keep no versions
// and no metadata: one refusal (src/providers/errors.ts), naming the field and the provider,
// code Unsupported, carrying the key but never a value.
import t from 'tap';
import { refuseVersionAndMetadata, unsupportedBy } from '../../../src/providers/errors.js';
import { ProviderError } from '../../../src/providers/types.js';

t.test('version and metadataPolicy Fetch are refused; a plain reference passes', async (t) => {
  const refused = (ref: object) => {
    try {
      refuseVersionAndMetadata('infisical', 'SecretStore/ns/s', { key: 'db', ...ref });
      return undefined;
    } catch (err) {
      return err as ProviderError;
    }
  };
  const v = refused({ version: '3' });
  t.ok(v instanceof ProviderError);
  t.equal(v?.code, 'Unsupported');
  t.match(v?.message, /remoteRef\.version is not supported by the infisical provider/);
  t.match(refused({ metadataPolicy: 'Fetch' })?.message, /metadataPolicy Fetch is not supported by the infisical provider/);
  t.equal(refused({}), undefined);
  t.equal(refused({ metadataPolicy: 'None' }), undefined);
  t.match(unsupportedBy('doppler', 'SecretStore/ns/s', 'find.tags').message, /find\.tags is not supported by the doppler provider/);
});
