// The environment schedules Gloas on a named network as network_config in the file would: a
// config-to-signing test, so it lives above both layers.
import { describe, expect, test } from "bun:test";
import { loadConfig } from "../../src/config/load";
import { NETWORKS } from "../../src/signing/network";
import { configuredNetworkOf } from "../../src/signing/spec-config";

const hex = (bytes: Uint8Array | undefined): string =>
  bytes === undefined ? "undefined" : `0x${Buffer.from(bytes).toString("hex")}`;

describe("Gloas schedule from the environment", () => {
  test("SIGNER_NETWORK_CONFIG__GLOAS_FORK_EPOCH schedules it, as the config file would", () => {
    const loaded = loadConfig({
      argv: [],
      env: {
        SIGNER_NETWORK: "hoodi",
        SIGNER_NETWORK_CONFIG__GLOAS_FORK_EPOCH: "60000",
        SIGNER_KEY_SOURCES__FILESYSTEM__PATHS: "/nonexistent",
      },
    });
    if (!loaded.ok) throw new Error(JSON.stringify(loaded.problems));
    const network = configuredNetworkOf(loaded.config.network, loaded.config.network_config);
    if (!network.ok) throw new Error(JSON.stringify(network.problems));
    expect(network.network.gloasForkEpoch).toBe(60000n);
    expect(network.network.name).toBe("hoodi (fork schedule from network_config)");
    expect(hex(network.network.genesisValidatorsRoot)).toBe(
      hex(NETWORKS.hoodi.genesisValidatorsRoot),
    );
  });
});
