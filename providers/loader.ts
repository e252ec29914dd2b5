// Loads a provider's operations module at run time, inside the dynamic provider host: the one function of
// providers/providerModule.js, whose text each resource's state carries (its methods hold no imports).
export { loadProjectModule } from "./providerModule";
