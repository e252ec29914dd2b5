// Opaque names of new slots and BMI incarnations (Snapshot.newName), derived from the observation they
// are planned from: the order's uid and observed resourceVersion, and a counter within one planning
// pass. The same observation therefore names the same BMIs in the reconciler's plan, the program's plan
// and an admin's preview. Why such a name never goes to two incarnations: docs/decisions.md, H1
// (every Create of a new name follows a fence write conditional on that resourceVersion, which moves it).
import * as crypto from "node:crypto";

/** Opaque names are as long as before (4 random bytes in hex): existing name lengths and rules hold. */
const NAME_CHARS = 8;

/** What the names of a planning pass derive from: `<uid>/<resourceVersion>` ("" when the order has no version). */
export function nameSeed(order: { metadata: { uid: string; resourceVersion?: string } }): string {
  return order.metadata.resourceVersion ? `${order.metadata.uid}/${order.metadata.resourceVersion}` : "";
}

/**
 * A name generator for ONE planning pass: the i-th call answers the first hex digits of
 * sha256(seed, i), skipping any value it already gave. Plan again with a new generator. Without a
 * seed (an order without resourceVersion, never one read from an apiserver) names are random.
 */
export function incarnationNames(seed: string): () => string {
  if (!seed) return () => crypto.randomBytes(NAME_CHARS / 2).toString("hex");
  const given = new Set<string>();
  let i = 0;
  return () => {
    for (;;) {
      const name = crypto.createHash("sha256").update(`${seed}\0${i++}`).digest("hex").slice(0, NAME_CHARS);
      if (!given.has(name)) {
        given.add(name);
        return name;
      }
    }
  };
}
