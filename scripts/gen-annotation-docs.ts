// Writes docs/annotations.md from the annotation table (npm run docs:annotations).
import { writeFileSync } from 'node:fs';
import { annotationReference } from '../webhook/annotation-docs.js';

writeFileSync(new URL('../docs/annotations.md', import.meta.url), annotationReference());
console.log('wrote docs/annotations.md');
