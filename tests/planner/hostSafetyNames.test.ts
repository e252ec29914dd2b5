// Long names (issue 15 finding 10): for every valid ClusterOrder name (a DNS-1123 subdomain of up to 253
// characters, dots allowed), every name derived from it is valid and distinct per order, and a name that
// is valid today is kept unchanged (existing stacks, InfraEnvs and BMIs are never renamed).
import fc from "fast-check";
import { bmiName, DNS_LABEL, infraEnvName, LABEL_VALUE, stackName } from "../../planner/names";
import { bmRequest, planOf } from "./builders";

const RUNS = Number(process.env.BMW_PROPERTY_RUNS ?? 1000);
const SEED = Number(process.env.BMW_PROPERTY_SEED ?? 20261201);
const SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const isSubdomain = (s: string) => s.length <= 253 && SUBDOMAIN.test(s);

const alnum = fc.constantFrom(..."abcdefghijklmnopqrstuvwxyz0123456789".split(""));
const inner = fc.constantFrom(..."abcdefghijklmnopqrstuvwxyz0123456789-".split(""));
/** One dot-free part: alphanumeric at both ends, 1..120 characters. */
const part = fc.tuple(alnum, fc.array(inner, { maxLength: 118 }), alnum, fc.boolean())
  .map(([a, mid, z, single]) => (single ? a : `${a}${mid.join("")}${z}`));
/** A valid ClusterOrder name: parts joined by dots, at most 253 characters. */
const orderName = fc.array(part, { minLength: 1, maxLength: 5 }).map((parts) => parts.join(".")).filter(isSubdomain);
const namespace = fc.array(inner, { maxLength: 61 }).chain((mid) => fc.tuple(alnum, alnum).map(([a, z]) => `${a}${mid.join("")}${z}`));
const opaque = fc.array(fc.constantFrom(..."0123456789abcdef".split("")), { minLength: 8, maxLength: 8 }).map((c) => c.join(""));

describe("names derived from a ClusterOrder name", () => {
  test(`every derived name is valid (${RUNS} names, seed ${SEED})`, () => {
    fc.assert(fc.property(orderName, namespace, opaque, (name, ns, op) => {
      const ie = infraEnvName(name);
      expect(LABEL_VALUE.test(ie) && isSubdomain(ie)).toBe(true);
      expect(DNS_LABEL.test(bmiName(name, op))).toBe(true);
      expect(stackName(ns, name)).toMatch(/^[A-Za-z0-9_.-]{1,100}$/);
    }), { numRuns: RUNS, seed: SEED });
  });

  test(`distinct order names give distinct names (${RUNS} pairs, seed ${SEED})`, () => {
    fc.assert(fc.property(orderName, orderName, namespace, opaque, (a, b, ns, op) => {
      fc.pre(a !== b);
      expect(infraEnvName(a)).not.toBe(infraEnvName(b));
      expect(bmiName(a, op)).not.toBe(bmiName(b, op));
      expect(stackName(ns, a)).not.toBe(stackName(ns, b));
    }), { numRuns: RUNS, seed: SEED });
  });

  test("a name that is valid today is unchanged", () => {
    fc.assert(fc.property(orderName, namespace, opaque, (name, ns, op) => {
      if (`${name}-infraenv`.length <= 63) expect(infraEnvName(name)).toBe(`${name}-infraenv`);
      if (DNS_LABEL.test(`${name}-${op}`)) expect(bmiName(name, op)).toBe(`${name}-${op}`);
      if (`${ns}--${name}`.length <= 100) expect(stackName(ns, name)).toBe(`${ns}--${name}`);
    }), { numRuns: RUNS, seed: SEED });
    expect(infraEnvName("co1")).toBe("co1-infraenv");
    expect(bmiName("demo-cluster", "0a1b2c3d")).toBe("demo-cluster-0a1b2c3d");
  });

  test("a shortened InfraEnv name can never equal another order's plain one", () => {
    const long = "a".repeat(60);
    const short = infraEnvName(long);
    expect(short).toMatch(/-infraenv-[0-9a-f]{16}$/);
    // The only order whose plain name could collide would be `short` minus "-infraenv": it ends in hex, not "infraenv".
    expect(short.endsWith("-infraenv")).toBe(false);
  });

  test("a 253-character dotted order plans valid BMI and InfraEnv names", () => {
    const name = `${"a".repeat(120)}.${"b".repeat(60)}.${"c".repeat(71)}`;
    expect(name).toHaveLength(253);
    const p = planOf({
      nodeRequests: [bmRequest("compute", 1)],
      orderPatch: (o) => { o.metadata.name = name; },
      infraEnv: { name: infraEnvName(name), uid: "ie-1", ignitionUrl: "https://assisted.example/ignition" },
      newName: (() => { let i = 0; return () => `0000000${++i}`; })(),
    });
    expect(p.workers).toHaveLength(1);
    expect(DNS_LABEL.test(p.workers[0].bmi.name)).toBe(true);
    expect(p.infraEnv?.name).toBe(infraEnvName(name));
    expect(LABEL_VALUE.test(p.infraEnv!.name)).toBe(true);
  });
});
