// `npm run images`: the ESI image as an OCI archive, for clusters without a registry
// (`kind load image-archive`, `ctr -n k8s.io images import`). It is the image the test node
// runs (test/platform/images/build-images.ts: every `esi` subcommand, user 65532, no shell),
// built from this checkout with the images' pinned Node.js (test/platform/versions.env), named esi.local/esi:node.
// Releases publish the Dockerfiles' images instead (.github/workflows/release.yml).
import { copyFileSync, mkdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { ESI_IMAGE, ensureImages } from '../test/platform/images/build-images.js';

const ROOT = join(import.meta.dirname, '..');
const outDir = join(ROOT, 'dist', 'images');
const { esi } = await ensureImages();
mkdirSync(outDir, { recursive: true });
const out = join(outDir, 'esi.tar');
copyFileSync(esi, out);
const [repository, tag] = ESI_IMAGE.split(':');
process.stdout.write(`${relative(process.cwd(), out)}: ${ESI_IMAGE}

Load it and point the chart at it:
  kind load image-archive ${relative(process.cwd(), out)}        # or: ctr -n k8s.io images import ${relative(process.cwd(), out)}
  helm install esi charts/esi -n esi-system --create-namespace \\
    --set image.repository=${repository} --set image.tag=${tag}
`);
