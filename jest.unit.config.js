/**
 * The unit tier (`npm run test:unit`): tests that need no toolchain, no kube-apiserver and no Pulumi
 * CLI, so no global setup. A test joins the tier by being listed here; `npm test` still runs it too.
 */
const base = require("./jest.config");

const UNIT_TESTS = [
  "tests/planner/**/*.test.ts",
  "tests/components/**/*.test.ts",
  "tests/controller/decide.test.ts",
  "tests/controller/settledOrders.test.ts",
  "tests/controller/hubLedger.test.ts",
  "tests/controller/hubInFlight.test.ts",
  "tests/controller/shards.test.ts",
  "tests/controller/settledProperty.test.ts",
  "tests/controller/settledStore.test.ts",
  "tests/io/hubDigest.test.ts",
  "tests/io/unwatched.test.ts",
  "tests/providers/checkDiff.test.ts",
  "tests/providers/markedLines.test.ts",
  "tests/providers/hostModules.test.ts",
  "tests/providers/providerText.test.ts",
  "tests/config/**/*.test.ts",
  "tests/lib/deadline.test.ts",
  "tests/lib/memoryTrim.test.ts",
  "tests/lib/nativeHeap.test.ts",
  "tests/clients/kubeConnections.test.ts",
  "tests/stack/eventLog.test.ts",
  "tests/stack/settingsFile.test.ts",
  "tests/stack/operationTmp.test.ts",
  "tests/property/previewCheck.test.ts",
  "tests/io/incarnationNames.test.ts",
  "tests/io/handoff.test.ts",
  "tests/io/newInfraEnvIgnition.test.ts",
  "tests/fakes/**/*.test.ts",
  "tests/clients/clusterOrderShape.test.ts",
  "tests/clients/leanList.test.ts",
  "tests/fulfillment/store.test.ts",
];

module.exports = {
  ...base,
  testMatch: UNIT_TESTS.map((glob) => `<rootDir>/${glob}`),
  globalSetup: undefined,
  globalTeardown: undefined,
  testTimeout: 30000,
};
