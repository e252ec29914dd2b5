export function loadProjectModule(relPath: string): unknown;
export function providerOf(spec: { kind: string; opsPath: string; importHint?: string }): {
  check(olds: unknown, news: unknown): Promise<unknown>;
  diff(id: string, olds: unknown, news: unknown): Promise<unknown>;
  create(inputs: unknown): Promise<unknown>;
  read(id: string, props?: unknown): Promise<unknown>;
  update(id: string, olds: unknown, news: unknown): Promise<unknown>;
  delete(id: string, props: unknown): Promise<void>;
};
