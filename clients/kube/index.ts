// Public surface of the Kubernetes access layer. See kube.ts for the entry point.
export type * from "./api";
export * from "./config";
export * from "./errors";
export * from "./kube";
export type * from "./types";
export * from "./clusterOrder";
