// The `mcp-rx-streams/cluster` entry: every core of one machine, with nothing else to install
// (issue 26). The primary of a node:cluster app keeps what its workers share; each worker's endpoint
// serves with the machine's hub, caps, sessions and replay logs.

/* The primary: the machine's relay and store */
export { clusterPrimary } from './primary.js';
export type { ClusterEvent, ClusterPrimary, ClusterPrimaryOptions, ClusterPrimaryStats } from './primary.js';
export type { MachineLease } from './machineLeases.js';

/* A worker: an endpoint's machine-wide parts */
export { clusterWorker } from './worker.js';
export type { ClusterEndpointOptions, ClusterWorker, ClusterWorkerOptions } from './worker.js';
export type { ClusterBus, ClusterBusStats } from './bus.js';
export type { ClusterSlots } from './slots.js';
export type { ClusterPrincipalCap } from './principals.js';
export type { ClusterSessionBus, ClusterSessionStore } from './sessions.js';
export type { ClusterLease } from './lease.js';

/* Errors */
export { ClusterError } from './link.js';
export { SharedSlotsError } from './slots.js';
