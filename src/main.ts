import { rootCommand, withDefaultCommand } from "./cli/index";
import { runCli } from "./cli/run";

// `sigil operator status | head -1`: a closed pipe ends the output, it is not a crash.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code === "EPIPE") process.exit(0);
  throw error;
});

await runCli(rootCommand, withDefaultCommand(process.argv.slice(2)));
