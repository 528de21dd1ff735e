// The pod annotations reference, docs/annotations.md, from the annotation table
// (src/pod-contract/annotations.ts through webhook/annotation-docs.ts). Written by `npm run generate`
// (scripts/generate.ts); test/unit/generated.test.ts fails when the committed page is stale.
import { annotationReference } from '../webhook/annotation-docs.js';

/** The generated file's text, by its path in the repository. */
export function files(): Map<string, string> {
  return new Map([['docs/annotations.md', annotationReference()]]);
}
