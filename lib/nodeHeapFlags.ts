// Bounds on the V8 heap of the project's long-lived Node processes: the reconciler (cli/command.ts,
// bin/baremetal-workers, the image) and the dynamic-provider host it keeps (stack/sharedProviderHost.ts).

/**
 * Without them V8 sizes its heap from the machine's memory, not the process's needs: on a 24 GiB machine the
 * young generation grew to 128 MiB and the old one to 3× its live data before a full collection (`npm run
 * bench`, docs/benchmarks.md). With a 16 MiB semi-space the young generation stayed at 32 MiB; a 1 GiB old
 * generation is a budget far above the live data at 500 orders and makes V8 collect at 1.6× the live size
 * rather than 4×.
 */
export const NODE_HEAP_FLAGS: readonly string[] = ["--max-semi-space-size=16", "--max-old-space-size=1024"];
