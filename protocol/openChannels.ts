import type { SchedulerLike, Subscription } from 'rxjs';
import type { AuthInfo } from '../lib/auth.js';
import type { CloseReason } from '../lib/frame.js';
import type { CredentialChecks, HeldCredential } from './credentialChecks.js';

/** A message channel as its front gives it to the core: what the core calls when the channel's credential ends. @internal */
export interface ChannelEnd {
  /**
   * The channel's credential has ended (`token_expired` at its expiry, `revoked` by a recheck or
   * a revoke of its principal): the front ends the channel, after the closing frames of its listens.
   */
  end(reason: CloseReason): void;
  /** True once the channel is a legacy session (after its `initialize`): what a revoke counts as a session. */
  readonly legacy: boolean;
}

/** A channel's place among the open channels, given back when the channel ends. @internal */
export interface ChannelHold {
  release(): void;
}

/**
 * The message channels (stdio, WebSocket, in-process pairs) open on a core, each with the
 * credential it was authenticated with once, when it opened.
 *
 * Over HTTP every request is authenticated again: an expired or refused credential is refused at
 * the next request, and only what is open has to be ended. A channel is one connection whose
 * credential was decided once: nothing would ever refuse it again. So a channel ends when its
 * credential does, in both eras: at its `expiresAt` (`token_expired`), when its recheck finds it
 * inactive (`revoked`, see {@link CredentialChecks}), and when its principal is revoked
 * (`McpEndpoint.revoke`, on this node or relayed by the fleet's session bus). Its listens get
 * their closing frames on their own (each is held by the same rules); then the front closes the
 * channel, which ends its legacy subscriptions with it.
 * @internal
 */
export class OpenChannels {
  readonly #open = new Set<HeldChannel>();

  constructor(
    private readonly scheduler: SchedulerLike,
    private readonly credentials: CredentialChecks,
  ) {}

  /** Channels held now (for tests and leak checks). */
  get size(): number {
    return this.#open.size;
  }

  /**
   * Holds a channel authenticated as `auth` until it is released; ends it through `channel.end`
   * when its credential ends. A credential already past its expiry ends it at once (on the
   * scheduler, never inside this call).
   */
  hold(auth: AuthInfo, channel: ChannelEnd): ChannelHold {
    const held = new HeldChannel(auth.principal, channel, () => this.#open.delete(held));
    this.#open.add(held);
    const { expiresAt, recheck } = auth;
    if (expiresAt !== undefined && Number.isFinite(expiresAt)) {
      held.expiry = this.scheduler.schedule(() => held.end('token_expired'), Math.max(0, expiresAt - this.scheduler.now()));
    }
    if (recheck !== undefined) held.credential = this.credentials.hold(recheck, expiresAt, held);
    return held;
  }

  /** Ends every channel of `principal` here with `reason`; returns how many of them were legacy sessions. */
  revoke(principal: string, reason: CloseReason): number {
    let sessions = 0;
    for (const held of [...this.#open]) {
      if (held.principal !== principal) continue;
      if (held.channel.legacy) sessions++;
      held.end(reason);
    }
    return sessions;
  }
}

class HeldChannel implements ChannelHold {
  expiry: Subscription | undefined = undefined;
  credential: HeldCredential | undefined = undefined;
  #released = false;

  constructor(
    readonly principal: string,
    readonly channel: ChannelEnd,
    private readonly forget: () => void,
  ) {}

  /** The credential ended: let go of it here, and have the front end the channel. */
  end(reason: CloseReason): void {
    if (this.#released) return;
    this.release();
    this.channel.end(reason);
  }

  /** As a {@link CredentialChecks} stream: its recheck found the credential inactive. */
  close(reason: CloseReason): void {
    this.end(reason);
  }

  release(): void {
    if (this.#released) return;
    this.#released = true;
    this.expiry?.unsubscribe();
    this.credential?.release();
    this.forget();
  }
}
