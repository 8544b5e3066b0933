// Writes examples/keys/: the public Ethereum interop test keys 0-3, two as raw keys and two as
// EIP-2335 keystores (one PBKDF2, one scrypt). These keys are PUBLIC and INSECURE: anyone can
// derive them. They exist so that `npm start` signs out of the box. Re-run to regenerate.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { create, defaultPbkdfModule, defaultScryptModule } from "@chainsafe/bls-keystore";
import { SecretKey } from "@chainsafe/blst";
import { interopSecret } from "../test/support/interop";

const dir = join(import.meta.dir, "../examples/keys");

const hex = (bytes: Uint8Array) => `0x${Buffer.from(bytes).toString("hex")}`;
const WARNING = "# INSECURE public interop test key: never use it for anything of value.\n";

mkdirSync(dir, { recursive: true });
for (const index of [0, 1, 2, 3]) {
  const secret = interopSecret(index);
  const pubkey = SecretKey.fromBytes(secret).toPublicKey().toBytes();
  const name = `interop-${index}`;
  if (index < 2) {
    writeFileSync(
      join(dir, `${name}.yaml`),
      `${WARNING}type: file-raw\nkeyType: BLS\nprivateKey: "${hex(secret)}"\n`,
    );
  } else {
    const password = `insecure-example-password-${index}`;
    const kdf = index === 2 ? defaultPbkdfModule() : defaultScryptModule();
    const keystore = await create(password, secret, pubkey, `m/12381/3600/${index}/0/0`, name, kdf);
    writeFileSync(join(dir, `${name}.json`), `${JSON.stringify(keystore, null, 2)}\n`);
    writeFileSync(join(dir, `${name}.password`), `${password}\n`, { mode: 0o600 });
    writeFileSync(
      join(dir, `${name}.yaml`),
      `${WARNING}type: file-keystore\nkeyType: BLS\nkeystoreFile: ${name}.json\nkeystorePasswordFile: ${name}.password\n`,
    );
  }
  console.log(`${name}: ${hex(pubkey)}`);
}
