// Types of lib/bundler.js (plain JavaScript: cli/launch.js loads it before any TypeScript loader exists).
export function cacheDir(env?: NodeJS.ProcessEnv): string;
/** The version of a bundle of `dirs` under `root`: their sources, package-lock.json, esbuild, Node's major version and `root`. */
export function bundleKey(root: string, dirs: readonly string[]): string;
export function buildBundle(o: { root: string; entry: string; outFile: string; externalPackages?: boolean; inlinePackages?: readonly string[];
  refuse?: RegExp; refuseWhy?: string }): Promise<void>;
export const CLI_INLINE_PACKAGES: readonly string[];
