// The seal lifecycle end to end, as an operator team runs it: the real signer process (the built
// binary under SIGIL_TEST_BINARY), the real CLI, real age keys, and AWS KMS replaced by a
// KMS-protocol server on loopback that enforces per-key, per-credential access.
import { afterAll, expect, test } from "bun:test";
import { randomUUID } from "node:crypto";
import { join, resolve } from "node:path";
import { ageKeys } from "../support/ceremony";
import {
  type CliResult,
  type RunningSigil,
  runSigilAsync,
  startSigil,
  TempDir,
} from "../support/cli";
import { startKmsServer } from "../support/kms";
import { registerTestSecret } from "../support/log-capture";
import { attestationRequest, INTEROP_KEYS } from "../support/slashing";

const dir = new TempDir();
const running: RunningSigil[] = [];
afterAll(async () => {
  for (const sigil of running) await sigil.stop().catch(() => {});
  dir.remove();
});

const credentials = ["signer", "alice", "bob", "dave"].map((name) => ({
  accessKeyId: `AKIA${name.toUpperCase().padEnd(16, "X")}`,
  secretAccessKey: `secret-of-${name}-${randomUUID()}`,
}));
for (const c of credentials) registerTestSecret(c.secretAccessKey, "AWS secret access key");
const [signerAws, aliceAws, bobAws, daveAws] = credentials as [
  (typeof credentials)[number],
  (typeof credentials)[number],
  (typeof credentials)[number],
  (typeof credentials)[number],
];
const keyIds = { alice: randomUUID(), bob: randomUUID(), dave: randomUUID() };

function expectOk(result: CliResult, what: string): string {
  expect(result.code, `${what}: ${result.stderr}`).toBe(0);
  return result.stdout;
}

