// The planner's contract: a snapshot of everything observed about one ClusterOrder plus a clock in,
// a plan (desired Pulumi resources, next status, events) out. No I/O crosses this boundary: the
// the observer (io/observe.ts) builds a Snapshot, the program in index.ts declares what Plan asks for.
import type { PlannedChange } from "./changeControl";
import type { Pin } from "./pin";
import type { SavedPreview, SavedPreviewOutcome } from "./savedPreview";

/** Phases of a worker slot (OSAC-2135 §3.1). */
export type WorkerPhase =
  | "Provisioning" | "WaitingForAgent" | "Binding" | "Ready" | "Failed" | "Unbinding" | "Deleting";

export type BmiCreateState = "Reserved" | "Attempted";

/** One element of ClusterOrder.status.workers[] (clusterorder-crd.md, WorkerStatus). Dates are RFC 3339. */
export interface WorkerStatus {
  name: string;
  nodeSet: string;
  instanceType?: string;
  kind: "BareMetalInstance";
  bareMetalInstance?: { name: string; id?: string };
  bmiCreateState?: BmiCreateState;
  phase: WorkerPhase;
  attemptCount?: number;
  attemptStartedAt?: string;
  creationTimestamp?: string;
  readySince?: string;
  lastFailureReason?: string;
  lastFailureMessage?: string;
  lastFailureTime?: string;
  nextRetryTime?: string;
}

export interface Condition {
  type: string;
  status: "True" | "False" | "Unknown";
  reason: string;
  message: string;
  lastTransitionTime?: string;
  observedGeneration?: number;
}

export interface NodeRequest {
  nodeSet: string;
  numberOfNodes: number;
  bareMetal?: { instanceType: string };
  fabricInterface?: string;
}

/** The parts of a ClusterOrder the planner reads (unstructured on the wire, typed here). */
export interface ClusterOrder {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace: string;
    uid: string;
    resourceVersion?: string;
    generation?: number;
    annotations?: Record<string, string>;
    labels?: Record<string, string>;
    finalizers?: string[];
    deletionTimestamp?: string;
  };
  spec: {
    templateID?: string;
    pullSecret?: string;
    sshPublicKey?: string;
    networkAttachment?: { subnetRef: string; securityGroupRefs?: string[] };
    /** OSAC-1589 plural form; index 0 is read when the singular is absent. */
    networkAttachments?: { subnetRef: string; securityGroupRefs?: string[] }[];
    nodeRequests?: NodeRequest[];
  };
  status?: {
    phase?: string;
    conditions?: Condition[];
    clusterReference?: { namespace: string; hostedClusterName: string };
    desiredWorkers?: number;
    currentWorkers?: number;
    readyWorkers?: number;
    workers?: WorkerStatus[];
  };
}

/** A BMI seen on the fulfillment-service (tenant system, label osac.openshift.io/cluster-order). */
export interface ObservedBmi {
  id: string;
  name: string;
  /**
   * The service's state shortened to the word. "Pending" is UNSPECIFIED (no controller pass yet);
   * Starting/Stopping/Stopped are power states of a provisioned host (a powered-off Ready worker is not a
   * failure); "Unknown" is a state this program does not know.
   */
  state: "Pending" | "Provisioning" | "Starting" | "Running" | "Stopping" | "Stopped" | "Failed" | "Deleting" | "Unknown";
  /** Set when the service soft-deleted it (deletion in progress). */
  deleting: boolean;
  /** Lower-cased MACs from status.hardware.nics[].mac (OSAC-3254). */
  macs: string[];
  /** The service's failure reason/message when state is Failed (e.g. HostSelectionFailed). */
  failureReason?: string;
  failureMessage?: string;
  labels: Record<string, string>;
  /** The create-only inputs as the service stores them (absent when the service did not return a spec). */
  spec?: ObservedBmiSpec;
}

