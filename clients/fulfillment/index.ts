// Public surface of the fulfillment-service client. See client.ts for the entry point.
export * from "./api";
export * from "./client";
export * from "./connection";
export * from "./createOrAdopt";
export * from "./errors";
export * from "./filter";
export * from "./hostType";
export * from "./observed";
export * from "./paging";
export * from "./proposals";
export * from "./resource";
export * from "./systemCatalogItem";
export type * from "./types";
