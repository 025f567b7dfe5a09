// The handover state of a machine's lease (issue 31, item 1): what the holding worker saves goes,
// with the grant, to the worker that holds the lease next (the holder dead or letting go), kept by
// the primary, or by the machine's own lease in a fleet. One process, workers on the in-memory
// stand-in for node:cluster (spec/helpers/cluster.ts), messages copied as over IPC.
import { strict as assert } from 'node:assert';
import { BehaviorSubject } from 'rxjs';
import { test } from 'uvu';
import { sleep } from '../helpers/legacy.js';
import { startMachine, type TestMachine } from '../helpers/cluster.js';

let machine: TestMachine | undefined;
test.after.each(async () => {
  await machine?.close();
  machine = undefined;
});

test("the holder's saves go to the next holder with the grant, when it dies and when it lets go; another worker's are ignored", async () => {
  machine = await startMachine(3);
  const [a, b, c] = machine.workers;
  const leases = [a!, b!, c!].map((w) => w.node.lease('/srv/data'));
  await sleep(50);
  assert.deepEqual(leases.map((lease) => lease.held), [true, false, false]);
  assert.equal(await leases[0]!.state(), undefined, 'nothing saved yet');
  leases[0]!.saveState([['x', '1'], ['y', '2']]);
  leases[1]!.saveState([['x', 'not the holder']]);
  await sleep(50);
  a!.kill();
  await sleep(50);
  assert.equal(leases[1]!.held, true);
  assert.deepEqual(await leases[1]!.state(), new Map([['x', '1'], ['y', '2']]));
  assert.equal(await leases[2]!.state(), undefined, 'not held: none');
  leases[1]!.saveState([['y', null], ['z', '3']]);
  await sleep(50);
  leases[1]!.close();
  await sleep(50);
  assert.equal(leases[2]!.held, true);
  assert.deepEqual(await leases[2]!.state(), new Map([['x', '1'], ['z', '3']]));
});

test("in a fleet, the state is the machine lease's: read for each grant, the holder's saves written to it", async () => {
  const saved: (readonly [string, string | null])[] = [];
  const fleetState = new Map([['f', 'v1']]);
  const machineHeld = new BehaviorSubject(true);
  machine = await startMachine(2, {
    lease: () => ({
      held$: machineHeld,
      close: () => undefined,
      state: async () => new Map(fleetState),
      saveState: (entries) => void saved.push(...entries),
    }),
  });
  const [a, b] = machine.workers;
  const leases = [a!, b!].map((w) => w.node.lease('/srv/data'));
  await sleep(50);
  assert.deepEqual(await leases[0]!.state(), new Map([['f', 'v1']]));
  leases[0]!.saveState([['f', 'v2']]);
  leases[1]!.saveState([['f', 'ignored']]);
  await sleep(50);
  assert.deepEqual(saved, [['f', 'v2']]);
  // The machine loses the fleet's lease and gets it back: the grant reads the fleet's state again.
  fleetState.set('f', 'v3');
  machineHeld.next(false);
  await sleep(50);
  assert.equal(leases[0]!.held, false);
  machineHeld.next(true);
  await sleep(50);
  assert.equal(leases[0]!.held, true);
  assert.deepEqual(await leases[0]!.state(), new Map([['f', 'v3']]));
});

test.run();
