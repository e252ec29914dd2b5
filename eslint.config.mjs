// Lint (`npm run lint`, run by .ci/run before the tests): the dependency rules of docs/architecture
// and the house rules that a reviewer should not have to count by hand. Syntax-only rules: no type
// information, so lint needs no generated protos and stays fast.
import { defineConfig } from "eslint/config";
import tseslint from "typescript-eslint";

/** Everything that is not the product: the suites, the simulators, the benchmarks, dev scripts. */
const NOT_PRODUCT = ["tests/**", "lab/**", "bench/**", "scripts/**"];

// ---- size limits (house rules: files ~400 lines, functions ~60) -------------------------------------

const MAX_FILE_LINES = 400;
/** Counted without blank and comment lines, so a comment that says why is never a cost. */
const MAX_FUNCTION_LINES = 60;

/**
 * Size debt: product files over a limit when the limits came in, each capped at its size then, so the
 * debt is visible and cannot grow. Lower a number when a file shrinks; remove the entry when it fits.
 * `node tests/support/sizeDebt.mjs` prints the current offenders in this form.
 */
const FILE_LINES_DEBT = {
};
/** The longest function's lines (code only) per file over MAX_FUNCTION_LINES. */
const FUNCTION_LINES_DEBT = {
};

const sizeRules = (fileLines, functionLines) => ({
  "max-lines": ["error", { max: fileLines, skipBlankLines: false, skipComments: false }],
  "max-lines-per-function": ["error", { max: functionLines, skipBlankLines: true, skipComments: true, IIFEs: true }],
});

const sizeDebt = Object.keys({ ...FILE_LINES_DEBT, ...FUNCTION_LINES_DEBT }).map((file) => ({
  files: [file],
  rules: sizeRules(Math.max(MAX_FILE_LINES, FILE_LINES_DEBT[file] ?? 0), Math.max(MAX_FUNCTION_LINES, FUNCTION_LINES_DEBT[file] ?? 0)),
}));

// ---- unstructured input is validated, not cast ------------------------------------------------------

const PARSED = "[callee.type='MemberExpression'][callee.object.name=/^(JSON|yaml)$/][callee.property.name=/^(parse|load)$/]";
/** JSON.parse / yaml.load results cast (or annotated) to a type other than unknown. */
const UNCHECKED_JSON = [
  { selector: `TSAsExpression[typeAnnotation.type!='TSUnknownKeyword'] > CallExpression.expression${PARSED}` },
  { selector: `TSTypeAssertion[typeAnnotation.type!='TSUnknownKeyword'] > CallExpression.expression${PARSED}` },
  { selector: `VariableDeclarator[id.typeAnnotation.typeAnnotation.type!='TSUnknownKeyword'] > CallExpression.init${PARSED}` },
].map((s) => ({ ...s, message: "parsed JSON/YAML is unknown: validate it (a type guard or a checked parser) instead of casting it" }));

/** Product files that cast parsed input today; each should validate instead. */
const UNCHECKED_JSON_DEBT = [];

// ---- the planner is pure: no I/O, clock or randomness -----------------------------------------------

const IO_MODULES = ["fs", "fs/promises", "net", "tls", "dgram", "dns", "http", "https", "http2", "child_process", "cluster", "worker_threads", "os", "readline", "inspector"];

const plannerPurity = {
  files: ["planner/**/*.ts"],
  rules: {
    "@typescript-eslint/no-restricted-imports": ["error", {
      paths: [
        ...IO_MODULES.flatMap((m) => [m, `node:${m}`]).map((name) => ({ name, message: "planner/ is pure: I/O belongs to io/, clients/ or stack/" })),
      ],
      patterns: [
        { group: ["@grpc/*", "@kubernetes/*", "@pulumi/*"], allowTypeImports: true, message: "planner/ is pure: clients and Pulumi stay outside it" },
        { regex: "^\\.\\./", allowTypeImports: true, message: "planner/ is the bottom layer: it imports only planner/ (types excepted)" },
      ],
    }],
    "no-restricted-properties": ["error",
      { object: "Date", property: "now", message: "planner/ reads the clock from Snapshot.now" },
      { object: "Math", property: "random", message: "planner/ is deterministic" },
      ...["randomBytes", "randomUUID", "randomInt", "getRandomValues"].map((property) => ({ object: "crypto", property, message: "planner/ is deterministic" })),
      { object: "performance", property: "now", message: "planner/ reads the clock from Snapshot.now" },
    ],
    "no-restricted-syntax": ["error",
      ...UNCHECKED_JSON,
      { selector: "NewExpression[callee.name='Date'][arguments.length=0]", message: "planner/ reads the clock from Snapshot.now" },
      { selector: "CallExpression[callee.name='Date'][arguments.length=0]", message: "planner/ reads the clock from Snapshot.now" },
      {
        // Hashing (node:crypto createHash) is deterministic; its random sources are not.
        selector: "ImportDeclaration[source.value=/^(node:)?crypto$/] > ImportSpecifier[imported.name=/^(randomBytes|randomUUID|randomInt|getRandomValues|webcrypto)$/]",
        message: "planner/ is deterministic: names and ids come from the snapshot",
      },
    ],
    "no-restricted-globals": ["error",
      ...["process", "fetch", "setTimeout", "setInterval", "setImmediate", "require"].map((name) => ({ name, message: "planner/ is pure: the caller passes what it needs" })),
    ],
  },
};

// ---- product code never depends on the lab, the suites or the benchmarks -----------------------------

const productBoundaries = {
  files: ["**/*.ts"],
  ignores: NOT_PRODUCT,
  rules: {
    "no-restricted-syntax": ["error", ...UNCHECKED_JSON],
    "no-restricted-imports": ["error", {
      patterns: [{
        regex: "^(\\.\\.?/)+(lab|tests|bench|scripts)(/|$)",
        message: "product code never imports lab/, tests/, bench/ or scripts/ (they import the product, not the other way round)",
      }],
    }],
  },
};

export default defineConfig(
  { ignores: ["node_modules/**", "dist/**", "coverage/**", "protos/gen/**", "lab/fulfillment/protos/gen/**", "**/*.js", "**/*.mjs"] },
  {
    files: ["**/*.ts"],
    languageOptions: { parser: tseslint.parser, ecmaVersion: 2022, sourceType: "module" },
    plugins: { "@typescript-eslint": tseslint.plugin },
    linterOptions: { reportUnusedDisableDirectives: "error" },
    rules: {
      "@typescript-eslint/no-explicit-any": "error",
    },
  },
  {
    files: ["**/*.ts"],
    ignores: NOT_PRODUCT,
    rules: sizeRules(MAX_FILE_LINES, MAX_FUNCTION_LINES),
  },
  ...sizeDebt,
  productBoundaries,
  ...(UNCHECKED_JSON_DEBT.length > 0 ? [{ files: UNCHECKED_JSON_DEBT, rules: { "no-restricted-syntax": "off" } }] : []),
  plannerPurity,
);
