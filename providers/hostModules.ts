// The entry of the provider host's bundle (stack/providerBundle.ts): every module loadProjectModule
// (providers/loader.ts) may be asked for, by the path it is asked for. One bundle holds them all, so the
// host keeps one copy of the shared client caches of providers/providerHost.ts.
import * as agentBindingOps from "./agentBindingOps";
import * as bareMetalInstanceOps from "./bareMetalInstanceOps";
import * as providerHost from "./providerHost";

export const hostModules: Readonly<Record<string, unknown>> = {
  "providers/agentBindingOps.ts": agentBindingOps,
  "providers/bareMetalInstanceOps.ts": bareMetalInstanceOps,
  "providers/providerHost.ts": providerHost,
};
