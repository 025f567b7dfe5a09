// The bench's child processes, shared by bench/run.mjs: `child` forks one script and drives it over
// IPC (`call(cmd, args)` → a promise of its reply, with `.armed` for the commands that say when
// they are listening); `loadgenPool` runs the load generator as one or more processes behind the
// same interface, so that N streams can exceed what one process may hold.
//
// Why several processes: each socket is a file descriptor, and a process may hold `ulimit -n` of
// them (20 000 on the bench machine); one loopback source address gives ~28 000 ephemeral ports
// towards the server's one port (net.ipv4.ip_local_port_range). So worker w binds its sockets to
// 127.0.0.(1 + w) (all of 127.0.0.0/8 is loopback on Linux) and holds at most `perProcess`
// streams. The streams are split as evenly as possible; request ids stay unique across workers.
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const here = (file) => fileURLToPath(new URL(file, import.meta.url));

/** Forks `script` (a path relative to bench/) with --expose-gc; see the header for the protocol. */
export function child(script, args = [], extra = []) {
  const proc = fork(here(script), args, { execArgv: ['--expose-gc', '--max-old-space-size=4096', ...extra], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  let seq = 0;
  const pending = new Map();
  let onReady;
  const ready = new Promise((resolve, reject) => {
    onReady = resolve;
    proc.once('exit', (code) => reject(new Error(`${script} exited with ${code} before it was ready`)));
  });
  proc.on('message', (msg) => {
    if (msg.ready) return onReady(msg);
    const entry = pending.get(msg.id);
    if (entry === undefined) return;
    if (msg.armed) return entry.armed();
    pending.delete(msg.id);
    if (msg.error) entry.reject(new Error(`${script}: ${msg.error}`));
    else entry.resolve(msg.result);
  });
  proc.on('exit', () => {
    for (const entry of pending.values()) entry.reject(new Error(`${script} exited`));
    pending.clear();
  });
  const call = (cmd, args = {}) => {
    const id = ++seq;
    let armed;
    const armedP = new Promise((resolve) => (armed = resolve));
    const done = new Promise((resolve, reject) => pending.set(id, { resolve, reject, armed }));
    proc.send({ id, cmd, args });
    return Object.assign(done, { armed: armedP });
  };
  return {
    pid: proc.pid,
    ready,
    call,
    async close() {
      if (proc.exitCode !== null) return;
      const exited = new Promise((resolve) => proc.once('exit', resolve));
      try {
        await Promise.race([call('exit'), new Promise((r) => setTimeout(r, 2000))]);
      } catch {}
      await Promise.race([exited, new Promise((r) => setTimeout(r, 2000))]);
      if (proc.exitCode === null) proc.kill('SIGKILL');
    },
  };
}

/** The loopback source address of load-generator worker `w` (0 → 127.0.0.1, 1 → 127.0.0.2 …). */
export const sourceAddress = (w) => `127.0.0.${1 + w}`;

/** `n` streams split over `procs` workers as evenly as possible (the first ones take the rest). */
export function split(n, procs) {
  const base = Math.floor(n / procs);
  return Array.from({ length: procs }, (_, w) => base + (w < n % procs ? 1 : 0));
}

/**
 * `procs` load-generator processes (bench/loadgen.mjs) behind one `call`: `open` splits the
 * streams, every other command goes to all workers and their replies are merged (sums of counts,
 * the latest of the times, the minimum of the minima). `stall {index}` takes an index across all
 * workers. `address(w)` is worker w's loopback source address (default {@link sourceAddress}):
 * bench/capacity.mjs gives each of its sessions fresh addresses, so that the ports a session before
 * left in TIME_WAIT on an address (up to ~17 000 of its ~28 000) are not needed again at once.
 */
export function loadgenPool(procs, { address = sourceAddress } = {}) {
  const workers = Array.from({ length: procs }, () => child('loadgen.mjs'));
  let sizes = workers.map(() => 0);
  const all = (cmd, args) => Promise.all(workers.map((w) => w.call(cmd, args)));
  const maxOf = (values) => values.reduce((a, b) => (b > a ? b : a), 0);

  const call = (cmd, args = {}) => {
    switch (cmd) {
      case 'open': {
        const parts = split(args.n, procs);
        let base = 0;
        const calls = workers.map((w, i) => {
          const call = w.call('open', { ...args, n: parts[i], base, localAddress: address(i) });
          base += parts[i];
          return call;
        });
        return Promise.all(calls).then((replies) => {
          sizes = replies.map((r) => r.opened);
          return {
            opened: replies.reduce((a, r) => a + r.opened, 0),
            failed: replies.reduce((a, r) => a + r.failed, 0),
            errors: replies.flatMap((r) => r.errors),
            ms: Math.max(...replies.map((r) => r.ms)),
            procs,
          };
        });
      }
      case 'expect': {
        const calls = workers.map((w) => w.call('expect', args));
        const done = Promise.all(calls).then((replies) => ({
          complete: replies.every((r) => r.complete),
          t: maxOf(replies.map((r) => r.t)),
          received: replies.reduce((a, r) => a + r.received, 0),
          min: Math.min(...replies.map((r) => r.min)),
          max: maxOf(replies.map((r) => r.max)),
          bytes: replies.reduce((a, r) => a + r.bytes, 0),
          tLast: maxOf(replies.map((r) => r.tLast)),
          expected: replies.reduce((a, r) => a + r.expected, 0),
        }));
        return Object.assign(done, { armed: Promise.all(calls.map((c) => c.armed)) });
      }
      case 'stall': {
        let index = args.index;
        let w = 0;
        while (w < procs - 1 && index >= sizes[w]) index -= sizes[w++];
        return workers[w].call('stall', { index });
      }
      case 'markers':
        // Marker m reached every healthy stream when it reached every worker's.
        return all('markers', args).then((replies) => {
          const times = [];
          const length = Math.max(...replies.map((r) => r.times.length));
          for (let m = 0; m < length; m++) {
            const each = replies.map((r) => r.times[m]);
            if (each.every((t) => t !== undefined)) times[m] = maxOf(each);
          }
          return { times };
        });
      case 'cpu':
        // CPU time of all workers together (µs): may exceed the wall time with several.
        return all('cpu', args).then((replies) => ({ us: replies.reduce((a, r) => a + r.us, 0) }));
      case 'counts':
        return all('counts', args).then((replies) => ({
          stalled: replies.find((r) => r.stalled !== undefined)?.stalled,
          healthyMin: Math.min(...replies.map((r) => r.healthyMin)),
          healthyMarkersMin: Math.min(...replies.map((r) => r.healthyMarkersMin)),
          lastFrameAt: maxOf(replies.map((r) => r.lastFrameAt)),
        }));
      default:
        return all(cmd, args).then((replies) => replies[0]);
    }
  };
  return {
    ready: Promise.all(workers.map((w) => w.ready)),
    call,
    close: () => Promise.all(workers.map((w) => w.close())),
  };
}
