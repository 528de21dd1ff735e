// Public surface of the certificate module (consumed by the webhook server).
export type { TlsMaterial, TlsSource } from './tls-source.js';
export { fileTlsSource, loadTlsFiles, type FileTlsOptions } from './files.js';
export {
  createSelfManagedTlsSource, selfManagedTlsSource, type SelfManagedTlsOptions, type SelfManagedTlsSource,
} from './bootstrap.js';
