import { afterAll } from "bun:test";
import { join } from "node:path";
import { openThreadedSqliteStore } from "../../src/antislashing/backends/sqlite/thread-store";
import { TempDir } from "../support/cli";
import { slashingConformanceSuite } from "./conformance";
import { interchangeVectorSuite } from "./interchange-vectors";
import { slashingPropertySuite } from "./property";

const dir = new TempDir();
let counter = 0;
const freshPath = () => join(dir.path, `thread-${++counter}.sqlite`);
/** The signer's store: the database on the slashing thread, checkpoints in their own worker. */
const openFresh = () =>
  openThreadedSqliteStore(freshPath(), { create: true, checkpoints: "background" });

afterAll(() => dir.remove());

const CAPABILITIES = { strategy: "complete", prunes: true, stages: true } as const;
slashingConformanceSuite("sqlite on the slashing thread", openFresh, CAPABILITIES);
interchangeVectorSuite("sqlite on the slashing thread", openFresh, CAPABILITIES);
slashingPropertySuite("sqlite on the slashing thread", openFresh, CAPABILITIES);
