// The stack settings file (Pulumi.<stack>.yaml) read and written without a pulumi process: only plain
// values in a file the CLI wrote, every other key left as it was. tests/stack/stacks.test.ts checks that
// `pulumi config get` reads back what is written here.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as yaml from "js-yaml";
import { plainSettingsValue, writePlainSettingsValue } from "../../stack/settingsFile";

const KEY = "baremetal-workers:clusterOrder";

describe("writePlainSettingsValue", () => {
  let dir: string;
  let file: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "bmw-settings-"));
    file = path.join(dir, "Pulumi.ns--a.yaml");
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it("adds the value to the file `stack init` wrote and keeps its salt", () => {
    fs.writeFileSync(file, "encryptionsalt: v1:abc==:v1:def:ghi==\n");
    expect(writePlainSettingsValue(file, KEY, "ns/a")).toBe(true);
    expect(yaml.load(fs.readFileSync(file, "utf8"))).toEqual({ encryptionsalt: "v1:abc==:v1:def:ghi==", config: { [KEY]: "ns/a" } });
    expect(plainSettingsValue(file, KEY)).toEqual({ known: true, value: "ns/a" });
  });

  it("replaces a plain value and leaves secrets and other keys untouched", () => {
    const secure = { secure: "v1:Zm9v" };
    fs.writeFileSync(file, yaml.dump({ encryptionsalt: "v1:s", config: { [KEY]: "ns/other", "baremetal-workers:token": secure, "baremetal-workers:pin": "null" } }));
    expect(writePlainSettingsValue(file, KEY, "ns/a")).toBe(true);
    expect(yaml.load(fs.readFileSync(file, "utf8"))).toEqual({ encryptionsalt: "v1:s", config: { [KEY]: "ns/a", "baremetal-workers:token": secure, "baremetal-workers:pin": "null" } });
    expect(fs.readdirSync(dir)).toEqual(["Pulumi.ns--a.yaml"]); // written through a renamed temporary file
  });

  it("leaves to the CLI a missing file, an environment import, a secret or structured value under the key, and bad YAML", () => {
    expect(writePlainSettingsValue(file, KEY, "ns/a")).toBe(false);
    expect(fs.existsSync(file)).toBe(false);
    const cases = [
      "environment:\n  - osac/hub\n",
      yaml.dump({ config: { [KEY]: { secure: "v1:x" } } }),
      yaml.dump({ config: { [KEY]: { nested: 1 } } }),
      "config: [\n",
    ];
    for (const text of cases) {
      fs.writeFileSync(file, text);
      expect(writePlainSettingsValue(file, KEY, "ns/a")).toBe(false);
      expect(fs.readFileSync(file, "utf8")).toBe(text);
    }
  });
});
