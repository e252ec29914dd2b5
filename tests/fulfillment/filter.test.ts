// The CEL filter builder: values are always quoted literals, so no input can change a filter's
// structure. The simulator's parser is used as the judge of what the text means.
import { celString, Filter } from "../../clients/fulfillment/filter";
import { evaluateFilter, Node, parseFilter } from "../../lab/fulfillment/cel";
import { loadFulfillmentRoot } from "../../protos/fulfillment";

const bmiType = loadFulfillmentRoot().lookupType("osac.private.v1.BareMetalInstance");
const bmi = (name: string, labels: Record<string, string>) =>
  ({ id: "x", metadata: { name, tenant: "system", labels, annotations: {}, deletion_timestamp: null }, spec: null, status: null });
const matches = (text: string, obj: unknown) => evaluateFilter(parseFilter(text), { self: obj, selfType: bmiType, nowMs: 0 });

const INJECTIONS = [
  "x' || true || '",
  "x\\' || true || \\'",
  "x\\\\' || true || '",
  "x\" || true || \"",
  "') || (true",
  "x'\n|| true || '",
  "\u0000' || true || '",
  "x\\x27 || true",
];

describe("celString", () => {
  it.each([
    ["plain", "'plain'"],
    ["it's", "'it\\'s'"],
    ["back\\slash", "'back\\\\slash'"],
    ["line\nbreak\ttab", "'line\\nbreak\\ttab'"],
    ["nul\u0000", "'nul\\x00'"],
    ["ünïcödé", "'ünïcödé'"],
  ])("quotes %j as %s", (value, expected) => {
    expect(celString(value)).toBe(expected);
  });

  it.each(INJECTIONS)("round-trips %j through the CEL parser as one string literal", (value) => {
    expect(parseFilter(celString(value))).toEqual<Node>({ k: "lit", v: value });
  });
});

describe("Filter", () => {
  it("builds the forms the service translates", () => {
    expect(Filter.and(Filter.tenantEquals("system"), Filter.labelEquals("osac.openshift.io/cluster-order", "o-1"), Filter.notDeleted()).text)
      .toBe("(this.metadata.tenant == 'system') && (this.metadata.labels['osac.openshift.io/cluster-order'] == 'o-1') && " +
        "(this.metadata.deletion_timestamp == null)");
    expect(Filter.nameIn(["a", "b"]).text).toBe("this.metadata.name in ['a', 'b']");
    expect(Filter.not(Filter.hasLabel("k")).text).toBe("!('k' in this.metadata.labels)");
    expect(Filter.labelsMatch({}).text).toBe("true");
  });

  it.each(INJECTIONS)("a label value %j compares as a literal and cannot widen the match", (value) => {
    const f = Filter.labelEquals("env", value);
    const ast = parseFilter(f.text);
    expect(ast).toMatchObject({ k: "binary", op: "==", r: { k: "lit", v: value } });
    expect(matches(f.text, bmi("a", { env: "prod" }))).toBe(false);
    expect(matches(f.text, bmi("a", { env: value }))).toBe(true);
  });

  it.each(INJECTIONS)("a label key %j stays a map index and a name %j stays a literal", (value) => {
    expect(parseFilter(Filter.labelEquals(value, "v").text)).toMatchObject({ k: "binary", op: "==", l: { k: "index", idx: { k: "lit", v: value } } });
    expect(parseFilter(Filter.nameStartsWith(value).text)).toMatchObject({ k: "call", fn: "startsWith", args: [{ k: "lit", v: value }] });
    expect(matches(Filter.nameEquals(value).text, bmi("a", {}))).toBe(false);
  });
});