test("init → register → sealed restart → partial unseal expires → unseal → root token by quorum → sign → seal → unseal → rotate quorum", async () => {
  const kms = await startKmsServer({
    credentials,
    keys: [
      {
        id: keyIds.alice,
        allow: { encrypt: [signerAws.accessKeyId], decrypt: [aliceAws.accessKeyId] },
      },
      {
        id: keyIds.bob,
        allow: { encrypt: [signerAws.accessKeyId], decrypt: [bobAws.accessKeyId] },
      },
      {
        id: keyIds.dave,
        allow: { encrypt: [signerAws.accessKeyId], decrypt: [daveAws.accessKeyId] },
      },
    ],
  });
  const awsEnv = (who: { accessKeyId: string; secretAccessKey: string }) => ({
    AWS_ENDPOINT_URL_KMS: kms.url,
    AWS_ACCESS_KEY_ID: who.accessKeyId,
    AWS_SECRET_ACCESS_KEY: who.secretAccessKey,
    AWS_EC2_METADATA_DISABLED: "true",
  });
  try {
    const [carol, erin] = await ageKeys(2);
    if (!carol || !erin) throw new Error("no age keys");
    const carolIdentity = dir.file("carol.age", `# carol\n${carol.identity}\n`);
    const erinIdentity = dir.file("erin.age", `${erin.identity}\n`);
    const config = dir.file(
      "ceremony.yaml",
      [
        "server: {listen_address: 127.0.0.1, listen_port: 0}",
        `key_sources:\n  filesystem: {paths: ["${resolve("examples/keys")}"]}\n  cloud_kv: {unseal_timeout_minutes: 1}`,
        `antislashing: {backend: sqlite, path: "${join(dir.path, "slashing.sqlite")}"}`,
        `signer_state: {backend: sqlite, path: "${join(dir.path, "state.sqlite")}"}`,
      ].join("\n"),
    );
    const boot = async () => {
      const sigil = await startSigil(
        ["serve", "-c", config, "--init-slashing-protection"],
        awsEnv(signerAws),
      );
      running.push(sigil);
      return sigil;
    };
    let sigil = await boot();
    const at = () => ["--signer-url", sigil.url];
    const operator = (args: string[], env: Record<string, string> = {}, input?: string) =>
      runSigilAsync(["operator", ...args, ...at()], env, input);
    const state = async () =>
      (JSON.parse(expectOk(await operator(["status", "--json"]), "status")) as { state: string })
        .state;

    // First boot: uninitialized, the setup token is in the log.
    const setup = sigil.stderrText().match(/setup_token=(sgl_[A-Za-z0-9_-]+)/)?.[1] ?? "";
    expect(setup).not.toBe("");
    expect(await state()).toBe("uninitialized");

    // init: 2-of-3, two KMS keys and one age recipient; the signer encrypts with its own credentials.
    const shareWrap = [
      `awskms:${kms.keyArn(keyIds.alice)}`,
      `awskms:${kms.keyArn(keyIds.bob)}`,
      `age:${carol.recipient}`,
    ];
    const init = JSON.parse(
      expectOk(
        await operator(
          [
            "init",
            "--setup-token",
            "env:SETUP",
            "--share-wrap",
            shareWrap.join(","),
            "--threshold",
            "2",
            "--json",
          ],
          {
            SETUP: setup,
          },
        ),
        "init",
      ),
    ) as { operators: { operator: string; registration_token: string }[] };
    for (const o of init.operators) registerTestSecret(o.registration_token, "registration token");
    expect(init.operators.map((o) => o.operator)).toEqual([
      "operator-1",
      "operator-2",
      "operator-3",
    ]);
    const replayInit = await operator(
      [
        "init",
        "--setup-token",
        "env:SETUP",
        "--share-wrap",
        shareWrap.join(","),
        "--threshold",
        "2",
      ],
      {
        SETUP: setup,
      },
    );
    expect(replayInit.code).toBe(1);
    expect(replayInit.stderr).toContain("409 already_initialized");

    const register = async (token: string) =>
      (
        JSON.parse(
          expectOk(
            await operator(["register", "--registration-token", "env:REG", "--json"], {
              REG: token,
            }),
            "register",
          ),
        ) as {
          credential: string;
        }
      ).credential;
    const [aliceCred, bobCred, carolCred] = await Promise.all(
      init.operators.map((o) => register(o.registration_token)),
    );
    for (const c of [aliceCred, bobCred, carolCred]) registerTestSecret(c, "operator credential");
    const replayRegistration = await operator(["register", "--registration-token", "env:REG"], {
      REG: init.operators[0]?.registration_token ?? "",
    });
    expect(replayRegistration.stderr).toContain("401 invalid_token");

    const alice = ["--credential", "env:CRED"];
    const asAlice = { CRED: aliceCred ?? "", ...awsEnv(aliceAws) };
    const asBob = { CRED: bobCred ?? "", ...awsEnv(bobAws) };
    const carolArgs = ["--credential", "env:CRED", "--identity", carolIdentity];
    const asCarol = { CRED: carolCred ?? "" };

    // Restart: sealed. Signing answers 503 sealed.
    await sigil.stop();
    sigil = await boot();
    expect(await state()).toBe("sealed");
    expect(sigil.stderrText()).not.toContain("setup_token=");
    const sign = async (token?: string, salt = 1) =>
      fetch(`${sigil.url}/api/v1/eth2/sign/${INTEROP_KEYS[0]}`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          ...(token ? { authorization: `Bearer ${token}` } : {}),
        },
        body: JSON.stringify(attestationRequest(salt, salt + 1, salt).body),
      });
    expect((await sign()).status).toBe(503);

    // Alice's credentials cannot open Bob's share: the KMS refuses, nothing is submitted.
    const wrongKms = await operator(["unseal", ...alice], { ...asAlice, ...awsEnv(bobAws) });
    expect(wrongKms.code).toBe(1);
    expect(wrongKms.stderr).toContain("AccessDeniedException");

    // One share: partial; the unseal timeout (1 minute) expires it.
    expectOk(await operator(["unseal", ...alice], asAlice), "alice unseal");
    expect(await state()).toBe("partial_unseal");
    await Bun.sleep(61_000);
    expect(await state()).toBe("sealed");
    expect(sigil.stderrText()).toContain("partial unseal expired");

    // Two shares (KMS and age): unsealed.
    expectOk(await operator(["unseal", ...alice], asAlice), "alice unseal again");
    const duplicate = await operator(["unseal", ...alice], asAlice);
    expect(duplicate.stderr).toContain("409 duplicate_share");
    expect(expectOk(await operator(["unseal", ...carolArgs], asCarol), "carol unseal")).toContain(
      "unsealed",
    );
    expect(await state()).toBe("unsealed");
    const again = await operator(["unseal", ...carolArgs], asCarol);
    expect(again.stderr).toContain("409 already_unsealed");

    // generate-root-token by quorum: the completing operator receives the management token.
    const firstRoot = expectOk(
      await operator(["generate-root-token", ...alice], asBob),
      "bob root",
    );
    expect(firstRoot).toContain("1 of 2");
    const root = JSON.parse(
      expectOk(
        await operator(["generate-root-token", "--json", ...carolArgs], asCarol),
        "carol root",
      ),
    ) as {
      token: string;
    };
    registerTestSecret(root.token, "management token");
    const asManager = { MGMT: root.token };
    const manage = ["--token", "env:MGMT"];

    // The management token creates a policy and a client token; signing works with it.
    const rules = JSON.stringify([{ effect: "allow", scopes: ["sign"] }]);
    expectOk(
      await operator(
        ["auth", "policy", "create", "--name", "vc", "--rules", rules, ...manage],
        asManager,
      ),
      "policy",
    );
    const client = JSON.parse(
      expectOk(
        await operator(
          [
            "auth",
            "token",
            "create",
            "--policies",
            "vc",
            "--ttl-seconds",
            "3600",
            "--json",
            ...manage,
          ],
          asManager,
        ),
        "token",
      ),
    ) as { token: string };
    registerTestSecret(client.token, "client token");
    const signed = await sign(client.token, 10);
    expect(signed.status).toBe(200);

    // seal → 503; unseal → signing works again.
    expectOk(await operator(["seal", ...manage], asManager), "seal");
    expect((await sign(client.token, 20)).status).toBe(503);
    expectOk(await operator(["unseal", ...alice], asBob), "bob unseal");
    expectOk(await operator(["unseal", ...alice], asAlice), "alice unseal after seal");
    expect((await sign(client.token, 30)).status).toBe(200);

    // rotate quorum to 2-of-2 new keys (Dave's KMS key, Erin's age key), with a quorum of the old operators.
    const newWrap = [`awskms:${kms.keyArn(keyIds.dave)}`, `age:${erin.recipient}`].join(",");
    expectOk(
      await operator(
        ["rotate", "quorum", "--share-wrap", newWrap, "--threshold", "2", ...manage],
        asManager,
      ),
      "rotate start",
    );
    // What is being approved is on every operator's screen before a share leaves.
    const shown = expectOk(await operator(["status"]), "status during the rotation");
    expect(shown).toContain("new quorum  2 of 2");
    expect(shown).toContain(`age:${erin.recipient}`);
    expect(shown).toContain(`awskms:${kms.keyArn(keyIds.dave)}`);
    const declined = await operator(["rotate", "quorum", ...carolArgs], asCarol, "n\n");
    expect(declined.code).toBe(1);
    expect(declined.stdout).toContain("Your share approves this quorum rotation:");
    expect(declined.stdout).toContain("new quorum  2 of 2");
    expect(declined.stdout).toContain(`age:${erin.recipient}`);
    expect(declined.stderr).toContain("rotation not approved: nothing was submitted");
    const unanswered = await operator(["rotate", "quorum", ...carolArgs], asCarol);
    expect(unanswered.code).toBe(1);
    const stillNone = JSON.parse(expectOk(await operator(["status", "--json"]), "status")) as {
      progress: { operation: string; submitted: number }[];
    };
    expect(stillNone.progress.find((p) => p.operation === "rotate-quorum")?.submitted).toBe(0);
    const approved = expectOk(
      await operator(["rotate", "quorum", ...carolArgs], asCarol, "y\n"),
      "carol rotate",
    );
    expect(approved).toContain("new quorum  2 of 2");
    expect(approved).toContain("submitted     1 of 2");
    const rotated = JSON.parse(
      expectOk(
        await operator(["rotate", "quorum", "--yes", "--json", ...alice], asBob),
        "bob rotate",
      ),
    ) as {
      complete: boolean;
      operators: { registration_token: string }[];
    };
    expect(rotated.complete).toBe(true);
    for (const o of rotated.operators)
      registerTestSecret(o.registration_token, "registration token");
    const [daveCred, erinCred] = await Promise.all(
      rotated.operators.map((o) => register(o.registration_token)),
    );
    for (const c of [daveCred, erinCred]) registerTestSecret(c, "operator credential");

    // Old credentials are refused at once; after a restart the new operators unseal.
    const oldRefused = await operator(["unseal", ...alice], asAlice);
    expect(oldRefused.code).toBe(1);
    expect(oldRefused.stderr).toContain("401 invalid_token");
    await sigil.stop();
    sigil = await boot();
    expect((await operator(["unseal", ...alice], asBob)).stderr).toContain("401 invalid_token");
    expectOk(
      await operator(["unseal", ...alice], { CRED: daveCred ?? "", ...awsEnv(daveAws) }),
      "dave unseal",
    );
    expectOk(
      await operator(["unseal", "--credential", "env:CRED", "--identity", erinIdentity], {
        CRED: erinCred ?? "",
      }),
      "erin unseal",
    );
    expect(await state()).toBe("unsealed");
    expect((await sign(client.token, 40)).status).toBe(200);

    // The secrets of the whole ceremony never reached the signer's logs (all three boots).
    const log = running.map((s) => s.stderrText()).join("\n");
    for (const secret of [root.token, client.token, aliceCred, daveCred, erinCred, carol.identity])
      expect(log).not.toContain(secret ?? "<missing>");
  } finally {
    await kms.stop();
  }
}, 240_000);
