// Run by tests/lib/memoryTrim.test.ts in a process of its own (node --expose-gc): fills the C heap with
// 256 MiB of buffers, frees all but one in 64 (so the free pages lie below live blocks, where free()
// cannot give them back), then trims through lib/memoryTrim.ts. Prints the RSS at each step, in MiB.
const { glibcMallocTrim } = require(process.argv[2]);

const mib = () => Math.round(process.memoryUsage.rss() / 1048576);
let buffers = [];
for (let i = 0; i < 16384; i++) buffers.push(Buffer.allocUnsafeSlow(16 * 1024).fill(1));
const filled = mib();
const kept = buffers.filter((_, i) => i % 64 === 63);
buffers = undefined;
global.gc();
global.gc();
const freed = mib();
const trim = glibcMallocTrim();
if (trim) trim();
console.log(JSON.stringify({ filled, freed, trimmed: mib(), kept: kept.length, trim: Boolean(trim) }));
