/**
 * The one session-cap policy of the legacy era, on a node (`LegacySessions`) and across a
 * machine's workers (`MachineSessions`) alike: fairness first, so a principal at
 * `maxSessionsPerPrincipal` makes room among its own sessions (its least recently active ends,
 * the earlier created of equals first) before `maxSessions` is looked at, and one client cannot
 * fill the server-wide cap and lock every other principal out.
 *
 * @param own the principal's sessions, in the order they were created (`undefined`: none).
 * @param cap `maxSessionsPerPrincipal`.
 * @param activity a session's last activity, in milliseconds since the epoch.
 * @returns the session to end before a new one of the principal is made, or `undefined` when it has room.
 * @internal
 */
export function sessionToDisplace<T>(own: ReadonlySet<T> | undefined, cap: number, activity: (session: T) => number): T | undefined {
  if (own === undefined || own.size < cap) return undefined;
  let oldest: T | undefined;
  // Insertion order breaks ties: the earlier session of equal activity goes first.
  for (const session of own) if (oldest === undefined || activity(session) < activity(oldest)) oldest = session;
  return oldest;
}
