// The reference server as one worker of a machine's cluster (`serve --workers N`): its hub and
// endpoint on the machine's parts (mcp-rx-streams/cluster), and the one folder watcher of the machine.
import { concatMap, ignoreElements, type Observable, switchMap } from 'rxjs';
import type { Hub } from '../../lib/hub.js';
import { reportError } from '../../lib/telemetry.js';
import type { ClusterWorker } from '../cluster/worker.js';
import type { FileChange, FileResources } from './files.js';

/**
 * The changes of the served folder as one worker of a machine sees them: only the worker holding
 * the machine's watch lease watches the folder (one set of inotify watches per machine, each change
 * published once, and heard by the other workers through the hub); the others keep their list of
 * files in step by rescanning it when the holder says the list changed (`resources/list_changed`,
 * which the holder publishes for every file created, deleted or renamed), so that any worker can
 * serve, read and subscribe a new file. When the holder dies the next worker takes the lease at
 * once and starts watching; what changed in between is caught up silently (not published), as the
 * Redis fleet's takeover does.
 * @internal
 */
export function workerChanges(files: FileResources, hub: Hub, worker: ClusterWorker): Observable<FileChange> {
  const lease = worker.lease(`watch:${files.root}`);
  // Heard from the holder: rescanned one after the other (a burst of list changes is one rescan each, in order).
  const rescans = hub.topic({ topic: 'resources' }).pipe(
    concatMap(() =>
      files.rescan().catch((error: unknown) => {
        reportError('source', error);
      }),
    ),
    ignoreElements(),
  );
  return lease.held$.pipe(switchMap((held) => (held ? files.changes() : rescans)));
}
