// One way to bound a promise by time: its outcome, or after `ms` what `onLate` returns (or throws). The
// timer is cleared either way, so none outlives the outcome or keeps the process alive. The promise
// itself is not cancelled: callers whose work must stop use an AbortSignal as well.
export async function within<T, L>(p: Promise<T>, ms: number, onLate: () => L): Promise<T | L> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<L>((resolve, reject) => {
    timer = setTimeout(() => {
      try {
        resolve(onLate());
      } catch (err) {
        reject(err);
      }
    }, ms);
  });
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}