/** The create-only inputs of a live BMI, in DesiredBmi's words. */
export interface ObservedBmiSpec {
  catalogItem: string;
  instanceType: string;
  networkAttachment?: { subnet: string; securityGroups: string[]; interface: string };
}

/** An Agent in the order's namespace (agent-install.openshift.io/v1beta1). */
export interface ObservedAgent {
  name: string;
  namespace: string;
  uid: string;
  resourceVersion: string;
  labels: Record<string, string>;
  /** Lower-cased status.inventory.interfaces[].macAddress; undefined when the inventory is unreadable. */
  macs?: string[];
  clusterDeploymentName?: { name: string; namespace?: string };
  approved: boolean;
  /** status.debugInfo.state, e.g. known-unbound, binding, installing, added-to-existing-cluster,
   *  unbinding-pending-user-action. */
  state?: string;
}

export interface ObservedNodePool {
  name: string;
  namespace: string;
  /** The node set this NodePool serves (label osac.openshift.io/node-set), if labelled. */
  nodeSet?: string;
  replicas: number;
  statusReplicas: number;
  /** spec.platform.agent.agentLabelSelector, when the pool selects Agents by label (undefined: none). */
  agentSelector?: { matchLabels?: Record<string, string>; matchExpressions?: { key: string; operator: string; values?: string[] }[] };
}

export interface ObservedInfraEnv {
  name: string;
  uid: string;
  /** status.bootArtifacts.discoveryIgnitionURL */
  ignitionUrl?: string;
}

/** Result of fetching the discovery ignition (clients/ignition.ts). Content is a secret. */
export type IgnitionFetch =
  | { ok: true; content: string; bytes: number }
  | { ok: false; reason: "NotHttps" | "Redirect" | "Timeout" | "TooLarge" | "NotJson" | "HttpError" | "Unreachable"; message: string };

export interface InstanceTypeInfo {
  name: string;
  /**
   * The interface a BMI of this type is attached on: the first network_ports[] entry with role
   * "fabric" that the HostType of the catalog item's template accepts (the first one at all when that
   * template has no HostType). Absent when there is none.
   */
  fabricPort?: string;
  /** Why fabricPort is absent although the type has fabric ports: the server would refuse each of them. */
  interfaceProblem?: string;
  /**
   * The HostType the server checks attachment interfaces against (absent: no check known). A
   * node request's fabricInterface must be one of its interfaces, with a role other than lifecycle.
   */
  hostType?: { name: string; interfaces: { name: string; role: string }[] };
}

export type DiskImageResolution =
  | { ok: true; id: string; name: string }
  | { ok: false; reason: "ClusterVersionNotFound" | "NotLinked" | "DiskImageNotFound" | "Obsolete"; message: string };

/** Every duration the lifecycle uses, in milliseconds; defaults are the design's (§4.3). */
export interface PlannerConfig {
  agentRegistrationTimeoutMs: number;
  agentUnbindingTimeoutMs: number;
  minHealthyDurationMs: number;
  transientBackoffMs: number[];
  transientCapMs: number;
  resourceBackoffMs: number[];
  resourceCapMs: number;
  agentTimeoutBackoffMs: number[];
  agentTimeoutCapMs: number;
  ignitionPollMs: number;
  unavailableRequeueMs: number;
  /** Consecutive fulfillment errors before FulfillmentServiceUnavailable. */
  unavailableThreshold: number;
  ignitionWarnBytes: number;
  ignitionMaxBytes: number;
  /** Upper bound on numberOfNodes per node set (bad-input guard). */
  maxWorkersPerNodeSet: number;
  /** Kinds of change that wait for `baremetal-workers approve` (planner/changeControl.ts); an order's annotation overrides. */
  approvalRequired: ChangeKind[];
  /** Most BMI creates in flight per order (Provisioning, WaitingForAgent); 0: no cap. */
  maxCreatesInFlight: number;
  /** Most BMI deletes in flight per order (issued, the BMI not gone yet); 0: no cap. */
  maxDeletesInFlight: number;
  /** The same two caps over every order of the hub (Snapshot.hub gives the other orders' counts); 0: no cap. */
  hubMaxCreatesInFlight: number;
  hubMaxDeletesInFlight: number;
  /** The namespaces the hub-wide caps count (this reconciler's); empty: every namespace. */
  hubNamespaces: string[];
}

