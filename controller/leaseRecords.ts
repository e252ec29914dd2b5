// The Lease records a leader election writes (coordination.k8s.io/v1): what a holder creates, takes
// over or renews, and what a release leaves. Pure: LeaderElector (controller/leader.ts) sends them.
import type { LeaseObject } from "../clients/kube/types";

const TYPE = { apiVersion: "coordination.k8s.io/v1", kind: "Lease" } as const;

export function createdLease(o: { namespace: string; name: string; labels?: Record<string, string> }, identity: string,
  leaseSeconds: number, stamp: string): LeaseObject {
  return {
    ...TYPE, metadata: { name: o.name, namespace: o.namespace, ...(o.labels ? { labels: o.labels } : {}) },
    spec: { holderIdentity: identity, leaseDurationSeconds: leaseSeconds, acquireTime: stamp, renewTime: stamp, leaseTransitions: 0 },
  };
}

/** `current` held by `identity` from now on: renewed when it was ours, taken over (a transition) otherwise. */
export function heldLease(current: LeaseObject, identity: string, leaseSeconds: number, stamp: string): LeaseObject {
  const spec = current.spec ?? {};
  const ours = spec.holderIdentity === identity;
  return {
    ...TYPE, metadata: { ...current.metadata },
    spec: {
      ...spec, holderIdentity: identity, leaseDurationSeconds: leaseSeconds, renewTime: stamp,
      acquireTime: ours ? (spec.acquireTime ?? stamp) : stamp,
      leaseTransitions: ours ? (spec.leaseTransitions ?? 0) : (spec.leaseTransitions ?? 0) + 1,
    },
  };
}

/** What our last write left, renewed: conditional on its resourceVersion, so it fails if anyone wrote since. */
export function renewedLease(written: LeaseObject, stamp: string): LeaseObject {
  return { ...written, spec: { ...written.spec, renewTime: stamp } };
}

/** Released: no holder, and a one-second duration so that nobody waits for it. */
export function releasedLease(current: LeaseObject, stamp: string): LeaseObject {
  return { ...TYPE, metadata: { ...current.metadata }, spec: { ...current.spec, holderIdentity: "", leaseDurationSeconds: 1, renewTime: stamp } };
}
