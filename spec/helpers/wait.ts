import { strict as assert } from 'node:assert';

/** Rejects when `promise` has not settled within `ms` milliseconds of real time. */
export async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Runs a virtual clock to `ms` in steps of 100 ms, letting promises settle after each (a check
 * that answers asynchronously sets its next timer once it has answered).
 */
export function advanceInSteps(scheduler: { now(): number; maxFrames: number; flush(): void }): (ms: number) => Promise<void> {
  return async (ms) => {
    for (let to = Math.min(scheduler.now() + 100, ms); ; to = Math.min(to + 100, ms)) {
      scheduler.maxFrames = to;
      scheduler.flush();
      await new Promise<void>((resolve) => setImmediate(resolve));
      if (to === ms) return;
    }
  };
}

/**
 * Runs `body` and fails if anything reached the process as an uncaught exception or unhandled
 * rejection meanwhile, or within `settleMs` after it.
 */
export async function noUncaught(body: () => Promise<void>, settleMs = 50): Promise<void> {
  const escaped: unknown[] = [];
  const onError = (error: unknown) => escaped.push(error);
  // Our listeners keep the test process up so that the assertion below can say what escaped.
  process.on('uncaughtException', onError);
  process.on('unhandledRejection', onError);
  try {
    await body();
    await new Promise((resolve) => setTimeout(resolve, settleMs));
  } finally {
    process.off('uncaughtException', onError);
    process.off('unhandledRejection', onError);
  }
  assert.deepEqual(escaped.map(String), [], 'nothing escaped to the process');
}