/** BMI creates and deletes in flight (planner/context.ts says what counts). */
export interface InFlight {
  creates: number;
  deletes: number;
}

/** What kind of change a planned BMI create or delete is (issue 17: change control by kind). */
export type ChangeKind = "create" | "retry" | "retire" | "scaleDown" | "clusterDeletion" | "other";

export interface Snapshot {
  now: Date;
  order: ClusterOrder;
  /** Undefined when no InfraEnv owned by the order exists yet. */
  infraEnv?: ObservedInfraEnv;
  /** The last InfraEnv uid recorded (annotation osac.openshift.io/infraenv-uid), for stale-ignition detection. */
  recordedInfraEnvUid?: string;
  /** Present only when the program fetched it (an URL exists and a create is possible). */
  ignition?: IgnitionFetch;
  diskImage: DiskImageResolution;
  instanceTypes: Record<string, InstanceTypeInfo>;
  /** id of the system pass-through BareMetalInstanceCatalogItem; "" when it could not be resolved (no creates). */
  catalogItem: string;
  /** Undefined when the fulfillment-service could not be listed this time (unknown, never "none"). */
  bmis?: ObservedBmi[];
  agents: ObservedAgent[];
  nodePools: ObservedNodePool[];
  clusterDeployment?: { name: string; namespace: string };
  /**
   * Ids of BMIs recorded in status but absent from the List, that a Get confirmed NOT_FOUND this
   * observation. Only these may be dropped: absence from a List is not proof of deletion (I3).
   */
  goneBmiIds?: string[];
  /** Definitive Create rejections reported by the last failed update (by BMI incarnation name). */
  createRejections?: CreateRejection[];
  /**
   * Outcome of the last stack update of this order as the reconciler knows it; undefined when it does
   * not know (a fresh process): the previous UpdateFailed condition is then kept as it is.
   */
  lastUpdate?: { ok: true } | { ok: false; reason: string; message: string };
  /** Consecutive fulfillment-service failures, including this observation's. */
  fulfillmentErrors: number;
  /** A rollback pin (stack config `pin`): its counts replace the order's requested ones for planning. */
  pin?: Pin;
  /**
   * Plan as if this approval fingerprint were approved: set only for the engine preview of `preview --save`
   * (the program drops it from any update), so that a plan waiting for approval can be previewed and saved.
   */
  previewApproval?: string;
  /**
   * The hub's other orders' creates and deletes in flight (io/hubInFlight.ts), for the hub-wide caps;
   * undefined when not observed, and then, under a hub-wide cap, nothing of that kind starts.
   */
  hub?: InFlight;
  /** What this reconciler last learned of the order's saved preview (planner/savedPreview.ts). */
  savedPreviewOutcome?: SavedPreviewOutcome;
  /** What kind of fulfillment failure the last one was (a refused token is not an outage). */
  fulfillmentErrorKind?: "Unavailable" | "Unauthenticated" | "PermissionDenied" | "Other";
  config: PlannerConfig;
  /** Generates opaque names (slots and BMI incarnations); injected so tests are deterministic. */
  newName: () => string;
}

/** The service refused a Create for good (INVALID_ARGUMENT, FAILED_PRECONDITION, a name held by another owner). */
export interface CreateRejection {
  /** The BMI incarnation name the Create was for. */
  bmiName: string;
  /** gRPC status name, e.g. INVALID_ARGUMENT. */
  code: string;
  message: string;
}

/** A create-only input of a live BMI that differs from what a new incarnation would get (I2). */
export interface WorkerDrift {
  slot: string;
  bmiName: string;
  field: string;
  live: string;
  requested: string;
}

