/**
 * How `serve --workers N` shares its port: who accepts a new connection.
 *
 * Node's cluster default on Linux (`SCHED_RR`) has the primary accept every connection and pass
 * its socket to a worker over the IPC channel, in turn. The primary is then on every connection's
 * path: one event loop for the whole instance, a `sendmsg` and a JSON message per connection, and
 * a connection waits for the primary's turn and then its worker's. Measured on 2 cores
 * (docs/operations.md "Cores"): the primary spent 0.11–0.33 ms of CPU per session, and the
 * instance 10–19 % more CPU per session than with `SCHED_NONE`.
 *
 * `SCHED_NONE`: the primary binds the socket once and gives the same listening handle to every
 * worker; each worker accepts from it directly, and the kernel wakes whichever is waiting. A busy
 * worker (in JavaScript, not waiting) takes nothing, so new connections go to the one with room;
 * the split is not even turn by turn, and docs/operations.md shows the balance measured.
 *
 * `NODE_CLUSTER_SCHED_POLICY=rr` (Node's own variable) still chooses round-robin, e.g. to compare.
 */
import cluster from 'node:cluster';

/** Sets the cluster's scheduling before the first fork: `SCHED_NONE` unless the environment chose. */
export function chooseScheduling(env: NodeJS.ProcessEnv = process.env): void {
  if (env['NODE_CLUSTER_SCHED_POLICY'] !== undefined) return; // Node applied it when cluster loaded
  cluster.schedulingPolicy = cluster.SCHED_NONE;
}
