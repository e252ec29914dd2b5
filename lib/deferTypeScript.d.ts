export function deferTypeScript(root: string): boolean;
export function typeScriptLoaded(): boolean;
