// The chain each named network binds a slashing protection database to, and the clock of its
// future-epoch bound, as @lodestar/config knows them.
import { describe, expect, test } from "bun:test";
import { genesisData, networksChainConfig } from "@lodestar/config/networks";
import { NETWORKS, resolveNetwork } from "../../src/signing/network";
import { toHex } from "../../src/wire/hex";

describe("network identity", () => {
  test.each(["mainnet", "hoodi", "sepolia"] as const)("%s matches @lodestar/config", (name) => {
    const network = NETWORKS[name];
    expect(toHex(network.genesisValidatorsRoot ?? new Uint8Array())).toBe(
      genesisData[name].genesisValidatorsRoot,
    );
    expect(network.genesisTime).toBe(BigInt(genesisData[name].genesisTime));
    expect(network.secondsPerSlot).toBe(BigInt(networksChainConfig[name].SECONDS_PER_SLOT));
  });

  test("a devnet (network_config) is another chain: no root or genesis time but its own", () => {
    const bare = resolveNetwork("mainnet", { genesis_fork_version: "0x00000001" });
    expect(bare.genesisValidatorsRoot).toBeUndefined();
    expect(bare.genesisTime).toBeUndefined();
    expect(bare.secondsPerSlot).toBe(12n);
    const full = resolveNetwork("mainnet", {
      genesis_validators_root: `0x${"ab".repeat(32)}`,
      genesis_time: 1_700_000_000,
      seconds_per_slot: 6,
    });
    expect(toHex(full.genesisValidatorsRoot ?? new Uint8Array())).toBe(`0x${"ab".repeat(32)}`);
    expect(full.genesisTime).toBe(1_700_000_000n);
    expect(full.secondsPerSlot).toBe(6n);
  });
});
