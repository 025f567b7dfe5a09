import { isObservable } from 'rxjs';
import type { AuthInfo } from '../../lib/auth.js';
import { InvalidOptionError } from '../../lib/errors.js';
import { implementing, positiveInteger } from '../../lib/validate.js';
import type { MessageChannel } from './channel.js';

/**
 * The checks of the channel adapters' arguments, on top of `lib/validate.ts`: each names the
 * caller's label and says what is allowed.
 * @internal
 */

/** A {@link MessageChannel}: `incoming` and `drain$` Observables, `send` and `close`. */
export function messageChannel(label: string, value: unknown): MessageChannel {
  const channel = implementing<MessageChannel>(label, value, ['send', 'close'], 'a MessageChannel (incoming, send, drain$, close)');
  if (!isObservable(channel.incoming) || !isObservable(channel.drain$)) {
    throw new InvalidOptionError(label, 'a MessageChannel (incoming, send, drain$, close)', value, 'incoming and drain$ must be Observables');
  }
  return channel;
}

/** The principal of a channel: an `AuthInfo` (`principal` a non-empty string, `scopes` a Set), or a function that makes one. */
export function channelAuth(label: string, value: unknown): AuthInfo | (() => AuthInfo | Promise<AuthInfo>) {
  if (typeof value === 'function') return value as () => AuthInfo;
  const auth = value as Partial<AuthInfo> | null;
  if (auth !== null && typeof auth === 'object' && typeof auth.principal === 'string' && auth.principal !== '' && auth.scopes instanceof Set) return auth as AuthInfo;
  throw new InvalidOptionError(label, 'an AuthInfo ({ principal, scopes: Set }) or a function returning one', value);
}

/** A readable byte stream (`process.stdin`, a child's stdout, a socket). */
export function readable<T>(label: string, value: unknown): T {
  return implementing<T>(label, value, ['on', 'off', 'pause', 'resume'], 'a readable stream');
}

/** A writable byte stream (`process.stdout`, a child's stdin, a socket). */
export function writable<T>(label: string, value: unknown): T {
  return implementing<T>(label, value, ['write', 'on', 'once'], 'a writable stream');
}

/** The `highWaterMark` of a channel, a positive integer of bytes, or undefined (the default). */
export function highWaterMark(value: unknown): number | undefined {
  return value === undefined ? undefined : positiveInteger('highWaterMark', value, 'bytes');
}
