/**
 * The URL without its password, for messages and logs (`redis://:***@host:6379`); `'the given
 * URL'` when it does not parse.
 */
export function redactedUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '***';
    return parsed.href;
  } catch {
    return 'the given URL';
  }
}
