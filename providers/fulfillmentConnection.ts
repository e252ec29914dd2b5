// The fulfillment client options for a connection's file paths. The program, the reconciler and the
// provider host build their clients the same way, so all three honour the same deadline override.
import type { FulfillmentClientOptions } from "../clients/fulfillment";
import { type FulfillmentConnection, providerSettings, type ProviderSettings } from "../config/settings";

export function connectionOptions(conn: FulfillmentConnection, settings: ProviderSettings = providerSettings()): FulfillmentClientOptions {
  return {
    address: conn.address,
    transport: conn.plaintext ? { kind: "plaintext" } : { kind: "tls", caFile: conn.caFile },
    tokenFile: conn.tokenFile,
    // Per-call deadline override, e.g. for the fault suite's latency faults.
    ...(settings.fulfillmentDeadlineMs ? { deadlineMs: settings.fulfillmentDeadlineMs } : {}),
  };
}
