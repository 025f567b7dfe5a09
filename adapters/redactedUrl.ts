import { redactUrl } from './redis/target.js';

/**
 * The URL without its password, for messages and logs (`redis://:***@host:6379`); `'the given
 * URL'` when it is no URL. A URL of several hosts (`redis+sentinel://a:26379,b:26379/mymaster`),
 * which WHATWG URL cannot parse, is shown as given but for its password.
 */
export function redactedUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '***';
    return parsed.href;
  } catch {
    return /^[a-z][a-z0-9+.-]*:\/\/[^\s]+$/i.test(url) ? redactUrl(url) : 'the given URL';
  }
}
