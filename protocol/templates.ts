import type { MethodHandler, RequestContext } from '../lib/context.js';
import type { ResourceProvider, ResourceTemplate } from '../lib/resources.js';
import { reportError } from '../lib/telemetry.js';

/** The one method {@link resourceTemplatesMethod} answers. @internal */
export const RESOURCE_TEMPLATES_LIST = 'resources/templates/list';

/**
 * The endpoint's built-in `resources/templates/list` (answered wherever `resources` is advertised
 * and `methods` has no entry of that name): the templates `providers` declare for the caller, in
 * provider order, each `uriTemplate` once (the first provider's entry, as the first provider owns a
 * URI). One page: a `cursor` is accepted and ignored, and no `nextCursor` is sent.
 *
 * On 2026-07-28 requests the result is complete and cacheable for no time and for this caller only
 * (`resultType: "complete"`, `ttlMs: 0`, `cacheScope: "private"`: templates may depend on who
 * asks), as the official 2.x client requires of list results; legacy sessions get the plain
 * `{ resourceTemplates }`. A provider whose `templates` throws or rejects is reported on
 * `channels.error` (`where: 'source'`) and the request is answered `-32603`.
 * @internal
 */
export function resourceTemplatesMethod(providers: readonly ResourceProvider[]): MethodHandler {
  return async (_params, context) => {
    const resourceTemplates = await declaredTemplates(providers, context);
    return context.session === undefined ? { resultType: 'complete', ttlMs: 0, cacheScope: 'private', resourceTemplates } : { resourceTemplates };
  };
}

async function declaredTemplates(providers: readonly ResourceProvider[], context: RequestContext): Promise<ResourceTemplate[]> {
  const merged = new Map<string, ResourceTemplate>();
  for (const provider of providers) {
    if (provider.templates === undefined) continue;
    let declared: readonly ResourceTemplate[];
    try {
      declared = await provider.templates(context);
    } catch (error) {
      reportError('source', error);
      throw error;
    }
    for (const template of declared) if (!merged.has(template.uriTemplate)) merged.set(template.uriTemplate, template);
  }
  return [...merged.values()];
}
