// The sizes of bench/run.mjs's two modes (bench/README.md, "Modes"), in their own module so that
// bench/compare-builds.mjs checks its `--n` against the same shapes and reports the same K.
//
// quick (smoke check, about a minute plus the build): one session per shape with one pass per
// publish pattern, small K and N, few latency rounds, short slow-consumer, churn and storm runs.
// full: three sessions (fresh processes) per shape, one pass per pattern each; N up to 15 000.
// Memory and latency come from every session.

/** A fresh copy of the mode's configuration (run.mjs narrows it by its flags). */
export function modeConfig(quick) {
  return quick
    ? {
        sessions: 1,
        passes: 1,
        fanout: [
          { n: 100, k: 200, rounds: 0 },
          { n: 1000, k: 30, rounds: 10 },
        ],
        legacy: [{ n: 200, k: 50, rounds: 10 }],
        slow: { healthy: 100, k: 2_000, ms: 500 },
        slowReps: 1,
        slowReference: false, // no run without the stalled stream: no p99 ratio
        churn: 1_000,
        storm: { n: 100, k: 200 },
      }
    : {
        sessions: 3,
        passes: 1,
        fanout: [
          { n: 100, k: 10_000, rounds: 0 },
          { n: 1000, k: 1000, rounds: 50 },
          { n: 10_000, k: 100, rounds: 50 },
          { n: 15_000, k: 100, rounds: 50 },
        ],
        legacy: [
          { n: 1000, k: 1000, rounds: 50 },
          { n: 10_000, k: 100, rounds: 50 },
          { n: 15_000, k: 100, rounds: 50 },
        ],
        slow: { healthy: 100, k: 100_000, ms: 10_000 },
        slowReps: 3,
        slowReference: true,
        churn: 20_000,
        storm: { n: 1000, k: 1000 },
      };
}
