// Shared pieces of the property-based hostile-input specs (spec/hostile*.spec.ts).
import fc from 'fast-check';

/** Runs an async property; a failure is reported short (counterexamples can be megabytes of nesting). */
export async function check<T>(arbitrary: fc.Arbitrary<T>, predicate: (value: T) => Promise<void>, numRuns: number, seed: number): Promise<void> {
  const details = await fc.check(fc.asyncProperty(arbitrary, predicate), { numRuns, seed, endOnFailure: true });
  if (!details.failed) return;
  const shown = (text: string) => (text.length > 1500 ? `${text.slice(0, 1500)}… (${text.length} chars)` : text);
  const failure = details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
  throw new Error(
    `property failed after ${details.numRuns} runs (seed ${details.seed}, path ${details.counterexamplePath}):\n` +
      `${shown(failure)}\ncounterexample: ${shown(fc.stringify(details.counterexample))}`,
  );
}

/** The text of a JSON object whose members are given as raw JSON texts (undefined members left out). */
export const request = (fields: { jsonrpc?: string; id?: string; method?: string; params?: string }): string =>
  `{${Object.entries(fields)
    .filter(([, text]) => text !== undefined)
    .map(([key, text]) => `${JSON.stringify(key)}:${text}`)
    .join(',')}}`;

/** JSON values that are not objects (null, scalars, arrays), and ones that are not strings. */
export const nonObject = fc.jsonValue({ maxDepth: 2 }).filter((value) => value === null || typeof value !== 'object' || Array.isArray(value));
export const nonString = fc.jsonValue({ maxDepth: 2 }).filter((value) => typeof value !== 'string');
