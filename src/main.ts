import { runMain } from "citty";
import { rootCommand, withDefaultCommand } from "./cli/index";

await runMain(rootCommand, { rawArgs: withDefaultCommand(process.argv.slice(2)) });
