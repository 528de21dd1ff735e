// The `openBao` provider: the vault provider's client under ESO's openBao store kind (see
// meta.ts); loaded only by processes whose stores use it.
import type { VaultProvider } from '../../api/types.js';
import { defineProvider } from '../define.js';
import { connect } from '../vault/index.js';
import { meta } from './meta.js';

export const provider = defineProvider<VaultProvider>(meta, connect);

export default provider;
