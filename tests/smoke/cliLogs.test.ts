// The pulumi CLI writes a debug log of every command under $PULUMI_HOME/logs and rotates them only past
// 500 MB by default. Every pulumi process we start bounds them (PULUMI_LOGS_MAX_MB), checked here with the
// CLI we build: its rotation at start deletes the oldest logs beyond the bound.
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { PULUMI_LOGS_MAX_MB, pulumiEnv, toolchain } from "../../stack/toolchain";

/** The CLI's log file name stamp (local time, 20060102T150405). */
function stamp(d: Date): string {
  const p = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}${p(d.getMonth() + 1)}${p(d.getDate())}T${p(d.getHours())}${p(d.getMinutes())}${p(d.getSeconds())}`;
}

/** A PULUMI_HOME whose logs hold two sparse logs of `mb` MB each, one and two hours old; its logs after `pulumi version`. */
function logsAfterVersion(env: Record<string, string>, mb: number): string[] {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), "bmw-cli-logs-"));
  try {
    const logs = path.join(home, "logs");
    fs.mkdirSync(logs);
    for (const hoursAgo of [2, 1]) {
      const fd = fs.openSync(path.join(logs, `pulumi-${stamp(new Date(Date.now() - hoursAgo * 3_600_000))}-${hoursAgo}.log`), "w");
      fs.ftruncateSync(fd, mb * 1024 * 1024);
      fs.closeSync(fd);
    }
    execFileSync(path.join(toolchain().pulumiRoot, "bin", "pulumi"), ["version"], { env: { ...process.env, ...env, PULUMI_HOME: home } });
    // The two planted logs that are left ("1.log", "2.log"), and the one `pulumi version` wrote.
    return fs.readdirSync(logs).map((f) => f.replace(/^pulumi-\d{8}T\d{6}-/, "").replace(/^\d+-version\.log$/, "version.log")).sort();
  } finally {
    fs.rmSync(home, { recursive: true, force: true });
  }
}

it(`keeps at most ${PULUMI_LOGS_MAX_MB} MB of the CLI's own logs: the oldest beyond it are deleted when a command starts`, () => {
  const env = pulumiEnv(toolchain());
  const mb = Math.ceil(PULUMI_LOGS_MAX_MB * 0.6);
  expect(logsAfterVersion(env, mb)).toEqual(["1.log", "version.log"]);
  // The CLI's default keeps both.
  const { PULUMI_LOG_ROTATION_MAX_TOTAL_MB: _bound, ...unbounded } = env;
  expect(logsAfterVersion(unbounded, mb)).toEqual(["1.log", "2.log", "version.log"]);
});
