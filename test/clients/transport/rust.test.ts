/**
 * Transport compatibility (harness.ts): reqwest 0.11 (hyper 0.14, tokio), Lighthouse's HTTP client
 * for web3signer keys, built at test time with `cargo build --offline` from Debian's packaged
 * crates (drivers/rust/.cargo/config.toml points crates-io at /usr/share/cargo/registry).
 */
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { copyDriver, driverSuite, lockedVersions, requireCommand, runCommand } from "./harness";

const DEBIAN_CRATES = "/usr/share/cargo/registry";
const INSTALL_CRATES = "apt-get install librust-reqwest-dev librust-tokio-dev";

function debianCrate(prefix: string): boolean {
  try {
    return readdirSync(DEBIAN_CRATES).some((name) => name.startsWith(prefix));
  } catch {
    return false;
  }
}

driverSuite({
  id: "rust",
  title: "Rust reqwest",
  client: "Lighthouse",
  async prepare(lab) {
    const cargo = requireCommand("cargo", "apt-get install cargo", "rust");
    if (!debianCrate("reqwest-0.11.")) {
      throw new Error(
        `Debian's reqwest crate is not in ${DEBIAN_CRATES}: ${INSTALL_CRATES} (or set SIGIL_TRANSPORT_SKIP=rust to skip this stack)`,
      );
    }
    const source = copyDriver(lab, "rust");
    const target = join(lab.dir.path, "rust-target");
    const build = await runCommand(
      lab,
      [cargo, "build", "--offline", "--quiet", "--target-dir", target],
      { cwd: source, timeoutMs: 240_000 },
    );
    if (build.code !== 0) {
      throw new Error(`cargo build failed (${build.code}):\n${build.stderr}`);
    }
    const versions = await runCommand(lab, [cargo, "--version"], { timeoutMs: 30_000 });
    return {
      command: [join(target, "debug/sigil-transport-driver")],
      versions: [
        ...lockedVersions(join(source, "Cargo.lock"), ["reqwest", "hyper", "tokio"]),
        versions.stdout.trim(),
      ],
    };
  },
});
