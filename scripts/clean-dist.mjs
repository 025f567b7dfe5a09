// Removes dist/ before `npm pack` builds it again, so that no file of an older build (a module
// since renamed or removed) is shipped.
import { rmSync } from 'node:fs';

rmSync(new URL('../dist', import.meta.url), { recursive: true, force: true });
