/**
 * Transport compatibility (harness.ts): Go's net/http with the default Transport (Prysm's remote
 * signer client), standard library only, built with the machine's `go` at test time.
 */
import { join } from "node:path";
import { copyDriver, driverSuite, requireCommand, runCommand } from "./harness";

driverSuite({
  id: "go",
  title: "Go net/http",
  client: "Prysm",
  async prepare(lab) {
    const go = requireCommand("go", "apt-get install golang-go", "go");
    const source = copyDriver(lab, "go");
    const binary = join(lab.dir.path, "go-driver");
    const build = await runCommand(lab, [go, "build", "-o", binary, "."], {
      cwd: source,
      // Standard library only: nothing to download, and no toolchain switch either.
      env: { GOFLAGS: "-mod=mod", GOPROXY: "off", GOTOOLCHAIN: "local", CGO_ENABLED: "0" },
      timeoutMs: 180_000,
    });
    if (build.code !== 0) throw new Error(`go build failed (${build.code}):\n${build.stderr}`);
    return { command: [binary] };
  },
});