export interface DesiredBmi {
  /** The incarnation's BMI name (also the Pulumi resource name). */
  name: string;
  tenant: "system";
  labels: Record<string, string>;
  annotations: Record<string, string>;
  catalogItem: string;
  instanceType: string;
  diskImage: string;
  /** The ignition, a secret. */
  userData: string;
  networkAttachment: { subnet: string; securityGroups: string[]; interface: string; primary: true };
  /** A live BMI id to adopt instead of creating (restart / import). */
  adoptId?: string;
}

export interface DesiredBinding {
  agentName: string;
  agentNamespace: string;
  agentUid: string;
  clusterDeploymentName: { name: string; namespace: string };
  labels: Record<string, string>;
}

export interface DesiredWorker {
  slot: string;
  nodeSet: string;
  bmi: DesiredBmi;
  binding?: DesiredBinding;
  /** A new slot or incarnation: declare it only if the fence (Attempted entry) was persisted first. */
  requiresFence?: boolean;
  /**
   * A bound worker whose Agent could not be identified this time (unreadable inventories): keep the
   * binding resource already in the stack as it is; never delete the Agent because of unknown state.
   */
  retainBinding?: boolean;
}

export interface DesiredInfraEnv {
  name: string;
  namespace: string;
  pullSecretName: string;
  sshAuthorizedKey?: string;
  owner: { apiVersion: string; kind: string; name: string; uid: string };
}

/** What of a plan's declarations was observed to exist (a hand-deleted object must not be skipped over). */
export interface PlanPresence {
  /** The declared InfraEnv was observed. */
  infraEnv: boolean;
  /** Slots of declared workers whose BMI was not listed. */
  bmiAbsent: string[];
  /** Slots of declared workers whose binding's Agent was not observed. */
  agentAbsent: string[];
}

export interface PlannedEvent {
  type: "Normal" | "Warning";
  reason: string;
  message: string;
  /** A stable key so the same event is not emitted twice for the same fact. */
  key: string;
}

export interface Plan {
  /** Nothing is declared or changed: why (Unmanaged, fulfillment unknown, ...). Status still flows. */
  paused?: { reason: string; message: string };
  infraEnv?: DesiredInfraEnv;
  /** Target spec.replicas per NodePool name. */
  nodePoolReplicas: Record<string, number>;
  workers: DesiredWorker[];
  status: {
    workers: WorkerStatus[];
    desiredWorkers: number;
    currentWorkers: number;
    readyWorkers: number;
    conditions: Condition[];
    phase?: string;
  };
  /** The workers the plan works toward when a rollback pin makes it differ from status.desiredWorkers (the request). */
  targetWorkers?: number;
  /** Create-only inputs of live BMIs that differ from the request; reported, never applied (I2). */
  drift?: WorkerDrift[];
  /** Which declared objects the observation did not find; part of the fingerprint, so `up` recreates them. */
  presence?: PlanPresence;
  /** Status entries that must be persisted (conditionally) before `up` may create their BMIs. */
  fence: WorkerStatus[];
  events: PlannedEvent[];
  /** When the loop should look again at the latest (backoff expiry, timeouts, polls). */
  requeueAt?: string;
  /** Annotations of ours to record on the order with the status (null: remove): retry-now value acted on, plan waiting for approval. */
  annotations?: Record<string, string | null>;
  /** The BMI creates and deletes of the plan, each with its kind (planner/changeControl.ts); unset on a paused plan. */
  changes?: PlannedChange[];
  /** Creates the in-flight cap (config.maxCreatesInFlight) left for later passes. */
  createsDeferred?: number;
  /** BMI deletes the in-flight caps left for later passes (the BMIs stay declared as they are). */
  deletesDeferred?: number;
  /** Set when the plan waits for approval: the fingerprint `approve` must name and the changes that wait. */
  approval?: { fingerprint: string; changes: PlannedChange[] };
  /** Set when the plan runs an approved saved preview: the update must make exactly its steps. */
  savedPreview?: SavedPreview;
}
