// The MIME type of a served file, from its extension or, failing that, from its bytes.
import * as path from 'node:path';

const MIME_TYPES: Readonly<Record<string, string>> = {
  '.md': 'text/markdown',
  '.markdown': 'text/markdown',
  '.txt': 'text/plain',
  '.log': 'text/plain',
  '.csv': 'text/csv',
  '.html': 'text/html',
  '.htm': 'text/html',
  '.css': 'text/css',
  '.js': 'text/javascript',
  '.mjs': 'text/javascript',
  '.ts': 'text/x-typescript',
  '.json': 'application/json',
  '.xml': 'application/xml',
  '.yaml': 'application/yaml',
  '.yml': 'application/yaml',
  '.toml': 'application/toml',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.pdf': 'application/pdf',
  '.zip': 'application/zip',
  '.gz': 'application/gzip',
};
const TEXT_APPLICATION_TYPES = new Set(['application/json', 'application/xml', 'application/yaml', 'application/toml', 'image/svg+xml']);

/** The MIME type of `p` guessed from its extension; `undefined` when the extension is not recognised. */
export function mimeTypeOf(p: string): string | undefined {
  return MIME_TYPES[path.extname(p).toLowerCase()];
}

/** Whether a file of this type is answered as UTF-8 `text` (else as a base64 `blob`). */
export function isTextType(mimeType: string): boolean {
  return mimeType.startsWith('text/') || TEXT_APPLICATION_TYPES.has(mimeType);
}

/** The bytes as text when they are valid UTF-8 without NUL, else `undefined`. */
export function sniffText(bytes: Buffer): string | undefined {
  if (bytes.includes(0)) return undefined;
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

