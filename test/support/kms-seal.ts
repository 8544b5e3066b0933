// The seal ceremony of a stateful signer with its share wrapped by AWS KMS, through the
// KMS-protocol test server (kms.ts) and the real @aws-sdk/client-kms on both sides: the signer
// Encrypts the share at init with its own credentials (from the environment), the operator
// Decrypts it at every unseal with theirs, as `sigil operator unseal` does.
import { randomUUID } from "node:crypto";
import { KMSClient } from "@aws-sdk/client-kms";
import { parseWrapSpec, unwrapShare } from "../../src/seal/wrap/index";
import { setupTokenFrom, sys } from "./ceremony";
import { startKmsServer } from "./kms";
import { registerTestSecret } from "./log-capture";

export interface KmsSeal {
  /** What the signer needs: the KMS endpoint and the signer's own AWS credentials. */
  readonly env: Record<string, string>;
  /** init, register, unseal, generate-root: the management token and the operator credential. */
  bootstrap(url: string, logLines: readonly string[]): Promise<{ management: string }>;
  /** The operator fetches the wrapped share, has KMS decrypt it, and submits it. */
  unseal(url: string): Promise<void>;
  stop(): Promise<void>;
}

export async function startKmsSeal(): Promise<KmsSeal> {
  const signer = { accessKeyId: "AKIASIGNERXXXXXXXXXX", secretAccessKey: `signer-${randomUUID()}` };
  const operatorAws = {
    accessKeyId: "AKIAOPERATORXXXXXXXX",
    secretAccessKey: `op-${randomUUID()}`,
  };
  registerTestSecret(signer.secretAccessKey, "AWS secret access key");
  registerTestSecret(operatorAws.secretAccessKey, "AWS secret access key");
  const keyId = randomUUID();
  const kms = await startKmsServer({
    credentials: [signer, operatorAws],
    keys: [
      {
        id: keyId,
        allow: { encrypt: [signer.accessKeyId], decrypt: [operatorAws.accessKeyId] },
      },
    ],
  });
  const operatorKms = new KMSClient({
    region: kms.region,
    endpoint: kms.url,
    credentials: operatorAws,
  });
  let credential = "";

  const submit = async (url: string, operation: "unseal" | "generate-root") => {
    const fetched = await sys(url, "GET", "share", undefined, credential);
    if (fetched.status !== 200) throw new Error(`share: ${JSON.stringify(fetched.body)}`);
    const spec = parseWrapSpec(String(fetched.body.share_wrap));
    if (!spec.ok) throw new Error(spec.reason);
    const share = await unwrapShare(
      spec.spec,
      new Uint8Array(Buffer.from(String(fetched.body.wrapped_share), "base64")),
      { sealId: String(fetched.body.seal_id), operator: String(fetched.body.operator) },
      { kmsClient: () => operatorKms },
    );
    const encoded = registerTestSecret(Buffer.from(share).toString("base64"), "key share");
    const answer = await sys(url, "POST", operation, { share: encoded }, credential);
    if (answer.status !== 200) throw new Error(`${operation}: ${JSON.stringify(answer.body)}`);
    return answer;
  };

  return {
    env: {
      AWS_ENDPOINT_URL_KMS: kms.url,
      AWS_ACCESS_KEY_ID: signer.accessKeyId,
      AWS_SECRET_ACCESS_KEY: signer.secretAccessKey,
      AWS_REGION: kms.region,
      AWS_EC2_METADATA_DISABLED: "true",
    },
    async bootstrap(url, logLines) {
      const init = await sys(url, "POST", "init", {
        setup_token: setupTokenFrom(logLines),
        share_wrap: [`awskms:${kms.keyArn(keyId)}`],
        threshold: 1,
      });
      if (init.status !== 200) throw new Error(`init: ${JSON.stringify(init.body)}`);
      const [registration] = init.body.operators as { registration_token: string }[];
      const registered = await sys(url, "POST", "register", {
        registration_token: registerTestSecret(
          String(registration?.registration_token),
          "registration token",
        ),
      });
      if (registered.status !== 200)
        throw new Error(`register: ${JSON.stringify(registered.body)}`);
      credential = registerTestSecret(String(registered.body.credential), "operator credential");
      await submit(url, "unseal");
      const root = await submit(url, "generate-root");
      return { management: registerTestSecret(String(root.body.token), "management token") };
    },
    async unseal(url) {
      await submit(url, "unseal");
    },
    async stop() {
      operatorKms.destroy();
      await kms.stop();
    },
  };
}
