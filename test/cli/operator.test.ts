import { afterAll, expect, test } from "bun:test";
import { join, resolve } from "node:path";
import { ageKeys } from "../support/ceremony";
import { runSigil, startSigil, TempDir } from "../support/cli";
import { registerTestSecret } from "../support/log-capture";
import { attestationRequest, INTEROP_KEYS } from "../support/slashing";

const dir = new TempDir();
afterAll(() => dir.remove());

/** The operator's whole path, against a real signer process, with the real CLI. */
test("CLI round trip: create policy → create token → sign with it → revoke → 401", async () => {
  const config = dir.file(
    "stateful.yaml",
    [
      "server: {listen_address: 127.0.0.1, listen_port: 0}",
      `key_sources: {filesystem: {paths: ["${resolve("examples/keys")}"]}}`,
      `antislashing: {backend: sqlite, path: "${join(dir.path, "slashing.sqlite")}"}`,
      `signer_state: {backend: sqlite, path: "${join(dir.path, "state.sqlite")}"}`,
    ].join("\n"),
  );
  const sigil = await startSigil(["serve", "-c", config, "--init-slashing-protection"]);
  try {
    const setup = sigil.stderrText().match(/setup_token=(sgl_[A-Za-z0-9_-]+)/)?.[1] ?? "";
    expect(setup).not.toBe("");
    const target = ["--signer-url", sigil.url];

    // The ceremony with one age-wrapped share, as an operator would run it.
    const [key] = await ageKeys(1);
    const identityFile = dir.file("operator.age", `# test identity\n${key?.identity}\n`);
    const init = runSigil(
      [
        "operator",
        "init",
        "--setup-token",
        "env:SETUP",
        "--share-wrap",
        `age:${key?.recipient}`,
        "--threshold",
        "1",
        "--json",
        ...target,
      ],
      { SETUP: setup },
    );
    expect(init.code, init.stderr).toBe(0);
    const registration = (
      JSON.parse(init.stdout) as { operators: { registration_token: string }[] }
    ).operators[0]?.registration_token;
    registerTestSecret(registration, "registration token");
    const registered = runSigil(
      ["operator", "register", "--registration-token", "env:REG", "--json", ...target],
      { REG: registration ?? "" },
    );
    expect(registered.code, registered.stderr).toBe(0);
    const asOperator = {
      CRED: (JSON.parse(registered.stdout) as { credential: string }).credential,
    };
    registerTestSecret(asOperator.CRED, "operator credential");
    const withCredential = ["--credential", "env:CRED", "--identity", identityFile, ...target];
    const unsealed = runSigil(["operator", "unseal", ...withCredential], asOperator);
    expect(unsealed.code, unsealed.stderr).toBe(0);
    expect(unsealed.stdout).toContain("unsealed");
    const root = runSigil(
      ["operator", "generate-root-token", "--json", ...withCredential],
      asOperator,
    );
    expect(root.code, root.stderr).toBe(0);
    const management = (JSON.parse(root.stdout) as { token: string }).token;
    registerTestSecret(management, "management token");
    const asManager = { MANAGEMENT_TOKEN: management };
    const withToken = [...target, "--token", "env:MANAGEMENT_TOKEN"];

    const rules = JSON.stringify([{ effect: "allow", scopes: ["sign"], keys: [INTEROP_KEYS[0]] }]);
    const policy = runSigil(
      ["operator", "auth", "policy", "create", "--name", "vc", "--rules", rules, ...withToken],
      asManager,
    );
    expect(policy.code, policy.stderr).toBe(0);
    const listed = runSigil(["operator", "auth", "policy", "list", ...withToken], asManager);
    expect(listed.stdout).toContain("vc");

    const created = runSigil(
      [
        "operator",
        "auth",
        "token",
        "create",
        "--policies",
        "vc",
        "--ttl-seconds",
        "3600",
        "--json",
        ...withToken,
      ],
      asManager,
    );
    expect(created.code, created.stderr).toBe(0);
    const client = JSON.parse(created.stdout) as { token: string; accessor: string };
    registerTestSecret(client.token, "client token");

    const signed = await fetchSigned(sigil.url, client.token);
    expect(signed).toBe(200);

    const revoked = runSigil(
      ["operator", "auth", "token", "revoke", "--accessor", client.accessor, ...withToken],
      asManager,
    );
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(await fetchSigned(sigil.url, client.token)).toBe(401);

    // Without the management token the CLI gets the server's 401 as a one-line error.
    const denied = runSigil([
      "operator",
      "auth",
      "policy",
      "list",
      ...target,
      "--token",
      client.token,
    ]);
    expect(denied.code).toBe(1);
    expect(denied.stderr.trim().split("\n")).toHaveLength(1);
    expect(denied.stderr).toContain("401");
  } finally {
    expect(await sigil.stop()).toBe(0);
  }
});

async function fetchSigned(url: string, token: string): Promise<number> {
  const { body } = attestationRequest(1, 2, Math.floor(Math.random() * 1e9));
  const response = await fetch(`${url}/api/v1/eth2/sign/${INTEROP_KEYS[0]}`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json",
      authorization: `Bearer ${token}`,
    },
    body: JSON.stringify(body),
  });
  await response.arrayBuffer();
  return response.status;
}
