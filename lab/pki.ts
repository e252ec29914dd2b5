// The lab's own certificate authority and the serving certificates it signs (assisted-service
// stand-in, fulfillment simulator). Separate from the control plane's CA, as a hub's ingress CA is
// separate from its apiserver's. Keys are EC P-256: quick to make, accepted by Node and grpc-js.
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";

export interface LabCa {
  caFile: string;
  keyFile: string;
}

export interface ServingCert {
  certFile: string;
  keyFile: string;
}

function openssl(args: string[]): void {
  execFileSync("openssl", args, { stdio: ["ignore", "ignore", "pipe"] });
}

/** Creates <dir>/ca.crt and <dir>/pki/ca.key unless they exist (a restarted lab keeps its CA). */
export function ensureLabCa(dir: string): LabCa {
  const pki = path.join(dir, "pki");
  fs.mkdirSync(pki, { recursive: true, mode: 0o700 });
  const caFile = path.join(dir, "ca.crt");
  const keyFile = path.join(pki, "ca.key");
  if (!fs.existsSync(caFile) || !fs.existsSync(keyFile)) {
    openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "3650",
      "-subj", "/O=baremetal-workers lab/CN=baremetal-workers lab CA", "-keyout", keyFile, "-out", caFile,
      "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"]);
    fs.chmodSync(keyFile, 0o600);
  }
  return { caFile, keyFile };
}

/** A serving certificate for 127.0.0.1 and localhost signed by the lab CA, reused if present. */
export function ensureServingCert(dir: string, ca: LabCa, name: string): ServingCert {
  const pki = path.join(dir, "pki");
  const certFile = path.join(pki, `${name}.crt`);
  const keyFile = path.join(pki, `${name}.key`);
  if (fs.existsSync(certFile) && fs.existsSync(keyFile)) return { certFile, keyFile };
  const csr = path.join(pki, `${name}.csr`);
  const ext = path.join(pki, `${name}.ext`);
  openssl(["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-subj", `/CN=${name}`,
    "-keyout", keyFile, "-out", csr]);
  fs.writeFileSync(ext, "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n" +
    "keyUsage=critical,digitalSignature\nbasicConstraints=CA:FALSE\n");
  openssl(["x509", "-req", "-in", csr, "-CA", ca.caFile, "-CAkey", ca.keyFile, "-CAcreateserial", "-days", "3650",
    "-extfile", ext, "-out", certFile]);
  fs.chmodSync(keyFile, 0o600);
  fs.rmSync(csr, { force: true });
  return { certFile, keyFile };
}
