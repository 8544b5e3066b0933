/**
 * Scheduling Gloas from the environment, end to end through configuration loading: the variable
 * an operator sets before a release knows the fork gives the same schedule as the config file's
 * `network_config.gloas_fork_epoch`. (Kept out of src/signing/: a unit test there may not reach
 * up to the configuration layer.)
 */
import { expect, test } from "bun:test";
import { loadConfig } from "../../src/config/load";
import { NETWORKS } from "../../src/signing/network";
import { configuredNetworkOf } from "../../src/signing/spec-config";

const hex = (bytes: Uint8Array | undefined) =>
  bytes ? `0x${Buffer.from(bytes).toString("hex")}` : undefined;

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
