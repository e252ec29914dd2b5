// Prints the product's size debt as eslint.config.mjs counts it: files over MAX_FILE_LINES and the
// longest function per file over MAX_FUNCTION_LINES, in the form of that file's *_DEBT tables, then the
// longest files and functions. `--raw` counts function lines with blank and comment lines included.
// Usage: node tests/support/sizeDebt.mjs [--raw] [--top N]
import { ESLint } from "eslint";

const args = process.argv.slice(2);
const raw = args.includes("--raw");
const top = Number(args[args.indexOf("--top") + 1]) || 5;
const NOT_PRODUCT = /^(tests|lab|bench|scripts)\//;
const MAX_FILE_LINES = 400;
const MAX_FUNCTION_LINES = 60;

const eslint = new ESLint({
  overrideConfig: [{
    files: ["**/*.ts"],
    rules: {
      "max-lines": ["warn", { max: 1, skipBlankLines: false, skipComments: false }],
      "max-lines-per-function": ["warn", { max: 1, skipBlankLines: !raw, skipComments: !raw, IIFEs: true }],
    },
  }],
});

const files = [];
const functions = [];
for (const result of await eslint.lintFiles(["."])) {
  const file = result.filePath.slice(process.cwd().length + 1);
  if (NOT_PRODUCT.test(file)) continue;
  for (const m of result.messages) {
    const lines = Number(/\((\d+)\)/.exec(m.message)?.[1]);
    if (m.ruleId === "max-lines") files.push({ file, lines });
    if (m.ruleId === "max-lines-per-function") {
      const name = /^(.*?) has too many lines/.exec(m.message)?.[1] ?? "function";
      functions.push({ file, line: m.line, name, lines });
    }
  }
}

const longestPerFile = new Map();
for (const f of functions) if ((longestPerFile.get(f.file) ?? 0) < f.lines) longestPerFile.set(f.file, f.lines);
const table = (entries) => entries.sort(([a], [b]) => a.localeCompare(b)).map(([file, n]) => `  "${file}": ${n},`).join("\n");

console.log(`const FILE_LINES_DEBT = {\n${table(files.filter((f) => f.lines > MAX_FILE_LINES).map((f) => [f.file, f.lines]))}\n};`);
if (!raw) console.log(`const FUNCTION_LINES_DEBT = {\n${table([...longestPerFile].filter(([, n]) => n > MAX_FUNCTION_LINES))}\n};`);
console.log(`\nlongest files:\n${files.sort((a, b) => b.lines - a.lines).slice(0, top).map((f) => `  ${f.lines} ${f.file}`).join("\n")}`);
console.log(`longest functions (${raw ? "all lines" : "code lines"}):\n${functions.sort((a, b) => b.lines - a.lines).slice(0, top)
  .map((f) => `  ${f.lines} ${f.file}:${f.line} ${f.name}`).join("\n")}`);
